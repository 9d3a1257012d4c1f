import fs from 'node:fs';

/**
 * A table's change journal: the lines appended to it since its collection file was last written whole, and the
 * code that reads files of JSON lines fast.
 *
 * A journal is a file of JSON lines in batches, one batch per save: a document as it now is (it carries its
 * LokiJS id, `$loki`: an insert or an update), `{"$deleted": id}` (the document is gone), and a closing
 * `{"$commit": true}`. A batch without its commit line (the process died while appending it) is ignored, and
 * cut off the file before the next append.
 */

export interface Committed {
  /** Entries of the committed batches, in order. */
  entries: JournalEntry[];
  /** Byte length of the committed part (the file is cut there when it is longer). */
  committedBytes: number;
  /** Bytes of the whole file as read. */
  fileBytes: number;
}

export type JournalEntry = { doc: { $loki: number } } | { deleted: number };

const NEWLINE = 0x0a;

/**
 * Calls `onLine` with each line of `file` (without its newline; empty lines skipped) and its byte length
 * including the newline. Reads in large chunks and splits on the newline byte: faster than readline, and the
 * byte offsets are exact. A last line without a newline is passed too.
 */
export async function readJsonLines(file: string, onLine: (line: string, bytes: number) => void): Promise<number> {
  const stream = fs.createReadStream(file, { highWaterMark: 8 * 1024 * 1024 });
  let rest: Buffer | undefined;
  let total = 0;
  for await (const chunk of stream as AsyncIterable<Buffer>) {
    total += chunk.length;
    const buf = rest ? Buffer.concat([rest, chunk]) : chunk;
    let start = 0;
    for (let nl = buf.indexOf(NEWLINE, start); nl !== -1; nl = buf.indexOf(NEWLINE, start)) {
      if (nl > start) onLine(buf.toString('utf8', start, nl), nl - start + 1);
      else onLine('', 1);
      start = nl + 1;
    }
    rest = start < buf.length ? buf.subarray(start) : undefined;
  }
  if (rest && rest.length) onLine(rest.toString('utf8'), rest.length);
  return total;
}

/** The committed batches of a journal (none when the file does not exist). */
export async function readJournal(file: string): Promise<Committed> {
  const out: Committed = { entries: [], committedBytes: 0, fileBytes: 0 };
  let batch: JournalEntry[] = [];
  let offset = 0;
  try {
    out.fileBytes = await readJsonLines(file, (line, bytes) => {
      offset += bytes;
      if (line === '') return;
      let o: Record<string, unknown>;
      try {
        o = JSON.parse(line) as Record<string, unknown>;
      } catch {
        // A line cut short by a crash: only the batch it belongs to can hold it, and that batch has no commit.
        batch = [];
        return;
      }
      if (o.$commit === true) {
        for (const e of batch) out.entries.push(e);
        batch = [];
        out.committedBytes = offset;
      } else if (typeof o.$deleted === 'number') batch.push({ deleted: o.$deleted });
      else if (typeof o.$loki === 'number') batch.push({ doc: o as { $loki: number } });
    });
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return out;
    throw err;
  }
  return out;
}

/**
 * `data` (documents in ascending `$loki` order, as LokiJS keeps them) with the journal's entries applied, still
 * in that order, and the highest id the journal names (deleted ones too: LokiJS must never hand them out again).
 */
export function applyJournal<T extends { $loki: number }>(data: T[], entries: readonly JournalEntry[]): { data: T[]; maxId: number } {
  let maxId = 0;
  if (entries.length === 0) return { data, maxId };
  const at = new Map<number, number>();
  for (let i = 0; i < data.length; i++) at.set(data[i].$loki, i);
  const out: (T | null)[] = data;
  for (const e of entries) {
    const id = 'doc' in e ? e.doc.$loki : e.deleted;
    if (id > maxId) maxId = id;
    const i = at.get(id);
    if ('deleted' in e) {
      if (i !== undefined) out[i] = null;
      at.delete(id);
    } else if (i !== undefined) out[i] = e.doc as T;
    else {
      at.set(id, out.length);
      out.push(e.doc as T);
    }
  }
  const kept = out.filter((d): d is T => d !== null);
  for (let i = 1; i < kept.length; i++) {
    if (kept[i - 1].$loki >= kept[i].$loki) {
      kept.sort((a, b) => a.$loki - b.$loki);
      break;
    }
  }
  return { data: kept, maxId };
}

/**
 * The journal lines of one save: each id's document as the snapshot held it, or its deletion; then the commit.
 * A document the snapshot held that has lost its `$loki` since (removed while the lines were being written) is
 * left out: its removal is in the next batch.
 */
export function* journalLines(docs: Iterable<{ id: number; doc: object | undefined }>): Generator<string> {
  for (const { id, doc } of docs) {
    if (!doc) yield `{"$deleted":${id}}`;
    else if (typeof (doc as { $loki?: unknown }).$loki === 'number') yield JSON.stringify(doc);
  }
  yield '{"$commit":true}';
}

/** The document with LokiJS id `id` in `data` (ascending by `$loki`), by binary search. */
export function findById<T extends { $loki?: number }>(data: readonly T[], id: number): T | undefined {
  let lo = 0;
  let hi = data.length - 1;
  while (lo <= hi) {
    const mid = (lo + hi) >>> 1;
    const v = data[mid].$loki ?? 0;
    if (v === id) return data[mid];
    if (v < id) lo = mid + 1;
    else hi = mid - 1;
  }
  return undefined;
}
