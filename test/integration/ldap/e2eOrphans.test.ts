import { writeFileSync } from 'node:fs';
import path from 'node:path';
import type { Client } from 'ldapts';
import type { OrphanView } from '../../../lib/api/orphans';
import { startPostgres, type Postgres } from '../../support/postgres';
import { describeWithServer, serverAvailable } from '../../support/servers';
import { type ServiceUnderTest, SECOND_ADMIN } from '../../support/service';
import type { Slapd } from '../../support/slapd';
import { meshsync, newHome } from '../cli/cliSupport';
import { createSchedule, waitScheduleRun } from '../schedules/scheduleSupport';
import { folder, rule, runExport, runImport, writeCsv, outboundRule, waitRun } from '../sync/syncSupport';
import { pgServer, type SqlServer } from '../sql/sqlFixture';
import { meshOf, stopSlapdSuite, waitFor, NO_DELETION_LIMIT, startHrDirectory } from './e2eSupport';
import { SlapdFixture } from './ldapFixture';

/**
 * Orphan sweeps end to end (the built service over HTTP; a real slapd directory and a real PostgreSQL table as
 * targets of an HR file): accounts made in the targets outside the engine (ldapadd, INSERT) are disconnectors; a
 * person removed from HR is a tombstone, an orphan once the target's grace is over, and an overdue one when the
 * export marked its deprovisioning pending before; an explicit disconnector and a kept account are listed as
 * excluded. The report lists exactly those; the sweep over the directory's updates threshold waits for a second
 * Admin, and approved disables exactly the orphans (read back with ldapsearch and SQL: nothing else touched); the
 * table's sweep disables with its status column; a schedule step runs a sweep.
 */
jest.setTimeout(600_000);

/**
 * The targets' grace, in days: 86.4 s, so a test sees a leaver inside its grace; then it moves the service's engine
 * clock (the Development-only Testing__ClockOffsetFile) two graces ahead to see the leaver past it.
 */
const GRACE = 0.001;
const HR = ['id', 'employeeId', 'givenName', 'sn'];
type Row = Record<(typeof HR)[number], string>;
const person = (n: number, givenName: string): Row => ({ id: `h${n}`, employeeId: `E3${String(n).padStart(2, '0')}`, givenName, sn: 'Orphan' });
const ROWS: Row[] = [person(1, 'Ann'), person(2, 'Bob'), person(3, 'Cy'), person(4, 'Dee'), person(5, 'Eve')];

