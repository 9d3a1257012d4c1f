import fs from 'node:fs';
import { once } from 'node:events';
import path from 'node:path';
import readline from 'node:readline';
import { applyJournal, findById, journalLines, readJournal, readJsonLines } from './journal';

/**
 * A LokiJS persistence adapter for Azurite's table database that never builds the database as one string and,
 * between compactions, writes only what changed.
 *
 * Stock Azurite saves the whole table database as ONE JSON string (LokiJS' fs adapter). V8 caps a string at
 * 2^29-24 characters (~512 MB): past that the save throws and Azurite's table process dies, losing every
 * write since the last good save. Rewriting every changed table whole at each save is no answer at scale
 * either: an import page touches every connector-space and mesh table, so each save rewrote nearly the whole
 * database and the cost of a save grew with the data, not with the change.
 *
 * Here Azurite's file name holds a small header (the database without its documents), and each collection
 * (one per table) has
 * - a collection file: its own settings on the first line, then one JSON document per line, written as a
 *   stream to a temporary name and renamed (a crash leaves the previous copy); its first line names
 * - its journal (./journal.ts): each save appends the documents inserted, updated or deleted since the last
 *   save, as a batch closed by a commit line.
 * A table is written whole ("compacted": new collection file, new journal) when it is new, when it was
 * deleted and created again, after a failed append, and when its journal has grown as large as its collection
 * file (at least {@link MIN_COMPACT_BYTES}); the last kind at most one table a save, so no save writes the
 * whole database. So every byte written at a save is paid for at most about twice, and a load reads at most
 * about twice the data. A load reads the collection file, then applies the journal's committed batches.
 *
 * It runs in LokiJS' "incremental" mode: LokiJS records the ids of the documents each write touches
 * (`dirtyIds`), hands over a shallow copy of the database and clears the dirty flags and ids before the save
 * (a change during the save is kept for the next one), and restores them when the save fails.
 *
 * A database written by stock Azurite (one JSON file with the documents inside) is read as it is and every
 * table is written whole at the first save; the old file is kept beside it as `<name>.before-streamed`.
 */

/** Marks the header of a streamed database (absent from stock Azurite's single file). */
export const STREAMED_FORMAT = 'identity-mesh-sync/loki-streamed/1';

/** A journal smaller than this is never a reason to compact (small, busy tables: runs, queues). */
export const MIN_COMPACT_BYTES = 4 * 1024 * 1024;

interface LokiCollectionLike {
  name: string;
  data: { $loki?: number }[];
  dirty: boolean;
  dirtyIds?: number[];
  maxId?: number;
  binaryIndices?: Record<string, { dirty: boolean; values: unknown[] }>;
  /** The journal that goes with a collection file (its first line). */
  $journal?: string;
  [k: string]: unknown;
}
interface LokiLike {
  collections: LokiCollectionLike[];
  serializeReplacer: (key: string, value: unknown) => unknown;
  [k: string]: unknown;
}
/** The parts of a LokiJS database {@link StreamedTableAdapter.watch} uses. */
export interface LokiDbLike {
  removeCollection(name: string): void;
  loadDatabase(options: object, callback?: (err?: unknown) => void): void;
  getCollection(name: string): { dirty: boolean; ensureAllIndexes(force: boolean): void } | null;
}

interface Header {
  streamedFormat: typeof STREAMED_FORMAT;
  db: Record<string, unknown>;
  collections: { name: string; file: string }[];
}

export interface SaveReport {
  ms: number;
  /** Tables written: appended to or rewritten. */
  collectionsWritten: number;
  /** Of those, tables written whole. */
  collectionsRewritten: number;
  bytesWritten: number;
}

/** A collection left for after the load. */
interface Deferred {
  file: string;
  bytes: number;
  waiting?: { promise: Promise<void>; resolve: () => void; reject: (e: Error) => void };
  failed?: Error;
}

