import { createHash } from 'node:crypto';
import { ConnectorError, type ConnectorObject, type ObjectError } from '../sdk';
import { fingerprintText, readCsvBatches } from './csv';
import type { FileGuard } from './access';
import { folderError, listFiles, readChunks, type FileStat } from './files';
import { readJsonBatches, type JsonLayout } from './jsonRecords';
import { checkHeader, csvRowToObject, jsonRecordToObject, type FileConfig, type RowResult } from './rows';
import type { RowState, SnapshotStore } from './state';

/**
 * What the file connector's jobs (full import, delta import, export, test and schema) work with: the resolved
 * settings, the row-hash snapshot store, the file-roots guard and the fingerprint of the settings that shape
 * objects. One per connector, made by `FileConnector`; nothing in it stays open between calls.
 */
export interface FileParts {
  readonly config: FileConfig;
  readonly store: SnapshotStore;
  /** Every path the connector uses is checked against the file roots when it is used. */
  readonly guard: FileGuard;
  /** See `settingsFingerprint` (watermark.ts). */
  readonly settingsPrint: string;
}

/**
 * One row as read: `h1`, `h2` and `len` fingerprint its source text, `pfx` stands for the header it was read
 * under (see `itemHash`), `anchorHint` is its anchor when it can be seen without building the object, `make`
 * builds the object (or the per-object error). A delta compares fingerprints first, so an unchanged row costs no
 * object and no content hash.
 */
export type ReadItem = {
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
export const itemHash = (pfx: string, h1: number, h2: number, len: number) => pfx + fingerprintText(h1, h2, len);

const MAX_PAGE = 10000;

/** The files a run reads, each checked to be inside the file roots: one that is not fails the run here. */
export async function guardedFiles(parts: Pick<FileParts, 'config' | 'guard'>): Promise<FileStat[]> {
  await parts.guard.folder();
  const files = await listFiles(parts.config.folder, parts.config.fileMatcher);
  await parts.guard.files(files);
  return files;
}

/** A file of the folder in chunks, opened through the roots check. */
export function fileChunks(guard: FileGuard, name: string, start: number): AsyncGenerator<Buffer> {
  return readChunks(() => guard.open(name), start);
}

/** The rows of one file, one by one (for the few places that read little). */
export async function* readFile(parts: Pick<FileParts, 'config' | 'guard'>, f: FileStat, start: number, line: number): AsyncGenerator<ReadItem> {
  for await (const batch of readFileBatches(parts, f, start, line)) yield* batch;
}

/**
 * The rows of one file from a byte offset, one array per chunk read. For CSV the header is read first (or
 * taken from `header` when resuming mid-file) and yielded once as an item whose `header` is set.
 */
export async function* readFileBatches(
  parts: Pick<FileParts, 'config' | 'guard'>,
  f: FileStat,
  start: number,
  line: number,
  header?: string[],
  layout?: JsonLayout,
): AsyncGenerator<ReadItem[]> {
  const cfg = parts.config;
  const chunks = fileChunks(parts.guard, f.name, start);
  const fail = (error: ObjectError): RowResult => ({ error });
  try {
    if (cfg.format === 'csv') {
      let hdr = start === 0 ? undefined : header;
      let anchorIdx = hdr ? hdr.indexOf(cfg.anchorColumn) : -1;
      // A row's fingerprint is its bytes' plus the header's: a renamed column changes every row.
      let prefix = hdr ? fingerprintPrefix(hdr) : '';
      for await (const recs of readCsvBatches(chunks, {
        delimiter: cfg.delimiter,
        encoding: cfg.encoding,
        startOffset: start,
        startLine: line,
        fingerprintSeed: 0,
      })) {
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
            const e: ObjectError = {
              code: 'object_error',
              objectType: cfg.objectType,
              message: `${f.name}:${rec.line}: ${rec.error}`,
              location: `${f.name}:${rec.line}`,
              retriable: false,
            };
            // Trust the anchor of a malformed row only when the row still splits into the header's fields and the
            // anchor field holds no quote (an unterminated quote leaves raw text behind).
            const a = rec.fields.length === names.length ? rec.fields[anchorIdx] : '';
            if (a && !a.includes('"')) e.anchor = a;
            items.push({ end: rec.end, nextLine, pfx: prefix, h1, h2, len, make: () => fail(e) });
            continue;
          }
          const fields = rec.fields;
          const at = rec.line;
          items.push({
            end: rec.end,
            nextLine,
            pfx: prefix,
            h1,
            h2,
            len,
            anchorHint: fields[anchorIdx] || undefined,
            make: () => csvRowToObject(names, fields, cfg, f.name, at),
          });
        }
        yield items;
      }
    } else {
      for await (const batch of readJsonBatches(chunks, {
        startOffset: start,
        startLine: line,
        layout: start === 0 ? undefined : layout,
        fingerprintSeed: 0,
      })) {
        const items: ReadItem[] = [];
        for (const rec of batch.records) {
          const nextLine = rec.nextLine ?? rec.line;
          const h1 = rec.h1!;
          const h2 = rec.h2!;
          const len = rec.end - rec.start;
          if (rec.error) {
            const e: ObjectError = {
              code: 'object_error',
              objectType: cfg.objectType,
              message: `${f.name}:${rec.line}: ${rec.error}`,
              location: `${f.name}:${rec.line}`,
              retriable: false,
            };
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

/** The page size asked for, up to the largest page; anything but a positive integer is `configuration_invalid`. */
export function clampPageSize(n: number): number {
  if (!Number.isInteger(n) || n < 1) throw new ConnectorError('configuration_invalid', `The page size must be a positive integer, not ${n}.`);
  return Math.min(n, MAX_PAGE);
}

/** What the snapshot keeps of an object read: its anchor, row hash, file, DN and container. */
export function rowState(o: ConnectorObject, file: string, fp: string): RowState {
  return { anchor: o.anchor, hash: fp, file, dn: o.dn ?? null, container: o.container ?? null };
}

/** The start of every CSV row fingerprint: the column names the row is read under. */
export function fingerprintPrefix(header: string[]): string {
  return createHash('sha256').update(JSON.stringify(header)).digest('base64url').slice(0, 8) + ':';
}

/** The per-object error for a second row with an anchor already read. */
export function duplicateError(o: ConnectorObject, file: string): ObjectError {
  return {
    anchor: o.anchor,
    objectType: o.objectType,
    code: 'object_error',
    message: `${file}: the anchor '${o.anchor}' appears more than once; only its first row is imported.`,
    location: file,
    retriable: false,
  };
}
