import { startService, USERS, type ServiceUnderTest } from '../../support/service';
import { fileConnector, folder, runImport, sourceRules, waitRun, writeCsv } from '../sync/syncSupport';
import { createSchedule, cronAt, secondsFromNow, waitScheduleRun, waitScheduleRuns } from './scheduleSupport';

/**
 * A run a schedule started that exceeds a threshold waits AwaitingApproval and holds its schedule step (the
 * schedule run stays Running, the next step does not start); approved, it applies its plan and the schedule run
 * goes on to the end. Schedule runs are not exempt from the four-eyes rule: the requester of a run-now is who
 * pressed it, and of a tick whoever changed the schedule or what it runs since its last approved run.
 */
jest.setTimeout(300_000);

// eslint-disable-next-line @typescript-eslint/no-explicit-any
type Json = any;

describe('schedules: a run waiting for approval holds its step', () => {
  let rt: ServiceUnderTest;
  const dir = folder('ims-sched-approval-');
  const H = ['id', 'employeeId', 'givenName'];
  const rows = (n: number) => Array.from({ length: n }, (_, i) => ({ id: `s${i}`, employeeId: `S${i}`, givenName: `Name${i}` }));
  let hr = '';
  let second = '';

  beforeAll(async () => {
    rt = await startService();
    writeCsv(dir, 'people.csv', H, rows(10));
    hr = await fileConnector(rt, 'HR', dir);
    await sourceRules(rt, hr, 'employeeId', ['employeeId', 'givenName']);
    expect(await runImport(rt, hr)).toMatchObject({ status: 'Completed', stats: { objectsCreated: 10 } });
    const otherDir = folder('ims-sched-approval-2-');
    writeCsv(otherDir, 'people.csv', H, rows(1));
    second = await fileConnector(rt, 'Second', otherDir);
  });
  afterAll(async () => {
    await rt?.dispose();
  });

  test('the step waits; the schedule run stays Running; an Admin other than who pressed run-now approves; the sequence completes', async () => {
    writeCsv(dir, 'people.csv', H, rows(2));
    const schedule = await createSchedule(rt, {
      name: 'Nightly',
      cron: '0 30 2 * * *',
      isEnabled: false,
      steps: [
        { runType: 'FullImport', connectorIds: [hr] },
        { runType: 'FullImport', connectorIds: [second] },
      ],
    });
    const started = await rt.call('POST', `schedules/${schedule.scheduleId}/run`, { role: 'Operator' });
    expect(started.status).toBe(202);
    const waiting = await waitScheduleRun(rt, schedule.scheduleId, started.body.scheduleRunId, (r: Json) => r.steps[0].runs[0].status === 'AwaitingApproval');
    expect(waiting).toMatchObject({ status: 'Running', steps: [{ status: 'Running' }, { status: 'NotStarted' }] });
    const runId = waiting.steps[0].runs[0].runId;
    const run = (await rt.call('GET', `runs/${runId}`)).body;
    expect(run).toMatchObject({
      status: 'AwaitingApproval',
      trigger: { type: 'schedule', actorUpn: 'schedule:Nightly' },
      approval: { requestedBy: 'schedule:Nightly', reasons: [{ operation: 'deletes', count: 8, limit: 2 }] },
    });
    // Nothing moves without a decision: read the schedule run on every poll of a window of two of the schedule's
    // own step polls (every 2 s), and it is the same at each read. Time passing is what this checks: no sleep.
    const watchUntil = Date.now() + 4_500;
    let reads = 0;
    while (Date.now() < watchUntil || reads < 3) {
      expect((await rt.call('GET', `schedules/${schedule.scheduleId}/runs/${started.body.scheduleRunId}`)).body).toMatchObject({
        status: 'Running',
        steps: [{ status: 'Running', runs: [{ status: 'AwaitingApproval' }] }, { status: 'NotStarted' }],
      });
      reads++;
      await new Promise((r) => setTimeout(r, 250));
    }
    // The Operator pressed run-now (its requester), not this Admin: the four-eyes rule lets the test Admin approve.
    expect(run.approval.requester).toBe(USERS.Operator.upn);
    const ok = await rt.call('POST', `runs/${runId}/approve`);
    expect(ok.status).toBe(202);
    expect(await waitRun(rt, runId)).toMatchObject({ status: 'Completed', stats: { objectsDeleted: 8 } });
    const done = await waitScheduleRun(rt, schedule.scheduleId, started.body.scheduleRunId);
    expect(done).toMatchObject({ status: 'Completed', steps: [{ status: 'Completed' }, { status: 'Completed' }] });
    const audit = await rt.call('GET', `audit?targetType=run&targetId=${runId}`);
    expect(audit.body.items).toEqual([expect.objectContaining({ action: 'approve', actorSid: USERS.Admin.oid })]);
  });
  describe('the four-eyes rule holds the person behind a schedule run', () => {
    const ALICE = { oid: 'e1000000-0000-4000-8000-00000000000a', upn: 'alice@example.test', preferred_username: 'alice@example.test' };
    const BOB = { oid: 'e1000000-0000-4000-8000-00000000000b', upn: 'bob@example.test', preferred_username: 'bob@example.test' };
    const CAROL = { oid: 'e1000000-0000-4000-8000-00000000000c', upn: 'carol@example.test', preferred_username: 'carol@example.test' };
    const DAVE = { oid: 'e1000000-0000-4000-8000-00000000000d', upn: 'dave@example.test', preferred_username: 'dave@example.test' };

    /** A file source with 3 new rows and an `adds` threshold of 1: its import parks. */
    async function parkingSource(name: string): Promise<string> {
      const d = folder('ims-sched-foureyes-');
      writeCsv(
        d,
        'people.csv',
        H,
        [1, 2, 3].map((i) => ({ id: `${name}-${i}`, employeeId: `${name}-E${i}`, givenName: `Given${i}` })),
      );
      const res = await rt.call('POST', 'connectors', {
        body: {
          name,
          type: 'custom',
          config: { implementation: 'file', objectType: 'User', settings: { path: d, anchorColumn: 'id' }, thresholds: { adds: { count: 1 } } },
        },
      });
      expect(res.status).toBe(201);
      await sourceRules(rt, res.body.id, 'employeeId', ['employeeId', 'givenName']);
      return res.body.id;
    }

    /** The refusal names the rule and the requester; the run still waits and the schedule run still holds its step. */
    async function expectRefused(runId: string, as: typeof ALICE, requester: RegExp, scheduleId: string, scheduleRunId: string): Promise<void> {
      const meshCount = async () => (await rt.call('GET', 'mesh/objects?take=1')).body.totalCount as number;
      const before = await meshCount();
      const refused = await rt.call('POST', `runs/${runId}/approve`, { as });
      expect(refused.status).toBe(403);
      expect(refused.headers.get('content-type')).toBe('application/problem+json');
      expect(refused.body).toMatchObject({ code: 'forbidden' });
      expect(refused.body.detail).toMatch(/four-eyes rule \(Approvals__RequireSecondPerson\)/);
      expect(refused.body.detail).toMatch(requester);
      const after = (await rt.call('GET', `runs/${runId}`)).body;
      expect(after.status).toBe('AwaitingApproval');
      expect(after.approvedBy).toBeUndefined();
      expect(await meshCount()).toBe(before);
      expect((await rt.call('GET', `schedules/${scheduleId}/runs/${scheduleRunId}`)).body).toMatchObject({ status: 'Running', steps: [{ status: 'Running' }] });
    }

    test("run-now: who pressed it cannot approve what it parked; another Admin can; the run stays the schedule's", async () => {
      const src = await parkingSource('Run-now source');
      const schedule = await createSchedule(rt, {
        name: 'Pressed',
        cron: '0 30 2 * * *',
        isEnabled: false,
        steps: [{ runType: 'FullImport', connectorIds: [src] }],
      });
      const started = await rt.call('POST', `schedules/${schedule.scheduleId}/run`, { as: ALICE });
      expect(started.status).toBe(202);
      const waiting = await waitScheduleRun(rt, schedule.scheduleId, started.body.scheduleRunId, (r: Json) => r.steps[0].runs[0].status === 'AwaitingApproval');
      const runId = waiting.steps[0].runs[0].runId;
      expect((await rt.call('GET', `runs/${runId}`)).body).toMatchObject({
        trigger: { type: 'schedule', actorUpn: 'schedule:Pressed' },
        approval: { requestedBy: 'schedule:Pressed', requester: ALICE.upn },
      });
      await expectRefused(runId, ALICE, new RegExp(`asked for by ${ALICE.upn}`), schedule.scheduleId, started.body.scheduleRunId);
      expect((await rt.call('POST', `runs/${runId}/approve`, { as: BOB })).status).toBe(202);
      expect(await waitRun(rt, runId)).toMatchObject({ status: 'Completed', approvedBy: BOB.upn, stats: { objectsCreated: 3 } });
      expect(await waitScheduleRun(rt, schedule.scheduleId, started.body.scheduleRunId)).toMatchObject({ status: 'Completed' });
      const audit = (await rt.call('GET', `audit?targetType=run&targetId=${runId}`)).body.items;
      expect(audit).toEqual([
        expect.objectContaining({ action: 'approve', outcome: 'success', actorKey: `upn:${BOB.upn}` }),
        expect.objectContaining({ action: 'approve', outcome: 'failure', actorKey: `upn:${ALICE.upn}`, scheme: 'Bearer' }),
      ]);
      // The run is audited as the schedule's; the run-now as alice's.
      const trigger = (await rt.call('GET', `audit?targetType=connector&targetId=${src}`)).body.items.find((r: Json) => r.action === 'trigger');
      expect(trigger).toMatchObject({
        actorUpn: 'schedule:Pressed',
        actorKey: 'schedule:Pressed',
        actorKind: 'system',
        details: `Requested by ${ALICE.upn} (upn:${ALICE.upn}).`,
      });
      const pressed = (await rt.call('GET', `audit?targetType=schedule&targetId=${schedule.scheduleId}`)).body.items.find((r: Json) => r.action === 'trigger');
      expect(pressed).toMatchObject({ actorUpn: ALICE.upn, actorKey: `upn:${ALICE.upn}`, actorKind: 'person' });
    });

    test('a timed tick: whoever changed the schedule since its last approved run cannot approve what it parked', async () => {
      const src = await parkingSource('Tick source');
      const schedule = await createSchedule(rt, {
        name: 'Timed',
        cron: '0 30 2 * * *',
        isEnabled: false,
        steps: [{ runType: 'FullImport', connectorIds: [src] }],
      });
      // carol enables it to tick a few seconds from now.
      const put = await rt.call('PUT', `schedules/${schedule.scheduleId}`, {
        as: CAROL,
        body: { name: 'Timed', cron: cronAt(secondsFromNow(4)), isEnabled: true, steps: [{ runType: 'FullImport', connectorIds: [src] }] },
      });
      expect(put.status).toBe(200);
      const [ticked] = await waitScheduleRuns(rt, schedule.scheduleId, (items: Json[]) => items[0]?.steps[0].runs[0].status === 'AwaitingApproval');
      expect(ticked.trigger).toBe('schedule');
      const runId = ticked.steps[0].runs[0].runId;
      const run = (await rt.call('GET', `runs/${runId}`)).body;
      // carol changed it last; the test Admin created the connector and the schedule: both are held.
      expect(run.approval.requester).toMatch(new RegExp(`^${CAROL.upn} \\(and .*${USERS.Admin.upn}`));
      await expectRefused(runId, CAROL, new RegExp(`asked for by ${CAROL.upn}`), schedule.scheduleId, ticked.scheduleRunId);
      expect((await rt.call('POST', `runs/${runId}/approve`, { as: DAVE })).status).toBe(202);
      expect(await waitRun(rt, runId)).toMatchObject({ status: 'Completed', approvedBy: DAVE.upn });
      await rt.call('PUT', `schedules/${schedule.scheduleId}`, {
        body: { name: 'Timed', cron: '0 30 2 * * *', isEnabled: false, steps: [{ runType: 'FullImport', connectorIds: [src] }] },
      });
    });
  });
});
