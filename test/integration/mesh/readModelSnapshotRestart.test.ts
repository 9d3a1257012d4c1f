import { existsSync, rmSync, statSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { commitMeshWrite } from '../../../lib/mesh/store';
import { startService, type ServiceUnderTest } from '../../support/service';
import { gid, meshObject } from '../../unit/mesh/meshSupport';
import { fileConnector, folder, rule, runImport, writeCsv } from '../sync/syncSupport';

/**
 * A restarted service loads its mesh read model from the snapshot it wrote when it stopped
 * (lib/mesh/readModelSnapshot.ts), catches up with what was written to the mesh while it was down, and its
 * sync engine's join index (built from the same load) still joins: a re-import updates, it does not create.
 * Real service over HTTP on Azurite, with imports through the file connector.
 */
jest.setTimeout(180_000);

const H = ['id', 'name', 'dept'];
let rt: ServiceUnderTest;
const dir = folder('ims-snapshot-restart-');
let users = '';
const file = () => path.join(rt.dataDir, 'mesh', 'read-model.snapshot');

beforeAll(async () => {
  rt = await startService();
});

afterAll(async () => {
  await rt?.dispose();
});

// eslint-disable-next-line @typescript-eslint/no-explicit-any
async function untilList(done: (body: any) => boolean, deadlineMs = 10_000): Promise<any> {
  const deadline = Date.now() + deadlineMs;
  for (;;) {
    const res = await rt.call('GET', 'mesh/objects?take=200');
    if (res.status === 200 && done(res.body)) return res.body;
    if (Date.now() > deadline) throw new Error(`the mesh list did not settle: ${res.status} ${res.text}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}
const anchors = (body: { items: { anchorValue: string }[] }) => body.items.map((i) => i.anchorValue).sort();

test('the snapshot written at stop is loaded at the next start, caught up, and the engine still joins', async () => {
  writeCsv(dir, 'users.csv', H, [
    { id: 'u1', name: 'ann', dept: 'Sales' },
    { id: 'u2', name: 'ben', dept: 'R&D' },
    { id: 'u3', name: 'cy', dept: 'Support' },
  ]);
  users = await fileConnector(rt, 'Snapshot users', dir);
  await rule(rt, { ruleType: 'ProjectionRule', connectorId: users, sourceAttribute: 'name', objectType: 'User' });
  await rule(rt, { ruleType: 'FlowRule', connectorId: users, sourceAttribute: 'dept', targetAttribute: 'department', confidence: 50 });
  expect(await runImport(rt, users)).toMatchObject({ status: 'Completed', stats: { objectsCreated: 3 } });
  await untilList((b) => b.totalCount === 3);
  // The first start scanned the (empty) mesh: there was no snapshot yet. The stop writes one.
  expect(await rt.untilLogged(/Read model loaded: 0 object/)).toMatch(/Read model loaded: 0 object/);
  await rt.stop();
  expect(existsSync(file())).toBe(true);
  await rt.untilLogged(/Wrote the mesh read model's snapshot: 3 object\(s\) at feed position \d+/);
  expect(statSync(file()).mode & 0o777).toBe(0o600);

  // Written to the mesh while the service is down (as another engine instance on the same storage would).
  await commitMeshWrite({ upserts: [meshObject(gid(7), 'written while stopped', { department: 'Elsewhere' })], deletes: [] });

  let mark = rt.logMark();
  await rt.start();
  const body = await untilList((b) => b.totalCount === 4);
  expect(anchors(body)).toEqual(['ann', 'ben', 'cy', 'written while stopped']);
  expect(await rt.untilLogged(/Read model loaded from its snapshot: 4 object\(s\)/, mark)).toMatch(
    /Loading the mesh read model from its snapshot \(3 object\(s\) at feed position \d+, 1 row\(s\) to catch up\)/,
  );

  // The join index came from the same load: the same rows join the objects they made; a change flows.
  writeCsv(dir, 'users.csv', H, [
    { id: 'u1', name: 'ann', dept: 'Finance' },
    { id: 'u2', name: 'ben', dept: 'R&D' },
    { id: 'u3', name: 'cy', dept: 'Support' },
  ]);
  expect(await runImport(rt, users)).toMatchObject({ status: 'Completed', stats: { objectsCreated: 0, objectsUpdated: 1 } });
  const found = await rt.call('POST', 'mesh/objects/search', { body: { criteria: [{ attributeName: 'department', operator: 'equals', value: 'finance' }] } });
  expect(found.status).toBe(200);
  expect(found.body).toMatchObject({ totalCount: 1, items: [{ anchorValue: 'ann' }] });

  // Off: the load scans and the stop writes nothing.
  await rt.stop();
  const written = statSync(file()).mtimeMs;
  mark = rt.logMark();
  await rt.start({ Mesh__ReadModelSnapshot: 'false' });
  await untilList((b) => b.totalCount === 4);
  expect(await rt.untilLogged(/Read model loaded: 4 object/, mark)).not.toMatch(/snapshot/);
  await rt.stop();
  expect(statSync(file()).mtimeMs).toBe(written);
  await rt.start();
});

test('the snapshot written once the feed is quiet survives a crash: the next start loads it', async () => {
  await rt.stop();
  let mark = rt.logMark();
  await rt.start({ Mesh__ReadModelSnapshotIdleSeconds: '1' });
  writeCsv(dir, 'users.csv', H, [
    { id: 'u1', name: 'ann', dept: 'Finance' },
    { id: 'u2', name: 'ben', dept: 'Legal' },
    { id: 'u3', name: 'cy', dept: 'Support' },
  ]);
  expect(await runImport(rt, users)).toMatchObject({ status: 'Completed', stats: { objectsUpdated: 1 } });
  await rt.untilLogged(/Wrote the mesh read model's snapshot: 4 object\(s\)/, mark, 20_000);
  await rt.kill();
  mark = rt.logMark();
  await rt.start();
  const found = await rt.call('POST', 'mesh/objects/search', { body: { criteria: [{ attributeName: 'department', operator: 'equals', value: 'legal' }] } });
  expect(found.body).toMatchObject({ totalCount: 1, items: [{ anchorValue: 'ben' }] });
  expect(await rt.untilLogged(/Read model loaded from its snapshot: 4 object/, mark)).toMatch(
    /Loading the mesh read model from its snapshot \(4 object\(s\) at feed position \d+, 0 row\(s\) to catch up\)/,
  );
});

test('a snapshot that cannot be written is logged and tried again later; the service goes on', async () => {
  await rt.stop();
  // The snapshot's folder is a file: every write fails.
  rmSync(path.dirname(file()), { recursive: true, force: true });
  writeFileSync(path.dirname(file()), 'not a folder');
  let mark = rt.logMark();
  await rt.start({ Mesh__ReadModelSnapshotIdleSeconds: '1' });
  await rt.untilLogged(/Read model loaded: 4 object/, mark);
  writeCsv(dir, 'users.csv', H, [
    { id: 'u1', name: 'ann', dept: 'Finance' },
    { id: 'u2', name: 'ben', dept: 'Legal' },
    { id: 'u3', name: 'cy', dept: 'Facilities' },
  ]);
  expect(await runImport(rt, users)).toMatchObject({ status: 'Completed', stats: { objectsUpdated: 1 } });
  const failed = /Writing the mesh read model's snapshot failed \([^)]*\); it is tried again in 10 minutes, and at stop\./g;
  await rt.untilLogged(new RegExp(failed.source), mark, 20_000);
  // Quiet and still behind, but not tried again at every check (every 0.5 s here).
  await new Promise((r) => setTimeout(r, 3000));
  expect(rt.logsSince(mark).match(failed)).toHaveLength(1);
  const found = await rt.call('POST', 'mesh/objects/search', {
    body: { criteria: [{ attributeName: 'department', operator: 'equals', value: 'facilities' }] },
  });
  expect(found.body).toMatchObject({ totalCount: 1, items: [{ anchorValue: 'cy' }] });
  // The stop tries once more, fails the same way, and stops.
  mark = rt.logMark();
  await rt.stop();
  expect((await rt.untilLogged(/Host stopped/, mark)).match(failed)).toHaveLength(1);
  rmSync(path.dirname(file()));
  await rt.start();
});
