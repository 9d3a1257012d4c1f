import os from 'node:os';
import { randomUUID } from 'node:crypto';
import { SettingsReader } from '../core/config';

/**
 * Engine settings (section `Engine`):
 * - `Engine:InstanceName`: this process's instance name at registration (default: the host name).
 * - `Engine:HeartbeatSeconds`: heartbeat interval (default 15).
 * - `Engine:OfflineAfterSeconds`: an instance with no heartbeat for this long is `offline` (default 60).
 * - `Engine:HeapGrowingPercent`: how far V8 lets the heap grow past the live data before a full collection
 *   (V8's `--heap-growing-percent`; default 30, 0 leaves V8's own heuristic, which grows the heap up to 4x).
 *   A bulk import allocates fast and keeps little: with V8's default the process held three to four times
 *   its live data (948 MB peak RSS for a 100,000-object import whose live heap was ~250 MB). 50 costs about
 *   10 % more CPU in collections; 30 took another 20 MB off the 100k directory import's peak (536 -> 517 MB)
 *   for no measurable wall time. See docs/sync-engine.md (memory).
 * - `Engine:HeapFloorMB`: while the live heap is small, the percent above is raised so the heap may grow to this
 *   size (at most 4x the live data) before a full collection (default 128; 0: the percent alone). A 50-75 MB heap
 *   otherwise ran three full collections in a 4-second export (lib/instances/heapGrowth.ts).
 * - `Engine:TestHooks:RenamePauseMs`: TEST ONLY, honoured in Development only: the rename cascade sleeps this
 *   long after its journal row, name claim and instance row are written, so a test can kill the process in
 *   the middle of a rename.
 * The instance id is `WEBSITE_INSTANCE_ID` (Azure sets it per instance; the local runtime persists one per data
 * folder). A process without one (a bare unit test) gets a random id for its lifetime.
 */
export interface EngineConfig {
  instanceId: string;
  instanceName: string;
  heartbeatSeconds: number;
  offlineAfterSeconds: number;
  renamePauseMs: number;
  heapGrowingPercent: number;
  heapFloorMB: number;
}

let fallbackId: string | undefined;

/** Instance ids are compared lower-cased; requests may spell them in either case. */
export const INSTANCE_ID_PATTERN = '^[0-9A-Za-z][0-9A-Za-z-]{0,127}$';
const INSTANCE_ID = new RegExp(INSTANCE_ID_PATTERN);

/** True when `value` can be an engine instance id (GUID here, 64 hex digits on Azure). */
export function isInstanceId(value: string): boolean {
  return INSTANCE_ID.test(value);
}

/**
 * This process's instance id alone (lower-cased). Read on every run read and trigger, so it reads one setting, not
 * the whole section: an unset setting costs a scan of the environment for another spelling of its name.
 */
export function readInstanceId(settings = new SettingsReader()): string {
  return (settings.string('WEBSITE_INSTANCE_ID') ?? (fallbackId ??= randomUUID())).toLowerCase();
}

export function readEngineConfig(settings = new SettingsReader()): EngineConfig {
  const id = readInstanceId(settings);
  const isDevelopment = settings.isDevelopment();
  const name = settings.string('Engine:InstanceName', os.hostname()).trim();
  return {
    instanceId: id,
    instanceName: name.slice(0, 256) || id,
    heartbeatSeconds: settings.int('Engine:HeartbeatSeconds', 15, { min: 1, max: 3600 }),
    offlineAfterSeconds: settings.int('Engine:OfflineAfterSeconds', 60, { min: 2, max: 86400 }),
    heapGrowingPercent: settings.int('Engine:HeapGrowingPercent', 30, { min: 0, max: 1000 }),
    heapFloorMB: settings.int('Engine:HeapFloorMB', 128, { min: 0, max: 65_536 }),
    renamePauseMs: isDevelopment ? settings.int('Engine:TestHooks:RenamePauseMs', 0, { min: 0, max: 600_000 }) : 0,
  };
}