(serverAvailable('postgres') ? describeWithServer('slapd') : describe.skip)('orphan report and sweep (HR file source; slapd and PostgreSQL targets)', () => {
  let slapd: Slapd;
  let rt: ServiceUnderTest;
  let f: SlapdFixture;
  let admin: Client;
  let pg: Postgres;
  let sql: SqlServer;
  let db = '';
  let table = '';
  const hrDir = folder('ims-orphans-hr-');
  const clockFile = path.join(folder('ims-orphans-clock-'), 'offset');
  const home = newHome();
  let rows = ROWS.map((r) => ({ ...r }));
  let hr = '';
  let dir = '';
  const ids = new Map<string, string>();
  const dnOf = (uid: string) => `uid=${uid},ou=Engineering,${f.base}`;
  const entry = async (uid: string) =>
    (await admin.search(dnOf(uid), { scope: 'base', attributes: ['*', 'modifyTimestamp'] }).catch(() => ({ searchEntries: [] }))).searchEntries[0];
  const writeHr = () => writeCsv(hrDir, 'hr.csv', HR, rows);
  const hrDelta = async () => expect(await runImport(rt, hr, { runType: 'DeltaImport' })).toMatchObject({ status: 'Completed', stats: { errors: 0 } });
  const orphans = async (connectorId: string, query = '') => {
    const res = await rt.call('GET', `connectors/${connectorId}/orphans${query}`, { role: 'Viewer' });
    expect(res.status).toBe(200);
    return res.body as { items: OrphanView[]; totalCount: number; sweepable: number };
  };
  /** The report as `name reason state excluded mesh object` lines, for an exact comparison. */
  const lines = (items: OrphanView[]) =>
    items
      .map(
        (o) =>
          `${o.displayName} ${o.reason} ${o.targetState}${o.excluded ? ` excluded:${o.excluded.reason}` : ''}${o.meshObjectId ? ` ${o.meshObjectId}` : ''}`,
      )
      .sort();
  const csObjectIdOf = async (connectorId: string, search: string) => {
    const res = await rt.call('GET', `connectors/${connectorId}/space?search=${encodeURIComponent(search)}`, { role: 'Viewer' });
    expect(res.body.items).toHaveLength(1);
    return res.body.items[0].csObjectId as string;
  };
  const accounts = async () =>
    new Map(
      (await sql.exec(db, 'SELECT employee_id, status, updated_at FROM accounts ORDER BY employee_id')).map((r) => [
        String(r.employee_id),
        { status: String(r.status), updatedAt: String(r.updated_at) },
      ]),
    );
  const rogue = (uid: string, extra: Record<string, string> = {}) =>
    admin.add(dnOf(uid), { objectClass: ['inetOrgPerson'], uid, cn: `${uid} account`, sn: 'Outside', ...extra });

  beforeAll(async () => {
    writeHr();
    writeFileSync(clockFile, '0');
    ({ slapd, rt, f, admin, hr, dir } = await startHrDirectory({
      hrDir,
      people: 5,
      hrFlows: ['employeeId', 'givenName', 'sn'],
      hrConfig: NO_DELETION_LIMIT,
      directory: { ...NO_DELETION_LIMIT, deprovisioning: { action: 'disable', disableAttributes: { employeeType: 'disabled' }, graceDays: GRACE } },
      service: { env: { Testing__ClockOffsetFile: clockFile } },
    }));
    for (const [id, o] of await meshOf(hr)) ids.set(id, o.id);

    // The second target: a PostgreSQL table whose status column disables an account.
    pg = await startPostgres();
    sql = pgServer(pg);
    db = await sql.newDatabase();
    await sql.exec(
      db,
      `CREATE TABLE accounts (employee_id varchar(20) PRIMARY KEY, given_name text, sn text, status text NOT NULL DEFAULT 'active',
         updated_at timestamptz NOT NULL DEFAULT clock_timestamp());
       CREATE FUNCTION accounts_touch() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN NEW.updated_at := clock_timestamp(); RETURN NEW; END $$;
       CREATE TRIGGER accounts_touch BEFORE UPDATE ON accounts FOR EACH ROW EXECUTE FUNCTION accounts_touch();`,
    );
    const t = await rt.call('POST', 'connectors', {
      body: {
        name: 'Table',
        type: 'sql',
        config: {
          dialect: 'postgres',
          host: sql.host,
          port: sql.port,
          database: db,
          user: sql.user,
          password: sql.password,
          objectType: 'User',
          anchorColumn: 'employee_id',
          fullImportQuery: 'SELECT employee_id, given_name, sn, status FROM accounts',
          exportStatements: {
            insert: 'INSERT INTO accounts (employee_id, given_name, sn) VALUES (:employee_id, :given_name, :sn)',
            update:
              'UPDATE accounts SET given_name = COALESCE(:given_name, given_name), sn = COALESCE(:sn, sn), status = COALESCE(:status, status) WHERE employee_id = :anchor',
            delete: 'DELETE FROM accounts WHERE employee_id = :anchor',
          },
          deletionThreshold: { objects: 10, percent: 100 },
          // No disable values yet: its sweep is refused (below), until it has some.
          deprovisioning: { action: 'delete', graceDays: GRACE },
        },
      },
    });
    expect(t.status).toBe(201);
    table = t.body.id;
    const toTable = outboundRule(rt, table, { confidence: 50 });
    await toTable('employeeId', 'employee_id');
    await toTable('givenName', 'given_name');
    await toTable('sn', 'sn');
    await rule(rt, { ruleType: 'JoinRule', connectorId: table, sourceAttribute: 'employee_id', targetAttribute: 'employeeId' });

    expect(await runExport(rt, table)).toMatchObject({ status: 'Completed', stats: { objectsCreated: 5, errors: 0 } });
    expect(await runImport(rt, table)).toMatchObject({ status: 'Completed', stats: { errors: 0 } });
  });
  afterAll(async () => {
    await stopSlapdSuite({ admin, rt, f, slapd });
    await pg?.stop();
  });

  test('bad input is a 4xx problem+json that changes nothing; a target without a disable action refuses the sweep (409)', async () => {
    for (const query of ['?reason=stale', '?excluded=maybe', '?take=500']) {
      const res = await rt.call('GET', `connectors/${dir}/orphans${query}`, { role: 'Viewer' });
      expect(res.status).toBe(400);
      expect(res.headers.get('content-type')).toMatch(/application\/problem\+json/);
    }
    expect((await rt.call('GET', `connectors/${'0'.repeat(8)}-0000-4000-8000-000000000000/orphans`)).status).toBe(404);
    expect((await rt.call('GET', `connectors/${dir}/orphans`, { role: null })).status).toBe(401);
    const someone = await csObjectIdOf(dir, 'uid=E303,');
    expect((await rt.call('PUT', `connectors/${dir}/orphans/${someone}/keep`, { role: 'Operator', body: {} })).status).toBe(403);
    const badNote = await rt.call('PUT', `connectors/${dir}/orphans/${someone}/keep`, { body: { note: 7 } });
    expect(badNote.status).toBe(400);
    expect(badNote.headers.get('content-type')).toMatch(/application\/problem\+json/);
    expect((await rt.call('PUT', `connectors/${dir}/orphans/00000000-0000-4000-8000-000000000000/keep`, { body: {} })).status).toBe(404);
    expect((await rt.call('DELETE', `connectors/${dir}/orphans/${someone}/keep`)).status).toBe(404);
    const badType = await rt.call('POST', `connectors/${dir}/export`, { body: { runType: 'Sweep' } });
    expect(badType.status).toBe(400);

    const sourceReport = await rt.call('GET', `connectors/${hr}/orphans`, { role: 'Viewer' });
    expect(sourceReport.status).toBe(409);
    expect(sourceReport.body.detail).toContain("Connector 'HR' is not an export target");
    const notTarget = await rt.call('POST', `connectors/${hr}/export`, { body: { runType: 'OrphanSweep' } });
    expect(notTarget.status).toBe(409);
    expect(notTarget.headers.get('content-type')).toMatch(/application\/problem\+json/);
    expect(notTarget.body.detail).toContain("Connector 'HR' is not an export target");
    const noDisable = await rt.call('POST', `connectors/${table}/export`, { body: { runType: 'OrphanSweep' } });
    expect(noDisable.status).toBe(409);
    expect(noDisable.body.detail).toContain("Connector 'Table' has no disable action");
    expect(noDisable.body.detail).toContain('orphanAction');
    expect(JSON.stringify(noDisable.body)).not.toContain(pg.password);
    // Nothing was started; the refusal is audited.
    expect((await rt.call('GET', `runs?connectorId=${table}`)).body.items.some((r: { runType: string }) => r.runType === 'OrphanSweep')).toBe(false);
    const audit = (await rt.call('GET', `audit?targetType=connector&targetId=${table}`)).body.items;
    expect(audit).toContainEqual(expect.objectContaining({ action: 'trigger', outcome: 'failure' }));

    // The table gets disable values (a milder action than delete: applied at once).
    const current = await rt.call('GET', `connectors/${table}`);
    const put = await rt.call('PUT', `connectors/${table}`, {
      body: {
        name: 'Table',
        config: { ...current.body.config, deprovisioning: { action: 'disable', disableAttributes: { status: 'disabled' }, graceDays: GRACE } },
      },
    });
    expect(put.status).toBe(200);
  });

  test('the report lists exactly the orphans: accounts made outside, a tombstone past its grace, an overdue deprovisioning; an explicit disconnector and a kept account are excluded', async () => {
    // Accounts made in the targets outside the engine.
    await rogue('svc-backup');
    await rogue('old-intern');
    await rogue('contractor');
    await rogue('breakglass');
    await rogue('temp-disabled', { employeeType: 'disabled' });
    await sql.exec(db, "INSERT INTO accounts (employee_id, given_name, sn) VALUES ('X901', 'Rogue', 'Row'), ('X902', 'Kept', 'Row')");
    await sql.exec(db, "INSERT INTO accounts (employee_id, given_name, sn, status) VALUES ('X903', 'Off', 'Row', 'disabled')");

    // Ann leaves; both targets' exports mark her deprovisioning pending (the grace).
    rows = rows.filter((r) => r.employeeId !== 'E301');
    writeHr();
    await hrDelta();
    for (const target of [dir, table]) expect(await runExport(rt, target)).toMatchObject({ status: 'Completed', stats: { objectsDeleted: 0, errors: 0 } });
    // Bob leaves; no export runs after it.
    rows = rows.filter((r) => r.employeeId !== 'E302');
    writeHr();
    await hrDelta();
    for (const target of [dir, table]) expect(await runImport(rt, target)).toMatchObject({ status: 'Completed', stats: { errors: 0 } });

    // An explicit disconnector, and an account kept by an Admin.
    const contractor = await csObjectIdOf(dir, 'uid=contractor,');
    expect((await rt.call('POST', `connectors/${dir}/space/${contractor}/disconnect`, { role: 'Operator' })).status).toBe(200);
    const breakglass = await csObjectIdOf(dir, 'uid=breakglass,');
    const kept = await rt.call('PUT', `connectors/${dir}/orphans/${breakglass}/keep`, { body: { note: 'break-glass login' } });
    expect(kept.status).toBe(200);
    expect(kept.body).toMatchObject({ csObjectId: breakglass, note: 'break-glass login', by: expect.any(String) });
    expect((await rt.call('PUT', `connectors/${table}/orphans/${await csObjectIdOf(table, 'X902')}/keep`, { body: {} })).status).toBe(200);

    // Inside the grace Ann and Bob are not orphans: their deprovisioning will come.
    const early = await orphans(dir);
    expect(lines(early.items)).toEqual([
      'breakglass account disconnector enabled excluded:keep',
      'contractor account disconnector enabled excluded:explicitDisconnector',
      'old-intern account disconnector enabled',
      'svc-backup account disconnector enabled',
      'temp-disabled account disconnector disabled',
    ]);

    // The grace passes: the engine clock moves two graces ahead (rather than the test waiting them out).
    writeFileSync(clockFile, String(Math.round(2 * GRACE * 86_400_000)));
    await waitFor('the grace to pass', async () => (await orphans(dir)).totalCount === 7, 240_000);
    const ann = ids.get('E301')!;
    const bob = ids.get('E302')!;
    const report = await orphans(dir);
    expect(lines(report.items)).toEqual(
      [
        'Ann Orphan overdue enabled ' + ann,
        'Bob Orphan tombstone enabled ' + bob,
        'breakglass account disconnector enabled excluded:keep',
        'contractor account disconnector enabled excluded:explicitDisconnector',
        'old-intern account disconnector enabled',
        'svc-backup account disconnector enabled',
        'temp-disabled account disconnector disabled',
      ].sort(),
    );
    expect(report.sweepable).toBe(4);
    const kept1 = report.items.find((o) => o.excluded?.reason === 'keep')!;
    expect(kept1).toMatchObject({ dn: dnOf('breakglass'), excluded: { note: 'break-glass login' }, meshObjectId: null });
    expect(Object.keys(kept1).sort()).toEqual(
      ['anchor', 'csObjectId', 'displayName', 'dn', 'excluded', 'lastImportedOn', 'meshObjectId', 'objectType', 'reason', 'since', 'targetState'].sort(),
    );
    expect(JSON.stringify(report)).not.toContain(slapd.rootPassword);
    // Filters and paging.
    expect(lines((await orphans(dir, '?reason=tombstone')).items)).toEqual(['Bob Orphan tombstone enabled ' + bob]);
    expect((await orphans(dir, '?excluded=true')).totalCount).toBe(2);
    const page = await orphans(dir, '?excluded=false&skip=1&take=2');
    expect(page).toMatchObject({ totalCount: 5 });
    expect(page.items).toHaveLength(2);

    expect(lines((await orphans(table)).items)).toEqual(
      [
        // No display attribute in the table: its anchor.
        'E301 overdue enabled ' + ann,
        'E302 tombstone enabled ' + bob,
        'X901 disconnector enabled',
        'X902 disconnector enabled excluded:keep',
        'X903 disconnector disabled',
      ].sort(),
    );

    // The CLI lists the same by the connector's name.
    const env = { MESHSYNC_HOME: home, MESHSYNC_URL: rt.baseUrl, MESHSYNC_TOKEN: await rt.token('Viewer') };
    const text = await meshsync(['orphans', 'ls', 'Directory'], env);
    expect(text.code).toBe(0);
    for (const shown of ['NAME', 'REASON', 'EXCLUDED', 'Ann Orphan', 'overdue', 'explicitDisconnector']) expect(text.stdout).toContain(shown);
    const json = await meshsync(['orphans', 'ls', 'Directory', '--sweepable', '-o', 'json'], env);
    expect(json.code).toBe(0);
    expect(lines(JSON.parse(json.stdout).items)).toEqual(lines((await orphans(dir, '?excluded=false')).items));
    const bad = await meshsync(['orphans', 'ls', 'Directory', '--reason', 'stale'], env);
    expect(bad.code).not.toBe(0);
  });

  test('the sweep over the updates threshold waits for a second Admin; approved, it disables exactly the orphans (ldapsearch)', async () => {
    const current = await rt.call('GET', `connectors/${dir}`);
    // A limit on updates where there was none tightens the guard rails: applied at once.
    const put = await rt.call('PUT', `connectors/${dir}`, {
      body: { name: 'Directory', config: { ...current.body.config, thresholds: { updates: { count: 2 } } } },
    });
    expect(put.status).toBe(200);
    const uids = ['E301', 'E302', 'E303', 'E304', 'E305', 'svc-backup', 'old-intern', 'contractor', 'breakglass', 'temp-disabled'];
    const before = new Map(await Promise.all(uids.map(async (u) => [u, await entry(u)] as const)));

    // A dry run plans the four disables and writes nothing.
    const dry = await runExport(rt, dir, { runType: 'OrphanSweep', dryRun: true });
    expect(dry).toMatchObject({ runType: 'OrphanSweep', status: 'Completed', plan: { expiresOn: expect.any(String) } });
    const planned = (await rt.call('GET', `runs/${dry.runId}/changes`)).body;
    expect(planned.totalCount).toBe(4);
    for (const c of planned.items)
      expect(c).toMatchObject({ target: 'connector', operation: 'Update', outcome: 'planned', attributes: { employeeType: { new: 'disabled' } } });

    const started = await rt.call('POST', `connectors/${dir}/export`, { body: { runType: 'OrphanSweep' } });
    expect(started.status).toBe(202);
    expect(started.body).toMatchObject({ runType: 'OrphanSweep', status: 'Running' });
    const waiting = await waitRun(rt, started.body.runId);
    expect(waiting).toMatchObject({ status: 'AwaitingApproval', approval: { reasons: [{ operation: 'updates', count: 4, limit: 2 }] } });
    for (const u of uids) expect((await entry(u)).modifyTimestamp).toBe(before.get(u)!.modifyTimestamp);
    // Four eyes: the Admin who started it cannot approve it.
    expect((await rt.call('POST', `runs/${started.body.runId}/approve`)).status).toBe(403);
    expect((await rt.call('POST', `runs/${started.body.runId}/approve`, { as: SECOND_ADMIN })).status).toBe(202);
    const done = await waitRun(rt, started.body.runId);
    expect(done).toMatchObject({ status: 'Completed', approvedBy: SECOND_ADMIN.upn, stats: { objectsUpdated: 4, objectsDeleted: 0, errors: 0 } });

    for (const u of ['E301', 'E302', 'svc-backup', 'old-intern']) expect(await entry(u)).toMatchObject({ employeeType: 'disabled' });
    // Nothing else touched: the people still in HR, the excluded accounts, the one already disabled.
    for (const u of ['E303', 'E304', 'E305', 'contractor', 'breakglass', 'temp-disabled']) expect(await entry(u)).toEqual(before.get(u));
    const changes = (await rt.call('GET', `runs/${started.body.runId}/changes?outcome=applied`)).body;
    expect(changes.items.map((c: { dn: string }) => c.dn).sort()).toEqual(['E301', 'E302', 'old-intern', 'svc-backup'].map(dnOf).sort());

    // Swept: no longer orphans (disabled by the engine); the excluded and the already disabled stay listed.
    const after = await orphans(dir);
    expect(lines(after.items)).toEqual([
      'breakglass account disconnector enabled excluded:keep',
      'contractor account disconnector enabled excluded:explicitDisconnector',
      'temp-disabled account disconnector disabled',
    ]);
    expect(after.sweepable).toBe(0);
  });

  test('the table sweep (within its thresholds) writes the status column of exactly its orphans (SQL read back)', async () => {
    const before = await accounts();
    const run = await runExport(rt, table, { runType: 'OrphanSweep' });
    expect(run).toMatchObject({ runType: 'OrphanSweep', status: 'Completed', stats: { objectsUpdated: 3, errors: 0 } });
    const after = await accounts();
    for (const id of ['E301', 'E302', 'X901']) expect(after.get(id)?.status).toBe('disabled');
    for (const id of ['E303', 'E304', 'E305', 'X902', 'X903']) expect(after.get(id)).toEqual(before.get(id));
    expect([...after.keys()].sort()).toEqual([...before.keys()].sort());
    // The next import shows the disables: nothing is left to sweep.
    expect(await runImport(rt, table)).toMatchObject({ status: 'Completed', stats: { errors: 0 } });
    expect((await orphans(table)).sweepable).toBe(0);
    // A sweep with nothing to sweep completes and changes nothing.
    const swept = await accounts();
    expect(await runExport(rt, table, { runType: 'OrphanSweep' })).toMatchObject({
      status: 'Completed',
      stats: { objectsUpdated: 0, objectsDeleted: 0, errors: 0 },
    });
    expect(await accounts()).toEqual(swept);
  });

  test('a schedule step runs a sweep: an account made since is disabled by the scheduled run', async () => {
    // The updates limit off again (a loosening: held for a second Admin), so that the import step takes the new
    // account into the connector space at once (an import planned first applies only objects with mesh changes).
    const current = await rt.call('GET', `connectors/${dir}`);
    const { thresholds: _limits, ...config } = current.body.config;
    const held = await rt.call('PUT', `connectors/${dir}`, { body: { name: 'Directory', config } });
    expect(held.status).toBe(202);
    expect((await rt.call('POST', `config/changes/${held.body.changeId}/approve`, { as: SECOND_ADMIN })).status).toBe(200);
    await rogue('late-arrival');
    const s = await createSchedule(rt, {
      name: 'Nightly orphan sweep',
      cron: '0 0 3 * * *',
      isEnabled: false,
      steps: [
        { runType: 'FullImport', connectorIds: [dir] },
        { runType: 'OrphanSweep', connectorIds: [dir] },
      ],
    });
    expect(s.steps[1]).toMatchObject({ runType: 'OrphanSweep', connectorIds: [dir] });
    const res = await rt.call('POST', `schedules/${s.scheduleId}/run`, { role: 'Operator' });
    expect(res.status).toBe(202);
    const done = await waitScheduleRun(rt, s.scheduleId, res.body.scheduleRunId);
    expect(done).toMatchObject({
      status: 'Completed',
      steps: [
        { runType: 'FullImport', status: 'Completed' },
        { runType: 'OrphanSweep', status: 'Completed' },
      ],
    });
    const sweep = (await rt.call('GET', `runs/${done.steps[1].runs[0].runId}`)).body;
    expect(sweep).toMatchObject({ runType: 'OrphanSweep', stats: { objectsUpdated: 1, errors: 0 }, trigger: { type: 'schedule', scheduleId: s.scheduleId } });
    expect(await entry('late-arrival')).toMatchObject({ employeeType: 'disabled' });
    expect(await entry('contractor')).not.toHaveProperty('employeeType');
  });
});
