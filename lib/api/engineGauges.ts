import { listInstanceRecords } from '../storage/instances';
import { listConnectorRecords, type StoredConnector } from '../storage/connectors';
import { listRules } from '../storage/rules';
import { newestRun, RUN_STATUSES, ACTIVE_RUN_STATUSES } from '../storage/runs';
import { meshIdsChangedSince, meshObjectCounts } from '../mesh/readModel';
import { readExportDirty } from '../sync/run/state';
import { lateLeaverCounts, leaverTargets } from '../sync/leavers';
import type { EngineState } from '../telemetry/metrics';

/**
 * What the state gauges of `GET /metrics` show, read from what the engine already keeps (no scan of a
 * connector space or of the mesh table): the connectors and rules (configuration, small), one run query per
 * connector that stops at its first match, the instances table, and this process's mesh read model (memory).
 * The telemetry step makes this the gauges' source; lib/telemetry caches it for 30 s.
 */
export async function readEngineState(): Promise<EngineState> {
  const [connectors, rules, instances] = await Promise.all([listConnectorRecords(), listRules(), listInstanceRecords()]);
  const exporting = new Set(rules.filter((r) => r.ruleType === 'FlowRule' && r.direction === 'outbound' && r.connectorId).map((r) => r.connectorId!));
  const pendingExports = new Map<string, number>();
  const connectorSpaceErrors = new Map<string, number>();
  for (const c of connectors) {
    connectorSpaceErrors.set(c.name, await connectorSpaceErrorCount(c.id));
    const pending = exporting.has(c.id) ? await pendingExportCount(c) : 0;
    if (pending !== null) pendingExports.set(c.name, pending);
  }
  const lastHeartbeat = new Map<string, number>();
  for (const i of instances) {
    const at = Date.parse(i.lastHeartbeat);
    if (Number.isFinite(at)) lastHeartbeat.set(i.name, at);
  }
  return { pendingExports, connectorSpaceErrors, meshObjects: meshObjectCounts(), lastHeartbeat, lateLeavers: await lateLeaversByName(connectors, rules) };
}

/** Late leavers by target connector name: every deprovisioning target has a sample (0 when none is late). */
async function lateLeaversByName(connectors: StoredConnector[], rules: Awaited<ReturnType<typeof listRules>>): Promise<Map<string, number>> {
  const late = await lateLeaverCounts();
  const out = new Map<string, number>();
  for (const t of leaverTargets(connectors, rules).values()) out.set(t.connector.name, 0);
  for (const c of connectors) if (late.has(c.id)) out.set(c.name, late.get(c.id)!);
  return out;
}

const FINISHED = RUN_STATUSES.filter((s) => !ACTIVE_RUN_STATUSES.includes(s));

/**
 * Objects of the connector's space in error: the objects its last finished run could not process (that
 * run's `stats.errors`; a failed object is tried again by every run, so it counts until a run gets it through).
 * The one place this is read, so a per-object error count kept on the rows can replace it.
 */
export async function connectorSpaceErrorCount(connectorId: string): Promise<number> {
  return (await newestRun(connectorId, FINISHED))?.stats.errors ?? 0;
}

/**
 * Changes waiting for an exporting connector's next export: the mesh objects of its export object type changed
 * since its last completed export ended (all of them before its first), plus the objects marked for its next
 * export (drift its imports saw, changes that failed). An upper bound: a change that touches none of its
 * outbound flows counts until the next export looks at it. Null while this process has not loaded the mesh.
 */
export async function pendingExportCount(connector: StoredConnector): Promise<number | null> {
  const objectType = typeof connector.config.objectType === 'string' ? connector.config.objectType : 'User';
  const last = await newestRun(connector.id, ['Completed', 'CompletedWithErrors'], 'Export');
  const changed = meshIdsChangedSince(objectType, last ? (last.completedAt ?? last.startedAt) : null);
  if (changed === null) return null;
  const ids = new Set(changed.map((id) => id.toLowerCase()));
  for (const id of (await readExportDirty(connector.id)).ids) ids.add(id.toLowerCase());
  return ids.size;
}
