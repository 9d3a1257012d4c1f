import { app, type InvocationContext, type Timer } from '@azure/functions';
import * as df from 'durable-functions';
import { currentInstanceId } from '../lib/instances/instances';
import { schedulerPass, type SchedulerHost } from '../lib/schedules/scheduler';
import { startScheduleRunOrchestration } from './scheduleRun';

/**
 * The scheduler loop (lib/schedules/scheduler.ts), every second: due ticks of the enabled schedules are claimed
 * (once across every process on the storage account) and started as scheduleRun orchestrations on this
 * instance's task hub. On the Functions host the same registration is a timer trigger, which the host runs on
 * one instance at a time (its singleton lock); the claim row makes a tick start once whatever the host does.
 */
export async function scheduleTicks(_timer: Timer, context: InvocationContext): Promise<void> {
  const client = df.getClient(context);
  const host: SchedulerHost = {
    instanceId: currentInstanceId(),
    taskHub: client.taskHubName,
    start: (ref) => startScheduleRunOrchestration(client, ref),
    async status(scheduleRunId) {
      try {
        const s = await client.getStatus(scheduleRunId, { showHistory: false, showHistoryOutput: false, showInput: false });
        return s?.runtimeStatus ? String(s.runtimeStatus) : null;
      } catch (err) {
        if (/\bHTTP 404\b/.test((err as Error).message ?? '')) return null;
        throw err;
      }
    },
  };
  const claimed = await schedulerPass(host);
  if (claimed) context.log(`Started ${claimed} schedule tick(s).`);
}

app.timer('scheduleTicks', { schedule: '* * * * * *', extraInputs: [df.input.durableClient()], handler: scheduleTicks });
