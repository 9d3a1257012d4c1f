import { commitMeshWrite, currentFeedSeq, oldestFeedSeq, readFeedHolds } from '../../../lib/mesh/store';
import { startService, type ServiceUnderTest } from '../../support/service';
import { gid, meshObject } from '../../unit/mesh/meshSupport';
import { readFileSync } from 'node:fs';
import { fileConnector, folder, rule, runExport, runImport, writeCsv } from './syncSupport';
import { KEEP_LAST_ROWS } from '../../../lib/sync/run/feedTrim';

/**
 * The real service trims its mesh change feed in the background (lib/sync/run/feedTrim.ts), with a trim every
 * second and rows kept for 0.6 s: the rows written before its join index caught up stay until a run syncs the
 * index, then go; the last 50 stay; the process's hold is in the feed's table; and after a restart the read
 * model still loads from its snapshot (the row at its position was kept).
 * Real service over HTTP on Azurite; the other writer is this test process, through the mesh store's own API.
 */
jest.setTimeout(180_000);

let rt: ServiceUnderTest;
const dir = folder('ims-feed-trim-');

beforeAll(async () => {
  rt = await startService({ env: { Mesh__FeedTrimSeconds: '1', Mesh__FeedRetentionMinutes: '0.01', Mesh__FeedExportRetentionDays: '0.0001' } });
});

afterAll(async () => {
  await rt?.dispose();
});

async function until<T>(what: string, f: () => Promise<T | undefined>, deadlineMs = 20_000): Promise<T> {
  const deadline = Date.now() + deadlineMs;
  for (;;) {
    const v = await f();
    if (v !== undefined) return v;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 200));
  }
}

