import * as df from 'durable-functions';
import type { ActivityHandler, OrchestrationContext, OrchestrationHandler } from 'durable-functions';
import type { InvocationContext } from '@azure/functions';
import { finishStep, plannedStepCount, pollStep, startStep, type PollResult, type ScheduleRunRef } from '../lib/schedules/runner';
import { runOrchestrations } from './runReconcile';
import { startRunOrchestration } from './syncDispatcher';

/**
 * One schedule run (the orchestration instance id is the scheduleRunId): its steps in order. For each step an
 * activity starts the runs of its connectors (they run in parallel, each in its own syncRun orchestration), then
 * the orchestration waits on a durable timer and polls an activity that reads the runs' statuses, until all of
 * them are over. A Failed run with stopOnFailure ends the sequence. A cancel (POST .../cancel) ends the schedule
 * run in storage; the next activity sees it and the orchestration returns.
 *
 * Durable: after a crash the orchestration replays its history and goes on from the activity it was in; the
 * start activity is idempotent (lib/schedules/runner.ts), so no run is started twice. The history stays short:
 * after POLLS_PER_EPISODE polls the orchestration continues as new, with the step it is in.
 */
export const SCHEDULE_RUN = 'scheduleRun';
export const SCHEDULE_PLAN = 'scheduleRunPlan';
export const SCHEDULE_START_STEP = 'scheduleRunStartStep';
export const SCHEDULE_POLL_STEP = 'scheduleRunPollStep';
export const SCHEDULE_FINISH = 'scheduleRunFinish';
/** Seconds between two polls of a step's runs. */
export const POLL_SECONDS = 2;
const POLLS_PER_EPISODE = 100;

interface ScheduleRunInput extends ScheduleRunRef {
  /** Set when continued as new: the step in progress, already started. */
  step?: number;
}
interface StepInput {
  ref: ScheduleRunRef;
  step: number;
}

const scheduleRun: OrchestrationHandler = function* (context: OrchestrationContext) {
  const input = context.df.getInput() as ScheduleRunInput;
  const ref: ScheduleRunRef = { scheduleId: input.scheduleId, scheduleRunId: input.scheduleRunId };
  const steps = (yield context.df.callActivity(SCHEDULE_PLAN, ref)) as number;
  let polls = 0;
  for (let step = input.step ?? 0; step < steps; step++) {
    if (step !== input.step) {
      const started = (yield context.df.callActivity(SCHEDULE_START_STEP, { ref, step } satisfies StepInput)) as { stopped: boolean };
      if (started.stopped) return;
    }
    let poll = (yield context.df.callActivity(SCHEDULE_POLL_STEP, { ref, step } satisfies StepInput)) as PollResult;
    while (!poll.over) {
      if (++polls >= POLLS_PER_EPISODE) {
        context.df.continueAsNew({ ...ref, step } satisfies ScheduleRunInput);
        return;
      }
      yield context.df.createTimer(new Date(context.df.currentUtcDateTime.getTime() + POLL_SECONDS * 1000));
      poll = (yield context.df.callActivity(SCHEDULE_POLL_STEP, { ref, step } satisfies StepInput)) as PollResult;
    }
    if (poll.stopped) return;
    if (poll.stopSequence) break;
  }
  yield context.df.callActivity(SCHEDULE_FINISH, ref);
};

/** Start the schedule run's orchestration (instance id = scheduleRunId) unless it already exists. */
export async function startScheduleRunOrchestration(client: df.DurableClient, ref: ScheduleRunRef): Promise<void> {
  const exists = async () => !!(await client.getStatus(ref.scheduleRunId).catch(() => undefined))?.runtimeStatus;
  try {
    await client.startNew(SCHEDULE_RUN, { instanceId: ref.scheduleRunId, input: ref });
  } catch (err) {
    if (!(await exists())) throw err;
  }
}

/** The start activity has a durable client of its own: it starts the runs' syncRun orchestrations on this task hub. */
const startStepActivity: ActivityHandler = async (input: StepInput, context: InvocationContext) => {
  const client = df.getClient(context);
  return startStep(input.ref, input.step, (runId) => startRunOrchestration(client, runId), runOrchestrations(client));
};

df.app.orchestration(SCHEDULE_RUN, scheduleRun);
df.app.activity(SCHEDULE_PLAN, { handler: (ref: ScheduleRunRef) => plannedStepCount(ref) });
df.app.activity(SCHEDULE_START_STEP, { extraInputs: [df.input.durableClient()], handler: startStepActivity });
df.app.activity(SCHEDULE_POLL_STEP, { handler: (input: StepInput) => pollStep(input.ref, input.step) });
df.app.activity(SCHEDULE_FINISH, { handler: (ref: ScheduleRunRef) => finishStep(ref) });
