import { createHash } from 'node:crypto';
import { promises as fs } from 'node:fs';
import * as path from 'node:path';
import {
  ConnectorError,
  contentHash,
  throwIfAborted,
  type AttributeSchema,
  type AttributeValue,
  type ConnectionTestResult,
  type ConnectorObject,
  type ConnectorSchema,
  type DeltaChange,
  type DeltaImportOptions,
  type DeltaPage,
  type ExportChange,
  type ExportResult,
  type FullImportOptions,
  type ImportPage,
  type ObjectError,
} from '../sdk';
import {
  CsvParser,
  decoderFor,
  encodeText,
  fingerprintText,
  formatCsvRow,
  readCsvBatches,
  readCsvRecords,
  rowFields,
  type CsvRecord,
  type CsvRow,
} from './csv';
import { FileGuard } from './access';
import { BufferedWriter, folderError, listFiles, readChunks, writeAtomically, type FileStat } from './files';
import { parseRecord, readJsonBatches, readJsonRecords, type JsonLayout, type JsonRecord } from './jsonRecords';
import { applyMultiValue, checkHeader, csvLine, csvRowToObject, jsonRecordToObject, type FileConfig, type RowResult } from './rows';
import { SnapshotLines, SnapshotStore, type RowState, type Snapshot } from './state';

/** A full import's resume point: the file and byte offset after the last row of a committed page. */
interface Cursor {
  v: 1;
  /** The row-hash snapshot being built, and its length at this point. */
  snap: string;
  sb: number;
  /** The folder's files when the import started; index of the current one. */
  files: FileStat[];
  fi: number;
  off: number;
  line: number;
  hdr?: string[];
  lay?: JsonLayout;
}

/** A delta watermark: the snapshot of row hashes it covers and the files as they were then. */
interface Watermark {
  v: 1;
  snap: string;
  files: FileStat[];
  /** Fingerprint of the settings that shape objects: a delta across a settings change needs a full import. */
  cfg: string;
}

/**
 * One row as read: `h1`, `h2` and `len` fingerprint its source text, `pfx` stands for the header it was read
 * under (see `itemHash`), `anchorHint` is its anchor when it can be seen without building the object, `make`
 * builds the object (or the per-object error). A delta compares fingerprints first, so an unchanged row costs no
 * object and no content hash.
 */
type ReadItem = {
  end: number;
  nextLine: number;
  header?: string[];
  layout?: JsonLayout;
  pfx: string;
  h1: number;
  h2: number;
  len: number;
  anchorHint?: string;
  make: () => RowResult;
};

/** A row's hash as the snapshot keeps it. */
const itemHash = (pfx: string, h1: number, h2: number, len: number) => pfx + fingerprintText(h1, h2, len);

/** A batch of a delta's CSV rows, with what reading them needs: the header and the key-mode parser. */
interface CsvBatch {
  names: string[];
  anchorIdx: number;
  /** The header's part of every row hash. */
  prefix: string;
  parser: CsvParser;
  rows: CsvRow[];
}

const MAX_PAGE = 10000;
/** Bytes handed to the header parser at a time (it decodes every row it is given). */
const HEADER_SLICE = 4096;

/**
 * The file connector: a folder of CSV or JSON files as one source of objects (see docs/connectors.md).
 *
 * - Full import streams every matching file, page by page; the page cursor is a byte offset, so a resumed
 *   import reads on from there. It also records a hash per row (a snapshot in the state directory) that the
 *   last page's watermark names.
 * - Delta import re-reads only the files whose size or modification time changed, compares each row's hash
 *   with the snapshot, and reports adds, updates, renames (DN/container column changed) and deletes.
 * - Export rewrites the export file (temporary file + rename) with the changes applied.
 */
export class FileConnector {
  readonly type = 'custom';
  readonly implementation = 'file';
  private readonly store: SnapshotStore;
  /** Every path the connector uses is checked against the file roots when it is used. */
  private readonly guard: FileGuard;

  private readonly settingsPrint: string;

