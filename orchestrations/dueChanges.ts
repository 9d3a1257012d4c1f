import { app, type InvocationContext, type Timer } from '@azure/functions';
import * as df from 'durable-functions';
import { currentInstanceId } from '../lib/instances/instances';
import { dueTimerSchedule, runDueChanges } from '../lib/runs/dueChanges';
import { startRunOrchestration } from './syncDispatcher';

/**
 * The due timer: every 10 seconds (`dueTimerSchedule`; a Development-only test hook can shorten it), the objects
 * whose dated changes are due (rules that read now(), see docs/dated-changes.md) are exported to their targets,
 * with no import. Every instance ticks; each due row is claimed by one of them (lib/runs/dueChanges.ts).
 */
export async function dueChanges(_timer: Timer, context: InvocationContext): Promise<void> {
  const client = df.getClient(context);
  await runDueChanges(async (runId) => {
    await startRunOrchestration(client, runId);
  }, currentInstanceId());
}

app.timer('dueChanges', { schedule: dueTimerSchedule(), extraInputs: [df.input.durableClient()], handler: dueChanges });
