import { watch, type FSWatcher } from 'node:fs';
import { SettingsReader } from '../core/config';
import { areaLog } from '../core/log';
import { AppError } from '../core/errors';
import { hasDeltaImport } from '../connectors/sdk';
import { assignmentOf } from '../instances/assignments';
import { currentInstanceId } from '../instances/instances';
import { triggerRun, type RunOrchestrations, type StartRun } from '../runs/runs';
import { listConnectorRecords, type StoredConnector } from '../storage/connectors';
import { listRules } from '../storage/rules';
import { findActiveRun, getRun, type RunTrigger } from '../storage/runs';
import { exportTargets } from '../sync/import/importTargets';
import { importConnectorFor } from '../sync/import/readAttributes';
import { withConnector } from '../sync/run/runConnector';
import { csCaches } from '../sync/run/runContext';
import { readSyncState } from '../sync/run/state';
import { StreamKeeper } from './continuousStream';
import { isRunOver } from './status';

const log = areaLog('continuous');

/**
 * Continuous delta mode (docs/continuous.md): a source connector with `continuous.enabled` is followed by the
 * engine instance it is assigned to (every instance, when it is assigned to none: the connector's run lock lets
 * one run at a time through). The loop (`continuousPass`, called every second by a timer,
 * orchestrations/continuousTicks.ts) does, per followed connector:
 *
 * 1. **Look** every `intervalSeconds` (default 5), or at once when the source says something changed (a file
 *    connector's folder is watched; a directory's change stream is kept open, continuousStream.ts): while no run of the connector is active, the connector's delta import is
 *    read from its stored watermark without applying anything (a look). A look that sees a change (or an
 *    unreadable object) starts a `DeltaImport` run with trigger `continuous`: the batch is a run like any other
 *    (history, thresholds, approval). A look that sees nothing starts no run.
 * 2. **Reconcile** every `reconcileMinutes` (default 15): a `DeltaImport` run with trigger `continuous` and
 *    `reconcile: true`, whether or not a look saw anything. What it changes is what the looks missed; the
 *    follower logs it.
 * 3. **Export** once a batch ends having changed objects: an `Export` run with trigger `continuous` and
 *    `sourceRunId` (the batch) on every export target (a connector with an enabled outbound flow rule, this one
 *    left out). It is targeted (lib/sync/export/targeted.ts): it looks at the mesh objects the batch changed,
 *    nothing else, and records no export position. After a reconciling delta every target gets an untargeted
 *    export (no `sourceRunId`: incremental, from the target's last export position, which it then records). A
 *    target whose own run is active is tried again at the next pass.
 *
 * Nothing is kept that a restart would need: the watermark is the connector's own (committed by the run's end),
 * and a follower that starts (a new process, a connector newly continuous) asks each target for one export
 * first, which sends whatever an earlier process's batch landed and did not export.
 */
export interface ContinuousHost {
  start: StartRun;
  orchestrations?: RunOrchestrations;
}

export interface ContinuousSettings {
  intervalSeconds: number;
  reconcileMinutes: number;
  /** `auto`: keep the source's change stream open when it offers one; `off`: look every intervalSeconds only. */
  stream: 'auto' | 'off';
}

/** The connector's continuous settings, or null when continuous mode is off. */
export function continuousSettings(config: Record<string, unknown>): ContinuousSettings | null {
  const c = config.continuous as { enabled?: unknown; intervalSeconds?: unknown; reconcileMinutes?: unknown; stream?: unknown } | undefined;
  if (!c || typeof c !== 'object' || c.enabled !== true) return null;
  const int = (v: unknown, d: number, max: number) => (typeof v === 'number' && Number.isInteger(v) && v >= 1 && v <= max ? v : d);
  return { intervalSeconds: int(c.intervalSeconds, 5, 3600), reconcileMinutes: int(c.reconcileMinutes, 15, 1440), stream: c.stream === 'off' ? 'off' : 'auto' };
}