/** The first line of a file (undefined: empty or missing). */
async function firstLineOf(file: string): Promise<string | undefined> {
  try {
    const rl = readline.createInterface({ input: fs.createReadStream(file), crlfDelay: Infinity });
    for await (const line of rl) {
      rl.close();
      return line;
    }
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
  }
  return undefined;
}

/** The parts of LokiJS {@link materialize} uses: its constructor builds a scratch database. */
type LokiScratch = { loadJSONObject(o: object, options: object): void; collections: unknown[] };

/**
 * Put a collection read after the load into `db`, built as LokiJS' own load builds one (`loadJSONObject`, in a
 * scratch database of the same class), with the database's incremental-save flag.
 */
function materialize(db: LokiDbLike, meta: LokiCollectionLike): void {
  const Ctor = (db as unknown as { constructor: new (name: string, options: object) => LokiScratch }).constructor;
  const scratch = new Ctor('deferred-load', { persistenceMethod: 'memory' });
  scratch.loadJSONObject({ collections: [meta], databaseVersion: 1.5 }, {});
  const coll = scratch.collections[0] as { isIncremental?: boolean };
  coll.isIncremental = (db as unknown as { isIncremental?: boolean }).isIncremental;
  (db as unknown as { loadCollection(c: unknown): void }).loadCollection(coll);
}

/** What this process knows of a collection's files. */
interface Persisted {
  /** The journal's file name (beside the header). */
  journal: string;
  baseBytes: number;
  /** Documents in the collection file (its lines after the first). */
  baseDocs: number;
  journalBytes: number;
}

/** File of a collection beside the header: `<header>.<encoded name>.jsonl` (names are account$table). */
export function collectionFile(dbname: string, collection: string): string {
  return `${dbname}.${encodeURIComponent(collection).replace(/\*/g, '%2A')}.jsonl`;
}

/** The journal file of generation `generation` of a collection's file. */
export function journalFile(dbname: string, collection: string, generation: number): string {
  return collectionFile(dbname, collection).replace(/\.jsonl$/, `.journal-${generation}.jsonl`);
}

const generationOf = (journal: string | undefined): number => Number(/\.journal-(\d+)\.jsonl$/.exec(journal ?? '')?.[1] ?? 0);

async function writeLines(out: fs.WriteStream, lines: Iterable<string>): Promise<number> {
  let bytes = 0;
  const failed = new Promise<never>((_, reject) => out.once('error', reject));
  failed.catch(() => undefined);
  for (const line of lines) {
    bytes += Buffer.byteLength(line) + 1;
    if (!out.write(line + '\n')) await Promise.race([once(out, 'drain'), failed]);
  }
  out.end();
  await Promise.race([once(out, 'close'), failed]);
  return bytes;
}

async function writeAtomically(file: string, lines: Iterable<string>): Promise<number> {
  const tmp = `${file}.tmp`;
  // Large chunks: fewer turns of the event loop per save, each still short (a few MB of JSON).
  const bytes = await writeLines(fs.createWriteStream(tmp, { highWaterMark: 4 * 1024 * 1024 }), lines);
  await fs.promises.rename(tmp, file);
  return bytes;
}

/**
 * The snapshot's documents, one a line. The snapshot holds the live document objects (LokiJS copies the array,
 * not the documents), and this runs while Azurite goes on: a document removed meanwhile has lost its `$loki`
 * and `meta` (LokiJS deletes them from the object). It is left out: its removal is in the next journal batch,
 * which could not name it otherwise. (Written, it came back at the next start with no id, and LokiJS' lookups
 * by id then failed for every other document of its table: each update of it answered 500.)
 */
function* documentLines(data: readonly { $loki?: unknown }[]): Generator<string> {
  for (const doc of data) if (typeof doc.$loki === 'number') yield JSON.stringify(doc);
}

/** One collection's part of a save. */
type Part =
  | { name: string; kind: 'clean' }
  | { name: string; kind: 'rewrite'; meta: string; data: object[]; journal: string }
  | { name: string; kind: 'append'; docs: { id: number; doc: object | undefined }[] };