  constructor(readonly config: FileConfig) {
    this.store = new SnapshotStore(config.stateDirectory, config.stateSetting === undefined ? undefined : `stateDirectory '${config.stateSetting}'`);
    this.guard = new FileGuard(config);
    const c = config;
    this.settingsPrint = createHash('sha256')
      .update(
        JSON.stringify([
          c.format,
          c.anchorColumn,
          c.objectType,
          c.delimiter,
          c.encoding,
          c.multiValueSeparator,
          [...c.multiValueColumns].sort(),
          [...c.references].sort(),
          c.dnColumn ?? null,
          c.containerColumn ?? null,
        ]),
      )
      .digest('base64url')
      .slice(0, 16);
  }

  async testConnection(): Promise<ConnectionTestResult> {
    await this.guard.folder();
    const st = await fs.stat(this.config.folder).catch((err) => {
      throw folderError(err, this.config.folder);
    });
    if (!st.isDirectory()) throw new ConnectorError('configuration_invalid', `path: cannot read the folder '${this.config.folder}': it is not a folder.`);
    const files = await this.files();
    for (const f of files) await this.readHeader(f);
    return { message: `${files.length} file(s) matching ${this.config.filePattern} in ${this.config.folder}.` };
  }

  async schema(): Promise<ConnectorSchema> {
    const cfg = this.config;
    const names: string[] = [cfg.anchorColumn];
    const types = new Map<string, AttributeSchema['type']>();
    const files = await this.files();
    for (const f of files) {
      const h = await this.readHeader(f);
      for (const [n, t] of h) {
        if (!names.includes(n)) names.push(n);
        if (t && !types.has(n)) types.set(n, t);
      }
    }
    for (const n of [...cfg.multiValueColumns, ...cfg.references.keys(), cfg.dnColumn, cfg.containerColumn]) {
      if (n && !names.includes(n)) names.push(n);
    }
    const attributes = names.map((name) => {
      const a: AttributeSchema = { name, type: types.get(name) ?? 'string', multiValued: cfg.multiValueColumns.has(name) };
      if (name === cfg.anchorColumn) a.required = true;
      const ref = cfg.references.get(name);
      if (ref) a.reference = { ...ref };
      return a;
    });
    return { objectTypes: [{ name: cfg.objectType, anchorAttribute: cfg.anchorColumn, attributes }] };
  }

  async close(): Promise<void> {
    // Nothing stays open between calls.
  }

  /** The files a run reads, each checked to be inside the file roots: one that is not fails the run here. */
  private async files(): Promise<FileStat[]> {
    await this.guard.folder();
    const files = await listFiles(this.config.folder, this.config.fileRegExp);
    await this.guard.files(files);
    return files;
  }

  /** A file of the folder in chunks, opened through the roots check. */
  private chunks(name: string, start: number): AsyncGenerator<Buffer> {
    return readChunks(() => this.guard.open(name), start);
  }

  /** Column names (CSV header, or the keys of the first JSON records with their value types). */
  private async readHeader(f: FileStat): Promise<Map<string, AttributeSchema['type'] | undefined>> {
    const out = new Map<string, AttributeSchema['type'] | undefined>();
    let n = 0;
    for await (const item of this.readFile(f, 0, 1)) {
      if (item.header) {
        for (const h of item.header) if (h) out.set(h, undefined);
        break;
      }
      const r = item.make();
      if ('object' in r) {
        for (const [k, v] of Object.entries(r.object.attributes)) {
          const first = Array.isArray(v) ? v.find((x) => x !== null) : v;
          const t = typeof first === 'number' ? 'number' : typeof first === 'boolean' ? 'boolean' : first === undefined || first === null ? undefined : 'string';
          if (!out.get(k)) out.set(k, t);
        }
      }
      if (++n >= 100) break;
    }
    return out;
  }

  /**
   * The rows of one file from a byte offset. For CSV the header is read first (or taken from `header` when
   * resuming mid-file) and yielded once as an item whose `header` is set.
   */
  /** The rows of one file, one by one (for the few places that read little). */
  private async *readFile(f: FileStat, start: number, line: number): AsyncGenerator<ReadItem> {
    for await (const batch of this.readFileBatches(f, start, line)) yield* batch;
  }