/** The folder a file connector reads (a `custom` connector of implementation `file`), watched for changes. */
export function watchedFolder(c: Pick<StoredConnector, 'type' | 'config'>): string | null {
  if (c.type !== 'custom' || c.config.implementation !== 'file') return null;
  const path = (c.config.settings as { path?: unknown } | undefined)?.path;
  return typeof path === 'string' && path ? path : null;
}

interface Follower {
  connectorId: string;
  name: string;
  settings: ContinuousSettings;
  folder: string | null;
  watcher: FSWatcher | null;
  /** The source's change stream (`stream: "auto"`), and the connector config it was opened with. */
  stream: StreamKeeper | null;
  streamConfig: string;
  nextLook: number;
  nextReconcile: number;
  /** A change event came in (the watched folder, the change stream): look at the next pass. */
  woken: boolean;
  busy: boolean;
  /** The DeltaImport run this follower started, until it is over. */
  importRun: { runId: string; reconcile: boolean } | null;
  /**
   * Targets owed an Export run, with the import run whose objects it exports (a targeted export), or null: an
   * untargeted (incremental) export, owed at a follower's start, after a reconciling delta, and when a second
   * batch ends before the first one's export could start.
   */
  owed: Map<string, string | null>;
}

export const RELOAD_MS = 10_000;

/**
 * How long one of `reconcileMinutes`' minutes lasts, in ms: 60,000, unless the test-only setting
 * `Continuous:TestHooks:ReconcileMinuteSeconds` (1 to 60, honoured only when AZURE_FUNCTIONS_ENVIRONMENT is
 * Development) shortens it, so that an integration test sees a reconciling delta within seconds of asking for one.
 */
export function reconcileMinuteMs(settings = new SettingsReader()): number {
  const isDevelopment = settings.isDevelopment();
  return (isDevelopment ? settings.int('Continuous:TestHooks:ReconcileMinuteSeconds', 60, { min: 1, max: 60 }) : 60) * 1000;
}

const state = { followers: new Map<string, Follower>(), loadedAt: 0, stale: true, minuteMs: 60_000 };

/** Stop every follower (tests, shutdown). */
export function resetContinuous(): void {
  for (const f of state.followers.values()) stopFollowing(f);
  state.followers = new Map();
  state.loadedAt = 0;
  state.stale = true;
  csCaches.pin([]);
}

/**
 * A connector (its config or assignment) was written through this process: reload at the next pass, so that
 * this instance follows the new settings within a second. Other instances reload within RELOAD_MS.
 */
export function continuousChanged(): void {
  state.stale = true;
}

const actorOf = (f: Follower): `continuous:${string}` => `continuous:${f.name}`;
const actorOfTrigger = (t: RunTrigger): `continuous:${string}` => `continuous:${(t.actorUpn ?? '').replace(/^continuous:/, '')}`;

