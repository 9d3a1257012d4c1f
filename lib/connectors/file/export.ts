import { promises as fs } from 'node:fs';
import * as path from 'node:path';
import { ConnectorError, contentHash, type AttributeValue, type ConnectorObject, type ExportChange, type ExportResult, type ObjectError } from '../sdk';
import { encodeText, formatCsvRow, readCsvRecords } from './csv';
import { BufferedWriter, folderError, writeAtomically, type FileStat } from './files';
import { readJsonRecords, type JsonLayout } from './jsonRecords';
import { applyMultiValue, checkHeader, csvLine, csvRowToObject, jsonRecordToObject, type FileConfig } from './rows';
import { fileChunks, type FileParts } from './reading';

/**
 * Apply the changes to the export file in one rewrite: existing rows are copied (changed ones rewritten,
 * deleted ones dropped, unreadable ones copied verbatim), new rows appended, then the file is replaced
 * atomically. Changes to the same anchor apply in order.
 */
export async function exportBatch(parts: Pick<FileParts, 'config' | 'guard'>, changes: ExportChange[]): Promise<ExportResult[]> {
  const { config: cfg, guard } = parts;
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
  await guard.folder();
  await guard.exportTarget();
  const dirStat = await fs.stat(cfg.folder).catch((err) => {
    throw folderError(err, cfg.folder);
  });
  if (!dirStat.isDirectory()) throw new ConnectorError('configuration_invalid', `path: cannot write to the folder '${cfg.folder}': it is not a folder.`);
  const existing = await fs.stat(target).then(
    (s) => ({ name: cfg.exportFile, size: s.size, mtimeMs: s.mtimeMs }) as FileStat,
    () => undefined,
  );

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
          const chunks = fileChunks(guard, cfg.exportFile, 0);
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
          const raw = await guard.open(cfg.exportFile);
          try {
            for await (const rec of readJsonRecords(fileChunks(guard, cfg.exportFile, 0))) {
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
        if (same) return ok(state);
        // The row there, for the engine to decide whether to take it over (an update by this anchor).
        const refused = errorResult(anchor, 'already_exists', `A row with the anchor '${anchor}' already exists.`);
        const dn = cfg.dnColumn ? state[cfg.dnColumn] : undefined;
        if (refused.status === 'error') refused.existing = { anchor, ...(typeof dn === 'string' && dn ? { dn } : {}), attributes: { ...state } };
        return { state, result: refused };
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