  /**
   * The rows of one file from a byte offset, one array per chunk read. For CSV the header is read first (or
   * taken from `header` when resuming mid-file) and yielded once as an item whose `header` is set.
   */
  private async *readFileBatches(f: FileStat, start: number, line: number, header?: string[], layout?: JsonLayout): AsyncGenerator<ReadItem[]> {
    const cfg = this.config;
    const chunks = this.chunks(f.name, start);
    const fail = (error: ObjectError): RowResult => ({ error });
    try {
      if (cfg.format === 'csv') {
        let hdr = start === 0 ? undefined : header;
        let anchorIdx = hdr ? hdr.indexOf(cfg.anchorColumn) : -1;
        // A row's fingerprint is its bytes' plus the header's: a renamed column changes every row.
        let prefix = hdr ? fingerprintPrefix(hdr) : '';
        for await (const recs of readCsvBatches(chunks, { delimiter: cfg.delimiter, encoding: cfg.encoding, startOffset: start, startLine: line, fingerprintSeed: 0 })) {
          const items: ReadItem[] = [];
          for (const rec of recs) {
            const nextLine = rec.nextLine ?? rec.line + 1;
            if (!hdr) {
              if (rec.error) throw new ConnectorError('configuration_invalid', `${f.name}:${rec.line}: the header row is malformed: ${rec.error}`);
              const names = checkHeader(rec.fields, cfg, f.name);
              hdr = names;
              anchorIdx = names.indexOf(cfg.anchorColumn);
              prefix = fingerprintPrefix(names);
              items.push({ end: rec.end, nextLine, header: names, pfx: '', h1: 0, h2: 0, len: 0, make: () => fail({ code: 'object_error', message: 'header' }) });
              continue;
            }
            const names = hdr;
            const h1 = rec.h1!;
            const h2 = rec.h2!;
            const len = rec.end - rec.start;
            if (rec.error) {
              const e: ObjectError = { code: 'object_error', objectType: cfg.objectType, message: `${f.name}:${rec.line}: ${rec.error}`, location: `${f.name}:${rec.line}`, retriable: false };
              // Trust the anchor of a malformed row only when the row still splits into the header's fields and the
              // anchor field holds no quote (an unterminated quote leaves raw text behind).
              const a = rec.fields.length === names.length ? rec.fields[anchorIdx] : '';
              if (a && !a.includes('"')) e.anchor = a;
              items.push({ end: rec.end, nextLine, pfx: prefix, h1, h2, len, make: () => fail(e) });
              continue;
            }
            const fields = rec.fields;
            const at = rec.line;
            items.push({ end: rec.end, nextLine, pfx: prefix, h1, h2, len, anchorHint: fields[anchorIdx] || undefined, make: () => csvRowToObject(names, fields, cfg, f.name, at) });
          }
          yield items;
        }
      } else {
        for await (const batch of readJsonBatches(chunks, { startOffset: start, startLine: line, layout: start === 0 ? undefined : layout, fingerprintSeed: 0 })) {
          const items: ReadItem[] = [];
          for (const rec of batch.records) {
            const nextLine = rec.nextLine ?? rec.line;
            const h1 = rec.h1!;
            const h2 = rec.h2!;
            const len = rec.end - rec.start;
            if (rec.error) {
              const e: ObjectError = { code: 'object_error', objectType: cfg.objectType, message: `${f.name}:${rec.line}: ${rec.error}`, location: `${f.name}:${rec.line}`, retriable: false };
              items.push({ end: rec.end, nextLine, layout: batch.layout, pfx: '', h1, h2, len, make: () => fail(e) });
              continue;
            }
            const value = rec.value as Record<string, unknown> | null;
            const a = value && typeof value === 'object' ? value[cfg.anchorColumn] : undefined;
            const at = rec.line;
            items.push({
              end: rec.end,
              nextLine,
              layout: batch.layout,
              pfx: '',
              h1,
              h2,
              len,
              anchorHint: typeof a === 'string' || typeof a === 'number' ? String(a) || undefined : undefined,
              make: () => jsonRecordToObject(value, cfg, f.name, at),
            });
          }
          yield items;
        }
      }
    } catch (err) {
      if (err instanceof ConnectorError) throw err;
      throw folderError(err, cfg.folder, f.name);
    }
  }

