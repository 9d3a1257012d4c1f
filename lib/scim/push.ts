import type { Caller } from '../auth/permissions';
import type { SystemActor } from '../audit';
import { AppError } from '../core/errors';
import { SettingsReader } from '../core/config';
import { cancelRun, triggerRun, type RunOrchestrations, type StartRun } from '../runs/runs';
import { listConnectorRecords } from '../storage/connectors';
import { getRun, type StoredRun } from '../storage/runs';
import { restoreScimResource, unpushScimResource } from '../storage/scimResources';
import { ScimError } from './errors';
import type { ScimHooks, ScimWrite } from './router';

/**
 * What a push does after the store took it: the `scim_inbound` connector imports it, as a DeltaImport run with
 * its history, thresholds and approval, and the SCIM answer waits for that run (Entra expects 200/201/204
 * synchronously).
 *
 * - The connector: the one connector of type `scim_inbound`, or the one named by `Scim:ConnectorName` when
 *   there are several. None: the store alone answers (reads see what was pushed; nothing reaches the mesh).
 * - Group commit: the writes of requests that arrive while a run is going wait for the next run, which imports
 *   them all, so a burst (Bulk requests in parallel) costs a run per burst, not a run per request.
 * - A run that exceeds a threshold (it waits as AwaitingApproval) is cancelled, the writes it would have
 *   imported are undone in the store, and every request of that run is answered 409 saying which threshold:
 *   nothing lands. A run that fails undoes its writes too (503, with the run's error).
 */
export const SCIM_ACTOR: SystemActor = 'system:scim';

export interface RunDriver {
  start: StartRun;
  orchestrations: RunOrchestrations;
}

/** The writes land in the store only. */
export const noSettle = (): ScimHooks => ({ settle: async () => undefined });

interface Waiter {
  writes: ScimWrite[];
  resolve: () => void;
  reject: (err: unknown) => void;
}

const queues = new Map<string, PushQueue>();

/** The hooks of one request: its writes join the connector's queue. */
export function connectorPush(driver: RunDriver, _caller: Caller): ScimHooks {
  return {
    async settle(writes) {
      if (!writes.length) return;
      let connectorId: string | null;
      try {
        connectorId = await pushConnector();
      } catch (err) {
        // No connector can take the push: it does not stay in the store either.
        await undo(writes);
        throw err;
      }
      if (!connectorId) return;
      let q = queues.get(connectorId);
      if (!q) queues.set(connectorId, (q = new PushQueue(connectorId)));
      await q.push(writes, driver);
    },
  };
}

async function pushConnector(): Promise<string | null> {
  const name = new SettingsReader().raw('Scim:ConnectorName');
  const all = (await listConnectorRecords()).filter((c) => c.type === 'scim_inbound');
  if (name) {
    const hit = all.find((c) => c.name.toLowerCase() === name.toLowerCase());
    if (!hit) throw new ScimError(503, `Scim:ConnectorName names '${name}', which is not a connector of type scim_inbound.`);
    return hit.id;
  }
  if (all.length > 1)
    throw new ScimError(503, `There are ${all.length} connectors of type scim_inbound: set Scim:ConnectorName to the one the SCIM endpoint feeds.`);
  return all[0]?.id ?? null;
}

class PushQueue {
  private waiting: Waiter[] = [];
  private running = false;

  constructor(private readonly connectorId: string) {}

  push(writes: ScimWrite[], driver: RunDriver): Promise<void> {
    return new Promise((resolve, reject) => {
      this.waiting.push({ writes, resolve, reject });
      if (!this.running) void this.drain(driver);
    });
  }

  private async drain(driver: RunDriver): Promise<void> {
    this.running = true;
    try {
      while (this.waiting.length) {
        const batch = this.waiting.splice(0);
        try {
          await this.importBatch(
            batch.flatMap((w) => w.writes),
            driver,
          );
          for (const w of batch) w.resolve();
        } catch (err) {
          for (const w of batch) w.reject(err);
        }
      }
    } finally {
      this.running = false;
    }
  }

  private async importBatch(writes: ScimWrite[], driver: RunDriver): Promise<void> {
    const run = await this.runDelta(driver);
    if (run.status === 'Completed' || run.status === 'CompletedWithErrors') return;
    if (run.status === 'AwaitingApproval') {
      await cancelRun(run.runId, SCIM_ACTOR).catch(() => undefined);
      await undo(writes);
      const reasons = (run.approval?.reasons ?? []).map((r) => `${r.operation} ${r.count} > ${r.limit}`).join(', ');
      throw new ScimError(
        409,
        `Refused: this push would exceed the thresholds of connector run ${run.runId} (${reasons || 'thresholds'}); nothing was applied. An Admin can raise the connector's thresholds.`,
      );
    }
    await undo(writes);
    throw new ScimError(
      503,
      `The import of this push (run ${run.runId}) ended ${run.status}${run.error ? `: ${run.error}` : ''}; nothing was applied.`,
      undefined,
      {
        'retry-after': '30',
      },
    );
  }

  /** Start a DeltaImport of the connector (waiting out a run that holds its lock) and wait for its end. */
  private async runDelta(driver: RunDriver): Promise<StoredRun> {
    const deadline = Date.now() + 10 * 60_000;
    let run: StoredRun | undefined;
    while (!run) {
      try {
        run = await triggerRun({ connectorId: this.connectorId, runType: 'DeltaImport', dryRun: false }, SCIM_ACTOR, driver.start, driver.orchestrations);
      } catch (err) {
        if (!(err instanceof AppError && err.code === 'conflict') || Date.now() > deadline) throw err;
        await sleep(250);
      }
    }
    for (;;) {
      const now = await getRun(run.runId);
      if (now && now.status !== 'Queued' && now.status !== 'Running') return now;
      if (Date.now() > deadline)
        throw new ScimError(503, `The import of this push (run ${run.runId}) is still running; try again later.`, undefined, { 'retry-after': '30' });
      await sleep(100);
    }
  }
}

/** Put the store back as it was before `writes`, the last first. */
async function undo(writes: ScimWrite[]): Promise<void> {
  const at = new Date().toISOString();
  for (const w of [...writes].reverse()) {
    if (w.action === 'create' && w.after) await unpushScimResource(w.after, at);
    else if (w.before) await restoreScimResource({ ...w.before, deleted: false }, at);
  }
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
