import { rawTable, startService, type ServiceUnderTest } from '../../support/service';
import { fileConnector, folder, rule, writeCsv } from '../sync/syncSupport';
import { createSchedule, sleep, waitScheduleRuns } from './scheduleSupport';

/**
 * Two real engine processes (each its own task hub) on one storage account run the same scheduler loop: each
 * tick is claimed once and starts one schedule run, whichever process claims it. Then every process is down
 * while ticks pass: at the next start the latest missed tick runs once (past due), and only once.
 */
jest.setTimeout(240_000);

// eslint-disable-next-line @typescript-eslint/no-explicit-any
type Json = any;

let a: ServiceUnderTest;
let b: ServiceUnderTest;
let connectorId: string;
beforeAll(async () => {
  const env = { Schedules__MinIntervalSeconds: '5' };
  a = await startService({ env: { ...env, Engine__InstanceName: 'sched-a' } });
  b = await startService({ prefix: a.prefix, env: { ...env, Engine__InstanceName: 'sched-b' } });
  const dir = folder();
  writeCsv(dir, 'people.csv', ['id', 'personId'], [{ id: 'p1', personId: 'P1' }]);
  connectorId = await fileConnector(a, 'Ticked', dir);
  await rule(a, { ruleType: 'ProjectionRule', connectorId, sourceAttribute: 'personId' });
});
afterAll(async () => {
  await b?.dispose();
  await a?.dispose();
});

/** The rows of the schedule's partition: claims (by tick) and schedule runs (with the tick they ran for). */
async function partition(scheduleId: string): Promise<{ claims: Json[]; runs: Json[] }> {
  const client = await rawTable('ScheduleRuns');
  const claims: Json[] = [];
  const runs: Json[] = [];
  for await (const e of client.listEntities<Json>({ queryOptions: { filter: `PartitionKey eq '${scheduleId}'` } })) {
    if (String(e.rowKey).startsWith('t_')) claims.push({ tick: String(e.rowKey).slice(2), claimedBy: e.claimedBy });
    else if (/^\d/.test(String(e.rowKey))) runs.push(JSON.parse(e.body));
  }
  return { claims, runs };
}

/** The schedule's partition once a tick at or after `since` has a schedule run. */
async function tickRunSince(scheduleId: string, since: number): Promise<{ claims: Json[]; runs: Json[] }> {
  const deadline = Date.now() + 90_000;
  for (;;) {
    const rows = await partition(scheduleId);
    if (rows.runs.some((r) => Date.parse(r.tick) >= since)) return rows;
    if (Date.now() > deadline) throw new Error(`no tick after ${new Date(since).toISOString()} ran: ${JSON.stringify(rows.runs.map((r) => r.tick))}`);
    await sleep(250);
  }
}

const scheduleRunsOfConnector = async (scheduleId: string) =>
  (await a.call('GET', `runs?connectorId=${connectorId}&take=200`)).body.items.filter((r: Json) => r.trigger.scheduleId === scheduleId);

test('two processes on one storage account: every tick starts exactly one schedule run and one connector run', async () => {
  const body = { name: 'Shared', cron: '*/5 * * * * *', steps: [{ runType: 'FullImport', connectorIds: [connectorId] }] };
  const s = await createSchedule(a, body);
  await sleep(26_000);
  expect((await a.call('PUT', `schedules/${s.scheduleId}`, { body: { ...body, isEnabled: false } })).status).toBe(200);
  await sleep(12_000); // b reloads the schedule within 10 s; whatever it ticks meanwhile counts too
  await waitScheduleRuns(a, s.scheduleId, (items) => items.every((x) => x.status !== 'Running'), 30_000);

  const { claims, runs } = await partition(s.scheduleId);
  const ticks = runs.map((r) => r.tick);
  expect(claims.length).toBeGreaterThanOrEqual(5);
  expect(new Set(ticks).size).toBe(ticks.length); // no tick ran twice
  expect([...ticks].sort()).toEqual(claims.map((c) => c.tick).sort()); // every claim made one schedule run
  const started = runs.filter((r) => r.status !== 'Skipped');
  expect(started.every((r) => r.status === 'Completed')).toBe(true);
  const connectorRuns = await scheduleRunsOfConnector(s.scheduleId);
  expect(connectorRuns).toHaveLength(started.length);
  expect(new Set(connectorRuns.map((r: Json) => r.trigger.scheduleRunId))).toEqual(new Set(started.map((r) => r.scheduleRunId)));
  // both processes ran the loop (which one wins a tick is a race; each claimed by exactly one of them)
  const claimers = new Set(claims.map((c) => c.claimedBy));
  expect(claimers.size).toBeGreaterThanOrEqual(1);
  expect(claimers.size).toBeLessThanOrEqual(2);
});

test('ticks missed while every process was down: the latest runs once at start, and not again at the next start', async () => {
  const s = await createSchedule(a, { name: 'Past due', cron: '*/5 * * * * *', steps: [{ runType: 'FullImport', connectorIds: [connectorId] }] });
  await waitScheduleRuns(a, s.scheduleId, (items) => items.length >= 1 && items.every((x) => x.status !== 'Running'), 30_000);
  await a.kill();
  await b.kill();
  const down = Date.now();
  await sleep(17_000); // three or four ticks pass with nobody running
  const before = (await partition(s.scheduleId)).runs.length;
  await a.start();
  const ready = Date.now(); // the loop's first pass comes right after the start
  // A tick after the start has run: the first pass (which runs the past-due tick) is over, however slow the machine.
  const { runs } = await tickRunSince(s.scheduleId, ready);
  const missed = runs.filter((r) => Date.parse(r.tick) > down && Date.parse(r.tick) < ready);
  expect(runs.length).toBeGreaterThan(before);
  expect(missed).toHaveLength(1); // the latest missed tick, once
  expect(Date.parse(missed[0].tick)).toBeGreaterThan(ready - 5_000);
  expect(missed[0].trigger).toBe('schedule');
  // a restart does not run it again
  await a.kill();
  await a.start();
  await tickRunSince(s.scheduleId, Date.now());
  const again = (await partition(s.scheduleId)).runs.filter((r) => Date.parse(r.tick) > down && Date.parse(r.tick) < ready);
  expect(again).toHaveLength(1);
  await a.call('PUT', `schedules/${s.scheduleId}`, {
    body: { name: 'Past due', cron: '*/5 * * * * *', isEnabled: false, steps: [{ runType: 'FullImport', connectorIds: [connectorId] }] },
  });
  await b.start();
});