async function reload(now: number): Promise<void> {
  state.loadedAt = now;
  state.stale = false;
  state.minuteMs = reconcileMinuteMs();
  const here = currentInstanceId();
  const wanted = new Map<string, StoredConnector>();
  for (const c of await listConnectorRecords()) {
    if (c.status === 'disabled' || !continuousSettings(c.config)) continue;
    const assigned = await assignmentOf(c.id);
    if (assigned === null || assigned === here) wanted.set(c.id, c);
  }
  for (const [id, f] of state.followers) {
    if (!wanted.has(id)) {
      stopFollowing(f);
      state.followers.delete(id);
      log.info(`Continuous mode of '${f.name}' stopped on this instance.`);
    }
  }
  const targets = exportTargets(await listRules());
  for (const c of wanted.values()) {
    const settings = continuousSettings(c.config)!;
    const folder = watchedFolder(c);
    const f = state.followers.get(c.id);
    if (f) {
      const changed = f.settings.intervalSeconds !== settings.intervalSeconds || f.settings.reconcileMinutes !== settings.reconcileMinutes;
      f.name = c.name;
      f.settings = settings;
      if (changed) {
        f.nextLook = Math.min(f.nextLook, now + settings.intervalSeconds * 1000);
        f.nextReconcile = Math.min(f.nextReconcile, now + settings.reconcileMinutes * state.minuteMs);
      }
      if (f.folder !== folder) {
        f.watcher?.close();
        f.folder = folder;
        f.watcher = watchFolder(f);
      }
      // Another server, account or base (or the stream turned off or on): the stream is opened again.
      if (f.streamConfig !== streamConfigOf(c)) {
        f.stream?.close();
        f.streamConfig = streamConfigOf(c);
        f.stream = followStream(f);
      } else f.stream?.rename(c.name);
      continue;
    }
    const follower: Follower = {
      connectorId: c.id,
      name: c.name,
      settings,
      folder,
      watcher: null,
      stream: null,
      streamConfig: streamConfigOf(c),
      nextLook: now,
      nextReconcile: now + settings.reconcileMinutes * state.minuteMs,
      woken: false,
      busy: false,
      importRun: null,
      owed: new Map(targets.filter((t) => t !== c.id).map((t) => [t, null])),
    };
    follower.watcher = watchFolder(follower);
    follower.stream = followStream(follower);
    state.followers.set(c.id, follower);
    log.info(`Continuous mode of '${c.name}': looking every ${settings.intervalSeconds} s, reconciling every ${settings.reconcileMinutes} min.`);
  }
  // The followed connectors and their targets run every few seconds: their connector-space summaries stay in
  // memory (each run would otherwise read the whole space again when more connectors than
  // Sync__IdleConnectorSpaceCaches take turns).
  csCaches.pin(state.followers.size ? [...state.followers.keys(), ...targets] : []);
}

function stopFollowing(f: Follower): void {
  f.watcher?.close();
  f.stream?.close();
}

/** What the change stream depends on: the connector's config apart from the look and reconcile intervals. */
function streamConfigOf(c: Pick<StoredConnector, 'type' | 'config'>): string {
  const continuous = c.config.continuous as { stream?: unknown } | undefined;
  return JSON.stringify([c.type, { ...c.config, continuous: continuous?.stream === 'off' ? 'off' : 'auto' }]);
}

/** Keep the source's change stream open (`stream: "auto"`, the default): a notification wakes the follower. */
function followStream(f: Follower): StreamKeeper | null {
  if (f.settings.stream === 'off') return null;
  return new StreamKeeper(f.connectorId, f.name, () => {
    f.woken = true;
  });
}

/** Watch the folder: any event wakes the follower (the look decides whether anything changed). */
function watchFolder(f: Follower): FSWatcher | null {
  if (!f.folder) return null;
  try {
    const w = watch(f.folder, { persistent: false }, () => {
      f.woken = true;
    });
    w.on('error', () => {
      w.close();
      if (f.watcher === w) f.watcher = null;
    });
    return w;
  } catch (err) {
    log.warn(`Continuous mode of '${f.name}': the folder cannot be watched (${(err as Error).message}); looking every ${f.settings.intervalSeconds} s only.`);
    return null;
  }
}

/**
 * Whether the connector's delta import, read from the stored watermark, has anything: a change or an unreadable
 * object. Nothing is applied and no watermark is stored. A delta that needs a full import first answers false:
 * the reconciling run (a run like any other) turns into that full import and says so.
 */
export async function deltaHasChanges(connectorId: string): Promise<boolean> {
  const made = await importConnectorFor(connectorId);
  return withConnector(made, async (connector) => {
    if (!hasDeltaImport(connector)) return false;
    const { watermark } = await readSyncState(connectorId);
    const controller = new AbortController();
    try {
      for await (const page of connector.deltaImport(watermark, { pageSize: 200, signal: controller.signal })) {
        if (page.fullImportRequired) return false;
        if (page.changes.length || page.errors.length) return true;
      }
      return false;
    } finally {
      controller.abort();
    }
  });
}

const isConflict = (err: unknown) => err instanceof AppError && err.code === 'conflict';