  async *fullImport(options: FullImportOptions): AsyncGenerator<ImportPage> {
    const pageSize = clampPageSize(options.pageSize);
    let cur: Cursor;
    let seen: Set<string>;
    await this.guard.stateDirectory();
    if (options.cursor) {
      cur = parseCursor(options.cursor);
      const now = await this.files();
      for (let i = cur.fi; i < cur.files.length; i++) {
        const was = cur.files[i];
        const is = now.find((f) => f.name === was.name);
        if (!is || is.size !== was.size || is.mtimeMs !== was.mtimeMs) {
          throw new ConnectorError('cursor_invalid', `The file '${was.name}' changed since the import started; the full import must start again.`);
        }
      }
      const resumed = await this.store.resume(cur.snap, cur.sb);
      if (!resumed) throw new ConnectorError('cursor_invalid', 'The state of the interrupted import is gone; the full import must start again.');
      seen = resumed;
    } else {
      const files = await this.files();
      const snap = this.store.newId();
      await this.store.begin(snap);
      // Completed snapshots may still back a committed watermark: keep the two newest.
      await this.store.pruneOld(snap, 2);
      cur = { v: 1, snap, sb: 0, files, fi: 0, off: 0, line: 1 };
      seen = new Set();
    }

    let objects: ConnectorObject[] = [];
    let errors: ObjectError[] = [];
    let rows: RowState[] = [];
    for (let fi = cur.fi; fi < cur.files.length; fi++) {
      const f = cur.files[fi];
      const resuming = fi === cur.fi && cur.off > 0;
      let hdr = resuming ? cur.hdr : undefined;
      let lay = resuming ? cur.lay : undefined;
      for await (const batch of this.readFileBatches(f, resuming ? cur.off : 0, resuming ? cur.line : 1, hdr, lay)) {
        for (const item of batch) {
          if (item.header) {
            hdr = item.header;
            continue;
          }
          lay = item.layout ?? lay;
          const r = item.make();
          if ('object' in r) {
            if (seen.has(r.object.anchor)) {
              errors.push(duplicateError(r.object, f.name));
            } else {
              seen.add(r.object.anchor);
              objects.push(r.object);
              rows.push(rowState(r.object, f.name, itemHash(item.pfx, item.h1, item.h2, item.len)));
            }
          } else {
            errors.push(r.error);
          }
          if (objects.length + errors.length >= pageSize) {
            cur.sb = await this.store.append(cur.snap, rows);
            rows = [];
            const next: Cursor = { ...cur, fi, off: item.end, line: item.nextLine, hdr, lay };
            yield { objects, errors, cursor: JSON.stringify(next) };
            objects = [];
            errors = [];
            throwIfAborted(options.signal);
          }
        }
      }
    }
    await this.store.append(cur.snap, rows);
    await this.store.finish(cur.snap);
    const wm: Watermark = { v: 1, snap: cur.snap, files: cur.files, cfg: this.settingsPrint };
    yield { objects, errors, cursor: null, watermark: JSON.stringify(wm) };
  }

