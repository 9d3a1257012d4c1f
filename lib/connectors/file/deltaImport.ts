import { ConnectorError, throwIfAborted, type DeltaChange, type DeltaImportOptions, type DeltaPage, type ObjectError } from '../sdk';
import { CsvParser, decoderFor, rowFields, type CsvRecord, type CsvRow } from './csv';
import { folderError, type FileStat } from './files';
import { parseRecord, readJsonBatches, type JsonRecord } from './jsonRecords';
import { checkHeader, csvRowToObject, jsonRecordToObject, type FileConfig, type RowResult } from './rows';
import { clampPageSize, duplicateError, fileChunks, fingerprintPrefix, guardedFiles, itemHash, rowState, type FileParts } from './reading';
import { SnapshotLines, type Snapshot } from './state';
import { parseWatermark, type Watermark } from './watermark';

/** A batch of a delta's CSV rows, with what reading them needs: the header and the key-mode parser. */
interface CsvBatch {
  names: string[];
  anchorIdx: number;
  /** The header's part of every row hash. */
  prefix: string;
  parser: CsvParser;
  rows: CsvRow[];
}

/** Bytes handed to the header parser at a time (it decodes every row it is given). */
const HEADER_SLICE = 4096;

/**
 * A delta import: re-reads only the files whose size or modification time changed, compares each row's hash
 * with the snapshot the watermark names, and reports adds, updates, renames (DN/container column changed) and
 * deletes. A watermark it cannot use (none, not ours, other settings, its snapshot gone) is answered with
 * `fullImportRequired`.
 */