export class StreamedTableAdapter {
  /** LokiJS reads this to choose the save protocol (see the class comment). */
  readonly mode = 'incremental';
  /** Set after loading a stock single-file database: the first save converts it. */
  convertedFrom: string | undefined;
  lastSave: SaveReport | undefined;
  lastError: { at: string; message: string } | undefined;
  private readonly persisted = new Map<string, Persisted>();
  /** Collections to write whole at the next save (deleted and created again, or a failed append). */
  private readonly rewrite = new Set<string>();
  private headerLine: string | undefined;
  /** Collections left for after the load (see `deferBytes`). */
  private readonly deferred = new Map<string, Deferred>();
  /** Entries of {@link deferred} not loaded and not failed. */
  private stillLoading = 0;
  /** Collections loaded with journal entries whose binary indices must be rebuilt (see {@link watch}). */
  private staleIndices: string[] = [];

  constructor(
    private readonly hooks: {
      onSave?: (report: SaveReport) => void;
      onError?: (err: Error) => void;
      /** A table is written whole when its journal reaches this many times its collection file (default 1)... */
      compactRatio?: number;
      /** ...and at least this many bytes (default {@link MIN_COMPACT_BYTES}). */
      minCompactBytes?: number;
      /**
       * Collections whose LokiJS binary indices are dropped at load, because nothing reads them (the embedded
       * Azurite's entity tables: ../azuriteTableIndex.ts replaces them). Default: none.
       */
      dropBinaryIndices?: (collection: string) => boolean;
      /**
       * Collections (not Azurite's own, `$...`) whose collection file holds more than this many bytes are
       * loaded after the rest of the database, one at a time, while the server already answers: a request
       * for one of them waits for it ({@link whenLoaded}). 0 or absent: every collection loads first.
       */
      deferBytes?: number;
      /** Tests: wait this long before the background load begins (requests meanwhile wait). */
      deferDelayMs?: number;
      onDeferredStart?: (collections: number, bytes: number) => void;
      onDeferredLoaded?: (collection: string, ms: number, bytes: number) => void;
      onDeferredDone?: (collections: number, ms: number) => void;
      /** A deferred collection could not be read: requests for it fail; its files are kept as they are. */
      onDeferredFailed?: (err: Error) => void;
    } = {},
  ) {}

  /** The collection is being removed from the database: a collection of that name made later starts afresh. */
  forgetCollection(name: string): void {
    this.rewrite.add(name);
  }

  /**
   * Call once, on the database this adapter persists, before it loads:
   * - every collection `db` removes is noted: a table deleted and created again between two saves starts its
   *   ids afresh, so its journal cannot go on;
   * - after a load, the binary indices of the collections a journal changed are rebuilt (LokiJS' adaptive
   *   indices are never rebuilt by a query, and the positions saved with the collection file are stale).
   */
  watch(db: LokiDbLike): void {
    const remove = db.removeCollection.bind(db);
    db.removeCollection = (name: string) => {
      this.forgetCollection(name);
      remove(name);
    };
    const load = db.loadDatabase.bind(db);
    db.loadDatabase = (options: object, callback?: (err?: unknown) => void) =>
      load(options, (err?: unknown) => {
        if (!err && this.deferred.size) {
          const go = () => void this.loadDeferred(db, this.dbname ?? '');
          if (this.hooks.deferDelayMs) setTimeout(go, this.hooks.deferDelayMs);
          else go();
        }
        const stale = this.staleIndices;
        this.staleIndices = [];
        if (!err) {
          for (const name of stale) {
            const coll = db.getCollection(name);
            if (!coll) continue;
            // The rebuild changes no document: the collection stays as clean as the load left it.
            const dirty = coll.dirty;
            coll.ensureAllIndexes(true);
            coll.dirty = dirty;
          }
        }
        callback?.(err);
      });
  }

