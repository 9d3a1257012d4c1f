import { startService, USERS, type ServiceUnderTest } from '../../support/service';
import { fileConnector, folder, runImport, sourceRules, waitRun, writeCsv } from '../sync/syncSupport';
import { createSchedule, waitScheduleRun } from './scheduleSupport';

/**
 * A run a schedule started that exceeds a threshold waits AwaitingApproval and holds its schedule step (the
 * schedule run stays Running, the next step does not start); its requester is the schedule, so any Admin may
 * approve it; approved, it applies its plan and the schedule run goes on to the end.
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

  test('the step waits; the schedule run stays Running; any Admin approves; the sequence completes', async () => {
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
    // Still waiting a moment later: nothing moves without a decision.
    await new Promise((r) => setTimeout(r, 2000));
    expect((await rt.call('GET', `schedules/${schedule.scheduleId}/runs/${started.body.scheduleRunId}`)).body).toMatchObject({
      status: 'Running',
      steps: [{ status: 'Running' }, { status: 'NotStarted' }],
    });
    // The schedule started it, not this Admin: the four-eyes rule lets the test Admin approve.
    const ok = await rt.call('POST', `runs/${runId}/approve`);
    expect(ok.status).toBe(202);
    expect(await waitRun(rt, runId)).toMatchObject({ status: 'Completed', stats: { objectsDeleted: 8 } });
    const done = await waitScheduleRun(rt, schedule.scheduleId, started.body.scheduleRunId);
    expect(done).toMatchObject({ status: 'Completed', steps: [{ status: 'Completed' }, { status: 'Completed' }] });
    const audit = await rt.call('GET', `audit?targetType=run&targetId=${runId}`);
    expect(audit.body.items).toEqual([expect.objectContaining({ action: 'approve', actorSid: USERS.Admin.oid })]);
  });
});
