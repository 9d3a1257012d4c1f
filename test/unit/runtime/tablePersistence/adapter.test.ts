import { appendFileSync, existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { collectionFile, journalFile, STREAMED_FORMAT, StreamedTableAdapter, tableDataBytes } from '../../../../lib/runtime/tablePersistence/adapter';

/** The parts of LokiJS (untyped here) these tests use. */
interface Coll<T> {
  insert(doc: T | T[]): T;
  update(doc: T): void;
  remove(doc: T): void;
  get(id: number): T | null;
  maxId: number;
  ensureAllIndexes(force: boolean): void;
  count(): number;
  find(q?: object): T[];
  findOne(q: object): T | null;
  dirty: boolean;
}
interface Loki {
  addCollection<T = Record<string, unknown>>(name: string, options?: object): Coll<T>;
  getCollection<T = Record<string, unknown>>(name: string): Coll<T>;
  removeCollection(name: string): void;
  saveDatabase(cb: (err?: Error | null) => void): void;
  loadDatabase(options: object, cb?: (err?: unknown) => void): void;
  collections: unknown[];
}
const Loki = require('lokijs') as new (filename: string, options: object) => Loki;

/** The streamed adapter with real LokiJS (the one Azurite uses) on a temporary folder. */
describe('StreamedTableAdapter', () => {
  let dir: string;
  let dbname: string;
  beforeEach(() => {
    dir = mkdtempSync(path.join(os.tmpdir(), 'loki-streamed-'));
    dbname = path.join(dir, '__azurite_db_table__.json');
  });
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  const open = (adapter = new StreamedTableAdapter()) => {
    const db = new Loki(dbname, { adapter, autosave: false });
    adapter.watch(db);
    return { adapter, db };
  };
  const save = (db: Loki) => new Promise<void>((resolve, reject) => db.saveDatabase((err) => (err ? reject(err) : resolve())));
  const load = (db: Loki) => new Promise<void>((resolve, reject) => db.loadDatabase({}, (err) => (err ? reject(err as Error) : resolve())));

  it('writes a header and one file per collection, one document a line, and reads them back with their indices', async () => {
    const { db } = open();
    const t = db.addCollection<{ PartitionKey: string; RowKey: string; n: number }>('acct$users', { indices: ['PartitionKey', 'RowKey'] });
    for (let i = 0; i < 250; i++) t.insert({ PartitionKey: `p${i % 3}`, RowKey: String(i).padStart(4, '0'), n: i });
    db.addCollection('$TABLES_COLLECTION$').insert({ account: 'acct', table: 'users' });
    await save(db);

    const header = JSON.parse(readFileSync(dbname, 'utf8')) as { streamedFormat: string; collections: { name: string }[] };
    expect(header.streamedFormat).toBe(STREAMED_FORMAT);
    expect(header.collections.map((c) => c.name)).toEqual(['acct$users', '$TABLES_COLLECTION$']);
    const lines = readFileSync(collectionFile(dbname, 'acct$users'), 'utf8').trim().split('\n');
    expect(lines).toHaveLength(251); // the collection's own line, then its documents
    expect(tableDataBytes(dbname)).toBeGreaterThan(250 * 20);

    const { db: again } = open();
    await load(again);
    const users = again.getCollection<{ PartitionKey: string; RowKey: string; n: number }>('acct$users');
    expect(users.count()).toBe(250);
    expect(users.find({ PartitionKey: 'p1' })).toHaveLength(83);
    expect(users.findOne({ RowKey: '0249' })?.n).toBe(249);
    expect(again.getCollection('$TABLES_COLLECTION$').count()).toBe(1);
  });

  it('writes only the collections changed since the last save, and drops the files of removed ones', async () => {
    const { adapter, db } = open();
    db.addCollection('a').insert({ v: 1 });
    db.addCollection('b').insert({ v: 2 });
    await save(db);
    expect(adapter.lastSave).toMatchObject({ collectionsWritten: 2, collectionsRewritten: 2 });

    db.getCollection('b').insert({ v: 3 });
    await save(db);
    expect(adapter.lastSave).toMatchObject({ collectionsWritten: 1, collectionsRewritten: 0 });

    db.removeCollection('a');
    await save(db);
    expect(existsSync(collectionFile(dbname, 'a'))).toBe(false);
    expect(readdirSync(dir).sort()).toEqual(
      [path.basename(dbname), path.basename(collectionFile(dbname, 'b')), path.basename(journalFile(dbname, 'b', 1))].sort(),
    );

    const { db: again } = open();
    await load(again);
    expect(again.getCollection('a')).toBeNull();
    expect(
      again
        .getCollection<{ v: number }>('b')
        .find()
        .map((d) => d.v),
    ).toEqual([2, 3]);
  });

  it('appends inserts, updates and deletes to the journal, and a load applies them in order', async () => {
    const { adapter, db } = open();
    const t = db.addCollection<{ k: string; v: number; $loki?: number }>('acct$t', { indices: ['k'] });
    for (let i = 0; i < 100; i++) t.insert({ k: `k${i}`, v: i });
    await save(db);
    const base = readFileSync(collectionFile(dbname, 'acct$t'), 'utf8');

    const d5 = t.findOne({ k: 'k5' })!;
    t.update({ ...d5, v: 500 });
    t.remove(t.findOne({ k: 'k7' })!);
    t.insert({ k: 'new1', v: 1000 });
    await save(db);
    const n = t.insert({ k: 'new2', v: 2000 });
    t.update({ ...n, v: 2001 });
    t.remove(t.findOne({ k: 'new1' })!);
    t.remove(t.findOne({ k: 'k99' })!);
    await save(db);
    expect(adapter.lastSave).toMatchObject({ collectionsWritten: 1, collectionsRewritten: 0 });
    // The collection file was not written again: the changes are in the journal, two batches.
    expect(readFileSync(collectionFile(dbname, 'acct$t'), 'utf8')).toBe(base);
    const journal = readFileSync(journalFile(dbname, 'acct$t', 1), 'utf8')
      .trim()
      .split('\n');
    expect(journal.filter((l) => l === '{"$commit":true}')).toHaveLength(2);

    const { db: again } = open();
    await load(again);
    const u = again.getCollection<{ k: string; v: number; $loki?: number }>('acct$t');
    expect(u.count()).toBe(99);
    expect(u.findOne({ k: 'k5' })?.v).toBe(500);
    expect(u.findOne({ k: 'k7' })).toBeNull();
    expect(u.findOne({ k: 'k99' })).toBeNull();
    expect(u.findOne({ k: 'new1' })).toBeNull();
    expect(u.findOne({ k: 'new2' })?.v).toBe(2001);
    // Ids stay unique after the load, deleted ones included (new1 had 101, new2 has 102).
    expect(u.maxId).toBe(102);
    expect(u.insert({ k: 'after', v: 0 }).$loki).toBe(103);
    const ids = u.find().map((d) => d.$loki ?? 0);
    expect(ids).toEqual([...ids].sort((a, b) => a - b));
    expect(u.get(u.findOne({ k: 'k50' })!.$loki!)?.v).toBe(50);
  });

  it('ignores a batch the process died appending, and cuts it off before the next append', async () => {
    const { db } = open();
    const t = db.addCollection<{ v: number }>('t');
    t.insert({ v: 1 });
    await save(db);
    t.insert({ v: 2 });
    await save(db);
    const jfile = journalFile(dbname, 't', 1);
    const committed = statSync(jfile).size;
    appendFileSync(jfile, '{"v":3,"$loki":3,"meta":{}}\n{"v":4,"$lo');

    const { db: again } = open();
    await load(again);
    const u = again.getCollection<{ v: number }>('t');
    expect(u.find().map((d) => d.v)).toEqual([1, 2]);
    expect(statSync(jfile).size).toBe(committed);
    u.insert({ v: 5 });
    await save(again);
    const { db: third } = open();
    await load(third);
    expect(
      third
        .getCollection<{ v: number }>('t')
        .find()
        .map((d) => d.v),
    ).toEqual([1, 2, 5]);
  });

  it('writes a table whole, with a new journal, once its journal outgrows its collection file', async () => {
    const { adapter, db } = open(new StreamedTableAdapter({ compactRatio: 0.5, minCompactBytes: 1 }));
    const t = db.addCollection<{ k: number; v: string; $loki?: number }>('t');
    for (let i = 0; i < 10; i++) t.insert({ k: i, v: 'x' });
    await save(db);
    const rewritten: number[] = [];
    for (let round = 0; round < 3; round++) {
      for (const d of t.find()) t.update({ ...d, v: `round${round}` });
      await save(db);
      rewritten.push(adapter.lastSave!.collectionsRewritten);
    }
    // Round 0 appended (the journal is then over half the file); round 1 compacted (generation 2); round 2 appended.
    expect(rewritten).toEqual([0, 1, 0]);
    expect(existsSync(journalFile(dbname, 't', 1))).toBe(false);
    expect(existsSync(journalFile(dbname, 't', 2))).toBe(true);
    expect(readFileSync(collectionFile(dbname, 't'), 'utf8')).toContain('round1');
    const { db: again } = open();
    await load(again);
    expect(
      new Set(
        again
          .getCollection<{ v: string }>('t')
          .find()
          .map((d) => d.v),
      ),
    ).toEqual(new Set(['round2']));
  });

  it('writes a table whole once half its documents or more are deleted (a trimmed table), and not before', async () => {
    // A journal ratio that never triggers: only the shrinking can.
    const { adapter, db } = open(new StreamedTableAdapter({ compactRatio: 1000, minCompactBytes: 1 }));
    const t = db.addCollection<{ k: number; v: string; $loki?: number }>('t');
    for (let i = 0; i < 100; i++) t.insert({ k: i, v: 'y'.repeat(200) });
    await save(db);
    const fullSize = statSync(collectionFile(dbname, 't')).size;
    // 49 of 100 deleted: appended to the journal.
    for (const d of t.find({ k: { $lt: 49 } })) t.remove(d);
    await save(db);
    expect(adapter.lastSave!.collectionsRewritten).toBe(0);
    // The 50th: half the file's documents are gone, so the table is written whole, with the 50 left.
    t.remove(t.findOne({ k: 49 })!);
    await save(db);
    expect(adapter.lastSave!.collectionsRewritten).toBe(1);
    expect(statSync(collectionFile(dbname, 't')).size).toBeLessThan(fullSize * 0.55);
    expect(readFileSync(collectionFile(dbname, 't'), 'utf8').trim().split('\n')).toHaveLength(51);
    // The next deletions count against the new file.
    t.remove(t.findOne({ k: 50 })!);
    await save(db);
    expect(adapter.lastSave!.collectionsRewritten).toBe(0);
    const { db: again } = open();
    await load(again);
    expect(again.getCollection<{ k: number }>('t').count()).toBe(49);
  });

  it('loads the tables above deferBytes after the database, the one asked for first, and keeps their files while they load', async () => {
    const { db } = open();
    const small = db.addCollection<{ k: number }>('devstoreaccount1$small');
    small.insert({ k: 1 });
    const big = db.addCollection<{ k: number; v: string }>('devstoreaccount1$big');
    const bigger = db.addCollection<{ k: number; v: string }>('devstoreaccount1$bigger');
    for (let i = 0; i < 300; i++) big.insert({ k: i, v: 'z'.repeat(100) });
    for (let i = 0; i < 600; i++) bigger.insert({ k: i, v: 'z'.repeat(100) });
    const huge = db.addCollection<{ k: number; v: string }>('devstoreaccount1$huge');
    for (let i = 0; i < 900; i++) huge.insert({ k: i, v: 'z'.repeat(100) });
    await save(db);
    // A journal on the big one: its documents are the file's and the journal's.
    big.remove(big.findOne({ k: 0 })!);
    await save(db);

    const loaded: string[] = [];
    // The background load begins 300 ms after the load: the test asks for a table before that.
    const adapter = new StreamedTableAdapter({ deferBytes: 10_000, deferDelayMs: 300, onDeferredLoaded: (name) => loaded.push(name) });
    const again = new Loki(dbname, { adapter, autosave: false });
    adapter.watch(again);
    await load(again);
    const hugeLoaded = adapter.whenLoaded('devstoreaccount1$huge');
    // The small table is there at once; the two large ones are loading.
    expect(again.getCollection('devstoreaccount1$small').count()).toBe(1);
    expect(again.getCollection('devstoreaccount1$big')).toBeNull();
    expect(adapter.pending.tables).toBe(3);
    expect(adapter.whenLoaded('devstoreaccount1$small')).toBeUndefined();
    // A save while they load keeps them in the header and their files on disk.
    again.getCollection<{ k: number }>('devstoreaccount1$small').insert({ k: 2 });
    await save(again);
    expect(
      JSON.parse(readFileSync(dbname, 'utf8'))
        .collections.map((c: { name: string }) => c.name)
        .sort(),
    ).toEqual(['devstoreaccount1$big', 'devstoreaccount1$bigger', 'devstoreaccount1$huge', 'devstoreaccount1$small'].sort());
    expect(existsSync(collectionFile(dbname, 'devstoreaccount1$bigger'))).toBe(true);
    // Asked for, the largest comes first; then the others, smallest first.
    await hugeLoaded;
    expect(again.getCollection('devstoreaccount1$huge').count()).toBe(900);
    await adapter.whenLoaded('devstoreaccount1$bigger');
    expect(loaded).toEqual(['devstoreaccount1$huge', 'devstoreaccount1$big', 'devstoreaccount1$bigger']);
    expect(adapter.pending).toEqual({ tables: 0, bytes: 0 });
    const b = again.getCollection<{ k: number; v: string }>('devstoreaccount1$big');
    expect(b.count()).toBe(299);
    // Changed after its load: the change goes to its journal and survives a load of everything at once.
    b.insert({ k: 1000, v: 'late' });
    await save(again);
    const { db: third } = open();
    await load(third);
    expect(third.getCollection('devstoreaccount1$big').count()).toBe(300);
    expect(third.getCollection<{ k: number }>('devstoreaccount1$big').findOne({ k: 1000 })).not.toBeNull();
    expect(third.getCollection('devstoreaccount1$small').count()).toBe(2);
    expect(third.getCollection('devstoreaccount1$bigger').count()).toBe(600);
    expect(third.getCollection('devstoreaccount1$huge').count()).toBe(900);
  });

  it('starts a table deleted and created again between two saves afresh (its ids restart)', async () => {
    const { db } = open();
    const t = db.addCollection<{ v: number }>('acct$x');
    for (let i = 0; i < 5; i++) t.insert({ v: i });
    await save(db);
    db.removeCollection('acct$x');
    db.addCollection<{ v: number }>('acct$x').insert({ v: 100 });
    await save(db);
    const { db: again } = open();
    await load(again);
    expect(
      again
        .getCollection<{ v: number }>('acct$x')
        .find()
        .map((d) => d.v),
    ).toEqual([100]);
  });

  it('a document removed while a save writes it (whole or in the journal) stays removed, and its table stays readable by id', async () => {
    // `during` runs right after the adapter took its snapshot, while its files are being written.
    const adapter = new StreamedTableAdapter();
    const saveDatabase = adapter.saveDatabase.bind(adapter);
    let during: (() => void) | undefined;
    adapter.saveDatabase = (name, copy, cb) => {
      saveDatabase(name, copy, cb);
      const f = during;
      during = undefined;
      f?.();
    };
    const { db } = open(adapter);
    // A larger table first: its lines are still being written (the writer waits for the disk) when `during` runs.
    const big = db.addCollection<{ k: string; pad: string; $loki?: number }>('acct$big');
    for (let i = 0; i < 3000; i++) big.insert({ k: `b${i}`, pad: 'x'.repeat(2000) });
    const c = db.addCollection<{ k: string; v: number; $loki?: number }>('acct$work');
    for (let i = 0; i < 50; i++) c.insert({ k: `k${i}`, v: i });
    // The table is new: this save writes it whole; two documents go while it is being written.
    during = () => {
      c.remove(c.findOne({ k: 'k10' })!);
      c.remove(c.findOne({ k: 'k20' })!);
    };
    let saving = save(db);
    await saving;
    expect(during).toBeUndefined();
    // Journal batch: changed documents looked up, then one of them removed before its line is written.
    const k30 = c.findOne({ k: 'k30' })!;
    c.update({ ...k30, v: 300 });
    c.update({ ...c.findOne({ k: 'k31' })!, v: 310 });
    for (const d of big.find().slice(0, 2500)) big.update({ ...d, pad: 'y'.repeat(2000) });
    during = () => c.remove(c.findOne({ k: 'k31' })!);
    saving = save(db);
    await saving;
    expect(during).toBeUndefined();
    await save(db);
    for (const f of readdirSync(dir).filter((n) => n.includes('work'))) {
      for (const line of readFileSync(path.join(dir, f), 'utf8')
        .trim()
        .split('\n')
        .slice(f.includes('journal') ? 0 : 1)) {
        const o = JSON.parse(line) as Record<string, unknown>;
        expect(typeof o.$loki === 'number' || typeof o.$deleted === 'number' || o.$commit === true).toBe(true);
      }
    }
    const { db: again } = open();
    await load(again);
    const u = again.getCollection<{ k: string; v: number; $loki?: number }>('acct$work');
    expect(u.count()).toBe(47);
    expect(u.find().map((d) => d.k)).not.toEqual(expect.arrayContaining(['k10']));
    expect(u.findOne({ k: 'k20' })).toBeNull();
    expect(u.findOne({ k: 'k31' })).toBeNull();
    expect(u.findOne({ k: 'k30' })?.v).toBe(300);
    // Every document is found by its id (a document without one broke LokiJS' binary search), and updates work.
    for (const d of u.find()) expect(u.get(d.$loki!)).toBe(d);
    const k40 = u.findOne({ k: 'k40' })!;
    expect(() => u.update({ ...k40, v: 400 })).not.toThrow();
  });

  it('a collection file holding a document with no id (written by an earlier version while it was removed) loads without it', async () => {
    const { db } = open();
    const c = db.addCollection<{ k: string }>('acct$old');
    for (let i = 0; i < 5; i++) c.insert({ k: `k${i}` });
    await save(db);
    appendFileSync(collectionFile(dbname, 'acct$old'), JSON.stringify({ k: 'ghost' }) + '\n');
    const { db: again } = open();
    await load(again);
    const u = again.getCollection<{ k: string; $loki?: number }>('acct$old');
    expect(u.count()).toBe(5);
    expect(u.findOne({ k: 'ghost' })).toBeNull();
    for (const d of u.find()) expect(u.get(d.$loki!)).toBe(d);
  });

  it('keeps a change made while a save is under way for the next save', async () => {
    const { db } = open();
    const c = db.addCollection<{ v: number }>('c');
    c.insert({ v: 1 });
    const saving = save(db);
    c.insert({ v: 2 }); // after the snapshot, before the files are written
    await saving;
    expect(c.dirty).toBe(true);
    await save(db);
    const { db: again } = open();
    await load(again);
    expect(again.getCollection<{ v: number }>('c').count()).toBe(2);
  });

  it('reads a database in stock LokiJS single-file format and converts it at the first save, keeping the old file', async () => {
    const stock = new Loki(dbname, { persistenceMethod: 'fs' });
    stock.addCollection('acct$old', { indices: ['RowKey'] }).insert([{ RowKey: 'a' }, { RowKey: 'b' }]);
    await save(stock);
    expect(readFileSync(dbname, 'utf8')).not.toContain(STREAMED_FORMAT);

    const { adapter, db } = open();
    await load(db);
    expect(adapter.convertedFrom).toBe(dbname);
    expect(db.getCollection('acct$old').count()).toBe(2);
    await save(db);
    expect(adapter.convertedFrom).toBeUndefined();
    expect(readFileSync(dbname, 'utf8')).toContain(STREAMED_FORMAT);
    expect(readFileSync(`${dbname}.before-streamed`, 'utf8')).not.toContain(STREAMED_FORMAT);

    const { db: again } = open();
    await load(again);
    expect(again.getCollection<{ RowKey: string }>('acct$old').findOne({ RowKey: 'b' })).not.toBeNull();
  });

  it('starts empty when there is no file', async () => {
    const { db } = open();
    await load(db);
    expect(db.collections).toHaveLength(0);
  });
});