  /** The database file this adapter last loaded. */
  private dbname: string | undefined;

  loadDatabase(dbname: string, callback: (result: object | Error | null) => void): void {
    this.dbname = dbname;
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
    this.headerLine = firstLine;
    const collections: LokiCollectionLike[] = [];
    const deferBytes = this.hooks.deferBytes ?? 0;
    for (const { name, file } of header.collections) {
      if (deferBytes > 0 && !name.startsWith('$')) {
        const later = await this.deferrable(dbname, name, file, deferBytes);
        if (later) continue;
      }
      collections.push(await this.readCollection(dbname, name, file));
    }
    return { ...header.db, collections };
  }

  /**
   * A collection whose files (collection file and journal) hold more than `deferBytes`: noted for the loader
   * that runs after the database has loaded ({@link watch}), with its files kept in the header and on disk.
   */
  private async deferrable(dbname: string, name: string, file: string, deferBytes: number): Promise<boolean> {
    const dir = path.dirname(dbname);
    const size = (f: string) =>
      fs.promises.stat(path.join(dir, f)).then(
        (st) => st.size,
        () => 0,
      );
    const baseBytes = await size(file);
    if (baseBytes <= deferBytes) return false;
    const meta = await firstLineOf(path.join(dir, file));
    const journal = (meta && (JSON.parse(meta) as { $journal?: string }).$journal) || path.basename(journalFile(dbname, name, 0));
    const journalBytes = await size(journal);
    this.deferred.set(name, { file, bytes: baseBytes + journalBytes });
    this.stillLoading++;
    this.persisted.set(name, { journal, baseBytes, baseDocs: 0, journalBytes });
    return true;
  }

  /** One collection read from its file and journal (a half-written batch at the journal's end is cut off). */
  private async readCollection(dbname: string, name: string, file: string): Promise<LokiCollectionLike> {
    const dir = path.dirname(dbname);
    let meta: LokiCollectionLike | undefined;
    const data: { $loki: number }[] = [];
    const baseBytes = await readJsonLines(path.join(dir, file), (line) => {
      if (line === '') return;
      if (meta === undefined) meta = JSON.parse(line) as LokiCollectionLike;
      else {
        const doc = JSON.parse(line) as { $loki?: unknown };
        // A document with no id was removed while an earlier version wrote the file (see documentLines).
        if (typeof doc.$loki === 'number') data.push(doc as { $loki: number });
      }
    });
    const baseDocs = data.length;
    if (!meta || meta.name !== name) throw new Error(`The table database file ${file} does not hold collection '${name}'.`);
    // Written by the previous version of this adapter (no journal): the next journal is generation 1.
    const journal = meta.$journal ?? path.basename(journalFile(dbname, name, 0));
    const j = await readJournal(path.join(dir, journal));
    if (j.committedBytes < j.fileBytes) await fs.promises.truncate(path.join(dir, journal), j.committedBytes);
    const applied = applyJournal(data, j.entries);
    meta.data = applied.data;
    meta.maxId = Math.max(meta.maxId ?? 0, applied.maxId);
    meta.dirtyIds = [];
    delete meta.$journal;
    if (this.hooks.dropBinaryIndices?.(name)) meta.binaryIndices = {};
    else if (j.entries.length && Object.keys(meta.binaryIndices ?? {}).length) this.staleIndices.push(name);
    this.persisted.set(name, { journal, baseBytes, baseDocs, journalBytes: j.committedBytes });
    return meta;
  }

  /**
   * Whether collection `name` is still to be loaded (see `deferBytes`): then a promise settled when it is in the
   * database (rejected if its files could not be read). The loader takes a collection asked for next.
   */
  whenLoaded(name: string): Promise<void> | undefined {
    const d = this.deferred.get(name);
    if (!d) return undefined;
    if (!d.waiting) {
      let resolve!: () => void;
      let reject!: (e: Error) => void;
      const promise = new Promise<void>((res, rej) => ((resolve = res), (reject = rej)));
      promise.catch(() => undefined);
      d.waiting = { promise, resolve, reject };
      if (d.failed) reject(d.failed);
    }
    return d.waiting.promise;
  }

