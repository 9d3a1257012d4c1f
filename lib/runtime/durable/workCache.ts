import { errorText, partKey } from './workGroups';
import type { TaskHubStore, WorkMessage } from './store';
import type { InvokeResult, OrchestrationTriggerPayload } from './episode';

const TOMBSTONE_MS = 120_000;

export type ActivityResult = { ok: true; result: string } | { ok: false; reason: string; details: string };

/** What the worker needs from the host: run functions through the programming model, and log. */
export interface WorkerHost {
  invokeOrchestrator(name: string, payload: OrchestrationTriggerPayload): Promise<InvokeResult>;
  invokeActivity(name: string, input: string | undefined, instanceId: string): Promise<ActivityResult>;
  log(level: 'debug' | 'information' | 'warning' | 'error', message: string): void;
}

/**
 * The worker's in-memory view of its hub's work (see {@link TaskHubWorker}): the messages a poll or this
 * process's own writes found, by instance, the activity work items, the group rows they came in, and the
 * tombstones of what was consumed (so a poll that read before a delete does not bring it back).
 */
export abstract class WorkCache {
  protected readonly pending = new Map<string, Map<string, WorkMessage>>();
  protected readonly activities = new Map<string, WorkMessage>();
  protected readonly runningActivities = new Set<string>();
  protected readonly tombstones = new Map<string, number>();
  /** `results` group rows in memory: row key -> in-memory keys of the parts no episode consumed yet. */
  protected readonly resultGroups = new Map<string, Set<string>>();
  /** `activities` group rows in memory: row key -> work items without a stored result, and those with one. */
  protected readonly activityGroups = new Map<string, { remaining: Set<string>; done: number[] }>();
  /** Activity work item row key -> the `activities` group row it came from. */
  protected readonly itemGroup = new Map<string, string>();
  protected readonly inflight = new Set<Promise<unknown>>();
  protected readonly timerHandles = new Set<NodeJS.Timeout>();
  protected stopped = true;

  constructor(
    readonly store: TaskHubStore,
    protected readonly host: WorkerHost,
  ) {}

  /** Look for work to start now (the worker's dispatch). */
  protected abstract kick(): void;

  protected track<T>(p: Promise<T>): void {
    this.inflight.add(p);
    void p.finally(() => this.inflight.delete(p));
  }

  protected accept(m: WorkMessage): boolean {
    const key = `${m.pk}:${m.rk}`;
    if (this.tombstones.has(key)) return false;
    if (m.kind === 'activities') return this.acceptActivityGroup(m);
    if (m.kind === 'results') return this.acceptResultGroup(m);
    if (m.pk === 'a') {
      if (this.activities.has(m.rk) || this.runningActivities.has(m.rk)) return false;
      this.activities.set(m.rk, m);
      return true;
    }
    if (m.visibleAt > Date.now()) {
      this.wakeAt(m);
      return false;
    }
    let map = this.pending.get(m.instanceId);
    if (!map) this.pending.set(m.instanceId, (map = new Map()));
    if (map.has(m.rk)) return false;
    map.set(m.rk, m);
    return true;
  }

  protected acceptResultGroup(g: WorkMessage): boolean {
    if (this.resultGroups.has(g.rk)) return false;
    let map = this.pending.get(g.instanceId);
    if (!map) this.pending.set(g.instanceId, (map = new Map()));
    const remaining = new Set<string>();
    (g.parts ?? []).forEach((p, i) => {
      const k = partKey(g.rk, i);
      remaining.add(k);
      map.set(k, { ...p, rk: k });
    });
    this.resultGroups.set(g.rk, remaining);
    return true;
  }

  protected acceptActivityGroup(g: WorkMessage): boolean {
    if (this.activityGroups.has(g.rk)) return false;
    const done = new Set(g.done ?? []);
    const group = { remaining: new Set<string>(), done: [...done] };
    this.activityGroups.set(g.rk, group);
    let fresh = false;
    for (const item of g.parts ?? []) {
      if (item.taskId !== undefined && done.has(item.taskId)) continue;
      group.remaining.add(item.rk);
      this.itemGroup.set(item.rk, g.rk);
      if (this.activities.has(item.rk) || this.runningActivities.has(item.rk)) continue;
      this.activities.set(item.rk, item);
      fresh = true;
    }
    if (!group.remaining.size) {
      // Every result was stored but the row outlived a crash: drop it now.
      this.track(
        this.store.settleWork('a', [g.rk], []).then(
          () => this.dropActivityGroup(g.rk),
          (err) => this.host.log('warning', `Durable task hub '${this.store.hubName}': deleting a finished activity group failed: ${errorText(err)}`),
        ),
      );
    }
    return fresh;
  }

  protected dropActivityGroup(rk: string): void {
    this.activityGroups.delete(rk);
    this.tombstone('a', [rk]);
  }

  protected wakeAt(m: WorkMessage): void {
    const delay = m.visibleAt - Date.now();
    if (delay > 24 * 3600_000 || this.stopped) return; // far timers are found by polling
    const h = setTimeout(() => {
      this.timerHandles.delete(h);
      if (this.accept({ ...m, visibleAt: 0 })) this.kick();
    }, delay + 1);
    this.timerHandles.add(h);
  }

  protected tombstone(pk: string, rks: string[]): void {
    const until = Date.now() + TOMBSTONE_MS;
    for (const rk of rks) this.tombstones.set(`${pk}:${rk}`, until);
  }

  /**
   * Delete consumed messages from storage, then forget them. A part of a `results` group only empties its
   * group: the row goes when its last part is consumed (until then a restart re-reads the row, and the
   * episode drops the parts already in the history as duplicates).
   */
  protected async release(instanceId: string, rks: string[]): Promise<void> {
    const rows: string[] = [];
    const byGroup = new Map<string, string[]>();
    for (const rk of rks) {
      const hash = rk.indexOf('#');
      if (hash < 0) {
        rows.push(rk);
        continue;
      }
      const g = rk.slice(0, hash);
      const parts = byGroup.get(g);
      if (parts) parts.push(rk);
      else byGroup.set(g, [rk]);
    }
    const emptied: string[] = [];
    for (const [g, parts] of byGroup) {
      const remaining = this.resultGroups.get(g);
      const consumed = new Set(parts);
      if (remaining && [...remaining].every((k) => consumed.has(k))) emptied.push(g);
    }
    if (rows.length || emptied.length) await this.store.deleteWork('o', [...rows, ...emptied]);
    for (const [g, parts] of byGroup) {
      const remaining = this.resultGroups.get(g);
      for (const k of parts) remaining?.delete(k);
    }
    for (const g of emptied) this.resultGroups.delete(g);
    this.tombstone('o', emptied);
    this.consumed(instanceId, rks);
  }

  protected consumed(instanceId: string, rks: string[]): void {
    this.tombstone('o', rks);
    const map = this.pending.get(instanceId);
    if (!map) return;
    for (const rk of rks) map.delete(rk);
    if (!map.size) this.pending.delete(instanceId);
  }
}
