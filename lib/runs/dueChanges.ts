import type { SystemActor } from '../audit';
import { engineNow } from '../core/clock';
import { SettingsReader } from '../core/config';
import { AppError } from '../core/errors';
import { areaLog } from '../core/log';
import { claimDueRow, readDuePointers, readDueRows, releaseDueRows, removeDueRows, writeDueChanges, type DueRow } from '../storage/dueInstants';
import { mapLimit } from '../storage/tableUtil';
import { markExportDirty } from '../sync/run/state';
import { findActiveRun } from '../storage/runs';
import { anchoredCsObjectId, readCsObjects } from '../sync/space/connectorSpace';
import { syncSpaceObject } from '../sync/run/oneObject';
import { triggerRun, type RunOrchestrations, type StartRun } from './runs';

const log = areaLog('sync');

/**
 * The due timer's work (docs/dated-changes.md): the objects whose rules' results change by now (the due index,
 * lib/storage/dueInstants.ts) are exported to their targets with no import. For each target: the due rows are
 * claimed (a conditional update on each row's ETag: of several processes, one claims a row), the objects marked
 * for the target's next export, and an Export run triggered (`trigger.type` `due`), which evaluates them with the
 * engine's clock and applies thresholds and approvals as any export does. Once the run exists the rows go; when
 * it cannot start now (a run of the target is active) they are given back and the next tick tries again. A
 * process that stops after a claim leaves the row claimed until the claim expires, then another takes it.
 *
 * Rows of future-dated values (target `import:<source connector>`, keyed by the source object's anchor) come
 * first: each object is synchronized on its own (its inbound flows with the engine's clock, as a one-object sync
 * does), which puts the values now in effect into the mesh; each target that the change gives an export gets a
 * due row at once for the object, so the next tick exports it as above. While the source connector has a run
 * active, its rows wait for the next tick.
 */
export const DUE_ACTOR: SystemActor = 'system:due';
/** How long a claim holds before another process may take the row (host clock). */
export const DUE_CLAIM_MS = 120_000;
/** Rows read per tick; the rest wait for the next one. */
const ROWS_PER_TICK = 2000;
const IMPORT_PREFIX = 'import:';

/**
 * The due timer's schedule (NCRONTAB, seconds first): every 10 seconds, unless the test-only setting
 * `DueChanges:TestHooks:IntervalSeconds` (1 to 10, honoured only when AZURE_FUNCTIONS_ENVIRONMENT is
 * Development) makes it tick more often, so that an integration test sees a due export soon after it moves the
 * engine clock. Read once, when the timer is registered.
 */
export function dueTimerSchedule(settings = new SettingsReader()): string {
  const isDevelopment = settings.isDevelopment();
  const seconds = isDevelopment ? settings.int('DueChanges:TestHooks:IntervalSeconds', 10, { min: 1, max: 10 }) : 10;
  return `*/${seconds} * * * * *`;
}

export interface DueTickResult {
  /** Rows claimed by this process. */
  claimed: number;
  /** The Export runs started, by target. */
  runs: { connectorId: string; runId: string; objects: number }[];
}

export async function runDueChanges(start: StartRun, owner: string, orchestrations?: RunOrchestrations): Promise<DueTickResult> {
  const rows = await readDueRows(engineNow().getTime(), ROWS_PER_TICK);
  const result: DueTickResult = { claimed: 0, runs: [] };
  if (!rows.length) return result;
  const hostNow = Date.now();
  const byTarget = new Map<string, DueRow[]>();
  for (const r of rows) {
    if (r.claimedUntil !== undefined && r.claimedUntil > hostNow) continue;
    const list = byTarget.get(r.target) ?? [];
    list.push(r);
    byTarget.set(r.target, list);
  }
  // Future-dated values: synchronized now, exported by the next tick (a due row each, at now).
  const now = engineNow().getTime();
  const exportsTo = new Map<string, Set<string>>();
  for (const [target, list] of byTarget) {
    if (!target.startsWith(IMPORT_PREFIX)) continue;
    byTarget.delete(target);
    const source = target.slice(IMPORT_PREFIX.length);
    if (await findActiveRun(source)) continue;
    const claimed = (await mapLimit(list, 8, (r) => claimDueRow(r, owner, hostNow + DUE_CLAIM_MS))).filter((r): r is DueRow => !!r);
    if (!claimed.length) continue;
    result.claimed += claimed.length;
    const rows = await readCsObjects(source, [...new Set(claimed.map((r) => r.meshId))]);
    try {
      for (const row of rows.values()) {
        if (row.deleted) continue;
        const synced = await syncSpaceObject(source, { kind: 'row', csObjectId: anchoredCsObjectId(source, row.anchor), row }, true);
        const meshId = synced.meshObjectId;
        if (meshId) for (const e of synced.exports) exportsTo.set(e.connectorId, (exportsTo.get(e.connectorId) ?? new Set<string>()).add(meshId));
        if (synced.exports.length) log.info(`Due changes: future-dated values of an object of connector ${source} took effect.`);
      }
    } catch (err) {
      await releaseDueRows(claimed);
      throw err;
    }
    await removeDueRows(claimed);
  }
  for (const [target, ids] of exportsTo) {
    const previous = await readDuePointers(target, [...ids]);
    await writeDueChanges(
      target,
      [...ids].map((meshId) => ({ target, meshId, at: now })),
      [],
      previous,
    );
  }
  for (const [target, list] of byTarget) {
    const claimed = (await mapLimit(list, 8, (r) => claimDueRow(r, owner, hostNow + DUE_CLAIM_MS))).filter((r): r is DueRow => !!r);
    if (!claimed.length) continue;
    result.claimed += claimed.length;
    const ids = [...new Set(claimed.map((r) => r.meshId))];
    try {
      await markExportDirty(target, ids);
      const run = await triggerRun(
        { connectorId: target, runType: 'Export', dryRun: false, trigger: { type: 'due', actorUpn: DUE_ACTOR }, requester: null },
        DUE_ACTOR,
        start,
        orchestrations,
      );
      result.runs.push({ connectorId: target, runId: run.runId, objects: ids.length });
      log.info(`Due changes: ${ids.length} object(s) of connector ${target} reached a dated change; export run ${run.runId} started.`);
    } catch (err) {
      if (err instanceof AppError && err.code === 'not_found') {
        // The target is gone: nothing to export to.
        await removeDueRows(claimed);
        continue;
      }
      await releaseDueRows(claimed);
      if (err instanceof AppError && err.code === 'conflict') continue; // a run of the target is active: next tick
      throw err;
    }
    await removeDueRows(claimed);
  }
  return result;
}