  /** Collections still to be loaded, and the bytes of their files. */
  get pending(): { tables: number; bytes: number } {
    let bytes = 0;
    for (const d of this.deferred.values()) if (!d.failed) bytes += d.bytes;
    return { tables: this.loadingTables, bytes };
  }

  /**
   * How many collections are still to be loaded (not counting those that failed): read by every request of the
   * table store while any are (../launcher.ts), so kept as a count rather than counted.
   */
  get loadingTables(): number {
    return this.stillLoading;
  }

  /** Load the deferred collections into `db`, one at a time: those asked for first, then the smallest. */
  private async loadDeferred(db: LokiDbLike, dbname: string): Promise<void> {
    const started = Date.now();
    this.hooks.onDeferredStart?.(this.pending.tables, this.pending.bytes);
    let loaded = 0;
    for (;;) {
      const left = [...this.deferred].filter(([, d]) => !d.failed);
      if (!left.length) break;
      left.sort(([, a], [, b]) => Number(!a.waiting) - Number(!b.waiting) || a.bytes - b.bytes);
      const [name, d] = left[0];
      const t0 = Date.now();
      try {
        const meta = await this.readCollection(dbname, name, d.file);
        materialize(db, meta);
        this.deferred.delete(name);
        this.stillLoading--;
        loaded++;
        d.waiting?.resolve();
        this.hooks.onDeferredLoaded?.(name, Date.now() - t0, d.bytes);
      } catch (e) {
        const err = e instanceof Error ? e : new Error(String(e));
        d.failed = new Error(`Table '${name}' could not be loaded: ${err.message}`);
        this.stillLoading--;
        d.waiting?.reject(d.failed);
        this.hooks.onDeferredFailed?.(d.failed);
      }
    }
    if (loaded) this.hooks.onDeferredDone?.(loaded, Date.now() - started);
  }

