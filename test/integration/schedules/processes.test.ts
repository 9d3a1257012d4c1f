import { rawTable, startService, type ServiceUnderTest } from '../../support/service';
import { fileConnector, folder, rule, writeCsv } from '../sync/syncSupport';
import { createSchedule, sleep, waitScheduleRuns } from './scheduleSupport';

/**
 * Two real engine processes (each its own task hub) on one storage account run the same scheduler loop: each
 * tick is claimed once and starts one schedule run, whichever process claims it. Then every process is down
 * while ticks pass: at the next start the latest missed tick runs once (past due), and only once.
 */
jest.setTimeout(240_000);

/** The schedules' cron ticks every TICK_S seconds (the test-only Schedules__MinIntervalSeconds lets it). */
const TICK_S = 2;
const EVERY_TICK = `*/${TICK_S} * * * * *`;

// eslint-disable-next-line @typescript-eslint/no-explicit-any
type Json = any;

let a: ServiceUnderTest;
let b: ServiceUnderTest;
let connectorId: string;
beforeAll(async () => {
  const env = { Schedules__MinIntervalSeconds: String(TICK_S) };
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

async function waitFor(what: string, until: () => Promise<boolean>, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await until())) {
    if (Date.now() > deadline) throw new Error(`waited in vain for ${what}`);
    await sleep(250);
  }
}

/** Once the disabled schedule's partition holds still: no new claim for three ticks, each claim with its run, none Running. */
async function settled(scheduleId: string): Promise<void> {
  let last = -1;
  let since = Date.now();
  await waitFor(
    'the partition settled',
    async () => {
      const { claims, runs } = await partition(scheduleId);
      if (claims.length !== last) [last, since] = [claims.length, Date.now()];
      return Date.now() - since >= 3 * TICK_S * 1000 && runs.length === claims.length && runs.every((r) => r.status !== 'Running');
    },
    60_000,
  );
}

const scheduleRunsOfConnector = async (scheduleId: string) =>
  (await a.call('GET', `runs?connectorId=${connectorId}&take=200`)).body.items.filter((r: Json) => r.trigger.scheduleId === scheduleId);

test('two processes on one storage account: every tick starts exactly one schedule run and one connector run', async () => {
  const body = { name: 'Shared', cron: EVERY_TICK, steps: [{ runType: 'FullImport', connectorIds: [connectorId] }] };
  const s = await createSchedule(a, body);
  await waitFor('five ticks claimed', async () => (await partition(s.scheduleId)).claims.length >= 5, 90_000);
  expect((await a.call('PUT', `schedules/${s.scheduleId}`, { body: { ...body, isEnabled: false } })).status).toBe(200);
  // Whatever either process ticks meanwhile counts too: a tick fired as the schedule was disabled is claimed and
  // recorded a moment later. Settled: no new claim for three ticks' time, every claim with its run, none running.
  await settled(s.scheduleId);
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
  const s = await createSchedule(a, { name: 'Past due', cron: EVERY_TICK, steps: [{ runType: 'FullImport', connectorIds: [connectorId] }] });
  await waitScheduleRuns(a, s.scheduleId, (items) => items.length >= 1 && items.every((x) => x.status !== 'Running'), 30_000);
  await a.kill();
  await b.kill();
  const down = Date.now();
  await sleep(3.5 * TICK_S * 1000); // three or four ticks pass with nobody running
  const before = (await partition(s.scheduleId)).runs.length;
  const mark = a.logMark();
  await a.start();
  // The loop's first pass names the tick it takes as past due: the latest at or before that pass.
  const logged = await a.untilLogged(/Schedule 'Past due': the tick of (\S+) is past due/, mark, 60_000);
  const pastDue = /Schedule 'Past due': the tick of (\S+) is past due/.exec(logged)![1];
  const next = new Date(Date.parse(pastDue) + TICK_S * 1000).toISOString();
  // Once the tick after it has a schedule run too, every tick up to it is accounted for.
  const { runs } = await tickRunSince(s.scheduleId, Date.parse(next));
  const missed = runs.filter((r) => Date.parse(r.tick) > down && Date.parse(r.tick) <= Date.parse(next));
  expect(runs.length).toBeGreaterThan(before);
  expect(Date.parse(pastDue) - down).toBeGreaterThan(2 * TICK_S * 1000); // ticks before it were missed
  // The latest missed tick, once (and none of those before it), then the ticks go on.
  expect(missed.map((r) => Date.parse(r.tick)).sort()).toEqual([Date.parse(pastDue), Date.parse(next)]);
  expect(missed.every((r) => r.trigger === 'schedule')).toBe(true);
  // a restart does not run it again
  await a.kill();
  await a.start();
  await tickRunSince(s.scheduleId, Date.now());
  const again = (await partition(s.scheduleId)).runs.filter((r) => Date.parse(r.tick) > down && Date.parse(r.tick) <= Date.parse(pastDue));
  expect(again.map((r) => Date.parse(r.tick))).toEqual([Date.parse(pastDue)]);
  await a.call('PUT', `schedules/${s.scheduleId}`, {
    body: { name: 'Past due', cron: EVERY_TICK, isEnabled: false, steps: [{ runType: 'FullImport', connectorIds: [connectorId] }] },
  });
  await b.start();
});
