import type { SqlConfig } from '../../../lib/connectors/sql/schema';
import { PEOPLE, type ContractPerson } from '../../support/connectorContract';
import { startPostgres, type Postgres } from '../../support/postgres';
import { describeWithServer } from '../../support/servers';
import { startService, type ServiceUnderTest } from '../../support/service';
import { pgServer, SqlContractFixture } from '../sql/sqlFixture';
import { rule } from '../sync/syncSupport';
import { createSchedule, cronAt, secondsFromNow, sleep, waitScheduleRun, waitScheduleRuns } from './scheduleSupport';

/**
 * A schedule with two steps against a real PostgreSQL: a full import of two sources in parallel (an HR table and
 * a contractors table, each its own database), then an export to a target database. It runs by itself on its
 * cron and ends Completed; a kill -9 of the service during the export step is survived (after restart the
 * schedule run resumes and completes, and no run was started twice); a tick while the schedule's run is still
 * going (a slow source) is recorded Skipped.
 */
jest.setTimeout(300_000);

// eslint-disable-next-line @typescript-eslint/no-explicit-any
type Json = any;

const people = (prefix: string): ContractPerson[] =>
  PEOPLE.map((p) => ({ ...p, key: prefix + p.key.slice(1), ...(p.manager ? { manager: prefix + p.manager.slice(1) } : {}) }));

