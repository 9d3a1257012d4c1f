import { randomBytes } from 'node:crypto';
import { MeshFeedReader } from '../../../lib/mesh/feed';
import { dropSharedIndex, MeshIndex, preloadInProgress, preloadSharedIndex, sharedIndex } from '../../../lib/mesh/joinIndex';
import { MeshReadModel } from '../../../lib/mesh/readModel';
import { commitMeshWrite, getMeshObject, getMeshObjects, iterateMesh, meshPartition, patchMeshLinks, readFeed, seqKey } from '../../../lib/mesh/store';
import { resetTableClients, table } from '../../../lib/storage/tables';
import type { MeshObject } from '../../../lib/mesh/model';
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

describe("the sync engine's join index from the read model's scan (one scan of the mesh at process start)", () => {
  const attrs = ['employeeId'];
  /** What an index answers for every object of the table: by anchor, by employeeId, type and anchor, incoming. */
  async function answers(ix: MeshIndex): Promise<string[]> {
    const all: MeshObject[] = [];
    for await (const page of iterateMesh()) all.push(...page);
    return all
      .map((o) => {
        const emp = o.attributes.employeeId?.value;
        return [
          o.id,
          ix.find(undefined, o.anchorValue.toLowerCase()).sort().join(','),
          typeof emp === 'string' ? ix.find('employeeId', emp.toLowerCase()).sort().join(',') : '-',
          JSON.stringify(ix.info(o.id)),
          ix.incoming(o.id).sort().join(','),
        ].join('|');
      })
      .sort();
  }

  beforeAll(async () => {
    const people = Array.from({ length: 30 }, (_, i) => meshObject(gid(900 + i), `p${i}`, { employeeId: `E${i}` }));
    // Each reports to the one before: incoming relationships to check.
    people.forEach((p, i) => {
      if (i > 0) p.relationships = [{ type: 'manager', targetId: gid(900 + i - 1), targetAnchor: `p${i - 1}`, targetType: 'User' }];
    });
    await commitMeshWrite({ upserts: people, deletes: [] });
  });

  test('a run after the load gets the index built from the scan, and it answers as one built by a scan of its own', async () => {
    dropSharedIndex();
    preloadSharedIndex(attrs);
    const reader = new MeshFeedReader(new MeshReadModel());
    await reader.load();
    const ix = await sharedIndex(attrs);
    expect(ix.builtFrom).toBe('read model scan');
    expect(ix.size).toBeGreaterThanOrEqual(30);
    expect(ix.find('employeeId', 'e7')).toEqual([gid(907)]);
    expect(ix.incoming(gid(907))).toEqual([gid(908)]);
    expect(await answers(ix)).toEqual(await answers(await MeshIndex.load(new Set(attrs))));
    // A rule that needs another attribute rebuilds it, as before.
    expect((await sharedIndex([...attrs, 'mail'])).builtFrom).toBe('scan');
  });

  test('a run that starts while the scan is going waits for it instead of scanning too', async () => {
    dropSharedIndex();
    preloadSharedIndex(attrs);
    const reader = new MeshFeedReader(new MeshReadModel(), { scanConcurrency: 1 });
    let loaded = false;
    const loading = reader.load().then(() => (loaded = true));
    // Ask once the scan has begun (the feed position is read first); one partition at a time, 16 round trips.
    while (!preloadInProgress() && !loaded) await new Promise((r) => setImmediate(r));
    expect(loaded).toBe(false);
    const asked = sharedIndex(attrs);
    await loading;
    const ix = await asked;
    expect(ix.builtFrom).toBe('read model scan');
    expect(await answers(ix)).toEqual(await answers(await MeshIndex.load(new Set(attrs))));
  });

  test('a run before the scan has begun, or after a failed scan, builds its own', async () => {
    dropSharedIndex();
    preloadSharedIndex(attrs);
    expect((await sharedIndex(attrs)).builtFrom).toBe('scan');
    // The read model's load still runs (the tap sees an index in place and leaves it).
    await new MeshFeedReader(new MeshReadModel()).load();
    expect((await sharedIndex(attrs)).builtFrom).toBe('scan');

    dropSharedIndex();
    preloadSharedIndex(attrs);
    const failing = new MeshFeedReader({
      loadPage: () => {
        throw new Error('the read model failed');
      },
      applyEntries: () => undefined,
    });
    await expect(failing.load()).rejects.toThrow('the read model failed');
    expect((await sharedIndex(attrs)).builtFrom).toBe('scan');
  });
});

