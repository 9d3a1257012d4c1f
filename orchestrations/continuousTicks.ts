import { app, type InvocationContext, type Timer } from '@azure/functions';
import * as df from 'durable-functions';
import { continuousPass } from '../lib/schedules/continuous';
import { runOrchestrations } from './runReconcile';
import { startRunOrchestration } from './syncDispatcher';

/**
 * The continuous-mode loop (lib/schedules/continuous.ts), every second: each source connector in continuous mode
 * that this instance follows looks for changes when due and starts its batches and their exports as runs on this
 * instance's task hub. On the Functions host the same registration is a timer trigger.
 */
export async function continuousTicks(_timer: Timer, context: InvocationContext): Promise<void> {
  const client = df.getClient(context);
  await continuousPass({ start: (runId) => startRunOrchestration(client, runId), orchestrations: runOrchestrations(client) });
}

app.timer('continuousTicks', { schedule: '* * * * * *', extraInputs: [df.input.durableClient()], handler: continuousTicks });