export async function* deltaImport(parts: FileParts, watermark: string | null, options: DeltaImportOptions): AsyncGenerator<DeltaPage> {
  const { config: cfg, store, guard } = parts;
  const pageSize = clampPageSize(options.pageSize);
  if (watermark === null) {
    yield { changes: [], errors: [], fullImportRequired: { reason: 'There is no watermark yet: a full import comes first.' } };
    return;
  }
  const wm = parseWatermark(watermark);
  if (!wm) {
    yield { changes: [], errors: [], fullImportRequired: { reason: 'The watermark is not one this connector wrote.' } };
    return;
  }
  if (wm.cfg !== parts.settingsPrint) {
    yield { changes: [], errors: [], fullImportRequired: { reason: 'The connector settings that shape objects changed since the last import.' } };
    return;
  }
  const files = await guardedFiles(parts);
  const before = new Map(wm.files.map((f) => [f.name, f]));
  const unchanged = (f: FileStat) => {
    const b = before.get(f.name);
    return b !== undefined && b.size === f.size && b.mtimeMs === f.mtimeMs;
  };
  if (files.length === wm.files.length && files.every(unchanged)) {
    yield { changes: [], errors: [], nextWatermark: watermark };
    return;
  }
  await guard.stateDirectory();
  const old = await store.load(wm.snap);
  if (!old) {
    yield { changes: [], errors: [], fullImportRequired: { reason: 'The row-hash state this watermark names is gone (state directory cleared or moved).' } };
    return;
  }
  // The watermark we were given is the committed one: older and abandoned snapshots can go.
  await store.pruneExcept([wm.snap]);
  const snap = store.newId();
  await store.begin(snap);

  let changes: DeltaChange[] = [];
  let errors: ObjectError[] = [];
  /** The next snapshot: an unchanged row's line is copied from the old one as it is. */
  const lines = new SnapshotLines();
  /** Anchors seen so far: the old snapshot's by row, the others by name. */
  const seenOld = new Uint8Array(old.count);
  const seenNew = new Set<string>();
  /** Marks an anchor (the old row `i` when it has one) seen; false when it already was. */
  const see = (anchor: string, i: number): boolean => {
    if (i < 0) {
      if (seenNew.has(anchor)) return false;
      seenNew.add(anchor);
      return true;
    }
    if (seenOld[i]) return false;
    seenOld[i] = 1;
    return true;
  };
  /** Files with a row whose anchor could not be read: their missing anchors are not taken as deletes. */
  const damaged = new Set<string>();
  const flush = async (): Promise<DeltaPage> => {
    await store.appendLines(snap, lines);
    const page = { changes, errors };
    changes = [];
    errors = [];
    return page;
  };

  /**
   * A row with the text of the old row `i` of its anchor (under the same header) is unchanged: it goes on and
   * nothing is built.
   */
  const unchangedRow = (file: string, fileId: number, i: number, prefix: number, h1: number, h2: number, len: number): boolean => {
    if (i < 0 || seenOld[i] || !old.sameHash(i, prefix, h1, h2, len)) return false;
    seenOld[i] = 1;
    if (old.fileIdOf(i) === fileId) lines.copy(old, i);
    else lines.add({ ...old.row(i), file });
    return true;
  };
  /** Any other row, built (or failed): the change it makes. */
  const builtRow = (file: string, r: RowResult, hash: string): void => {
    if ('error' in r) {
      errors.push(r.error);
      const a = r.error.anchor;
      if (a === undefined) damaged.add(file);
      else {
        const i = old.find(a);
        // Unreadable now: keep what we knew, report no change for it.
        if (see(a, i) && i >= 0) lines.copy(old, i);
      }
      return;
    }
    const o = r.object;
    const i = old.find(o.anchor);
    if (!see(o.anchor, i)) {
      errors.push(duplicateError(o, file));
      return;
    }
    const st = rowState(o, file, hash);
    lines.add(st);
    if (i < 0) {
      changes.push({ kind: 'add', anchor: o.anchor, objectType: o.objectType, object: o });
      return;
    }
    const prev = old.row(i);
    if (prev.dn !== st.dn || prev.container !== st.container) {
      const ch: DeltaChange = { kind: 'rename', anchor: o.anchor, objectType: o.objectType, object: o };
      if (prev.dn !== null) ch.previousDn = prev.dn;
      if (prev.container !== null) ch.previousContainer = prev.container;
      changes.push(ch);
    } else {
      changes.push({ kind: 'update', anchor: o.anchor, objectType: o.objectType, object: o });
    }
  };

  const decode = decoderFor(cfg.encoding);
  const utf8 = decoderFor('utf8');
  /** The old row of the last anchor found: the next row is likely the one after it. */
  let lastFound = -1;
  for (const f of files) {
    if (unchanged(f)) {
      for (const i of old.rowsOf(f.name)) {
        if (!seenOld[i]) {
          seenOld[i] = 1;
          lines.copy(old, i);
        }
      }
      continue;
    }
    const fileId = old.fileId(f.name);
    if (cfg.format === 'csv') {
      for await (const b of csvDeltaBatches(parts, f)) {
        const prefix = old.prefixId(b.prefix);
        for (const row of b.rows) {
          const len = row.end - row.start;
          const i =
            row.keyFrom >= 0
              ? row.keyTo > row.keyFrom
                ? old.findText(row.bytes, row.keyFrom, row.keyTo, decode, lastFound + 1)
                : -1
              : row.key
                ? old.find(row.key)
                : -1;
          if (i >= 0) lastFound = i;
          if (unchangedRow(f.name, fileId, i, prefix, row.h1, row.h2, len)) continue;
          builtRow(f.name, csvRowResult(cfg, b, row, f), itemHash(b.prefix, row.h1, row.h2, len));
          if (changes.length + errors.length >= pageSize) {
            yield await flush();
            throwIfAborted(options.signal);
          }
        }
      }
    } else {
      const prefix = old.prefixId('');
      for await (const records of jsonDeltaBatches(parts, f)) {
        for (const rec of records) {
          const len = rec.end - rec.start;
          const h1 = rec.h1 ?? 0;
          const h2 = rec.h2 ?? 0;
          let i = -1;
          if (rec.value !== undefined) {
            const hint = jsonAnchorHint(rec.value, cfg.anchorColumn);
            if (hint !== undefined) i = old.find(hint);
          } else if (!rec.error && rec.keyFrom! >= 0) {
            i = rec.keyPlain ? old.findText(rec.bytes!, rec.keyFrom! + 1, rec.keyTo! - 1, utf8, lastFound + 1) : jsonAnchorRow(old, rec);
          }
          if (i >= 0) lastFound = i;
          if (unchangedRow(f.name, fileId, i, prefix, h1, h2, len)) continue;
          builtRow(f.name, jsonRecordResult(cfg, rec, f), itemHash('', h1, h2, len));
          if (changes.length + errors.length >= pageSize) {
            yield await flush();
            throwIfAborted(options.signal);
          }
        }
      }
    }
  }
  for (let i = 0; i < old.count; i++) {
    if (seenOld[i] || !old.isLive(i)) continue;
    const r = old.row(i);
    if (damaged.has(r.file)) {
      lines.copy(old, i);
      continue;
    }
    const ch: DeltaChange = { kind: 'delete', anchor: r.anchor, objectType: cfg.objectType };
    if (r.dn !== null) ch.previousDn = r.dn;
    if (r.container !== null) ch.previousContainer = r.container;
    changes.push(ch);
    if (changes.length + errors.length >= pageSize) yield await flush();
  }
  if (damaged.size) {
    errors.push({
      code: 'object_error',
      objectType: cfg.objectType,
      message: `Rows missing from ${[...damaged].join(', ')} were not reported as deleted, because some rows there could not be read.`,
      retriable: false,
    });
  }
  const last = await flush();
  await store.finish(snap);
  const next: Watermark = { v: 1, snap, files, cfg: parts.settingsPrint };
  yield { ...last, nextWatermark: JSON.stringify(next) };
}

/**
 * A delta's reading of a CSV file: the header, then the rows in key mode (each row's anchor decoded, its other
 * fields left as bytes until it must be built), one batch per chunk read. One open of the file for both.
 */
