import { randomBytes } from 'node:crypto';
import { MeshFeedReader } from '../../../lib/mesh/feed';
import { dropSharedIndex, MeshIndex, sharedIndex, sharedIndexPosition } from '../../../lib/mesh/joinIndex';
import { MeshReadModel, readyModel, startMeshReadModel, stopMeshReadModel } from '../../../lib/mesh/readModel';
import {
  commitMeshWrite,
  currentFeedSeq,
  FeedGapError,
  forgetOwnRowsBefore,
  oldestFeedSeq,
  ownRowsThrough,
  PROCESS_WRITER,
  readFeedHolds,
  seqKey,
  writeFeedHold,
} from '../../../lib/mesh/store';
import { resetTableClients, table } from '../../../lib/storage/tables';
import { saveExportState } from '../../../lib/sync/run/state';
import { KEEP_LAST_ROWS, trimFeed } from '../../../lib/sync/run/feedTrim';
import { gid, meshObject } from '../../unit/mesh/meshSupport';

/**
 * The mesh change feed's trim (lib/sync/run/feedTrim.ts) on Azurite: what it removes and what it keeps (the last
 * rows, young rows, live holds, export positions within their retention), and how readers behind a trimmed
 * stretch react (the read model's reader and the join index find the gap; the join index skips a gap of only
 * its own process's rows). The clock is moved by the `now` option; the rows' times are Azurite's own.
 */
jest.setTimeout(120_000);

const HOUR = 3_600_000;
const DAY = 24 * HOUR;

beforeEach(() => {
  process.env.AzureWebJobsStorage = process.env.TEST_STORAGE_CONNECTION_STRING;
  process.env.Storage__TablePrefix = 't' + randomBytes(5).toString('hex');
  resetTableClients();
  dropSharedIndex();
  // Each test has its own storage (a new prefix): the positions this process wrote in another one do not count.
  forgetOwnRowsBefore(Number.MAX_SAFE_INTEGER);
});

/** `n` feed rows of this process (one small mesh write each). */
async function ownRows(n: number, from = 0): Promise<void> {
  for (let i = 0; i < n; i++) await commitMeshWrite({ upserts: [meshObject(gid(from + i), `o${from + i}`)], deletes: [] });
}

/** A feed row appended as another process does (its own writer id): counter and row in one transaction. */
async function foreignRow(id: string): Promise<number> {
  const client = await table('MeshFeed');
  const c = await client.getEntity<{ seq: number }>('f', '~seq');
  const seq = Number(c.seq) + 1;
  await client.submitTransaction([
    [
      'create',
      { partitionKey: 'f', rowKey: seqKey(seq), writer: 'another-process', n: 1, en: 1, e0: JSON.stringify([{ id, objectType: 'User', deleted: true }]) },
    ],
    ['update', { partitionKey: 'f', rowKey: '~seq', seq }, 'Replace', { etag: c.etag }],
  ]);
  return seq;
}

const trim = (o: Partial<Parameters<typeof trimFeed>[0]> = {}) => trimFeed({ retentionMs: HOUR, exportRetentionMs: 7 * DAY, now: Date.now() + 2 * HOUR, ...o });

test('removes the rows older than the retention, oldest first, and always keeps the last 50', async () => {
  await ownRows(80);
  const current = await currentFeedSeq();
  expect(current).toBe(80);
  // Young rows stay (the clock as it is).
  expect((await trim({ now: Date.now() })).deleted).toBe(0);
  expect(await oldestFeedSeq()).toBe(1);
  const r = await trim();
  expect(r.deleted).toBe(80 - KEEP_LAST_ROWS);
  expect(await oldestFeedSeq()).toBe(current - KEEP_LAST_ROWS + 1);
  // The counter and the rows kept are untouched; nothing more to do.
  expect(await currentFeedSeq()).toBe(current);
  expect((await trim()).deleted).toBe(0);
  // At most maxRows a tick.
  await ownRows(30, 100);
  expect((await trim({ maxRows: 10 })).deleted).toBe(10);
  expect(await oldestFeedSeq()).toBe(current - KEEP_LAST_ROWS + 11);
});

