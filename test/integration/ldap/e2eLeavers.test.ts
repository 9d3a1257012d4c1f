import type { Client } from 'ldapts';
import type { LeaverView } from '../../../lib/api/leavers';
import { startPostgres, type Postgres } from '../../support/postgres';
import { describeWithServer, serverAvailable } from '../../support/servers';
import { type ServiceUnderTest, SECOND_ADMIN } from '../../support/service';
import type { Slapd } from '../../support/slapd';
import { meshsync, newHome } from '../cli/cliSupport';
import { parseExposition, valueOf, type Sample } from '../telemetry/prometheus';
import { folder, rule, runExport, runImport, writeCsv, outboundRule } from '../sync/syncSupport';
import { meshOf, stopSlapdSuite, waitFor, NO_DELETION_LIMIT, startHrDirectory } from './e2eSupport';
import { pgServer, SqlContractFixture } from '../sql/sqlFixture';
import { SlapdFixture } from './ldapFixture';

/**
 * The leaver clock end to end (the built service over HTTP, a real slapd target and a real PostgreSQL table as a
 * second target, an HR file source): a person
 * gone from HR is a leaver of the directory, pending with seenOn after the HR import, sentOn after the
 * directory's export, confirmed and done after the directory's next import; a disable is confirmed when the
 * import shows the disable values; a rehire before the export cancels the leaver; a leaver past the target's
 * deadlineMinutes is late (GET /leavers, meshsync_leavers_late); meshsync_leaver_seconds observes each
 * confirmation; `meshsync leavers ls` lists them by target name.
 */
jest.setTimeout(600_000);

const HR = ['id', 'employeeId', 'givenName', 'sn', 'status'];
type Row = Record<(typeof HR)[number], string>;
const person = (n: number, givenName: string): Row => ({
  id: `h${n}`,
  employeeId: `E2${String(n).padStart(2, '0')}`,
  givenName,
  sn: 'Leaver',
  status: 'active',
});
const ROWS: Row[] = [person(1, 'Ann'), person(2, 'Bob'), person(3, 'Cy'), person(4, 'Dee'), person(5, 'Eve')];
/**
 * One minute of deadlineMinutes in the service under test (the Development-only test hook
 * Leavers__TestHooks__DeadlineMinuteSeconds, docs/leavers.md): `deadlineMinutes: 1` is over 10 s after the leave
 * was seen, the default 60 after 10 minutes, longer than the suite.
 */
const MINUTE_MS = 10_000;

