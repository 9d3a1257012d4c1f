import { triggerRun } from '../../../lib/runs/runs';
import { beginScheduleRun, scheduleActor, startStep } from '../../../lib/schedules/runner';
import { completeRun, emptyStats, getRun, listRuns } from '../../../lib/storage/runs';
import { getSchedule, getScheduleRun } from '../../../lib/storage/schedules';
import { startService, type ServiceUnderTest } from '../../support/service';
import { fileConnector, folder, writeCsv } from '../sync/syncSupport';
import { createSchedule } from './scheduleSupport';

/**
 * The start activity of a schedule run, called in this process against the service's tables: the crash window
 * between triggering a connector's run and recording its id on the schedule-run row. The run was triggered, the
 * process died before recording it, the orchestration replays the activity: it must adopt that run, not start a
 * second one (nor record the step as Failed because the connector's run lock is held by its own run).
 */
jest.setTimeout(120_000);

let rt: ServiceUnderTest;
beforeAll(async () => {
  rt = await startService();
});
afterAll(async () => {
  await rt?.dispose();
});

test('a run triggered but not recorded before a crash is adopted on replay; a second replay starts nothing', async () => {
  const dir = folder();
  writeCsv(dir, 'people.csv', ['id'], [{ id: 'a' }]);
  const c1 = await fileConnector(rt, 'Window one', dir);
  const c2 = await fileConnector(rt, 'Window two', dir);
  const created = await createSchedule(rt, {
    name: 'Crash window',
    cron: '0 0 3 * * *',
    isEnabled: false,
    steps: [{ runType: 'FullImport', connectorIds: [c1, c2] }],
  });
  const schedule = (await getSchedule(created.scheduleId))!;
  const { run } = await beginScheduleRun(schedule, 'manual', null, 'no-hub');
  const ref = { scheduleId: schedule.scheduleId, scheduleRunId: run.scheduleRunId };
  const started: string[] = [];
  const start = async (runId: string) => {
    started.push(runId);
  };
  const orchestrations = { taskHub: 'no-hub', status: async () => null };

  // The crash: the first connector's run was triggered as the activity does, and nothing was recorded.
  const actor = scheduleActor(schedule.name);
  const orphan = await triggerRun(
    {
      connectorId: c1,
      runType: 'FullImport',
      dryRun: false,
      trigger: { type: 'schedule', actorUpn: actor, scheduleId: ref.scheduleId, scheduleRunId: ref.scheduleRunId },
    },
    actor,
    start,
    orchestrations,
  );
  expect((await getScheduleRun(ref.scheduleId, ref.scheduleRunId))!.steps[0].runs[0].runId).toBeNull();

  // The replay.
  expect(await startStep(ref, 0, start, orchestrations)).toEqual({ stopped: false });
  const after = (await getScheduleRun(ref.scheduleId, ref.scheduleRunId))!;
  expect(after.steps[0].runs[0]).toMatchObject({ connectorId: c1, runId: orphan.runId });
  expect(after.steps[0].runs[1].runId).not.toBeNull();
  expect(started).toHaveLength(2); // the orphan's start, and the second connector's: nothing more

  // Another replay (the activity ran to its end but its result was lost): nothing new.
  await startStep(ref, 0, start, orchestrations);
  expect(started).toHaveLength(2);
  for (const c of [c1, c2]) {
    const ofRun = (await listRuns({ connectorId: c, skip: 0, take: 50 })).items.filter((r) => r.trigger.scheduleRunId === ref.scheduleRunId);
    expect(ofRun).toHaveLength(1);
  }
  // No orchestration runs these (the start above was a stand-in): end them, releasing the connectors.
  for (const e of after.steps[0].runs) {
    const r = (await getRun(e.runId!))!;
    await completeRun(r.runId, { status: 'Cancelled', stats: emptyStats(), error: 'test' }, { etag: r.etag });
  }
});
