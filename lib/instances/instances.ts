import { startHeapGrowth, stopHeapGrowth } from './heapGrowth';
import { conflict, notFound } from '../core/errors';
import type { ServiceStep } from '../core/service';
import { deleteAssignment, listAssignments } from '../storage/assignments';
import {
  deleteInstanceRecord,
  deletePauseSettings,
  getInstance,
  getPauseSettings,
  getRenameJournal,
  insertInstance,
  listInstanceRecords,
  listPauseSettings,
  putPauseSettings,
  releaseName,
  setPauseInstanceName,
  updateInstance,
  type InstanceRecord,
} from '../storage/instances';
import { readEngineConfig, readInstanceId, type EngineConfig } from './config';
import { claimNameFor, recoverRename, recoverRenames, renameInstance } from './rename';
import { effectiveStatus, type InstanceStatus } from './status';
import { areaLog } from '../core/log';

const log = areaLog('instances');

/**
 * Engine instances: every runtime process is one. At start it registers itself (service step below) and
 * then heartbeats every `Engine:HeartbeatSeconds`; the API shows each instance with its effective status.
 *
 * Naming rule (configuration vs. the rename API):
 * - first registration takes `Engine:InstanceName` (default: host name); if another instance holds that name,
 *   it registers as `<name>-<first 8 characters of its id>`;
 * - the record remembers the configured name it registered with (`configuredName`). At each start, when the
 *   configured name differs from it, the new configured name is applied as a rename (so changing the
 *   setting renames the instance); when it is unchanged, the current name is kept, even if an admin renamed
 *   the instance through the API. A configured name that is taken leaves the name as it is (logged), and is
 *   tried again at the next start.
 */

export interface EngineInstance {
  id: string;
  name: string;
  status: InstanceStatus;
  lastHeartbeat: string;
  connectorIds: string[];
}

export { effectiveStatus, type InstanceStatus } from './status';

function toView(rec: InstanceRecord, paused: boolean, connectorIds: string[], cfg: EngineConfig, now: Date): EngineInstance {
  return {
    id: rec.id,
    name: rec.name,
    status: effectiveStatus(rec.lastHeartbeat, paused, now, cfg.offlineAfterSeconds),
    lastHeartbeat: rec.lastHeartbeat,
    connectorIds: [...connectorIds].sort(),
  };
}

/** Every registered instance with its effective status and assigned connectors, ordered by name. */
export async function listInstances(now = new Date()): Promise<EngineInstance[]> {
  const cfg = readEngineConfig();
  const [records, assignments, pauses] = await Promise.all([listInstanceRecords(), listAssignments(), listPauseSettings()]);
  const paused = new Set(pauses.filter((p) => p.paused).map((p) => p.instanceId));
  const byInstance = new Map<string, string[]>();
  for (const a of assignments) byInstance.set(a.instanceId, [...(byInstance.get(a.instanceId) ?? []), a.connectorId]);
  return records
    .map((r) => toView(r, paused.has(r.id), byInstance.get(r.id) ?? [], cfg, now))
    .sort((a, b) => a.name.localeCompare(b.name, 'en', { sensitivity: 'base' }) || a.id.localeCompare(b.id));
}

/** One instance as the API shows it, or null. */
export async function getInstanceView(id: string, now = new Date()): Promise<EngineInstance | null> {
  const rec = await getInstance(id);
  if (!rec) return null;
  const [pause, assignments] = await Promise.all([getPauseSettings(id), listAssignments(id)]);
  return toView(
    rec,
    pause?.paused ?? false,
    assignments.map((a) => a.connectorId),
    readEngineConfig(),
    now,
  );
}

async function mustView(id: string): Promise<EngineInstance> {
  const view = await getInstanceView(id);
  if (!view) throw notFound('The engine instance does not exist.');
  return view;
}

/** Effective status of an instance, or null when it is not registered. */
export async function getInstanceStatus(id: string, now = new Date()): Promise<InstanceStatus | null> {
  const rec = await getInstance(id);
  if (!rec) return null;
  const pause = await getPauseSettings(id);
  return effectiveStatus(rec.lastHeartbeat, pause?.paused ?? false, now, readEngineConfig().offlineAfterSeconds);
}

/** True when the instance is paused (runs for its connectors are then Queued, not started). */
export async function isPaused(instanceId: string): Promise<boolean> {
  return (await getPauseSettings(instanceId))?.paused ?? false;
}

/** This process's engine instance id (`WEBSITE_INSTANCE_ID`). */
export function currentInstanceId(): string {
  return readInstanceId();
}

/** Pause or resume. Idempotent: setting the state it already has changes nothing. Returns the instance. */
export async function setPaused(id: string, paused: boolean, by: string | null): Promise<EngineInstance> {
  const rec = await getInstance(id);
  if (!rec) throw notFound('The engine instance does not exist.');
  const current = await getPauseSettings(id);
  if ((current?.paused ?? false) !== paused) {
    await putPauseSettings({ instanceId: id, paused, instanceName: rec.name, updatedOn: new Date().toISOString(), updatedBy: by });
    // A rename that ran meanwhile may have relabelled the settings before this write: relabel after it.
    const now = await getInstance(id);
    if (now && now.name !== rec.name) await setPauseInstanceName(id, now.name);
  }
  return mustView(id);
}

/** Rename through the API (see lib/instances/rename.ts). Returns the instance. */
export async function renameInstanceByApi(id: string, name: string): Promise<EngineInstance> {
  await renameInstance(id, name, 'api');
  return mustView(id);
}

