import { randomBytes } from 'node:crypto';
import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, readFileSync, readlinkSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { MeshFeedReader, tapNextMeshLoad } from '../../../lib/mesh/feed';
import type { MeshObject } from '../../../lib/mesh/model';
import { MeshReadModel } from '../../../lib/mesh/readModel';
import { snapshotFile, snapshotSource, writeSnapshot } from '../../../lib/mesh/readModelSnapshot';
import { commitMeshWrite, currentFeedSeq, feedRowTag } from '../../../lib/mesh/store';
import { resetTableClients } from '../../../lib/storage/tables';
import { gid, meshObject } from '../../unit/mesh/meshSupport';

/**
 * The read model's snapshot (lib/mesh/readModelSnapshot.ts) on Azurite: a load from it hands the model and the
 * scan's taps (the sync engine's join index) the same objects as a scan of the mesh, catches up with the feed
 * rows written after it, and is refused (a scan instead) when it is not this storage's, is ahead of the feed,
 * too far behind it, or cannot be read whole. The mesh is written with the store's own API, as the sync engine
 * commits it.
 */
jest.setTimeout(60_000);

const dir = mkdtempSync(path.join(os.tmpdir(), 'ims-snapshot-'));
const file = snapshotFile(dir);

beforeAll(() => {
  process.env.AzureWebJobsStorage = process.env.TEST_STORAGE_CONNECTION_STRING;
  process.env.Storage__TablePrefix = 's' + randomBytes(5).toString('hex');
  resetTableClients();
});

afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** The fields a scan hands on that the read model and the join index keep, sorted by id. */
const normal = (objects: MeshObject[]) =>
  objects
    .map((o) => ({
      id: o.id,
      objectType: o.objectType,
      anchorValue: o.anchorValue,
      createdOn: o.createdOn,
      updatedOn: o.updatedOn,
      attributes: o.attributes,
      relationships: o.relationships,
      pendingReferences: o.pendingReferences,
    }))
    .sort((a, b) => (a.id < b.id ? -1 : 1));

/** Load a fresh model (with a tap collecting what the load hands on); the snapshot in `file` when `withSnapshot`. */
async function load(withSnapshot: boolean): Promise<{ m: MeshReadModel; reader: MeshFeedReader; tapped: MeshObject[]; begun: number }> {
  const tapped: MeshObject[] = [];
  let begun = -1;
  tapNextMeshLoad({ begin: (seq) => (begun = seq), page: (objects) => tapped.push(...objects), end: () => undefined });
  const m = new MeshReadModel();
  const reader = new MeshFeedReader(m, withSnapshot ? { snapshot: snapshotSource(file) } : {});
  await reader.load();
  return { m, reader, tapped, begun };
}

const view = (m: MeshReadModel) => m.all.all.map((r) => `${r.anchorValue}|${r.id}|${r.objectType}`);

/** Everything the model holds of each object, by id (slots and intern ids differ between two loads; values do not). */
const detail = (m: MeshReadModel) =>
  [...m.records()]
    .map((r) => ({
      id: r.id,
      type: r.objectType,
      anchor: r.anchorValue,
      lower: r.anchorLower,
      created: r.createdOn,
      updated: r.updatedOn,
      attributes: r.names.map((n) => {
        const c = m.columns[n];
        const k = r.slot * 3;
        return [
          m.names.values[n],
          c.values[r.slot],
          c.folded[r.slot],
          c.present[r.slot],
          c.meta[k] === -1 ? null : m.sources.values[c.meta[k]],
          c.meta[k + 1],
          m.stamps.values[c.meta[k + 2]],
        ];
      }),
      relationships: r.relationships,
      pending: r.pending,
    }))
    .sort((a, b) => (a.id < b.id ? -1 : 1));

async function snapshotNow(m: MeshReadModel): Promise<number> {
  const seq = await currentFeedSeq();
  expect(await writeSnapshot(file, m, seq, (await feedRowTag(seq))!)).toBe(true);
  return seq;
}