async function start(host: ContinuousHost, connectorId: string, runType: 'DeltaImport' | 'Export', trigger: RunTrigger): Promise<string | null> {
  try {
    const run = await triggerRun({ connectorId, runType, dryRun: false, trigger, requester: null }, actorOfTrigger(trigger), host.start, host.orchestrations);
    return run.runId;
  } catch (err) {
    if (isConflict(err)) return null; // another run holds the connector's lock: the next pass tries again
    throw err;
  }
}

const changedSomething = (s: { objectsCreated: number; objectsUpdated: number; objectsDeleted: number }) =>
  s.objectsCreated + s.objectsUpdated + s.objectsDeleted > 0;

async function step(f: Follower, host: ContinuousHost, now: number): Promise<void> {
  // 1. The batch this follower started: once it is over, its changes are owed to the targets.
  if (f.importRun) {
    const run = await getRun(f.importRun.runId);
    if (run && !isRunOver(run.status)) return;
    if (run && changedSomething(run.stats)) {
      if (f.importRun.reconcile)
        log.warn(
          `Continuous mode of '${f.name}': the reconciling delta ${run.runId} changed ${run.stats.objectsCreated + run.stats.objectsUpdated + run.stats.objectsDeleted} object(s) no earlier batch had.`,
        );
      for (const t of exportTargets(await listRules())) if (t !== f.connectorId) f.owed.set(t, f.importRun.reconcile || f.owed.has(t) ? null : run.runId);
    } else if (run && f.importRun.reconcile) {
      log.info(`Continuous mode of '${f.name}': the reconciling delta ${run.runId} found nothing missed.`);
    }
    // After a reconciling delta, every target gets an untargeted export: it records the target's export position.
    if (f.importRun.reconcile) for (const t of exportTargets(await listRules())) if (t !== f.connectorId) f.owed.set(t, null);
    f.importRun = null;
  }
  // 2. Exports owed.
  for (const [target, sourceRunId] of [...f.owed]) {
    if (await findActiveRun(target)) continue;
    const trigger: RunTrigger = { type: 'continuous', actorUpn: actorOf(f), ...(sourceRunId ? { sourceRunId } : {}) };
    try {
      if (await start(host, target, 'Export', trigger)) f.owed.delete(target);
    } catch (err) {
      if (err instanceof AppError && err.code === 'not_found') f.owed.delete(target);
      else throw err;
    }
  }
  // 3. A reconciling delta, then a look.
  const reconcile = now >= f.nextReconcile;
  if (!reconcile && !f.woken && now < f.nextLook) return;
  if (await findActiveRun(f.connectorId)) return; // one run at a time: look again at the next pass
  f.nextLook = now + f.settings.intervalSeconds * 1000;
  f.woken = false;
  if (!reconcile && !(await deltaHasChanges(f.connectorId))) return;
  const trigger: RunTrigger = { type: 'continuous', actorUpn: actorOf(f), ...(reconcile ? { reconcile: true } : {}) };
  const runId = await start(host, f.connectorId, 'DeltaImport', trigger);
  if (!runId) {
    // Another run (a targeted export to this connector) took its lock between the look and the start: look again
    // at the next pass, not intervalSeconds later (a target exported to every second or two would otherwise
    // wait many intervals for its confirming batch).
    f.woken = true;
    return;
  }
  f.importRun = { runId, reconcile };
  if (reconcile) f.nextReconcile = now + f.settings.reconcileMinutes * state.minuteMs;
}

/** One pass of the loop at `now`: reload when due, then each follower not already busy takes a step. */
export async function continuousPass(host: ContinuousHost, now: number = Date.now()): Promise<void> {
  if (state.stale || now - state.loadedAt >= RELOAD_MS) await reload(now);
  await Promise.all(
    [...state.followers.values()]
      .filter((f) => !f.busy)
      .map(async (f) => {
        f.busy = true;
        try {
          await step(f, host, now);
        } catch (err) {
          log.error(`Continuous mode of '${f.name}': ${(err as Error).message}`);
        } finally {
          f.busy = false;
        }
      }),
  );
}
