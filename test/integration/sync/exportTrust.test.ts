import { Client } from 'ldapts';
import { startPostgres, type Postgres } from '../../support/postgres';
import { serverAvailable } from '../../support/servers';
import { rawTable, startService, type ServiceUnderTest } from '../../support/service';
import { startSlapd, type Slapd } from '../../support/slapd';
import { SlapdFixture } from '../ldap/ldapFixture';
import { patchMeshLinks } from '../../../lib/mesh/store';
import { readCsObjects, toCsEntity } from '../../../lib/sync/space/connectorSpace';
import { meshByAnchor } from './syncSupport';
import { person, TutorialDesign, type HrRow } from './tutorialDesign';

/**
 * Exports you can believe, against a real slapd and a real PostgreSQL with the tutorial's design: after each
 * cycle the targets are read back from outside and compared with what the HR rows alone imply, and the runs
 * must not say `Completed` while they differ.
 */
jest.setTimeout(600_000);

(serverAvailable('slapd') && serverAvailable('postgres') ? describe : describe.skip)('exports the targets can be believed after (slapd, PostgreSQL)', () => {
  let slapd: Slapd;
  let pg: Postgres;
  let rt: ServiceUnderTest;
  let t: TutorialDesign;
  let hr: HrRow[] = [];

  const cycle = async (rows: HrRow[], runType: 'FullImport' | 'DeltaImport' = 'DeltaImport') => {
    hr = rows;
    t.writeHr(rows);
    const imp = await t.importHr(runType);
    expect(imp.status).toBe('Completed');
    const dir = await t.exportTo(t.dir);
    const staff = await t.exportTo(t.staff);
    const confirms = await t.confirm();
    return { imp, dir, staff, confirms };
  };

  beforeAll(async () => {
    [slapd, pg] = await Promise.all([startSlapd({ refintAttributes: ['member'] }), startPostgres()]);
    rt = await startService();
    const f = await new SlapdFixture(slapd).init();
    const db = await pg.createDatabase('trust');
    t = await new TutorialDesign(rt, f, pg, db).setUp();
  });

  afterAll(async () => {
    await t?.close();
    await rt?.stop();
    await Promise.all([slapd?.stop(), pg?.stop()]);
  });

  it('a new manager and a report in one import: one export each writes every column and the manager, counted once per object', async () => {
    hr = [person('E1001', 'Engineering', 'E1002'), person('E1002', 'Engineering')];
    t.writeHr(hr);
    expect((await t.importHr('FullImport')).status).toBe('Completed');
    const staff = await t.exportTo(t.staff);
    const dir = await t.exportTo(t.dir);
    for (const run of [staff, dir]) {
      expect(run.status).toBe('Completed');
      // Two people: two objects processed and created, whatever second pass wrote the report's manager.
      expect(run.stats).toMatchObject({ objectsProcessed: 2, objectsCreated: 2, objectsUpdated: 0, errors: 0 });
    }
    expect(await t.differences(hr)).toEqual([]);
    const confirms = await t.confirm();
    // The confirming imports read back what the exports wrote: nothing changed, nothing counted updated.
    for (const c of confirms) expect(c).toMatchObject({ status: 'Completed', stats: { objectsCreated: 0, objectsUpdated: 0, objectsUnchanged: 2, errors: 0 } });
    // Nothing left to do: the next exports send nothing.
    for (const id of [t.dir, t.staff])
      expect((await t.exportTo(id)).stats).toMatchObject({ objectsCreated: 0, objectsUpdated: 0, objectsDeleted: 0, errors: 0 });
  });

  it('a manager change replaces the manager in both targets: no second manager, a scalar key, and it stays so', async () => {
    const rows = [person('E1001', 'Engineering', 'E1003'), person('E1002', 'Engineering'), person('E1003', 'Sales')];
    const first = await cycle(rows);
    expect(first.dir.status).toBe('Completed');
    expect(await t.differences(hr)).toEqual([]);
    // Two days: the confirming imports read the old manager back before the change reaches the targets.
    for (let day = 0; day < 2; day++) {
      const c = await cycle(rows.map((r) => (r.employeeId === 'E1001' ? { ...r, manager: day === 0 ? 'E1002' : 'E1003' } : r)));
      for (const run of [c.dir, c.staff]) expect(run).toMatchObject({ status: 'Completed', stats: { objectsUpdated: 1, errors: 0 } });
      expect(await t.differences(hr)).toEqual([]);
    }
    // The mesh object has HR's manager and what each target read back, never two managers written.
    const e1001 = (await meshByAnchor()).get('E1001')!;
    const managers = new Set(e1001.relationships.filter((r) => r.type === 'manager').map((r) => r.targetAnchor));
    expect([...managers]).toEqual(['E1003']);
  });

  it('an unchanged full import updates nothing', async () => {
    const run = await t.importHr('FullImport');
    expect(run).toMatchObject({
      status: 'Completed',
      stats: { objectsCreated: 0, objectsUpdated: 0, objectsDeleted: 0, objectsUnchanged: run.stats.objectsProcessed },
    });
    const changes = await rt.call('GET', `runs/${run.runId ?? run.id}/changes`);
    expect(changes.status).toBe(200);
    expect(changes.body.totalCount ?? changes.body.items.length).toBe(0);
  });

  it('exports to both targets at the same time keep both links: the next exports add nothing again', async () => {
    const rows = [...hr, person('E2001', 'Research'), person('E2002', 'Research', 'E2001'), person('E2003', 'Sales', 'E2001')];
    hr = rows;
    t.writeHr(rows);
    expect((await t.importHr('DeltaImport')).status).toBe('Completed');
    const [dir, staff] = await Promise.all([t.exportTo(t.dir), t.exportTo(t.staff)]);
    for (const run of [dir, staff]) expect(run).toMatchObject({ status: 'Completed', stats: { objectsCreated: 3, errors: 0 } });
    const mesh = await meshByAnchor();
    for (const id of ['E2001', 'E2002', 'E2003']) {
      const o = mesh.get(id)!;
      expect(o.links[t.dir]).toBeDefined();
      expect(o.links[t.staff]).toBeDefined();
      expect(o.provisioned?.sort()).toEqual([t.dir, t.staff].sort());
    }
    for (const c of await t.confirm()) expect(c).toMatchObject({ status: 'Completed', stats: { errors: 0 } });
    const again = await Promise.all([t.exportTo(t.dir), t.exportTo(t.staff)]);
    for (const run of again) expect(run.stats).toMatchObject({ objectsCreated: 0, objectsUpdated: 0, errors: 0 });
    expect(await t.differences(hr)).toEqual([]);
  });

  it('a reference to a manager the target refused is owed: the run says so, and the export that adds the manager writes it', async () => {
    // The table refuses a mail without '@': the manager's add fails, the report's add goes without manager_id.
    await pg.query("ALTER TABLE staff ADD CONSTRAINT mail_at CHECK (mail LIKE '%@%')", [], t.database);
    const boss = person('E3001', 'Sales', '', { mail: 'no-at-sign' });
    const rows = [...hr, boss, person('E3002', 'Sales', 'E3001')];
    hr = rows;
    t.writeHr(rows);
    expect((await t.importHr('DeltaImport')).status).toBe('Completed');
    const staff = await t.exportTo(t.staff);
    expect(staff.status).toBe('CompletedWithErrors');
    const objects = staff.errors.map((e: { object?: string }) => e.object);
    expect(objects).toContain('E3001');
    // The report is listed too: its manager_id is owed.
    expect(objects).toContain('E3002');
    expect((await t.staffRows()).get('E3002')).toMatchObject({ manager_id: null, mail: 'e3002@example.com' });
    // Another export before HR fixes it changes nothing and still says so.
    expect((await t.exportTo(t.staff)).status).toBe('CompletedWithErrors');
    // HR fixes the mail the next day: the manager is added and the report gets its manager.
    const fixed = rows.map((r) => (r.employeeId === 'E3001' ? { ...r, mail: 'e3001@example.com' } : r));
    const c = await cycle(fixed);
    expect(c.staff).toMatchObject({ status: 'Completed', stats: { objectsCreated: 1, objectsUpdated: 1, errors: 0 } });
    expect(await t.differences(hr)).toEqual([]);
  });

  it('an add re-sent after its object was made (a crash before the record): the object is taken over, not an error, never a second one', async () => {
    const newcomer = person('E4001', 'Sales', 'E2001');
    // The objects an earlier, unrecorded add made, with values that have changed since.
    const admin = new Client({ url: slapd.url });
    await admin.bind(slapd.rootDN, slapd.rootPassword);
    await admin.add(t.dnOf('E4001', 'Sales'), {
      objectClass: ['inetOrgPerson'],
      uid: 'E4001',
      cn: 'Old Name',
      sn: 'Old',
      employeeNumber: 'E4001',
    });
    await admin.unbind();
    await pg.query("INSERT INTO staff (employee_id, given_name, surname) VALUES ('E4001', 'Old', 'Name')", [], t.database);
    const c = await cycle([...hr, newcomer]);
    for (const run of [c.dir, c.staff]) {
      expect(run).toMatchObject({ status: 'Completed', stats: { objectsCreated: 1, errors: 0 } });
      expect(run.errors.some((e: { object?: string; message: string }) => e.object === undefined && /taken over/.test(e.message))).toBe(true);
    }
    expect(await t.differences(hr)).toEqual([]);
    const o = (await meshByAnchor()).get('E4001')!;
    expect(o.provisioned?.sort()).toEqual([t.dir, t.staff].sort());
    for (const id of [t.dir, t.staff]) expect((await t.exportTo(id)).stats).toMatchObject({ objectsCreated: 0, objectsUpdated: 0, errors: 0 });
  });

  it('a dry run then the apply of its plan: every planned change done once, references written, nothing drifted, each object listed once', async () => {
    // Ten new people (managers hired with their reports, a manager later in the file) and a manager who moves
    // with reports that name him.
    const newcomers = Array.from({ length: 10 }, (_, i) => person(`E50${String(i).padStart(2, '0')}`, i % 2 ? 'Research' : 'Sales', i < 9 ? 'E5009' : ''));
    const moved = hr.map((r) => (r.employeeId === 'E2001' ? { ...r, department: 'Engineering' } : r));
    hr = [...moved, ...newcomers];
    t.writeHr(hr);
    expect((await t.importHr('DeltaImport')).status).toBe('Completed');
    for (const target of [t.dir, t.staff]) {
      const plan = await t.exportTo(target, { dryRun: true });
      expect(plan).toMatchObject({ status: 'Completed', stats: { objectsCreated: 10, errors: 0 } });
      const started = await rt.call('POST', `runs/${plan.runId}/apply`, { role: 'Operator' });
      expect(started.status).toBe(202);
      const { waitRun } = await import('./syncSupport');
      const applied = await waitRun(rt, started.body.runId);
      expect(applied).toMatchObject({ status: 'Completed', stats: { objectsCreated: 10, errors: 0 } });
      const list = await rt.call('GET', `runs/${applied.runId}/changes?take=200`);
      expect(list.status).toBe(200);
      const items = list.body.items as { outcome: string; meshObjectId: string | null; operation: string }[];
      expect(items.filter((i) => i.outcome === 'drifted')).toEqual([]);
      expect(items.filter((i) => i.outcome === 'failed')).toEqual([]);
      const keys = items.map((i) => `${i.meshObjectId}|${i.operation}`);
      expect(new Set(keys).size).toBe(keys.length);
    }
    for (const c of await t.confirm()) expect(c).toMatchObject({ status: 'Completed', stats: { errors: 0 } });
    expect(await t.differences(hr)).toEqual([]);
    for (const id of [t.dir, t.staff]) expect((await t.exportTo(id)).stats).toMatchObject({ objectsCreated: 0, objectsUpdated: 0, errors: 0 });
  });

  it('an object whose link was lost is linked again as provisioned by the next export: its leave deletes it in both targets, no blanked account', async () => {
    const id = 'E5003';
    const o = (await meshByAnchor()).get(id)!;
    // The link to both targets lost (as a whole-state write from a stale copy did before).
    await patchMeshLinks([o.id], (d) => {
      delete d.links[t.dir];
      delete d.links[t.staff];
      delete d.provisioned;
      return true;
    });
    // The next exports find it there, their own: taken over, one object each, no second account.
    const repaired = await cycle(hr);
    for (const run of [repaired.dir, repaired.staff]) expect(run).toMatchObject({ status: 'Completed', stats: { objectsCreated: 1, errors: 0 } });
    const linked = (await meshByAnchor()).get(id)!;
    expect(linked.links[t.dir]).toBeDefined();
    expect(linked.provisioned?.sort()).toEqual([t.dir, t.staff].sort());
    expect(await t.differences(hr)).toEqual([]);
    // The leaver: gone from HR. Each export deletes the account instead of blanking it.
    hr = hr.filter((r) => r.employeeId !== id);
    const c = await cycle(hr);
    for (const run of [c.dir, c.staff]) expect(run).toMatchObject({ status: 'Completed', stats: { objectsDeleted: 1, objectsUpdated: 0, errors: 0 } });
    expect(await t.differences(hr)).toEqual([]);
  });

  it('a manager moves out of an OU whose name needs escaping, through a plan and its apply: the reports follow', async () => {
    hr = [...hr, person('E7001', 'Legal + Compliance'), person('E7002', 'Sales', 'E7001'), person('E7003', 'Legal + Compliance', 'E7001')];
    await cycle(hr);
    expect(await t.differences(hr)).toEqual([]);
    hr = hr.map((r) => (r.employeeId === 'E7001' ? { ...r, department: 'Engineering' } : r));
    t.writeHr(hr);
    expect((await t.importHr('DeltaImport')).status).toBe('Completed');
    const { waitRun } = await import('./syncSupport');
    for (const target of [t.dir, t.staff]) {
      const plan = await t.exportTo(target, { dryRun: true });
      const started = await rt.call('POST', `runs/${plan.runId}/apply`, { role: 'Operator' });
      expect(await waitRun(rt, started.body.runId)).toMatchObject({ status: 'Completed', stats: { errors: 0 } });
    }
    for (const c of await t.confirm()) expect(c).toMatchObject({ status: 'Completed', stats: { errors: 0 } });
    expect(await t.differences(hr)).toEqual([]);
  });

  it("a stop between an export's link and its row: the reference to that object is owed and said so, not dropped, and written once its row is back", async () => {
    const manager = 'E1002';
    const o = (await meshByAnchor()).get(manager)!;
    // The state a kill -9 left between the two writes: the mesh object linked, the directory's row not written.
    const anchor = o.links[t.dir];
    const row = (await readCsObjects(t.dir, [anchor])).get(anchor)!;
    const e = toCsEntity(t.dir, row);
    await (await rawTable(`ConnectorSpace${e.partitionKey.slice(-2, -1)}`)).deleteEntity(e.partitionKey, e.rowKey);
    await rt.kill();
    await rt.start();
    // A new report names that manager.
    const c = await cycle([...hr, person('E8001', 'Sales', manager)]);
    // The directory's export cannot name the manager yet: the run says so (never a plain Completed)...
    expect(c.dir).toMatchObject({ status: 'CompletedWithErrors', stats: { errors: 1 } });
    expect(c.dir.errors).toEqual([{ object: 'E8001', message: expect.stringContaining('not in the target') }]);
    // ...its confirming import read the manager's entry back (its row again), and the next export writes it.
    expect(await t.exportTo(t.dir)).toMatchObject({ status: 'Completed', stats: { objectsUpdated: 1, errors: 0 } });
    expect(await t.differences(hr)).toEqual([]);
  });
});