const manager = (id: string, anchor: string) => ({ type: 'manager', targetId: id, targetAnchor: anchor, targetType: 'User' });

test('a load from the snapshot hands on the same objects as a scan, and catches up with the feed written after it', async () => {
  const boss = meshObject(gid(1), 'Boss', { department: 'Sales', mail: 'boss@corp.test', level: 7, active: true });
  const people = Array.from({ length: 2500 }, (_, i) =>
    meshObject(
      gid(100 + i),
      `Person ${i}`,
      { department: ['Sales', 'R&D', 'Support'][i % 3], groups: i % 4 ? ['g1', `g${i % 9}`] : [], note: i % 5 ? '' : 'x' },
      {
        relationships: i % 2 ? [manager(gid(1), 'Boss')] : [],
        src: i % 7 ? undefined : null,
      },
    ),
  );
  people[3].pendingReferences = [{ type: 'manager', value: 'nobody', by: 'mail' }];
  const group = meshObject(gid(2), 'Everyone', { description: 'all of them' }, { objectType: 'Group' });
  await commitMeshWrite({ upserts: [boss, group, ...people], deletes: [] });
  const scanned = await load(false);
  expect(scanned.m.size).toBe(2502);
  const at = await snapshotNow(scanned.m);

  // The same position: the same objects (ten whole pages of 250 and a last one of 2), nothing to catch up.
  const fromSnapshot = await load(true);
  expect(fromSnapshot.reader.fromSnapshot).toBe(true);
  expect(fromSnapshot.begun).toBe(at);
  expect(normal(fromSnapshot.tapped)).toEqual(normal(scanned.tapped));
  expect(fromSnapshot.tapped.find((o) => o.id === gid(103))?.pendingReferences).toEqual([{ type: 'manager', value: 'nobody', by: 'mail' }]);
  expect(view(fromSnapshot.m)).toEqual(view(scanned.m));
  expect(detail(fromSnapshot.m)).toEqual(detail(scanned.m));
  // A tap that reads only some attributes (the join index) gets only those from a snapshot.
  const few: MeshObject[] = [];
  tapNextMeshLoad({ attributes: new Set(['department']), begin: () => undefined, page: (objects) => few.push(...objects), end: () => undefined });
  await load(true);
  expect(normal(few)).toEqual(
    normal(scanned.tapped).map((o) => ({ ...o, attributes: o.attributes.department ? { department: o.attributes.department } : {} })),
  );

  // Written after it: an update, a rename, a delete and a new object. The load starts at the snapshot's
  // position and applies them; the model ends as a scan of the mesh now.
  await commitMeshWrite({
    upserts: [meshObject(gid(100), 'Person 0', { department: 'Finance' }), meshObject(gid(101), 'Renamed'), meshObject(gid(9000), 'Newcomer')],
    deletes: [{ id: gid(102), objectType: 'User' }],
  });
  const caughtUp = await load(true);
  expect(caughtUp.reader.fromSnapshot).toBe(true);
  expect(caughtUp.begun).toBe(at);
  expect(caughtUp.reader.position).toBe(await currentFeedSeq());
  const now = await load(false);
  expect(view(caughtUp.m)).toEqual(view(now.m));
  expect(detail(caughtUp.m)).toEqual(detail(now.m));
  const dept = (m: MeshReadModel, id: string) => {
    const r = m.get(id)!;
    const n = m.nameIds('department')[0];
    return m.columns[n].values[r.slot];
  };
  expect(dept(caughtUp.m, gid(100))).toBe('Finance');
  expect(caughtUp.m.get(gid(102))).toBeUndefined();
  expect(caughtUp.m.get(gid(9000))?.anchorValue).toBe('Newcomer');
  // Every load closed the file (Linux: this process's open files).
  expect(openSnapshotFiles()).toEqual([]);
});