test('trims the feed once its readers are past the rows, keeps the last 50, and a restart still loads the snapshot', async () => {
  writeCsv(dir, 'users.csv', ['id', 'name'], [{ id: 'u1', name: 'ann' }]);
  const users = await fileConnector(rt, 'Trim users', dir);
  await rule(rt, { ruleType: 'ProjectionRule', connectorId: users, sourceAttribute: 'name', objectType: 'User' });
  expect(await runImport(rt, users)).toMatchObject({ status: 'Completed', stats: { objectsCreated: 1 } });

  // 80 rows from another writer: the service's read model applies them at once; its join index, at its next sync.
  for (let i = 0; i < 80; i++) await commitMeshWrite({ upserts: [meshObject(gid(100 + i), `other ${i}`)], deletes: [] });
  const written = await currentFeedSeq();
  await new Promise((r) => setTimeout(r, 3_000));
  // The join index still needs those rows: they stay.
  expect(await oldestFeedSeq()).toBe(1);

  // A run syncs the index; then the trim removes everything but the last 50 rows.
  writeCsv(
    dir,
    'users.csv',
    ['id', 'name'],
    [
      { id: 'u1', name: 'ann' },
      { id: 'u2', name: 'ben' },
    ],
  );
  expect(await runImport(rt, users)).toMatchObject({ status: 'Completed', stats: { objectsCreated: 1 } });
  const last = await currentFeedSeq();
  expect(last).toBeGreaterThan(written);
  await until('the trim', async () => ((await oldestFeedSeq()) === last - KEEP_LAST_ROWS + 1 ? true : undefined));
  expect(await rt.untilLogged(/Trimmed the mesh change feed: \d+ row\(s\) before position \d+ removed/)).toBeTruthy();
  // Its hold reaches the feed's end at a tick once its readers have applied the last row (the tick that trimmed
  // may have come just before the read model applied it).
  const holds = await until('the hold at the end', async () => {
    const h = await readFeedHolds();
    return h.length === 1 && h[0].seq === last ? h : undefined;
  });
  expect(holds).toEqual([expect.objectContaining({ seq: last })]);

  // The stop writes the snapshot at the feed's end, whose row is kept: the next start loads it.
  await rt.stop();
  await rt.untilLogged(/Wrote the mesh read model's snapshot: 82 object\(s\)/);
  const mark = rt.logMark();
  await rt.start();
  expect(await rt.untilLogged(/Read model loaded from its snapshot: 82 object\(s\)/, mark, 20_000)).toBeTruthy();
});

test('an export whose changes the trim removed looks at every object, and exports the change', async () => {
  const src = folder('ims-feed-trim-src-');
  const dst = folder('ims-feed-trim-dst-');
  const people = (renamed = '') => [0, 1, 2].map((i) => ({ id: `p${i}`, employeeId: `E${i}`, name: i === 1 && renamed ? renamed : `Person ${i}` }));
  writeCsv(src, 'hr.csv', ['id', 'employeeId', 'name'], people());
  writeCsv(dst, 'export.csv', ['uid', 'name'], []);
  const hr = await fileConnector(rt, 'Trim HR', src);
  await rule(rt, { ruleType: 'ProjectionRule', connectorId: hr, sourceAttribute: 'employeeId', objectType: 'Person' });
  for (const a of ['employeeId', 'name']) await rule(rt, { ruleType: 'FlowRule', connectorId: hr, sourceAttribute: a, targetAttribute: a, confidence: 50 });
  // Objects of a type of their own (the first test left other users in this mesh).
  const created = await rt.call('POST', 'connectors', {
    body: { name: 'Trim target', type: 'custom', config: { implementation: 'file', objectType: 'Person', settings: { path: dst, anchorColumn: 'uid' } } },
  });
  expect(created.status).toBe(201);
  const target = created.body.id as string;
  await rule(rt, { ruleType: 'FlowRule', connectorId: target, direction: 'outbound', sourceAttribute: 'employeeId', targetAttribute: 'uid' });
  await rule(rt, { ruleType: 'FlowRule', connectorId: target, direction: 'outbound', sourceAttribute: 'name', targetAttribute: 'name' });
  const rows = () => readFileSync(`${dst}/export.csv`, 'utf8').trim().split('\n').slice(1).sort();
  expect(await runImport(rt, hr)).toMatchObject({ status: 'Completed', stats: { objectsCreated: 3 } });
  expect(await runExport(rt, target)).toMatchObject({ status: 'Completed', stats: { objectsCreated: 3, errors: 0 } });
  expect(await runExport(rt, target)).toMatchObject({ status: 'Completed', stats: { objectsProcessed: 0 } });

  // A rename, then 60 more feed rows of other objects (another writer), older than the export retention.
  writeCsv(src, 'hr.csv', ['id', 'employeeId', 'name'], people('Renamed One'));
  expect(await runImport(rt, hr, { runType: 'DeltaImport' })).toMatchObject({ status: 'Completed', stats: { objectsUpdated: 1 } });
  for (let i = 0; i < 60; i++) await commitMeshWrite({ upserts: [meshObject(gid(500 + i), `filler ${i}`, {}, { objectType: 'Filler' })], deletes: [] });
  // A run syncs the join index past the other writer's rows; then the trim may take the rename's row.
  expect(await runImport(rt, hr, { runType: 'DeltaImport' })).toMatchObject({ status: 'Completed' });
  const mark = rt.logMark();
  // The rows must outlive the export retention (0.0001 days: 8.64 s) before a trim may take them: that time
  // passing is what this waits for. Then the trim's line (it runs every second; on a loaded machine, later).
  await new Promise((r) => setTimeout(r, 9_000));
  await rt.untilLogged(/Trimmed the mesh change feed/, mark, 60_000);

  const run = await runExport(rt, target);
  expect(run).toMatchObject({ status: 'Completed', stats: { objectsUpdated: 1, errors: 0 } });
  expect(await rt.untilLogged(/no longer holds the changes since its last export .*this export looks at every object/, mark)).toBeTruthy();
  expect(rows()).toEqual(['E0,Person 0', 'E1,Renamed One', 'E2,Person 2']);
});
