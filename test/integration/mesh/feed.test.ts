import { randomBytes } from 'node:crypto';
import { MeshFeedReader } from '../../../lib/mesh/feed';
import { MeshReadModel } from '../../../lib/mesh/readModel';
import { commitMeshWrite, iterateMesh, readFeed, seqKey } from '../../../lib/mesh/store';
import { resetTableClients, table } from '../../../lib/storage/tables';
import { gid, meshObject } from '../../unit/mesh/meshSupport';

/**
 * The feed reader on Azurite: load (counter, scan, catch-up) and tailing, including writes that race the load.
 * The mesh is written with the store's own API (lib/mesh/store.ts), as the sync engine commits it.
 */
jest.setTimeout(60_000);

beforeAll(() => {
  process.env.AzureWebJobsStorage = process.env.TEST_STORAGE_CONNECTION_STRING;
  process.env.Storage__TablePrefix = 'f' + randomBytes(5).toString('hex');
  resetTableClients();
});

const view = (m: MeshReadModel) => m.all.all.map((r) => `${r.anchorValue}|${r.id}`);

async function tableView(): Promise<string[]> {
  const out: { a: string; id: string }[] = [];
  for await (const page of iterateMesh()) for (const o of page) out.push({ a: o.anchorValue, id: o.id });
  return out
    .sort((x, y) => (x.a.toLowerCase() < y.a.toLowerCase() ? -1 : x.a.toLowerCase() > y.a.toLowerCase() ? 1 : x.id < y.id ? -1 : 1))
    .map((x) => `${x.a}|${x.id}`);
}

test('load, then polls apply upserts, renames and deletes in order', async () => {
  await commitMeshWrite({ upserts: [meshObject(gid(1), 'b'), meshObject(gid(2), 'a')], deletes: [] });
  const m = new MeshReadModel();
  const reader = new MeshFeedReader(m);
  await reader.load();
  expect(view(m)).toEqual([`a|${gid(2)}`, `b|${gid(1)}`]);
  const at = reader.position;
  await commitMeshWrite({ upserts: [meshObject(gid(3), 'c'), meshObject(gid(1), 'z')], deletes: [{ id: gid(2), objectType: 'User' }] });
  await reader.poll();
  expect(reader.position).toBeGreaterThan(at);
  expect(view(m)).toEqual([`c|${gid(3)}`, `z|${gid(1)}`]);
  expect(view(m)).toEqual(await tableView());
});

test('writes racing the load converge to the table (states are whole objects, applied in feed order)', async () => {
  const writes = (async () => {
    for (let i = 0; i < 20; i++) {
      await commitMeshWrite({
        upserts: Array.from({ length: 20 }, (_, k) => meshObject(gid(100 + ((i * 7 + k) % 60)), `n${i}-${k}`, { round: i })),
        deletes: i % 3 === 0 ? [{ id: gid(100 + ((i * 11) % 60)), objectType: 'User' }] : [],
      });
    }
  })();
  const m = new MeshReadModel();
  const reader = new MeshFeedReader(m, { scanConcurrency: 2, batchRows: 3 });
  await reader.load();
  await writes;
  await reader.poll();
  expect(view(m)).toEqual(await tableView());
});

test('tailing picks up a write without an explicit poll', async () => {
  const m = new MeshReadModel();
  const reader = new MeshFeedReader(m, { pollMs: 50 });
  await reader.load();
  reader.startTailing();
  try {
    await commitMeshWrite({ upserts: [meshObject(gid(500), 'tailed')], deletes: [] });
    const deadline = Date.now() + 10_000;
    while (!m.get(gid(500)) && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20));
    expect(m.get(gid(500))?.anchorValue).toBe('tailed');
  } finally {
    await reader.stop();
  }
});

test("a tailing reader takes this process's own rows from memory, and a reader that did not keep them reads the table", async () => {
  const m = new MeshReadModel();
  const reader = new MeshFeedReader(m, { pollMs: 60_000 });
  await reader.load();
  reader.startTailing();
  try {
    const seq = await commitMeshWrite({ upserts: [meshObject(gid(600), 'from-memory')], deletes: [] });
    // Overwrite the stored row: only a reader that takes the kept row still sees the original state.
    const feed = await table('MeshFeed');
    const row = await feed.getEntity<Record<string, unknown>>('f', seqKey(seq));
    await feed.updateEntity({ ...row, partitionKey: 'f', rowKey: seqKey(seq), e0: String(row.e0).replace('from-memory', 'from-table') }, 'Replace');
    await reader.poll();
    expect(m.get(gid(600))?.anchorValue).toBe('from-memory');
    // Applied, so released: read again, the row comes from the table.
    const old = (await readFeed(seq - 1, { ownFromMemory: true }))[0];
    expect((old.entries[0] as { state: { anchorValue: string } }).state.anchorValue).toBe('from-table');
  } finally {
    await reader.stop();
  }
});

test('without a tailing reader nothing is kept: the rows are read from the table', async () => {
  const seq = await commitMeshWrite({ upserts: [meshObject(gid(700), 'kept?')], deletes: [] });
  const feed = await table('MeshFeed');
  const row = await feed.getEntity<Record<string, unknown>>('f', seqKey(seq));
  await feed.updateEntity({ ...row, partitionKey: 'f', rowKey: seqKey(seq), e0: String(row.e0).replace('kept?', 'table') }, 'Replace');
  const rows = await readFeed(seq - 1, { ownFromMemory: true });
  expect((rows[0].entries[0] as { state: { anchorValue: string } }).state.anchorValue).toBe('table');
});

test("a tailing reader applies its own process's commits at once, not at its next tick", async () => {
  const m = new MeshReadModel();
  const reader = new MeshFeedReader(m, { pollMs: 60_000 });
  await reader.load();
  reader.startTailing();
  try {
    await commitMeshWrite({ upserts: [meshObject(gid(800), 'right-away')], deletes: [] });
    const deadline = Date.now() + 10_000;
    while (!m.get(gid(800)) && Date.now() < deadline) await new Promise((r) => setTimeout(r, 10));
    expect(m.get(gid(800))?.anchorValue).toBe('right-away');
  } finally {
    await reader.stop();
  }
});
