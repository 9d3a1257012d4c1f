import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { collectionFile, STREAMED_FORMAT, StreamedTableAdapter, tableDataBytes } from '../../../../lib/runtime/tablePersistence/adapter';

/** The parts of LokiJS (untyped here) these tests use. */
interface Coll<T> {
  insert(doc: T | T[]): void;
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
  loadDatabase(options: object, cb: (err?: Error | null) => void): void;
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

  const open = (adapter = new StreamedTableAdapter()) => ({ adapter, db: new Loki(dbname, { adapter, autosave: false }) });
  const save = (db: Loki) => new Promise<void>((resolve, reject) => db.saveDatabase((err) => (err ? reject(err) : resolve())));
  const load = (db: Loki) => new Promise<void>((resolve, reject) => db.loadDatabase({}, (err) => (err ? reject(err) : resolve())));

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

  it('rewrites only the collections changed since the last save, and drops the files of removed ones', async () => {
    const { adapter, db } = open();
    db.addCollection('a').insert({ v: 1 });
    db.addCollection('b').insert({ v: 2 });
    await save(db);
    expect(adapter.lastSave?.collectionsWritten).toBe(2);

    db.getCollection('b').insert({ v: 3 });
    await save(db);
    expect(adapter.lastSave?.collectionsWritten).toBe(1);

    db.removeCollection('a');
    await save(db);
    expect(existsSync(collectionFile(dbname, 'a'))).toBe(false);
    expect(readdirSync(dir).sort()).toEqual([path.basename(dbname), path.basename(collectionFile(dbname, 'b'))].sort());

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
