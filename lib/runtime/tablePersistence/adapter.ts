import fs from 'node:fs';
import { once } from 'node:events';
import path from 'node:path';
import readline from 'node:readline';

/**
 * A LokiJS persistence adapter for Azurite's table database that never builds the database as one string.
 *
 * Stock Azurite saves the whole table database as ONE JSON string (LokiJS' fs adapter). V8 caps a string at
 * 2^29-24 characters (~512 MB): past that the save throws and Azurite's table process dies, losing every
 * write since the last good save. This adapter keeps Azurite's file name, but that file becomes a small
 * header (the database without its documents) and each collection (one per table) goes to a file of its own,
 * one JSON document per line, written as a stream. Only collections changed since the last save are
 * rewritten. Every file is written to a temporary name and renamed, so a crash leaves the previous copy.
 *
 * It runs in LokiJS' "incremental" mode, so LokiJS hands over a shallow copy and clears the dirty flags
 * before the save (a change during the save leaves its collection dirty for the next one) and restores them
 * when the save fails.
 *
 * A database written by stock Azurite (one JSON file with the documents inside) is read as it is and marked
 * dirty, so the first save converts it; the old file is kept beside it as `<name>.before-streamed`.
 */

/** Marks the header of a streamed database (absent from stock Azurite's single file). */
export const STREAMED_FORMAT = 'identity-mesh-sync/loki-streamed/1';

interface LokiCollectionLike {
  name: string;
  data: object[];
  dirty: boolean;
  [k: string]: unknown;
}
interface LokiLike {
  collections: LokiCollectionLike[];
  serializeReplacer: (key: string, value: unknown) => unknown;
  [k: string]: unknown;
}
interface Header {
  streamedFormat: typeof STREAMED_FORMAT;
  db: Record<string, unknown>;
  collections: { name: string; file: string }[];
}

export interface SaveReport {
  ms: number;
  collectionsWritten: number;
  bytesWritten: number;
}

/** File of a collection beside the header: `<header>.<encoded name>.jsonl` (names are account$table). */
export function collectionFile(dbname: string, collection: string): string {
  return `${dbname}.${encodeURIComponent(collection).replace(/\*/g, '%2A')}.jsonl`;
}

async function writeAtomically(file: string, lines: Iterable<string>): Promise<number> {
  const tmp = `${file}.tmp`;
  // Large chunks: fewer turns of the event loop per save, each still short (a few MB of JSON).
  const out = fs.createWriteStream(tmp, { highWaterMark: 4 * 1024 * 1024 });
  let bytes = 0;
  const failed = new Promise<never>((_, reject) => out.once('error', reject));
  failed.catch(() => undefined);
  for (const line of lines) {
    bytes += Buffer.byteLength(line) + 1;
    if (!out.write(line + '\n')) await Promise.race([once(out, 'drain'), failed]);
  }
  out.end();
  await Promise.race([once(out, 'close'), failed]);
  await fs.promises.rename(tmp, file);
  return bytes;
}

function* documentLines(data: object[]): Generator<string> {
  for (const doc of data) yield JSON.stringify(doc);
}

async function readLines(file: string, onLine: (line: string) => void): Promise<void> {
  const rl = readline.createInterface({ input: fs.createReadStream(file), crlfDelay: Infinity });
  for await (const line of rl) if (line !== '') onLine(line);
}

export class StreamedTableAdapter {
  /** LokiJS reads this to choose the save protocol (see the class comment). */
  readonly mode = 'incremental';
  /** Set after loading a stock single-file database: the first save converts it. */
  convertedFrom: string | undefined;
  lastSave: SaveReport | undefined;
  lastError: { at: string; message: string } | undefined;

  constructor(private readonly hooks: { onSave?: (report: SaveReport) => void; onError?: (err: Error) => void } = {}) {}

  loadDatabase(dbname: string, callback: (result: object | Error | null) => void): void {
    this.load(dbname).then(callback, (err: unknown) => callback(err instanceof Error ? err : new Error(String(err))));
  }