  /** LokiJS' incremental protocol: `getLokiCopy()` snapshots the database and clears its dirty flags and ids. */
  saveDatabase(dbname: string, getLokiCopy: () => LokiLike, callback: (err?: Error | null) => void): void {
    const started = Date.now();
    const copy = getLokiCopy();
    const convert = this.convertedFrom;
    const forgotten = new Set(this.rewrite);
    this.rewrite.clear();
    const ratio = this.hooks.compactRatio ?? 1;
    const floor = this.hooks.minCompactBytes ?? MIN_COMPACT_BYTES;
    // At most one table is compacted a save: the one that would shed the most. A table is due when its journal
    // has grown as large as its collection file, or when it holds half the documents its file has or fewer (a
    // table mostly deleted, such as a trimmed change feed: its file would still be read whole at every load).
    let compact: string | undefined;
    let largest = 0;
    for (const c of copy.collections) {
      const p = this.persisted.get(c.name);
      if (!p || !(c.dirty || c.dirtyIds?.length)) continue;
      const grown = p.journalBytes >= Math.max(floor, ratio * p.baseBytes);
      const shrunk = p.baseBytes >= floor && p.baseDocs > 0 && c.data.length * 2 <= p.baseDocs;
      const shed = p.journalBytes + (shrunk ? p.baseBytes * (1 - c.data.length / p.baseDocs) : 0);
      if ((grown || shrunk) && shed > largest) {
        compact = c.name;
        largest = shed;
      }
    }
    // Everything a part needs is taken now, in the same turn as the snapshot of the documents.
    const parts: Part[] = copy.collections.map((c): Part => {
      const p = this.persisted.get(c.name);
      const ids = c.dirtyIds ?? [];
      const whole = convert !== undefined || !p || forgotten.has(c.name) || c.name === compact || (c.dirty && ids.length === 0);
      if (!whole) {
        if (!ids.length) return { name: c.name, kind: 'clean' };
        // Looked up now: a document removed before the lines are written loses its `$loki` (LokiJS deletes it
        // from the object), and the binary search by id over the snapshot would then miss others.
        const docs = [...new Set(ids)].sort((a, b) => a - b).map((id) => ({ id, doc: findById(c.data, id) }));
        return { name: c.name, kind: 'append', docs };
      }
      const journal = path.basename(journalFile(dbname, c.name, generationOf(p?.journal) + 1));
      const meta = JSON.stringify({ ...c, data: [], dirty: false, dirtyIds: [], idIndex: null, $journal: journal }, copy.serializeReplacer);
      return { name: c.name, kind: 'rewrite', meta, data: c.data, journal };
    });
    const db: Record<string, unknown> = JSON.parse(JSON.stringify({ ...copy, collections: [] }, copy.serializeReplacer)) as Record<string, unknown>;
    delete db.collections;
    const header: Header = {
      streamedFormat: STREAMED_FORMAT,
      db,
      collections: [
        ...parts.map((p) => ({ name: p.name, file: path.basename(collectionFile(dbname, p.name)) })),
        // Not loaded yet: their files stay as they are.
        ...[...this.deferred].filter(([name]) => !parts.some((p) => p.name === name)).map(([name, d]) => ({ name, file: d.file })),
      ],
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

  private async save(dbname: string, header: Header, parts: Part[], convert: string | undefined): Promise<Omit<SaveReport, 'ms'>> {
    const dir = path.dirname(dbname);
    let bytesWritten = 0;
    let collectionsWritten = 0;
    let collectionsRewritten = 0;
    for (const p of parts) {
      if (p.kind === 'clean') continue;
      collectionsWritten++;
      if (p.kind === 'rewrite') {
        const { meta, data } = p;
        let baseDocs = 0;
        const baseBytes = await writeAtomically(
          collectionFile(dbname, p.name),
          (function* () {
            yield meta;
            for (const line of documentLines(data)) {
              baseDocs++;
              yield line;
            }
          })(),
        );
        bytesWritten += baseBytes;
        collectionsRewritten++;
        // The new collection file names a journal not written yet; the old journal goes with the stale files.
        await fs.promises.rm(path.join(dir, p.journal), { force: true });
        this.persisted.set(p.name, { journal: p.journal, baseBytes, baseDocs, journalBytes: 0 });
        continue;
      }
      const persisted = this.persisted.get(p.name)!;
      try {
        const bytes = await writeLines(
          fs.createWriteStream(path.join(dir, persisted.journal), { flags: 'a', highWaterMark: 4 * 1024 * 1024 }),
          journalLines(p.docs),
        );
        persisted.journalBytes += bytes;
        bytesWritten += bytes;
      } catch (err) {
        // The journal may end in a half-written batch: write the table whole next time, with a new journal.
        this.rewrite.add(p.name);
        throw err;
      }
    }
    if (convert) {
      // Keep stock Azurite's file (a hard link: no copy) before the header takes its name.
      const backup = `${convert}.before-streamed`;
      await fs.promises.rm(backup, { force: true });
      await fs.promises.link(convert, backup).catch(() => fs.promises.copyFile(convert, backup));
    }
    const headerLine = JSON.stringify(header);
    if (convert || headerLine !== this.headerLine || !fs.existsSync(dbname)) {
      bytesWritten += await writeAtomically(dbname, [headerLine]);
      this.headerLine = headerLine;
    }
    if (convert) this.convertedFrom = undefined;
    for (const name of [...this.persisted.keys()]) if (!header.collections.some((c) => c.name === name)) this.persisted.delete(name);
    const keep = new Set(header.collections.map((c) => c.file));
    for (const p of this.persisted.values()) keep.add(p.journal);
    await this.removeStale(dbname, keep);
    return { collectionsWritten, collectionsRewritten, bytesWritten };
  }

  /** Files of collections (tables) deleted since the last save, and journals of earlier generations. */
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