function openSnapshotFiles(): string[] {
  if (!existsSync('/proc/self/fd')) return [];
  const links = readdirSync('/proc/self/fd').map((fd) => {
    try {
      return readlinkSync(`/proc/self/fd/${fd}`);
    } catch {
      return '';
    }
  });
  return links.filter((l) => l.startsWith(file));
}

test('a snapshot whose feed row differs (another storage), ahead of the feed or too far behind it is not used', async () => {
  const seeded = await load(false);
  await snapshotNow(seeded.m);
  const text = readFileSync(file, 'utf8');
  const [head, ...rest] = text.split('\n');
  const header = JSON.parse(head);
  const rewrite = (h: object) => writeFileSync(file, [JSON.stringify(h), ...rest].join('\n'));

  rewrite({ ...header, feedTag: 'W/"datetime\'2020-01-01T00%3A00%3A00.0000000Z\'"' });
  const otherStorage = await load(true);
  expect(otherStorage.reader.fromSnapshot).toBe(false);
  expect(view(otherStorage.m)).toEqual(view(seeded.m));

  rewrite({ ...header, seq: header.seq + 5 });
  expect((await load(true)).reader.fromSnapshot).toBe(false);

  // 50 feed rows behind is still caught up from the snapshot (the bound for a small mesh); 51 is not.
  rewrite(header);
  for (let i = 0; i < 50; i++) await commitMeshWrite({ upserts: [meshObject(gid(20000 + i), `Later ${i}`)], deletes: [] });
  const behind = await load(true);
  expect(behind.reader.fromSnapshot).toBe(true);
  expect(behind.m.get(gid(20049))?.anchorValue).toBe('Later 49');
  await commitMeshWrite({ upserts: [meshObject(gid(20050), 'One more')], deletes: [] });
  const tooFar = await load(true);
  expect(tooFar.reader.fromSnapshot).toBe(false);
  expect(view(tooFar.m)).toEqual(view((await load(false)).m));
  // Refused snapshots stay (the next write replaces them).
  expect(existsSync(file)).toBe(true);
});

test('a snapshot cut short fails its load and is deleted; the next load scans', async () => {
  const seeded = await load(false);
  await snapshotNow(seeded.m);
  const lines = readFileSync(file, 'utf8').split('\n');
  writeFileSync(file, lines.slice(0, 2).join('\n') + '\n');
  await expect(load(true)).rejects.toThrow('ends before its last line');
  expect(existsSync(file)).toBe(false);
  const next = await load(true);
  expect(next.reader.fromSnapshot).toBe(false);
  expect(view(next.m)).toEqual(view(seeded.m));

  writeFileSync(file, 'not json\n');
  const garbage = await load(true);
  expect(garbage.reader.fromSnapshot).toBe(false);
  expect(existsSync(file)).toBe(false);
  expect(openSnapshotFiles()).toEqual([]);
});

test('a write gives up, replacing nothing, when the model changes while it is written', async () => {
  const seeded = await load(false);
  await snapshotNow(seeded.m);
  const before = readFileSync(file, 'utf8');
  const seq = await currentFeedSeq();
  const writing = writeSnapshot(file, seeded.m, seq, (await feedRowTag(seq))!);
  // The first page is written after the header's write: a change applied meanwhile makes the file mixed.
  seeded.m.applyStates([{ id: gid(100), state: null }]);
  expect(await writing).toBe(false);
  expect(readFileSync(file, 'utf8')).toBe(before);
  expect(existsSync(`${file}.${process.pid}.tmp`)).toBe(false);
});

test('a write removes the temporary files of writes cut short by processes no longer running, not those of running ones', async () => {
  const seeded = await load(false);
  const gone = spawnSync(process.execPath, ['-e', '0']).pid!;
  const orphan = `${file}.${gone}.tmp`;
  const another = `${file}.${process.ppid}.tmp`;
  writeFileSync(orphan, 'cut short');
  writeFileSync(another, 'being written');
  await snapshotNow(seeded.m);
  expect(existsSync(orphan)).toBe(false);
  expect(existsSync(another)).toBe(true);
  rmSync(another);
});