  async *deltaImport(watermark: string | null, options: DeltaImportOptions): AsyncGenerator<DeltaPage> {
    const cfg = this.config;
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
    if (wm.cfg !== this.settingsPrint) {
      yield { changes: [], errors: [], fullImportRequired: { reason: 'The connector settings that shape objects changed since the last import.' } };
      return;
    }
    const files = await this.files();
    const before = new Map(wm.files.map((f) => [f.name, f]));
    const unchanged = (f: FileStat) => {
      const b = before.get(f.name);
      return b !== undefined && b.size === f.size && b.mtimeMs === f.mtimeMs;
    };
    if (files.length === wm.files.length && files.every(unchanged)) {
      yield { changes: [], errors: [], nextWatermark: watermark };
      return;
    }
    await this.guard.stateDirectory();
    const old = await this.store.load(wm.snap);
    if (!old) {
      yield { changes: [], errors: [], fullImportRequired: { reason: 'The row-hash state this watermark names is gone (state directory cleared or moved).' } };
      return;
    }
    // The watermark we were given is the committed one: older and abandoned snapshots can go.
    await this.store.pruneExcept([wm.snap]);
    const snap = this.store.newId();
    await this.store.begin(snap);

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
      await this.store.appendLines(snap, lines);
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
        for await (const b of this.csvDeltaBatches(f)) {
          const prefix = old.prefixId(b.prefix);
          for (const row of b.rows) {
            const len = row.end - row.start;
            const i = row.keyFrom >= 0 ? (row.keyTo > row.keyFrom ? old.findText(row.bytes, row.keyFrom, row.keyTo, decode, lastFound + 1) : -1) : row.key ? old.find(row.key) : -1;
            if (i >= 0) lastFound = i;
            if (unchangedRow(f.name, fileId, i, prefix, row.h1, row.h2, len)) continue;
            builtRow(f.name, this.csvRowResult(b, row, f), itemHash(b.prefix, row.h1, row.h2, len));
            if (changes.length + errors.length >= pageSize) {
              yield await flush();
              throwIfAborted(options.signal);
            }
          }
        }
      } else {
        const prefix = old.prefixId('');
        for await (const records of this.jsonDeltaBatches(f)) {
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
            builtRow(f.name, this.jsonRecordResult(rec, f), itemHash('', h1, h2, len));
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
    await this.store.finish(snap);
    const next: Watermark = { v: 1, snap, files, cfg: this.settingsPrint };
    yield { ...last, nextWatermark: JSON.stringify(next) };
  }

  /**
   * A delta's reading of a CSV file: the header, then the rows in key mode (each row's anchor decoded, its other
   * fields left as bytes until it must be built), one batch per chunk read. One open of the file for both.
   */
  private async *csvDeltaBatches(f: FileStat): AsyncGenerator<CsvBatch> {
    const cfg = this.config;
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
      for await (const chunk of this.chunks(f.name, 0)) {
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
  private async *jsonDeltaBatches(f: FileStat): AsyncGenerator<JsonRecord[]> {
    const cfg = this.config;
    try {
      for await (const batch of readJsonBatches(this.chunks(f.name, 0), { fingerprintSeed: 0, keyProperty: cfg.anchorColumn })) yield batch.records;
    } catch (err) {
      if (err instanceof ConnectorError) throw err;
      throw folderError(err, cfg.folder, f.name);
    }
  }

  /** A JSON record read lazily as an object, or its per-object error (as `readFileBatches` makes them). */
  private jsonRecordResult(rec: JsonRecord, f: FileStat): RowResult {
    const cfg = this.config;
    const parsed = parseRecord(rec);
    if ('error' in parsed) {
      return { error: { code: 'object_error', objectType: cfg.objectType, message: `${f.name}:${rec.line}: ${parsed.error}`, location: `${f.name}:${rec.line}`, retriable: false } };
    }
    return jsonRecordToObject(parsed.value, cfg, f.name, rec.line);
  }

  /** A CSV row read in key mode as an object, or its per-object error. */
  private csvRowResult(b: CsvBatch, row: CsvRow, f: FileStat): RowResult {
    const cfg = this.config;
    if (row.error) {
      const fields = row.fields ?? [];
      const e: ObjectError = { code: 'object_error', objectType: cfg.objectType, message: `${f.name}:${row.line}: ${row.error}`, location: `${f.name}:${row.line}`, retriable: false };
      // As in a full import: trust the anchor only when the row splits into the header's fields, quote-free.
      const a = fields.length === b.names.length ? fields[b.anchorIdx] : '';
      if (a && !a.includes('"')) e.anchor = a;
      return { error: e };
    }
    return csvRowToObject(b.names, rowFields(row, cfg), cfg, f.name, row.line);
  }

  async export(change: ExportChange): Promise<ExportResult> {
    return (await this.exportBatch([change]))[0];
  }

  /**
   * Apply the changes to the export file in one rewrite: existing rows are copied (changed ones rewritten,
   * deleted ones dropped, unreadable ones copied verbatim), new rows appended, then the file is replaced
   * atomically. Changes to the same anchor apply in order.
   */
  async exportBatch(changes: ExportChange[]): Promise<ExportResult[]> {
    const cfg = this.config;
    const results: (ExportResult | undefined)[] = new Array(changes.length);
    const byAnchor = new Map<string, number[]>();
    const newColumns: string[] = [];
    const noteColumns = (names: Iterable<string>) => {
      for (const n of names) if (!newColumns.includes(n)) newColumns.push(n);
    };
    changes.forEach((ch, i) => {
      const anchor = exportAnchor(ch, cfg);
      if (ch.objectType !== cfg.objectType) {
        results[i] = errorResult(anchor, 'object_error', `This connector holds ${cfg.objectType} objects, not ${ch.objectType}.`);
      } else if (!anchor) {
        results[i] = errorResult(undefined, 'object_error', `The change has no anchor (neither 'anchor' nor the '${cfg.anchorColumn}' attribute).`);
      } else if (ch.attributes[cfg.anchorColumn] !== undefined && String(ch.attributes[cfg.anchorColumn]) !== anchor) {
        results[i] = errorResult(anchor, 'constraint_violation', `The anchor column '${cfg.anchorColumn}' cannot change.`);
      } else {
        const list = byAnchor.get(anchor) ?? [];
        list.push(i);
        byAnchor.set(anchor, list);
        if (ch.kind !== 'delete') {
          noteColumns([cfg.anchorColumn, ...Object.keys(ch.attributes), ...Object.keys(ch.multiValueAdds ?? {})]);
          if (ch.dn !== undefined && cfg.dnColumn) noteColumns([cfg.dnColumn]);
          if (ch.container !== undefined && cfg.containerColumn) noteColumns([cfg.containerColumn]);
        }
      }
    });
    if (byAnchor.size === 0) return results as ExportResult[];

    const target = path.join(cfg.folder, cfg.exportFile);
    await this.guard.folder();
    await this.guard.exportTarget();
    const dirStat = await fs.stat(cfg.folder).catch((err) => {
      throw folderError(err, cfg.folder);
    });
    if (!dirStat.isDirectory()) throw new ConnectorError('configuration_invalid', `path: cannot write to the folder '${cfg.folder}': it is not a folder.`);
    const existing = await fs.stat(target).then((s) => ({ name: cfg.exportFile, size: s.size, mtimeMs: s.mtimeMs }) as FileStat, () => undefined);

    /** Apply every change for one anchor to the row's attributes (undefined: no row). */
    const fold = (anchor: string, current: Record<string, AttributeValue> | undefined): Record<string, AttributeValue> | undefined => {
      let state = current;
      for (const i of byAnchor.get(anchor)!) {
        const ch = changes[i];
        const r = applyChange(ch, anchor, state, cfg);
        results[i] = r.result;
        state = r.state;
      }
      return state;
    };

    try {
      await writeAtomically(target, async (fh) => {
        const out = new BufferedWriter(fh);
        const enc = (s: string) => encodeText(s, cfg.encoding);
        if (cfg.format === 'csv') {
          let header: string[] | undefined;
          let added = 0;
          const written = new Set<string>();
          if (existing) {
            const chunks = this.chunks(cfg.exportFile, 0);
            for await (const rec of readCsvRecords(chunks, { delimiter: cfg.delimiter, encoding: cfg.encoding, keepRaw: true })) {
              if (!header) {
                if (rec.error) throw new ConnectorError('configuration_invalid', `${cfg.exportFile}: the header row is malformed: ${rec.error}`);
                header = checkHeader(rec.fields, cfg, cfg.exportFile);
                const width = header.length;
                for (const c of newColumns) if (!header.includes(c)) header.push(c);
                added = header.length - width;
                await out.write(enc(formatCsvRow(header, cfg.delimiter)));
                continue;
              }
              const row = rec.error ? undefined : csvRowToObject(header.slice(0, header.length - added), rec.fields, cfg, cfg.exportFile, rec.line);
              const anchor = row && 'object' in row ? row.object.anchor : undefined;
              if (!anchor || !byAnchor.has(anchor) || written.has(anchor)) {
                // Copied byte for byte; a readable row gets empty fields for the new columns.
                await out.write(padRow(rec.raw!, anchor ? added : 0, cfg.delimiter));
                continue;
              }
              written.add(anchor);
              const state = fold(anchor, (row as { object: ConnectorObject }).object.attributes);
              if (state) await out.write(enc(csvLine(header, state, cfg)));
            }
          }
          if (!header) {
            header = [...newColumns];
            await out.write(enc(formatCsvRow(header, cfg.delimiter)));
          }
          for (const anchor of byAnchor.keys()) {
            if (written.has(anchor)) continue;
            const state = fold(anchor, undefined);
            if (state) await out.write(enc(csvLine(header, state, cfg)));
          }
        } else {
          let layout: JsonLayout = 'array';
          const written = new Set<string>();
          const rowsOut: string[] = [];
          const emit = async (text: string) => {
            if (layout === 'array') await out.write(Buffer.from((rowsOut.length ? ',\n' : '[\n') + text, 'utf8'));
            else await out.write(Buffer.from(text + '\n', 'utf8'));
            rowsOut.push('');
          };
          let first = true;
          if (existing) {
            const raw = await this.guard.open(cfg.exportFile);
            try {
              for await (const rec of readJsonRecords(this.chunks(cfg.exportFile, 0))) {
                if (first) {
                  layout = rec.layout;
                  first = false;
                }
                if (rec.error || rec.value === undefined) {
                  // Kept verbatim: an export must not lose a row it cannot read.
                  const bytes = Buffer.alloc(rec.end - rec.start);
                  await raw.read(bytes, 0, bytes.length, rec.start);
                  if (bytes.toString('utf8').trim()) await emit(bytes.toString('utf8').trim());
                  continue;
                }
                const row = jsonRecordToObject(rec.value, cfg, cfg.exportFile, rec.line);
                const anchor = 'object' in row ? row.object.anchor : undefined;
                if (!anchor || !byAnchor.has(anchor) || written.has(anchor)) {
                  await emit(JSON.stringify(rec.value));
                  continue;
                }
                written.add(anchor);
                const state = fold(anchor, (row as { object: ConnectorObject }).object.attributes);
                if (state) await emit(JSON.stringify(state));
              }
            } finally {
              await raw.close();
            }
          }
          for (const anchor of byAnchor.keys()) {
            if (written.has(anchor)) continue;
            const state = fold(anchor, undefined);
            if (state) await emit(JSON.stringify(state));
          }
          if (layout === 'array') await out.write(Buffer.from(rowsOut.length ? '\n]\n' : '[]\n', 'utf8'));
        }
        await out.flush();
      });
    } catch (err) {
      if (err instanceof ConnectorError) throw err;
      throw folderError(err, cfg.folder, cfg.exportFile, 'exportFile');
    }
    return results as ExportResult[];
  }
}

/** A raw CSV row with `extra` empty fields before its line break, and always ending in one. */
function padRow(raw: Buffer, extra: number, delimiter: string): Buffer {
  let body: Buffer = raw;
  let eol: Buffer = Buffer.from('\n');
  if (raw.length >= 2 && raw[raw.length - 2] === 0x0d && raw[raw.length - 1] === 0x0a) {
    body = raw.subarray(0, raw.length - 2);
    eol = raw.subarray(raw.length - 2);
  } else if (raw.length >= 1 && raw[raw.length - 1] === 0x0a) {
    body = raw.subarray(0, raw.length - 1);
  }
  if (extra === 0 && body !== raw) return raw;
  return Buffer.concat([body, Buffer.from(delimiter.repeat(extra)), eol]);
}

function clampPageSize(n: number): number {
  if (!Number.isInteger(n) || n < 1) throw new ConnectorError('configuration_invalid', `The page size must be a positive integer, not ${n}.`);
  return Math.min(n, MAX_PAGE);
}

function rowState(o: ConnectorObject, file: string, fp: string): RowState {
  return { anchor: o.anchor, hash: fp, file, dn: o.dn ?? null, container: o.container ?? null };
}

/** The start of every CSV row fingerprint: the column names the row is read under. */
function fingerprintPrefix(header: string[]): string {
  return createHash('sha256').update(JSON.stringify(header)).digest('base64url').slice(0, 8) + ':';
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

function duplicateError(o: ConnectorObject, file: string): ObjectError {
  return {
    anchor: o.anchor,
    objectType: o.objectType,
    code: 'object_error',
    message: `${file}: the anchor '${o.anchor}' appears more than once; only its first row is imported.`,
    location: file,
    retriable: false,
  };
}

function parseCursor(text: string): Cursor {
  let c: Partial<Cursor>;
  try {
    c = JSON.parse(text) as Partial<Cursor>;
  } catch {
    throw new ConnectorError('cursor_invalid', 'The import cursor is not one this connector wrote.');
  }
  if (
    c?.v !== 1 ||
    !SnapshotStore.isId(c.snap) ||
    !Array.isArray(c.files) ||
    !Number.isInteger(c.fi) ||
    !Number.isInteger(c.off) ||
    !Number.isInteger(c.line) ||
    !Number.isInteger(c.sb)
  ) {
    throw new ConnectorError('cursor_invalid', 'The import cursor is not one this connector wrote.');
  }
  return c as Cursor;
}

function parseWatermark(text: string): Watermark | undefined {
  try {
    const w = JSON.parse(text) as Partial<Watermark>;
    if (w?.v === 1 && SnapshotStore.isId(w.snap) && Array.isArray(w.files) && typeof w.cfg === 'string') return w as Watermark;
  } catch {
    // Not ours: answered as "full import required".
  }
  return undefined;
}

function exportAnchor(ch: ExportChange, cfg: FileConfig): string | undefined {
  if (ch.anchor) return ch.anchor;
  const v = ch.attributes[cfg.anchorColumn];
  return typeof v === 'string' || typeof v === 'number' ? String(v) : undefined;
}

function errorResult(anchor: string | undefined, code: ObjectError['code'], message: string): ExportResult {
  const error: ObjectError = { code, message, retriable: false };
  if (anchor !== undefined) error.anchor = anchor;
  return anchor === undefined ? { status: 'error', error } : { status: 'error', anchor, error };
}

/** One change applied to a row's attributes: the new row (undefined: no row) and the change's result. */
function applyChange(
  ch: ExportChange,
  anchor: string,
  state: Record<string, AttributeValue> | undefined,
  cfg: FileConfig,
): { state: Record<string, AttributeValue> | undefined; result: ExportResult } {
  const ok = (s: Record<string, AttributeValue> | undefined): { state: typeof s; result: ExportResult } => {
    const dn = s && cfg.dnColumn ? s[cfg.dnColumn] : undefined;
    return { state: s, result: typeof dn === 'string' && dn ? { status: 'success', anchor, dn } : { status: 'success', anchor } };
  };
  const placed = (attrs: Record<string, AttributeValue>) => {
    const next = { ...attrs };
    if (ch.dn !== undefined && cfg.dnColumn) next[cfg.dnColumn] = ch.dn;
    if (ch.container !== undefined && cfg.containerColumn) next[cfg.containerColumn] = ch.container;
    return next;
  };
  switch (ch.kind) {
    case 'add': {
      const next = placed({ ...ch.attributes, [cfg.anchorColumn]: anchor });
      if (state) {
        // A replayed add that already landed is a success; a different row with that anchor is a conflict.
        const same = contentHash({ objectType: '', attributes: normalize(state, cfg) }) === contentHash({ objectType: '', attributes: normalize(next, cfg) });
        return same ? ok(state) : { state, result: errorResult(anchor, 'already_exists', `A row with the anchor '${anchor}' already exists.`) };
      }
      return ok(next);
    }
    case 'update':
    case 'rename': {
      if (!state) return { state, result: errorResult(anchor, 'not_found', `No row has the anchor '${anchor}'.`) };
      const next = placed({ ...state, ...ch.attributes });
      for (const name of new Set([...Object.keys(ch.multiValueAdds ?? {}), ...Object.keys(ch.multiValueRemoves ?? {})])) {
        next[name] = applyMultiValue(next[name], ch.multiValueAdds?.[name], ch.multiValueRemoves?.[name]);
      }
      return ok(next);
    }
    case 'delete':
      return ok(undefined);
    default:
      return { state, result: errorResult(anchor, 'unsupported', `Unknown change kind '${String((ch as { kind: unknown }).kind)}'.`) };
  }
}

/** Values as a file stores them (text for CSV), so an add can be compared with the row it would write. */
function normalize(attrs: Record<string, AttributeValue>, cfg: FileConfig): Record<string, AttributeValue> {
  if (cfg.format === 'json') return attrs;
  const out: Record<string, AttributeValue> = {};
  for (const [k, v] of Object.entries(attrs)) {
    if (Array.isArray(v)) out[k] = v.filter((x) => x !== null && x !== '').map(String);
    else out[k] = v === null || v === '' ? null : String(v);
  }
  return out;
}