/**
 * Remove an instance: only when its effective status is `offline` (409 otherwise). Its connectors are
 * unassigned, its pause settings and name released; its run history stays. The record is deleted first and
 * conditionally on the version read, so a heartbeat that arrives meanwhile wins (409); the clean-up after
 * it is idempotent and re-done by the start step's sweep if the process dies half-way.
 */
export async function removeInstance(id: string, now = new Date()): Promise<void> {
  let rec = await getInstance(id);
  if (!rec) throw notFound('The engine instance does not exist.');
  const status = effectiveStatus(rec.lastHeartbeat, await isPaused(id), now, readEngineConfig().offlineAfterSeconds);
  if (status !== 'offline') throw conflict(`The engine instance is ${status}: only an offline instance can be removed.`);
  const journal = await getRenameJournal(id);
  if (journal) {
    await recoverRename(journal);
    rec = await getInstance(id);
    if (!rec) throw notFound('The engine instance does not exist.');
  }
  if (!(await deleteInstanceRecord(id, rec.etag))) {
    if (!(await getInstance(id))) throw notFound('The engine instance does not exist.');
    throw conflict('The engine instance changed meanwhile (it may be back online); try again.');
  }
  await cleanUpRemoved(id, rec.name);
}

async function cleanUpRemoved(id: string, name: string): Promise<void> {
  for (const a of await listAssignments(id)) await deleteAssignment(a.connectorId, a.etag);
  await deletePauseSettings(id);
  await releaseName(name, id);
}

/**
 * Finish removals interrupted by a crash: assignments and pause settings of instances that no longer exist.
 * Assignments are listed before the instances: an assignment is only written for an instance that exists, so
 * one listed first whose instance is missing afterwards belongs to a removed instance.
 */
export async function sweepRemovedInstances(): Promise<void> {
  const [assignments, pauses] = await Promise.all([listAssignments(), listPauseSettings()]);
  const live = new Set((await listInstanceRecords()).map((r) => r.id));
  for (const a of assignments) if (!live.has(a.instanceId)) await deleteAssignment(a.connectorId, a.etag);
  for (const p of pauses) if (!live.has(p.instanceId)) await deletePauseSettings(p.instanceId);
}

/** A free name for a first registration: the configured one, else suffixed with the id. */
async function firstName(configured: string, id: string): Promise<string> {
  for (const candidate of [configured, `${configured}-${id.slice(0, 8)}`, `${configured}-${id}`]) {
    if (await claimNameFor(candidate, id)) return candidate;
  }
  throw conflict(`No free name for engine instance ${id}.`);
}

/** Register this process's instance (or update its registration) and record a heartbeat. */
export async function registerInstance(cfg: EngineConfig = readEngineConfig()): Promise<InstanceRecord> {
  const id = cfg.instanceId;
  const now = new Date().toISOString();
  const existing = await getInstance(id);
  if (!existing) {
    const name = await firstName(cfg.instanceName, id);
    // A new registration starts unpaused, whatever a removed earlier registration of this id had.
    await deletePauseSettings(id);
    try {
      return await insertInstance({ id, name, configuredName: cfg.instanceName, nameSource: 'config', registeredAt: now, lastHeartbeat: now });
    } catch (err) {
      const rec = await getInstance(id);
      if (rec) return rec;
      throw err;
    }
  }
  if (existing.configuredName !== cfg.instanceName) {
    try {
      await renameInstance(id, cfg.instanceName, 'config');
      await updateInstance(id, { configuredName: cfg.instanceName });
    } catch (err) {
      log.warn(`Engine instance ${id}: could not take the configured name '${cfg.instanceName}': ${(err as Error).message}`);
    }
  }
  await updateInstance(id, { lastHeartbeat: now });
  return (await getInstance(id))!;
}

/** One heartbeat; re-registers when the record is gone (an admin removed the instance while it was stalled). */
export async function heartbeat(cfg: EngineConfig = readEngineConfig()): Promise<void> {
  if (!(await updateInstance(cfg.instanceId, { lastHeartbeat: new Date().toISOString() }))) await registerInstance(cfg);
}

let timer: NodeJS.Timeout | undefined;
let beating: Promise<void> | undefined;

function schedule(cfg: EngineConfig): void {
  timer = setTimeout(() => {
    beating = heartbeat(cfg)
      .catch((err: unknown) => log.warn(`Engine instance ${cfg.instanceId}: heartbeat failed: ${(err as Error).message}`))
      .finally(() => {
        beating = undefined;
        if (timer) schedule(cfg);
      });
  }, cfg.heartbeatSeconds * 1000);
  timer.unref();
}

/** Start step: recover interrupted renames and removals, register, then heartbeat until stop. */
export async function startEngineInstance(): Promise<void> {
  const cfg = readEngineConfig();
  // Read by V8 at every full collection, so setting it at start takes effect for the whole life of the process.
  startHeapGrowth(cfg.heapGrowingPercent, cfg.heapFloorMB);
  for (const r of await recoverRenames(cfg.instanceId)) log.warn(`Engine instance ${r.instanceId}: interrupted rename recovered (${r.action}).`);
  await sweepRemovedInstances();
  await registerInstance(cfg);
  schedule(cfg);
}

export async function stopEngineInstance(): Promise<void> {
  stopHeapGrowth();
  if (timer) clearTimeout(timer);
  timer = undefined;
  await beating;
}

/** This process's engine instance: registered at start, then kept alive by its heartbeat (listed in SERVICE_STEPS, lib/api/serviceSteps.ts). */
export const engineInstanceStep: ServiceStep = { name: 'engine-instance', start: startEngineInstance, stop: stopEngineInstance };