test("an export's link write: a link column on the row and a link entry in the feed, read by every reader; a whole-state write folds it back", async () => {
  const a = meshObject(gid(900), 'linked-a', { mail: 'a@example.com' });
  const b = meshObject(gid(901), 'linked-b', { mail: 'b@example.com' });
  await commitMeshWrite({ upserts: [a, b], deletes: [] });
  const m = new MeshReadModel();
  const reader = new MeshFeedReader(m);
  await reader.load();
  const from = reader.position;
  const at = '2026-02-02T00:00:00.000Z';
  const written = await patchMeshLinks(
    [a.id, b.id],
    (d) => {
      if (d.id !== a.id) return false;
      d.links.cx = 'uid=a,dc=example';
      d.provisioned = ['cx'];
      d.updatedOn = at;
      return true;
    },
    'cx',
  );
  expect(written.map((d) => d.id)).toEqual([a.id]);
  // The row: its stored form as before, the links beside it.
  const row = await (await table('Mesh' + a.id[0])).getEntity<Record<string, unknown>>(meshPartition(a.id), a.id);
  expect(typeof row.lk).toBe('string');
  const got = (await getMeshObject(a.id))!;
  expect(got.links).toEqual({ cx: 'uid=a,dc=example' });
  expect(got.provisioned).toEqual(['cx']);
  expect(got.updatedOn).toBe(at);
  expect(got.attributes.mail.value).toBe('a@example.com');
  expect((await getMeshObjects([a.id, b.id])).get(b.id)!.links).toEqual({});
  const whole: MeshObject[] = [];
  for await (const page of iterateMesh()) whole.push(...page.filter((o) => o.id === a.id));
  expect(whole[0].links).toEqual({ cx: 'uid=a,dc=example' });
  const consolidated: MeshObject[] = [];
  for await (const page of iterateMesh(undefined, undefined, 'consolidated')) consolidated.push(...page.filter((o) => o.id === a.id));
  expect(consolidated[0].updatedOn).toBe(at);
  // The feed: one small link entry, not the whole state; the read model takes its updatedOn, keeps the object.
  const rows = await readFeed(from);
  const entries = rows.flatMap((r) => r.entries);
  expect(entries).toEqual([{ id: a.id, objectType: 'User', x: 'cx', link: { links: { cx: 'uid=a,dc=example' }, provisioned: ['cx'], updatedOn: at } }]);
  await reader.poll();
  expect(view(m)).toEqual(await tableView());
  expect(m.all.all.find((r) => r.id === a.id)!.updatedOn).toBe(at);
  // A whole-state write from the object as read carries the links in its stored form; the column goes.
  got.contributions.mail[0].v = 'a2@example.com';
  await commitMeshWrite({ upserts: [got], deletes: [] });
  const after = await (await table('Mesh' + a.id[0])).getEntity<Record<string, unknown>>(meshPartition(a.id), a.id);
  expect(after.lk).toBeUndefined();
  const again = (await getMeshObject(a.id))!;
  expect(again.links).toEqual({ cx: 'uid=a,dc=example' });
  expect(again.provisioned).toEqual(['cx']);
  // A link write after it, conditional on the ETag read: the links replaced, the other values kept.
  await patchMeshLinks([a.id], (d) => {
    delete d.links.cx;
    delete d.provisioned;
    return true;
  });
  const unlinked = (await getMeshObject(a.id))!;
  expect(unlinked.links).toEqual({});
  expect(unlinked.provisioned).toBeUndefined();
  await reader.poll();
  expect(view(m)).toEqual(await tableView());
});
