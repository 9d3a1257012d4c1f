import { randomBytes } from 'node:crypto';
import { mkdtempSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { Client } from 'ldapts';
import { projectedMeshId } from '../../../lib/mesh/model';
import { purgeAllTombstones } from '../../../lib/mesh/tombstones';
import { readCsObjects } from '../../../lib/sync/space/connectorSpace';
import { startPostgres, type Postgres } from '../../support/postgres';
import { serverAvailable } from '../../support/servers';
import { startService, USERS, type ServiceUnderTest, SECOND_ADMIN } from '../../support/service';
import { startSlapd, type Slapd } from '../../support/slapd';
import { ldapConnector, stopSlapdSuite } from '../ldap/e2eSupport';
import { SlapdFixture } from '../ldap/ldapFixture';
import { rule, runExport, runImport, outboundRule } from './syncSupport';

/**
 * Deleted mesh objects end to end (the running service over HTTP, a real PostgreSQL HR database as the source,
 * a real slapd as the target): a person removed from HR becomes a tombstone (listed with state=deleted, left
 * out of the list and search, its detail, explain and history still answer); an Admin restores it and the
 * directory provisions it again; a leaver restored inside the target's graceDays keeps the same entry (no
 * delete was sent); a rehire inside the retention (the same HR row back, or a new row matched by the join rule
 * on employeeId) gets back the same meshObjectId; after the purge the tombstone is gone and never matches.
 * A second service with a tiny retention shows the background purge.
 */
jest.setTimeout(300_000);

const available = serverAvailable('slapd') && serverAvailable('postgres');
const d = available ? describe : describe.skip;
const DAY = 86_400_000;
/** One secrets key for the suite's two engine processes on one storage (each would make its own in Development). */
const SECRETS_KEY = randomBytes(32).toString('base64');

interface HrRow {
  id: string;
  employee_id: string;
  given_name: string;
  sn: string;
  status: string;
}
const person = (n: number, givenName: string): HrRow => ({
  id: `h${n}`,
  employee_id: `E2${String(n).padStart(2, '0')}`,
  given_name: givenName,
  sn: 'Stone',
  status: 'active',
});

/** An HR database (table hr, anchor `id`) and the SQL connector over it, with the rules of an HR source. */
async function hrSource(
  pg: Postgres,
  rt: ServiceUnderTest,
  rows: HrRow[],
): Promise<{ id: string; db: string; insert: (r: HrRow) => Promise<void>; remove: (id: string) => Promise<void> }> {
  const db = await pg.createDatabase(`tomb${process.pid}_${Math.random().toString(36).slice(2, 8)}`);
  await pg.query('CREATE TABLE hr (id text PRIMARY KEY, employee_id text NOT NULL, given_name text, sn text, status text)', [], db);
  const insert = async (r: HrRow) => {
    await pg.query(
      'INSERT INTO hr (id, employee_id, given_name, sn, status) VALUES ($1, $2, $3, $4, $5)',
      [r.id, r.employee_id, r.given_name, r.sn, r.status],
      db,
    );
  };
  for (const r of rows) await insert(r);
  const res = await rt.call('POST', 'connectors', {
    body: {
      name: `HR ${db}`,
      type: 'sql',
      config: {
        dialect: 'postgres',
        host: pg.host,
        port: pg.port,
        database: db,
        user: pg.user,
        password: pg.password,
        objectType: 'User',
        anchorColumn: 'id',
        fullImportQuery: 'SELECT id, employee_id AS "employeeId", given_name AS "givenName", sn, status FROM hr',
        deletionThreshold: { objects: 100, percent: 100 },
      },
    },
  });
  if (res.status !== 201) throw new Error(`create HR connector: ${res.status} ${res.text}`);
  const id = res.body.id as string;
  // A rehire may come back with a new HR row: the join rule on employeeId finds the person (or the tombstone).
  await rule(rt, { ruleType: 'JoinRule', connectorId: id, sourceAttribute: 'employeeId', targetAttribute: 'employeeId' });
  await rule(rt, { ruleType: 'ProjectionRule', connectorId: id, sourceAttribute: 'employeeId', objectType: 'User' });
  for (const a of ['employeeId', 'givenName', 'sn', 'status'])
    await rule(rt, { ruleType: 'FlowRule', connectorId: id, sourceAttribute: a, targetAttribute: a, confidence: 50 });
  return { id, db, insert, remove: async (rowId) => void (await pg.query('DELETE FROM hr WHERE id = $1', [rowId], db)) };
}

d('deleted mesh objects: tombstones, restore, rehire, purge (PostgreSQL HR, slapd)', () => {
  let pg: Postgres;
  let slapd: Slapd;
  let rt: ServiceUnderTest;
  let f: SlapdFixture;
  let admin: Client;
  let hr: Awaited<ReturnType<typeof hrSource>>;
  let dir = '';
  const dnOf = (key: string) => `uid=${key},ou=Engineering,${f.base}`;
  const entry = async (key: string) =>
    (await admin.search(dnOf(key), { scope: 'base', attributes: ['*', 'entryUUID'] }).catch(() => ({ searchEntries: [] }))).searchEntries[0];
  const hrImport = async () => expect(await runImport(rt, hr.id, { runType: 'FullImport' })).toMatchObject({ status: 'Completed', stats: { errors: 0 } });
  const meshIdOf = (n: number) => projectedMeshId(hr.id, `h${n}`);
  const deletedIds = async () =>
    ((await rt.call('GET', 'mesh/objects?state=deleted&take=200')).body.items as { meshObjectId: string }[]).map((i) => i.meshObjectId);
  const liveIds = async () => ((await rt.call('GET', 'mesh/objects?take=200')).body.items as { meshObjectId: string }[]).map((i) => i.meshObjectId);
  async function deprovisioning(setting: Record<string, unknown>): Promise<void> {
    const current = await rt.call('GET', `connectors/${dir}`);
    const res = await rt.call('PUT', `connectors/${dir}`, { body: { name: current.body.name, config: { ...current.body.config, deprovisioning: setting } } });
    await approvedBySecondAdmin(res);
  }
  /** A shorter grace or a harsher action loosens a guard rail: another Admin approves it (docs/safety.md). */
  async function approvedBySecondAdmin(res: { status: number; body: { changeId?: string } }): Promise<void> {
    if (res.status === 202) {
      const second = SECOND_ADMIN;
      expect((await rt.call('POST', `config/changes/${res.body.changeId}/approve`, { as: second })).status).toBe(200);
    } else expect(res.status).toBe(200);
  }

  beforeAll(async () => {
    [pg, slapd] = await Promise.all([startPostgres(), startSlapd()]);
    rt = await startService({ env: { Engine__InstanceName: 'tomb-a', Secrets__Key: SECRETS_KEY } });
    f = await new SlapdFixture(slapd).init();
    admin = await f.client();
    hr = await hrSource(pg, rt, [person(1, 'Ann'), person(2, 'Bob'), person(3, 'Cy'), person(4, 'Dee'), person(5, 'Eve'), person(6, 'Fay')]);
    dir = await ldapConnector(
      rt,
      'Directory',
      f.config({
        provisioningCondition: 'source.status == "active"',
        deletionThreshold: { objects: 100, percent: 100 },
        exportDnTemplate: '"uid=" + dnEscape(source.uid) + ",ou=Engineering," + baseDN',
      }),
    );
    const out = outboundRule(rt, dir, { confidence: 50 });
    await out('employeeId', 'uid');
    await out('employeeId', 'employeeNumber');
    await out('givenName', 'givenName');
    await out('sn', 'sn');
    await out('givenName', 'cn', 'object.givenName + " " + object.sn');
    await rule(rt, { ruleType: 'JoinRule', connectorId: dir, sourceAttribute: 'employeeNumber', targetAttribute: 'employeeId' });

    expect(await runImport(rt, hr.id, { runType: 'FullImport' })).toMatchObject({ status: 'Completed', stats: { objectsCreated: 6, errors: 0 } });
    expect(await runExport(rt, dir)).toMatchObject({ status: 'Completed', stats: { objectsCreated: 6, errors: 0 } });
    expect(await runImport(rt, dir)).toMatchObject({ status: 'Completed', stats: { errors: 0 } });
  });
  afterAll(async () => {
    await stopSlapdSuite({ admin, rt, f, slapd });
    await pg?.stop();
  });

  test('an employee removed from HR becomes a tombstone: listed with state=deleted, left out of list and search; detail, explain and history answer', async () => {
    const id = meshIdOf(1);
    expect((await rt.call('GET', `mesh/objects/${id}`)).body).toMatchObject({ meshObjectId: id, state: 'active' });
    await hr.remove('h1');
    const before = Date.now();
    expect(await runImport(rt, hr.id, { runType: 'FullImport' })).toMatchObject({ status: 'Completed', stats: { objectsDeleted: 1, errors: 0 } });

    const list = await rt.call('GET', 'mesh/objects?take=200');
    expect(list.status).toBe(200);
    expect(list.body.items.map((i: { meshObjectId: string }) => i.meshObjectId)).not.toContain(id);
    expect(list.body.items.every((i: { state: string }) => i.state === 'active')).toBe(true);
    expect(list.body.totalCount).toBe(5);
    const search = await rt.call('POST', 'mesh/objects/search', { body: { anchorSearch: 'E201' } });
    expect(search.body).toMatchObject({ items: [], totalCount: 0 });

    const deleted = await rt.call('GET', 'mesh/objects?state=deleted', { role: 'Viewer' });
    expect(deleted.status).toBe(200);
    expect(deleted.body).toMatchObject({ totalCount: 1, skip: 0, take: 50 });
    const item = deleted.body.items[0];
    expect(item).toMatchObject({
      meshObjectId: id,
      anchorValue: 'E201',
      objectType: 'User',
      state: 'deleted',
      attributeValues: { givenName: 'Ann', employeeId: 'E201' },
    });
    expect(Date.parse(item.deletedOn)).toBeGreaterThanOrEqual(before - 1000);
    // Kept Mesh__TombstoneRetentionDays (30 by default).
    expect(Date.parse(item.purgeOn) - Date.parse(item.deletedOn)).toBe(30 * DAY);
    expect((await rt.call('GET', 'mesh/objects?state=deleted&search=e20&objectType=user')).body.totalCount).toBe(1);
    expect((await rt.call('GET', 'mesh/objects?state=deleted&objectType=Group')).body.totalCount).toBe(0);
    const bad = await rt.call('GET', 'mesh/objects?state=gone');
    expect(bad.status).toBe(400);
    expect(bad.headers.get('content-type')).toMatch(/application\/problem\+json/);

    const detail = await rt.call('GET', `mesh/objects/${id}`);
    expect(detail.status).toBe(200);
    expect(detail.body).toMatchObject({ meshObjectId: id, state: 'deleted', deletedOn: item.deletedOn, purgeOn: item.purgeOn, anchorValue: 'E201' });
    expect(detail.body.attributes).toEqual(
      expect.arrayContaining([expect.objectContaining({ attributeName: 'givenName', attributeValue: 'Ann', source: hr.id })]),
    );
    const explain = await rt.call('GET', `mesh/objects/${id}/attributes/givenName/explain`);
    expect(explain.status).toBe(200);
    expect(explain.body).toMatchObject({ meshObjectId: id, value: 'Ann', winner: { connectorId: hr.id, value: 'Ann' } });
    const history = await rt.call('GET', `mesh/objects/${id}/history`);
    expect(history.body.items.map((h: { operation: string }) => h.operation)).toEqual(['Deleted', 'Created']);

    // The directory deprovisions on the delete exactly as before (graceDays 0: the entry is deleted).
    expect(await runExport(rt, dir)).toMatchObject({ status: 'Completed', stats: { objectsDeleted: 1, errors: 0 } });
    expect(await entry('E201')).toBeUndefined();
  });

  test('restore (Admin): the object is back with its attributes, audited, and the directory provisions it again; 409 live, 404 unknown, 403 Operator', async () => {
    const id = meshIdOf(1);
    const denied = await rt.call('POST', `mesh/objects/${id}/restore`, { role: 'Operator' });
    expect(denied.status).toBe(403);
    expect((await deletedIds()).includes(id)).toBe(true);

    const res = await rt.call('POST', `mesh/objects/${id}/restore`);
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ meshObjectId: id, state: 'active', anchorValue: 'E201' });
    expect(res.body.deletedOn).toBeUndefined();
    expect(res.body.attributes).toEqual(
      expect.arrayContaining([
        expect.objectContaining({ attributeName: 'givenName', attributeValue: 'Ann' }),
        expect.objectContaining({ attributeName: 'status', attributeValue: 'active' }),
      ]),
    );
    expect(await liveIds()).toContain(id);
    expect(await deletedIds()).not.toContain(id);
    expect((await rt.call('GET', `mesh/objects/${id}`)).body).toMatchObject({ state: 'active' });
    expect((await rt.call('GET', `mesh/objects/${id}/history`)).body.items.map((h: { operation: string }) => h.operation)).toEqual([
      'Restored',
      'Deleted',
      'Created',
    ]);

    const again = await rt.call('POST', `mesh/objects/${id}/restore`);
    expect(again.status).toBe(409);
    expect(again.headers.get('content-type')).toMatch(/application\/problem\+json/);
    expect((await rt.call('POST', 'mesh/objects/0b0e0b0e-0000-4000-8000-000000000000/restore')).status).toBe(404);
    // A malformed id names no object: 404, as on every route of a resource by id.
    expect((await rt.call('POST', 'mesh/objects/not-a-guid/restore')).status).toBe(404);

    const audit = await rt.call('GET', `audit?targetType=meshObject&targetId=${id}`);
    expect(audit.body.items).toEqual([
      expect.objectContaining({ action: 'restore', targetType: 'meshObject', targetId: id, actorUpn: USERS.Admin.upn, outcome: 'success' }),
    ]);

    // The target that had it provisions it again at its next export (a new entry: the old one was deleted).
    expect(await runExport(rt, dir)).toMatchObject({ status: 'Completed', stats: { objectsCreated: 1, objectsDeleted: 0, errors: 0 } });
    expect(await entry('E201')).toMatchObject({ givenName: 'Ann', cn: 'Ann Stone' });
  });

  test('a terminated employee restored within graceDays keeps the same LDAP entry: no delete is ever sent', async () => {
    await deprovisioning({ action: 'delete', graceDays: 1 });
    const bob = await entry('E202');
    const id = meshIdOf(2);
    await hr.remove('h2');
    await hrImport();
    expect(await deletedIds()).toContain(id);
    expect(await runExport(rt, dir)).toMatchObject({ status: 'Completed', stats: { objectsDeleted: 0, errors: 0 } });
    expect(await entry('E202')).toMatchObject({ entryUUID: bob.entryUUID });
    expect((await readCsObjects(dir, [String(bob.entryUUID)])).get(String(bob.entryUUID))).toMatchObject({
      deprovisioned: { state: 'pending', reason: 'gone' },
    });

    expect((await rt.call('POST', `mesh/objects/${id}/restore`)).status).toBe(200);
    expect(await runExport(rt, dir)).toMatchObject({ status: 'Completed', stats: { objectsDeleted: 0, errors: 0 } });
    const row = (await readCsObjects(dir, [String(bob.entryUUID)])).get(String(bob.entryUUID));
    expect(row?.deprovisioned).toBeUndefined();
    expect(row?.meshId).toBe(id);
    expect(await entry('E202')).toMatchObject({ entryUUID: bob.entryUUID, givenName: 'Bob' });
    expect((await rt.call('GET', `mesh/objects/${id}`)).body).toMatchObject({ state: 'active' });
  });

  test('a rehire within the retention keeps its meshObjectId: the same HR row back, and a new row matched by the join rule on employeeId', async () => {
    // The same anchor back.
    const cy = meshIdOf(3);
    const cyCreated = (await rt.call('GET', `mesh/objects/${cy}`)).body.createdOn;
    await hr.remove('h3');
    await hrImport();
    expect(await deletedIds()).toContain(cy);
    await hr.insert(person(3, 'Cy'));
    expect(await runImport(rt, hr.id, { runType: 'FullImport' })).toMatchObject({ status: 'Completed', stats: { objectsCreated: 1, errors: 0 } });
    expect((await rt.call('GET', `mesh/objects/${cy}`)).body).toMatchObject({ meshObjectId: cy, state: 'active', createdOn: cyCreated });
    expect((await rt.call('GET', `mesh/objects/${cy}/history`)).body.items.map((h: { operation: string }) => h.operation)).toEqual([
      'Restored',
      'Deleted',
      'Created',
    ]);

    // A new HR row (a new anchor) for the same employee: matched by the join rule, the same id and the same
    // directory entry (the deprovisioning waiting for its grace is cancelled).
    const dee = meshIdOf(4);
    const deeEntry = await entry('E204');
    await hr.remove('h4');
    await hrImport();
    expect(await runExport(rt, dir)).toMatchObject({ status: 'Completed', stats: { objectsDeleted: 0, errors: 0 } });
    expect(await deletedIds()).toContain(dee);
    await hr.insert({ ...person(4, 'Dee'), id: 'h40', given_name: 'Deedee' });
    expect(await runImport(rt, hr.id, { runType: 'FullImport' })).toMatchObject({ status: 'Completed', stats: { objectsCreated: 1, errors: 0 } });
    expect(await liveIds()).not.toContain(projectedMeshId(hr.id, 'h40'));
    const back = await rt.call('GET', `mesh/objects/${dee}`);
    expect(back.body).toMatchObject({ meshObjectId: dee, state: 'active', anchorValue: 'E204' });
    expect(back.body.attributes).toEqual(expect.arrayContaining([expect.objectContaining({ attributeName: 'givenName', attributeValue: 'Deedee' })]));
    expect(await deletedIds()).not.toContain(dee);
    expect(await runExport(rt, dir)).toMatchObject({ status: 'Completed', stats: { objectsDeleted: 0, objectsCreated: 0, errors: 0 } });
    expect(await entry('E204')).toMatchObject({ entryUUID: deeEntry.entryUUID, givenName: 'Deedee' });
  });

  test('after the purge a tombstone is gone: 404, not listed, not restorable, and a returning employee never matches it (a new object)', async () => {
    const eve = meshIdOf(5);
    await hr.remove('h5');
    await hrImport();
    expect(await deletedIds()).toContain(eve);
    // The purge as the background step runs it, seen from past the retention (30 days).
    expect(await purgeAllTombstones(new Date(Date.now() + 31 * DAY))).toEqual(expect.arrayContaining([eve]));
    expect(await deletedIds()).not.toContain(eve);
    expect((await rt.call('GET', `mesh/objects/${eve}`)).status).toBe(404);
    expect((await rt.call('POST', `mesh/objects/${eve}/restore`)).status).toBe(404);

    // Matched by the join rule on employeeId while it was a tombstone; purged, it never matches: a new object.
    await hr.insert({ ...person(5, 'Eve'), id: 'h50' });
    expect(await runImport(rt, hr.id, { runType: 'FullImport' })).toMatchObject({ status: 'Completed', stats: { objectsCreated: 1, errors: 0 } });
    const fresh = projectedMeshId(hr.id, 'h50');
    expect((await rt.call('GET', `mesh/objects/${fresh}`)).body).toMatchObject({ meshObjectId: fresh, state: 'active', anchorValue: 'E205' });
    expect((await rt.call('GET', `mesh/objects/${eve}`)).status).toBe(404);
    expect((await rt.call('GET', `mesh/objects/${fresh}/history`)).body.items.map((h: { operation: string }) => h.operation)).toEqual(['Created']);
  });
  test('graceDays counts from the deletion (the tombstone): an export that first sees the object after its grace deprovisions at once', async () => {
    const grace = 3; // seconds
    await deprovisioning({ action: 'delete', graceDays: grace / 86_400 });
    await hr.insert(person(9, 'Ike'));
    await hrImport();
    // (The purged Eve's old entry still waits for its one-day grace: the new E205's add fails meanwhile.)
    expect(await runExport(rt, dir)).toMatchObject({ stats: { objectsCreated: 1 } });
    expect(await entry('E209')).toBeDefined();
    await hr.remove('h9');
    await hrImport();
    const deletedOn = Date.parse(((await rt.call('GET', 'mesh/objects?state=deleted&search=E209')).body.items[0] as { deletedOn: string }).deletedOn);
    await new Promise((r) => setTimeout(r, Math.max(0, deletedOn + grace * 1000 + 500 - Date.now())));
    // No export saw it before: its grace is over all the same, so this export deletes it (not left pending).
    // The other delete is the purged Eve's old entry: with no tombstone left, its grace counted from the
    // export that first saw it gone (this test's first one, more than 3 s ago).
    expect(await runExport(rt, dir)).toMatchObject({ stats: { objectsDeleted: 2 } });
    expect(await entry('E209')).toBeUndefined();
    expect(await entry('E205')).toBeUndefined();
  });

  test('a tombstone left by another engine process is found: a person deleted by a run on B and rehired by a run on A keeps the id', async () => {
    // The same storage and the same secrets key (the HR connector's password is sealed with it).
    const other = await startService({ prefix: rt.prefix, env: { Engine__InstanceName: 'tomb-b', Secrets__Key: SECRETS_KEY } });
    try {
      const instances = (await rt.call('GET', 'instances')).body.items as { id: string; name: string }[];
      const idA = instances.find((i) => i.name === 'tomb-a')!.id;
      const idB = instances.find((i) => i.name === 'tomb-b')!.id;
      const fay = meshIdOf(6);
      expect((await rt.call('PUT', `connectors/${hr.id}/instance`, { body: { instanceId: idB } })).status).toBe(200);
      await hr.remove('h6');
      const onB = await runImport(rt, hr.id, { runType: 'FullImport' });
      expect(onB).toMatchObject({ status: 'Completed', instanceId: idB, stats: { objectsDeleted: 1, errors: 0 } });
      // A's read model follows B's deletion from the feed within a poll (a deadline, not a timing assertion).
      const deadline = Date.now() + 10_000;
      while (!(await deletedIds()).includes(fay) && Date.now() < deadline) await new Promise((r) => setTimeout(r, 200));
      expect(await deletedIds()).toContain(fay);

      // A's index of tombstones was loaded before B wrote this one: A learns it from the change feed.
      expect((await rt.call('DELETE', `connectors/${hr.id}/instance`)).status).toBe(204);
      expect((await rt.call('PUT', `connectors/${hr.id}/instance`, { body: { instanceId: idA } })).status).toBe(200);
      await hr.insert({ ...person(6, 'Fay'), id: 'h60' });
      const onA = await runImport(rt, hr.id, { runType: 'FullImport' });
      expect(onA).toMatchObject({ status: 'Completed', instanceId: idA, stats: { objectsCreated: 1, errors: 0 } });
      expect((await rt.call('GET', `mesh/objects/${fay}`)).body).toMatchObject({ meshObjectId: fay, state: 'active', anchorValue: 'E206' });
      expect((await rt.call('GET', `mesh/objects/${projectedMeshId(hr.id, 'h60')}`)).status).toBe(404);
    } finally {
      await other.dispose();
    }
  });
});