describeWithServer('postgres')('schedules: a two-step sequence on PostgreSQL', () => {
  let pg: Postgres;
  let rt: ServiceUnderTest;
  let hrId: string;
  let contractorsId: string;
  let hr: SqlContractFixture;

  const createConnector = async (name: string, config: SqlConfig): Promise<string> => {
    const res = await rt.call('POST', 'connectors', { body: { name, type: 'sql', config } });
    if (res.status !== 201) throw new Error(`create connector: ${res.status} ${res.text}`);
    return res.body.id as string;
  };
  const sourceRules = async (id: string) => {
    await rule(rt, { ruleType: 'ProjectionRule', connectorId: id, sourceAttribute: 'employee_id', objectType: 'User' });
    for (const [s, t] of [
      ['employee_id', 'employeeId'],
      ['given_name', 'givenName'],
      ['sn', 'sn'],
    ])
      await rule(rt, { ruleType: 'FlowRule', connectorId: id, sourceAttribute: s, targetAttribute: t, confidence: 50 });
  };
  /** A fresh target database and its connector; each insert sleeps `sleepSeconds` (a slow target). */
  const target = async (name: string, sleepSeconds: number) => {
    const f = await SqlContractFixture.create(pgServer(pg));
    const base = f.config();
    const id = await createConnector(name, {
      ...base,
      exportStatements: {
        ...base.exportStatements,
        // Idempotent, as a target should be: an insert applied again after a crash changes nothing.
        insert: `SELECT pg_sleep(${sleepSeconds}); INSERT INTO people (employee_id, given_name, sn) VALUES (:employee_id, :given_name, :sn) ON CONFLICT (employee_id) DO NOTHING`,
      },
    } as SqlConfig);
    for (const [s, t] of [
      ['employeeId', 'employee_id'],
      ['givenName', 'given_name'],
      ['sn', 'sn'],
    ]) {
      await rule(rt, { ruleType: 'FlowRule', connectorId: id, direction: 'outbound', sourceAttribute: s, targetAttribute: t, confidence: 50 });
    }
    return { f, id, rows: async () => (await f.exec('SELECT employee_id FROM people')).length };
  };
  /** Every run of `connectorId` that the schedule run started. */
  const runsOf = async (connectorId: string, scheduleRunId: string): Promise<Json[]> =>
    (await rt.call('GET', `runs?connectorId=${connectorId}&take=200`)).body.items.filter((r: Json) => r.trigger.scheduleRunId === scheduleRunId);

  beforeAll(async () => {
    pg = await startPostgres();
    rt = await startService({ env: { Schedules__MinIntervalSeconds: '2' } });
    hr = await SqlContractFixture.create(pgServer(pg));
    await hr.seed(people('H'));
    const contractors = await SqlContractFixture.create(pgServer(pg));
    await contractors.seed(people('C'));
    hrId = await createConnector('HR', hr.config());
    contractorsId = await createConnector('Contractors', contractors.config());
    await sourceRules(hrId);
    await sourceRules(contractorsId);
  });
  afterAll(async () => {
    await rt?.dispose();
    await pg?.stop();
  });

  test('runs by itself on its cron: both sources in parallel, then the export; Completed, every run triggered by the schedule', async () => {
    const t = await target('Target', 0);
    const at = secondsFromNow(5);
    const s = await createSchedule(rt, {
      name: 'Nightly sync',
      cron: cronAt(at),
      steps: [
        { runType: 'FullImport', connectorIds: [hrId, contractorsId] },
        { runType: 'Export', connectorIds: [t.id] },
      ],
    });
    const [first] = await waitScheduleRuns(rt, s.scheduleId, (items) => items.length > 0, 30_000);
    const done = await waitScheduleRun(rt, s.scheduleId, first.scheduleRunId);
    expect(done).toMatchObject({
      trigger: 'schedule',
      status: 'Completed',
      steps: [
        { runType: 'FullImport', status: 'Completed' },
        { runType: 'Export', status: 'Completed' },
      ],
    });
    expect(Date.parse(done.startedOn) - at.getTime()).toBeLessThan(3000);
    const ids = done.steps.flatMap((st: Json) => st.runs.map((r: Json) => r.runId));
    expect(ids).toHaveLength(3);
    const runs = await Promise.all(ids.map(async (id: string) => (await rt.call('GET', `runs/${id}`)).body));
    for (const r of runs) {
      expect(r.status).toBe('Completed');
      expect(r.trigger).toEqual({ type: 'schedule', actorUpn: 'schedule:Nightly sync', scheduleId: s.scheduleId, scheduleRunId: done.scheduleRunId });
    }
    // the two imports overlapped (parallel); the export began after both ended
    expect(Date.parse(runs[1].startedAt)).toBeLessThan(Date.parse(runs[0].completedAt));
    expect(Date.parse(runs[2].startedAt)).toBeGreaterThanOrEqual(Math.max(Date.parse(runs[0].completedAt), Date.parse(runs[1].completedAt)));
    expect(runs[2].stats.objectsCreated).toBe(10);
    expect(await t.rows()).toBe(10);
    expect((await rt.call('GET', `schedules/${s.scheduleId}`)).body.lastRun).toEqual({
      scheduleRunId: done.scheduleRunId,
      status: 'Completed',
      startedOn: done.startedOn,
    });
  });

  test('kill -9 during the export step: after restart the schedule run resumes and completes, and no run was started twice', async () => {
    const t = await target('Slow target', 0.5);
    const at = secondsFromNow(4);
    const s = await createSchedule(rt, {
      name: 'Survives a crash',
      cron: cronAt(at),
      steps: [
        { runType: 'FullImport', connectorIds: [hrId, contractorsId] },
        { runType: 'Export', connectorIds: [t.id] },
      ],
    });
    const [first] = await waitScheduleRuns(rt, s.scheduleId, (items) => items.length > 0, 30_000);
    await waitScheduleRun(rt, s.scheduleId, first.scheduleRunId, (r) => r.steps[1].runs[0].runId !== null && r.steps[1].runs[0].status === 'Running');
    const deadline = Date.now() + 30_000;
    while ((await t.rows()) < 1 && Date.now() < deadline) await sleep(100);
    await rt.kill();
    const before = await t.rows();
    expect(before).toBeLessThan(10);
    await rt.start();
    const done = await waitScheduleRun(rt, s.scheduleId, first.scheduleRunId, undefined, 180_000);
    expect(done).toMatchObject({ status: 'Completed', steps: [{ status: 'Completed' }, { status: 'Completed' }] });
    expect(await runsOf(hrId, first.scheduleRunId)).toHaveLength(1);
    expect(await runsOf(contractorsId, first.scheduleRunId)).toHaveLength(1);
    const exports = await runsOf(t.id, first.scheduleRunId);
    expect(exports).toHaveLength(1);
    expect(exports[0]).toMatchObject({ status: 'Completed', runId: done.steps[1].runs[0].runId });
    expect(await t.rows()).toBe(10);
    expect((await rt.call('GET', `schedules/${s.scheduleId}/runs`)).body.totalCount).toBe(1);
  });

  test('a tick while the previous schedule run is still going is recorded Skipped and starts nothing', async () => {
    const slowId = await createConnector(
      'Slow HR',
      hr.config({
        // The same people, after a 5 s sleep: a source slower than the schedule's interval (2 s).
        fullImportQuery:
          'SELECT employee_id, given_name, sn, mail, manager_employee_id, department, row_version FROM people CROSS JOIN pg_sleep(5) WHERE deleted = false',
      }),
    );
    await sourceRules(slowId);
    const body = { name: 'Every two seconds', cron: '*/2 * * * * *', steps: [{ runType: 'FullImport', connectorIds: [slowId] }] };
    const s = await createSchedule(rt, body);
    const items = await waitScheduleRuns(rt, s.scheduleId, (xs) => xs.some((x) => x.status === 'Skipped') && xs.some((x) => x.status === 'Completed'), 60_000);
    expect((await rt.call('PUT', `schedules/${s.scheduleId}`, { body: { ...body, isEnabled: false } })).status).toBe(200);
    for (const skipped of items.filter((x) => x.status === 'Skipped')) {
      expect(skipped).toMatchObject({
        trigger: 'schedule',
        completedOn: skipped.startedOn,
        steps: [{ status: 'NotRun', runs: [{ connectorId: slowId, runId: null, status: 'NotRun' }] }],
      });
      expect(await runsOf(slowId, skipped.scheduleRunId)).toHaveLength(0);
    }
    const completed = items.find((x) => x.status === 'Completed');
    expect(await runsOf(slowId, completed.scheduleRunId)).toHaveLength(1);
  });
});