(serverAvailable('postgres') ? describeWithServer('slapd') : describe.skip)('the leaver clock (HR file source; slapd and PostgreSQL targets)', () => {
  let slapd: Slapd;
  let rt: ServiceUnderTest;
  let f: SlapdFixture;
  let admin: Client;
  let pg: Postgres;
  let db: SqlContractFixture;
  let table = '';
  const hrDir = folder('ims-leavers-hr-');
  const home = newHome();
  let rows = ROWS.map((r) => ({ ...r }));
  let hr = '';
  let dir = '';
  const dnOf = (key: string) => `uid=${key},ou=Engineering,${f.base}`;
  const entry = async (key: string) =>
    (await admin.search(dnOf(key), { scope: 'base', attributes: ['*'] }).catch(() => ({ searchEntries: [] }))).searchEntries[0];
  const writeHr = () => writeCsv(hrDir, 'hr.csv', HR, rows);
  const hrDelta = async () => expect(await runImport(rt, hr, { runType: 'DeltaImport' })).toMatchObject({ status: 'Completed', stats: { errors: 0 } });
  /** The leaver of mesh object `id` in target `target` (default: the directory) among `GET /leavers{query}`. */
  const leaverIn = async (query: string, id: string, target = dir) =>
    (await leavers(query)).items.find((l) => l.meshObjectId === id && l.connectorId === target);
  const leavers = async (query = '') => {
    const res = await rt.call('GET', `leavers${query}`, { role: 'Viewer' });
    expect(res.status).toBe(200);
    return res.body as { items: LeaverView[]; totalCount: number };
  };
  async function scrape(): Promise<Sample[]> {
    const res = await rt.call('GET', 'metrics', { role: 'Viewer' });
    expect(res.status).toBe(200);
    return parseExposition(res.text);
  }
  async function deprovisioning(setting: Record<string, unknown>): Promise<void> {
    const current = await rt.call('GET', `connectors/${dir}`);
    const res = await rt.call('PUT', `connectors/${dir}`, { body: { name: current.body.name, config: { ...current.body.config, deprovisioning: setting } } });
    if (res.status === 202) expect((await rt.call('POST', `config/changes/${res.body.changeId}/approve`, { as: SECOND_ADMIN })).status).toBe(200);
    else expect(res.status).toBe(200);
  }
  /** Remove a person from HR and import the change: its mesh object id (read before). */
  async function leave(employeeId: string): Promise<string> {
    const id = (await meshOf(hr)).get(employeeId)!.id;
    rows = rows.filter((r) => r.employeeId !== employeeId);
    writeHr();
    await hrDelta();
    return id;
  }

  beforeAll(async () => {
    writeHr();
    ({ slapd, rt, f, admin, hr, dir } = await startHrDirectory({
      hrDir,
      people: 5,
      hrFlows: ['employeeId', 'givenName', 'sn', 'status'],
      hrConfig: NO_DELETION_LIMIT,
      directory: NO_DELETION_LIMIT,
      moreFlows: [['status', 'employeeType']],
      service: { env: { Metrics__StateMaxAgeSeconds: '1', Leavers__TestHooks__DeadlineMinuteSeconds: String(MINUTE_MS / 1000) } },
    }));

    // The second target: a PostgreSQL table (delete by default).
    pg = await startPostgres();
    db = await SqlContractFixture.create(pgServer(pg));
    const t = await rt.call('POST', 'connectors', {
      body: { name: 'Table', type: 'sql', config: db.config({ deletionThreshold: { objects: 10, percent: 100 } }) },
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
    await db?.cleanup();
    await pg?.stop();
  });

  test('deprovisioning.deadlineMinutes is validated (a whole number of minutes, 1..10080), and bad filters are 400 problem+json', async () => {
    const current = await rt.call('GET', `connectors/${dir}`);
    for (const [deadlineMinutes, message] of [
      [0, 'must be >= 1'],
      [1.5, 'must be integer'],
      [10081, 'must be <= 10080'],
    ] as const) {
      const res = await rt.call('PUT', `connectors/${dir}`, {
        body: { name: current.body.name, config: { ...current.body.config, deprovisioning: { deadlineMinutes } } },
      });
      expect(res.status).toBe(400);
      expect(res.body.errors).toEqual([{ path: '/config/deprovisioning/deadlineMinutes', message }]);
    }
    expect((await rt.call('GET', `connectors/${dir}`)).body.config.deprovisioning).toBeUndefined();
    for (const [query, path] of [
      ['?state=gone', 'state'],
      ['?connectorId=nope', 'connectorId'],
      ['?from=yesterday', 'from'],
      ['?from=2026-11-29T10:00:00Z&to=2026-11-28T10:00:00Z', 'from'],
      ['?take=500', 'take'],
    ]) {
      const res = await rt.call('GET', `leavers${query}`, { role: 'Viewer' });
      expect(res.status).toBe(400);
      expect(res.headers.get('content-type')).toMatch(/application\/problem\+json/);
      expect(res.body.errors.map((e: { path: string }) => e.path)).toContain(path);
    }
    expect((await rt.call('GET', 'leavers', { role: null })).status).toBe(401);
  });

  test('a delete in each target: pending with seenOn after the HR import, sentOn after the export, done after the confirming import; observed in meshsync_leaver_seconds', async () => {
    const before = await leavers();
    const id = await leave('E201');
    const seen = await leavers('?state=pending');
    // One leaver per target that held the person: the directory and the table.
    expect(seen.totalCount).toBe(before.totalCount + 2);
    const pending = seen.items.find((l) => l.meshObjectId === id && l.connectorId === dir)!;
    expect(pending).toMatchObject({
      displayName: 'Ann Leaver',
      connectorId: dir,
      connectorName: 'Directory',
      sourceConnectorId: hr,
      sourceConnectorName: 'HR',
      operation: 'delete',
      reason: 'gone',
      state: 'pending',
      late: false,
      sentOn: null,
      confirmedOn: null,
      dueOn: null,
      seconds: null,
    });
    expect(await leaverIn('?state=pending', id, table)).toMatchObject({ connectorName: 'Table', operation: 'delete', seenOn: pending.seenOn, sentOn: null });
    // The default deadline: 60 minutes after it was seen.
    expect(Date.parse(pending.deadlineOn) - Date.parse(pending.seenOn)).toBe(60 * MINUTE_MS);

    const exported = await runExport(rt, dir);
    expect(exported).toMatchObject({ status: 'Completed', stats: { objectsDeleted: 1, errors: 0 } });
    expect(await entry('E201')).toBeUndefined();
    const sent = (await leaverIn('?state=pending', id))!;
    expect(sent).toMatchObject({ state: 'pending', sentRunId: exported.runId, seenOn: pending.seenOn, confirmedOn: null });
    expect(sent.sentOn! >= sent.seenOn).toBe(true);
    // Each target has its own clock: the table's export has not run.
    expect(await leaverIn('?state=pending', id, table)).toMatchObject({ sentOn: null });

    const confirming = await runImport(rt, dir);
    expect(confirming).toMatchObject({ status: 'Completed', stats: { errors: 0 } });
    expect(await leaverIn('?state=pending', id)).toBeUndefined();
    const done = (await leaverIn('?state=done', id))!;
    expect(done).toMatchObject({ state: 'done', late: false, confirmedRunId: confirming.runId, sentOn: sent.sentOn, seenOn: pending.seenOn });
    expect(done.confirmedOn! >= done.sentOn!).toBe(true);
    expect(done.seconds).toBe((Date.parse(done.confirmedOn!) - Date.parse(done.seenOn)) / 1000);
    // Filters: the target, and a seen range around it (from inclusive, to exclusive).
    expect((await leavers(`?connectorId=${hr}`)).totalCount).toBe(0);
    expect((await leavers(`?connectorId=${table}&state=done`)).totalCount).toBe(0);
    expect(await leaverIn(`?from=${encodeURIComponent(done.seenOn)}&state=done`, id)).toBeDefined();
    expect(await leaverIn(`?to=${encodeURIComponent(done.seenOn)}&state=done`, id)).toBeUndefined();

    // The table: the row deleted by its export, confirmed by its delta import.
    expect(await runExport(rt, table)).toMatchObject({ status: 'Completed', stats: { objectsDeleted: 1, errors: 0 } });
    expect(await db.exec("SELECT employee_id FROM people WHERE employee_id = 'E201'")).toEqual([]);
    expect(await leaverIn('?state=pending', id, table)).toMatchObject({ sentOn: expect.any(String), confirmedOn: null });
    expect(await runImport(rt, table, { runType: 'DeltaImport' })).toMatchObject({ status: 'Completed', stats: { errors: 0 } });
    expect(await leaverIn('?state=done', id, table)).toMatchObject({ state: 'done', connectorName: 'Table', confirmedOn: expect.any(String) });

    const samples = await scrape();
    expect(valueOf(samples, 'meshsync_leaver_seconds_count', { target: 'Directory' })).toBe(1);
    expect(valueOf(samples, 'meshsync_leaver_seconds_count', { target: 'Table' })).toBe(1);
    expect(valueOf(samples, 'meshsync_leaver_seconds_sum', { target: 'Directory' })).toBeGreaterThanOrEqual(0);
  });

  test('a disable is confirmed when an import of the target shows the disable values', async () => {
    await deprovisioning({ action: 'disable', disableAttributes: { employeeType: 'disabled' } });
    const id = await leave('E202');
    expect(await leaverIn('?state=pending', id)).toMatchObject({ operation: 'disable', sentOn: null });
    expect(await runExport(rt, dir)).toMatchObject({ status: 'Completed', stats: { objectsUpdated: 1, errors: 0 } });
    expect(await entry('E202')).toMatchObject({ employeeType: 'disabled' });
    expect(await leaverIn('?state=pending', id)).toMatchObject({ operation: 'disable', sentOn: expect.any(String) });
    expect(await runImport(rt, dir)).toMatchObject({ status: 'Completed', stats: { errors: 0 } });
    expect(await leaverIn('?state=done', id)).toMatchObject({ operation: 'disable', state: 'done' });
  });

  test('a rehire before the export cancels the leaver (it is removed)', async () => {
    const id = await leave('E203');
    expect(await leaverIn('?state=pending', id)).toBeDefined();
    expect(await leaverIn('?state=pending', id, table)).toBeDefined();
    // Back in HR with the same anchor within the tombstone retention: the mesh object comes back with its id.
    rows = [...rows, person(3, 'Cy')];
    writeHr();
    await hrDelta();
    expect((await meshOf(hr)).get('E203')!.id).toBe(id);
    expect((await leavers()).items.map((l) => l.meshObjectId)).not.toContain(id);
    // Nothing to deprovision: the entry stays.
    expect(await runExport(rt, dir)).toMatchObject({ status: 'Completed', stats: { objectsDeleted: 0, errors: 0 } });
    expect(await entry('E203')).toBeDefined();
  });

  test('past deadlineMinutes a leaver is late (API and meshsync_leavers_late) until confirmed; the CLI lists leavers by target name', async () => {
    await deprovisioning({ action: 'delete', deadlineMinutes: 1 });
    const id = await leave('E204');
    const pending = (await leaverIn('?state=pending', id))!;
    expect(Date.parse(pending.deadlineOn) - Date.parse(pending.seenOn)).toBe(MINUTE_MS);
    // No export yet: the leaver turns late when its minute is over, at the read (no sweep).
    await waitFor('the leaver to be late', async () => !!(await leaverIn('?state=late', id)), 180_000);
    expect(await leaverIn('?state=late', id)).toMatchObject({ state: 'late', late: true, sentOn: null });
    // The table's deadline is its own (60 minutes): its leaver of the same person is still pending.
    expect(await leaverIn('?state=pending', id, table)).toBeDefined();
    await waitFor('meshsync_leavers_late to show it', async () => valueOf(await scrape(), 'meshsync_leavers_late', { target: 'Directory' }) === 1);

    const env = { MESHSYNC_HOME: home, MESHSYNC_URL: rt.baseUrl, MESHSYNC_TOKEN: await rt.token('Viewer') };
    const late = await meshsync(['leavers', 'ls', '--state', 'late', '--connector', 'Directory'], env);
    expect(late.code).toBe(0);
    expect(late.stdout).toMatch(/PERSON\s+TARGET/);
    expect(late.stdout).toMatch(/Dee Leaver\s+Directory\s+delete\s+late/);
    const json = await meshsync(['leavers', 'ls', '--connector', 'Directory', '-o', 'json'], env);
    expect(json.code).toBe(0);
    expect(JSON.parse(json.stdout).items.map((l: { meshObjectId: string }) => l.meshObjectId)).toEqual(expect.arrayContaining([id]));
    const bad = await meshsync(['leavers', 'ls', '--state', 'soon'], env);
    expect(bad.code).not.toBe(0);
    expect(bad.stderr).toMatch(/state/);

    expect(await runExport(rt, dir)).toMatchObject({ status: 'Completed', stats: { objectsDeleted: 1, errors: 0 } });
    expect(await runImport(rt, dir)).toMatchObject({ status: 'Completed', stats: { errors: 0 } });
    expect(await leaverIn('?state=done', id)).toMatchObject({ state: 'done', late: true });
    await waitFor('meshsync_leavers_late back to 0', async () => valueOf(await scrape(), 'meshsync_leavers_late', { target: 'Directory' }) === 0);
    expect(valueOf(await scrape(), 'meshsync_leaver_seconds_count', { target: 'Directory' })).toBe(3);
  });
});