d('deleted mesh objects: the background purge (Mesh__TombstoneRetentionDays, PostgreSQL HR)', () => {
  let pg: Postgres;
  let rt: ServiceUnderTest;
  const clockFile = path.join(mkdtempSync(path.join(os.tmpdir(), 'ims-tombstones-clock-')), 'offset');

  beforeAll(async () => {
    pg = await startPostgres();
    // 0.0003 days is about 26 s; the purge looks every second (the test-only Mesh__TombstonePurgeSeconds), as of
    // the engine clock, which the test moves past the retention (the Development-only Testing__ClockOffsetFile).
    writeFileSync(clockFile, '0');
    rt = await startService({ env: { Mesh__TombstoneRetentionDays: '0.0003', Mesh__TombstonePurgeSeconds: '1', Testing__ClockOffsetFile: clockFile } });
  });
  afterAll(async () => {
    await rt?.dispose();
    await pg?.stop();
  });

  test('a tombstone past its retention is purged in the background; the employee back afterwards is a new object', async () => {
    const hr = await hrSource(pg, rt, [person(7, 'Gus'), person(8, 'Hal')]);
    expect(await runImport(rt, hr.id, { runType: 'FullImport' })).toMatchObject({ status: 'Completed', stats: { objectsCreated: 2, errors: 0 } });
    const gus = projectedMeshId(hr.id, 'h7');
    await hr.remove('h7');
    expect(await runImport(rt, hr.id, { runType: 'FullImport' })).toMatchObject({ status: 'Completed', stats: { objectsDeleted: 1, errors: 0 } });
    const listed = (await rt.call('GET', 'mesh/objects?state=deleted')).body.items[0];
    expect(listed).toMatchObject({ meshObjectId: gus, state: 'deleted' });
    expect(Date.parse(listed.purgeOn) - Date.parse(listed.deletedOn)).toBe(Math.round(0.0003 * DAY));
    // The retention passes: the engine clock moves two retentions ahead (rather than the test waiting it out).
    writeFileSync(clockFile, String(Math.round(2 * 0.0003 * DAY)));
    const deadline = Date.now() + 120_000;
    while ((await rt.call('GET', `mesh/objects/${gus}`)).status !== 404) {
      if (Date.now() > deadline) throw new Error(`the tombstone was not purged: ${rt.logs().slice(-2000)}`);
      await new Promise((r) => setTimeout(r, 1000));
    }
    expect((await rt.call('GET', 'mesh/objects?state=deleted')).body).toMatchObject({ items: [], totalCount: 0 });

    await pg.query('INSERT INTO hr (id, employee_id, given_name, sn, status) VALUES ($1, $2, $3, $4, $5)', ['h70', 'E207', 'Gus', 'Stone', 'active'], hr.db);
    expect(await runImport(rt, hr.id, { runType: 'FullImport' })).toMatchObject({ status: 'Completed', stats: { objectsCreated: 1, errors: 0 } });
    expect((await rt.call('GET', `mesh/objects/${projectedMeshId(hr.id, 'h70')}`)).body).toMatchObject({ state: 'active', anchorValue: 'E207' });
    expect((await rt.call('GET', `mesh/objects/${gus}`)).status).toBe(404);
  });
});