test("keeps the rows after a live process's hold and after an export's position; stale ones hold nothing", async () => {
  await ownRows(120);
  // Another process's hold at 20, written an hour and a half before the trim's clock: stale (retention 1 h).
  const holds = await table('MeshFeed');
  await holds.upsertEntity({ partitionKey: 'h', rowKey: 'gone-process', seq: 5, at: new Date(Date.now() - 10 * DAY).toISOString() }, 'Replace');
  await holds.upsertEntity({ partitionKey: 'h', rowKey: 'stale-process', seq: 20, at: new Date(Date.now() + 0.5 * HOUR).toISOString() }, 'Replace');
  // This process's hold at 30, fresh.
  await writeFeedHold(30, new Date(Date.now() + 2 * HOUR));
  let r = await trim();
  expect(r.keptFrom).toBe(30);
  expect(await oldestFeedSeq()).toBe(30);
  // A hold unrefreshed for longer than both retentions is removed; the stale one stays (ignored).
  expect((await readFeedHolds()).map((h) => h.writer).sort()).toEqual([PROCESS_WRITER, 'stale-process'].sort());

  // The hold moves on: an export that last considered position 40 keeps the rows after it...
  await writeFeedHold(100, new Date(Date.now() + 2 * HOUR));
  await saveExportState('target-1', 40, 'hash');
  r = await trim();
  expect(await oldestFeedSeq()).toBe(41);
  // ...for at most the export retention: past it they go (that export will look at every object).
  r = await trim({ now: Date.now() + 8 * DAY, ownPosition: 100 });
  expect(r.keptFrom).toBe(120 - KEEP_LAST_ROWS + 1);
  expect(await oldestFeedSeq()).toBe(120 - KEEP_LAST_ROWS + 1);
  expect(r.deleted).toBe(120 - KEEP_LAST_ROWS + 1 - 41);
  // The stale hold, now older than both retentions, is gone too.
  expect((await readFeedHolds()).map((h) => h.writer)).toEqual([PROCESS_WRITER]);
});

test("the read model's reader behind a trimmed stretch throws FeedGapError instead of stalling", async () => {
  await ownRows(5);
  const m = new MeshReadModel();
  const reader = new MeshFeedReader(m, { pollMs: 60_000 });
  await reader.load();
  const at = reader.position;
  await ownRows(70, 10);
  await trim();
  expect(await oldestFeedSeq()).toBeGreaterThan(at + 1);
  await expect(reader.poll()).rejects.toBeInstanceOf(FeedGapError);
  // Its position did not move past the gap: nothing was skipped silently.
  expect(reader.position).toBe(at);
});

test("the join index skips a trimmed stretch of its own process's rows, and is built again when another process's rows are gone", async () => {
  await ownRows(3);
  const ix = await sharedIndex(['mail']);
  expect(ix).toBeInstanceOf(MeshIndex);
  const applied = sharedIndexPosition()!.applied;
  // Rows this process wrote after the index's last sync: the index has them already.
  await ownRows(60, 10);
  expect(ownRowsThrough(applied)).toBe(await currentFeedSeq());
  expect(sharedIndexPosition()!.position).toBe(await currentFeedSeq());
  await trim();
  expect(await oldestFeedSeq()).toBeGreaterThan(applied + 1);
  await expect(ix.sync()).resolves.toBeUndefined();
  expect(await sharedIndex(['mail'])).toBe(ix);

  // Another process's rows after the index's position, trimmed: the index cannot know what they changed.
  const at = ix.applied;
  const first = await foreignRow(gid(9001));
  for (let i = 0; i < 55; i++) await foreignRow(gid(9100 + i));
  expect(ownRowsThrough(at)).toBeLessThan(first);
  await trim({ ownPosition: undefined });
  expect(await oldestFeedSeq()).toBeGreaterThan(first);
  await expect(ix.sync()).rejects.toBeInstanceOf(FeedGapError);
  // sharedIndex builds a new one from the mesh.
  const again = await sharedIndex(['mail']);
  expect(again).not.toBe(ix);
  expect(again.applied).toBe(await currentFeedSeq());
});

test("the process's read model, stalled behind a trimmed stretch, loads again and serves the mesh as it is", async () => {
  process.env.Mesh__ReadModelSnapshot = 'false';
  try {
    await ownRows(3);
    // No tick during the test: it polls only when this process appends.
    startMeshReadModel({ pollMs: 600_000 });
    const first = await readyModel();
    expect(first.size).toBe(3);
    // Another process's deletes of two of them, then rows enough to trim them away unseen.
    await foreignRow(gid(0));
    await foreignRow(gid(1));
    for (let i = 0; i < 55; i++) await foreignRow(gid(9000 + i));
    await trim();
    expect(await oldestFeedSeq()).toBeGreaterThan(5);
    // This process appends: its reader polls, finds the gap, and the model is loaded again from the mesh.
    await commitMeshWrite({ upserts: [meshObject(gid(50), 'new')], deletes: [] });
    const deadline = Date.now() + 20_000;
    let m = first;
    while (m === first && Date.now() < deadline) {
      await new Promise((r) => setTimeout(r, 100));
      m = await readyModel().catch(() => first);
    }
    expect(m).not.toBe(first);
    // The foreign rows only named objects: the mesh table still has the three and the new one (the deletes
    // were feed entries without mesh writes), and the reloaded model is the table.
    expect(m.size).toBe(4);
    expect(m.get(gid(50))?.anchorValue).toBe('new');
  } finally {
    await stopMeshReadModel();
    delete process.env.Mesh__ReadModelSnapshot;
  }
});