  private async load(dbname: string): Promise<object | null> {
    let firstLine: string | undefined;
    try {
      const rl = readline.createInterface({ input: fs.createReadStream(dbname), crlfDelay: Infinity });
      for await (const line of rl) {
        firstLine = line;
        break;
      }
      rl.close();
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') return null;
      throw err;
    }
    if (firstLine === undefined || firstLine.trim() === '') return null;
    const parsed = firstLine.includes(STREAMED_FORMAT) ? (JSON.parse(firstLine) as Partial<Header>) : undefined;
    if (parsed?.streamedFormat !== STREAMED_FORMAT) {
      // Stock Azurite's single file (it could only be written below the string ceiling, so it reads whole).
      const db = JSON.parse(await fs.promises.readFile(dbname, 'utf8')) as LokiLike;
      this.convertedFrom = dbname;
      return db;
    }
    const header = parsed as Header;
    const collections: LokiCollectionLike[] = [];
    for (const { name, file } of header.collections) {
      let meta: LokiCollectionLike | undefined;
      const data: object[] = [];
      await readLines(path.join(path.dirname(dbname), file), (line) => {
        if (meta === undefined) meta = JSON.parse(line) as LokiCollectionLike;
        else data.push(JSON.parse(line) as object);
      });
      if (!meta || meta.name !== name) throw new Error(`The table database file ${file} does not hold collection '${name}'.`);
      meta.data = data;
      collections.push(meta);
    }
    return { ...header.db, collections };
  }

  /** LokiJS' incremental protocol: `getLokiCopy()` snapshots the database and clears its dirty flags. */
  saveDatabase(dbname: string, getLokiCopy: () => LokiLike, callback: (err?: Error | null) => void): void {
    const started = Date.now();
    const copy = getLokiCopy();
    const convert = this.convertedFrom;
    // The collection headers (indices, ids) are taken now, in the same turn as the snapshot of the documents.
    const parts = copy.collections.map((c) => {
      const dirty = c.dirty || convert !== undefined || !fs.existsSync(collectionFile(dbname, c.name));
      const meta = dirty ? JSON.stringify({ ...c, data: [], dirty: false }, copy.serializeReplacer) : '';
      return { name: c.name, data: c.data, dirty, meta };
    });
    const db: Record<string, unknown> = JSON.parse(JSON.stringify({ ...copy, collections: [] }, copy.serializeReplacer)) as Record<string, unknown>;
    delete db.collections;
    const header: Header = {
      streamedFormat: STREAMED_FORMAT,
      db,
      collections: parts.map((p) => ({ name: p.name, file: path.basename(collectionFile(dbname, p.name)) })),
    };
    this.save(dbname, header, parts, convert).then(
      (r) => {
        this.lastSave = { ms: Date.now() - started, ...r };
        this.lastError = undefined;
        this.hooks.onSave?.(this.lastSave);
        callback(null);
      },
      (e: unknown) => {
        const err = e instanceof Error ? e : new Error(String(e));
        this.lastError = { at: new Date().toISOString(), message: err.message };
        this.hooks.onError?.(err);
        callback(err);
      },
    );
  }

  private async save(
    dbname: string,
    header: Header,
    parts: { name: string; data: object[]; dirty: boolean; meta: string }[],
    convert: string | undefined,
  ): Promise<{ collectionsWritten: number; bytesWritten: number }> {
    let bytesWritten = 0;
    let collectionsWritten = 0;
    for (const p of parts) {
      if (!p.dirty) continue;
      const meta = p.meta;
      bytesWritten += await writeAtomically(
        collectionFile(dbname, p.name),
        (function* () {
          yield meta;
          yield* documentLines(p.data);
        })(),
      );
      collectionsWritten++;
    }
    if (convert) {
      // Keep stock Azurite's file (a hard link: no copy) before the header takes its name.
      const backup = `${convert}.before-streamed`;
      await fs.promises.rm(backup, { force: true });
      await fs.promises.link(convert, backup).catch(() => fs.promises.copyFile(convert, backup));
    }
    bytesWritten += await writeAtomically(dbname, [JSON.stringify(header)]);
    if (convert) this.convertedFrom = undefined;
    await this.removeStale(dbname, new Set(header.collections.map((c) => c.file)));
    return { collectionsWritten, bytesWritten };
  }

  /** Files of collections (tables) deleted since the last save. */
  private async removeStale(dbname: string, keep: Set<string>): Promise<void> {
    const dir = path.dirname(dbname);
    const prefix = `${path.basename(dbname)}.`;
    for (const f of await fs.promises.readdir(dir)) {
      if (f.startsWith(prefix) && (f.endsWith('.jsonl') || f.endsWith('.jsonl.tmp')) && !keep.has(f)) {
        await fs.promises.rm(path.join(dir, f), { force: true });
      }
    }
  }
}

/** Bytes of the table database on disk (header and collection files). */
export function tableDataBytes(dbname: string): number {
  const dir = path.dirname(dbname);
  const base = path.basename(dbname);
  let total = 0;
  let names: string[] = [];
  try {
    names = fs.readdirSync(dir);
  } catch {
    return 0;
  }
  for (const f of names) {
    if (f !== base && !(f.startsWith(`${base}.`) && f.endsWith('.jsonl'))) continue;
    try {
      total += fs.statSync(path.join(dir, f)).size;
    } catch {
      // removed meanwhile
    }
  }
  return total;
}