async function* csvDeltaBatches(parts: Pick<FileParts, 'config' | 'guard'>, f: FileStat): AsyncGenerator<CsvBatch> {
  const cfg = parts.config;
  const options = { delimiter: cfg.delimiter, encoding: cfg.encoding };
  const headParser = new CsvParser(options);
  let head: Omit<CsvBatch, 'rows'> | undefined;
  const begin = (rec: CsvRecord): Omit<CsvBatch, 'rows'> => {
    if (rec.error) throw new ConnectorError('configuration_invalid', `${f.name}:${rec.line}: the header row is malformed: ${rec.error}`);
    const names = checkHeader(rec.fields, cfg, f.name);
    const anchorIdx = names.indexOf(cfg.anchorColumn);
    const parser = new CsvParser({ ...options, startOffset: rec.end, startLine: rec.nextLine ?? rec.line + 1, fingerprintSeed: 0, keyField: anchorIdx });
    return { names, anchorIdx, prefix: fingerprintPrefix(names), parser };
  };
  try {
    let pos = 0;
    for await (const chunk of fileChunks(parts.guard, f.name, 0)) {
      const at = pos;
      pos += chunk.length;
      let body: Buffer | undefined = chunk;
      if (!head) {
        // The header is parsed in small slices, so the rows after it are read only once, in key mode.
        body = undefined;
        for (let o = 0; o < chunk.length && !head; o += HEADER_SLICE) {
          const recs = headParser.push(chunk.subarray(o, Math.min(o + HEADER_SLICE, chunk.length)));
          if (recs.length) {
            head = begin(recs[0]);
            body = chunk.subarray(recs[0].end - at);
          }
        }
      }
      if (head && body) {
        const rows = head.parser.pushRows(body);
        if (rows.length) yield { ...head, rows };
      }
    }
    if (!head) {
      const recs = headParser.finish();
      if (!recs.length) return;
      head = begin(recs[0]);
    }
    const rows = head.parser.finishRows();
    if (rows.length) yield { ...head, rows };
  } catch (err) {
    if (err instanceof ConnectorError) throw err;
    throw folderError(err, cfg.folder, f.name);
  }
}

/** A delta's reading of a JSON file: records located and fingerprinted, left unparsed. */
async function* jsonDeltaBatches(parts: Pick<FileParts, 'config' | 'guard'>, f: FileStat): AsyncGenerator<JsonRecord[]> {
  const cfg = parts.config;
  try {
    for await (const batch of readJsonBatches(fileChunks(parts.guard, f.name, 0), { fingerprintSeed: 0, keyProperty: cfg.anchorColumn })) yield batch.records;
  } catch (err) {
    if (err instanceof ConnectorError) throw err;
    throw folderError(err, cfg.folder, f.name);
  }
}

/** A JSON record read lazily as an object, or its per-object error (as `readFileBatches` makes them). */
function jsonRecordResult(cfg: FileConfig, rec: JsonRecord, f: FileStat): RowResult {
  const parsed = parseRecord(rec);
  if ('error' in parsed) {
    return {
      error: {
        code: 'object_error',
        objectType: cfg.objectType,
        message: `${f.name}:${rec.line}: ${parsed.error}`,
        location: `${f.name}:${rec.line}`,
        retriable: false,
      },
    };
  }
  return jsonRecordToObject(parsed.value, cfg, f.name, rec.line);
}

/** A CSV row read in key mode as an object, or its per-object error. */
function csvRowResult(cfg: FileConfig, b: CsvBatch, row: CsvRow, f: FileStat): RowResult {
  if (row.error) {
    const fields = row.fields ?? [];
    const e: ObjectError = {
      code: 'object_error',
      objectType: cfg.objectType,
      message: `${f.name}:${row.line}: ${row.error}`,
      location: `${f.name}:${row.line}`,
      retriable: false,
    };
    // As in a full import: trust the anchor only when the row splits into the header's fields, quote-free.
    const a = fields.length === b.names.length ? fields[b.anchorIdx] : '';
    if (a && !a.includes('"')) e.anchor = a;
    return { error: e };
  }
  return csvRowToObject(b.names, rowFields(row, cfg), cfg, f.name, row.line);
}

/** The old row of a JSON record's anchor found as a value other than a plain string (a number, say). */
function jsonAnchorRow(old: Snapshot, rec: JsonRecord): number {
  let v: unknown;
  try {
    v = JSON.parse(rec.bytes!.toString('utf8', rec.keyFrom, rec.keyTo));
  } catch {
    return -1;
  }
  return (typeof v === 'string' || typeof v === 'number') && String(v) !== '' ? old.find(String(v)) : -1;
}

/** A parsed JSON record's anchor as far as it can be seen without building the object. */
function jsonAnchorHint(value: unknown, anchorColumn: string): string | undefined {
  const a = value && typeof value === 'object' ? (value as Record<string, unknown>)[anchorColumn] : undefined;
  return typeof a === 'string' || typeof a === 'number' ? String(a) || undefined : undefined;
}
