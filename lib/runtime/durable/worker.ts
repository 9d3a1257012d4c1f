import os from 'node:os';
import { runEpisode, startMessage, type InvokeResult, type OrchestrationTriggerPayload } from './episode';
import { isTerminal, type HistoryEvent, type RuntimeStatus } from './protocol';
import { ConcurrencyError, newExecutionId, pad, TaskHubStore, type ChildCreation, type InstanceRecord, type Outbox, type WorkMessage } from './store';

export type ActivityResult = { ok: true; result: string } | { ok: false; reason: string; details: string };

/** What the worker needs from the host: run functions through the programming model, and log. */
export interface WorkerHost {
  invokeOrchestrator(name: string, payload: OrchestrationTriggerPayload): Promise<InvokeResult>;
  invokeActivity(name: string, input: string | undefined, instanceId: string): Promise<ActivityResult>;
  log(level: 'debug' | 'information' | 'warning' | 'error', message: string): void;
}

export interface WorkerOptions {
  maxConcurrentActivityFunctions?: number;
  maxConcurrentOrchestratorFunctions?: number;
  /** Poll interval bounds in ms (adaptive: shortest while work keeps appearing, doubling to the longest). */
  minPollMs?: number;
  maxPollMs?: number;
}

export class InstanceConflictError extends Error {}

const TOMBSTONE_MS = 120_000;
/**
 * Largest text (UTF-16 code units) one group row carries: Azure Tables stores strings as UTF-16 and limits an
 * entity to 1 MiB, so a group is closed at this budget and larger single messages travel alone.
 */
const GROUP_BUDGET = 200_000;
/**
 * Largest activity result (JSON, UTF-16 code units) the hub stores: one result travels in one work row and
 * then in one history row, each a table entity of at most 1 MiB. A larger result fails its activity with a
 * message saying so, instead of a store that can never succeed (Azure's Durable Functions moves large
 * payloads to blobs; this runtime does not: see docs/runtime-durable.md).
 */
export const MAX_RESULT_CHARS = 400_000;

/** In-memory key of the i-th part of a group row: `#` never occurs in a stored row key (Tables forbid it). */
const partKey = (groupRk: string, i: number): string => `${groupRk}#${i}`;

function messageSize(m: WorkMessage): number {
  return 200 + (m.data?.length ?? 0) + (m.reason?.length ?? 0) + (m.details?.length ?? 0) + (m.name?.length ?? 0);
}

/** Split messages into runs that fit one group row each. */
function chunkBySize(messages: WorkMessage[]): WorkMessage[][] {
  const out: WorkMessage[][] = [];
  let cur: WorkMessage[] = [];
  let size = 0;
  for (const m of messages) {
    const n = messageSize(m);
    if (cur.length && size + n > GROUP_BUDGET) {
      out.push(cur);
      cur = [];
      size = 0;
    }
    cur.push(m);
    size += n;
  }
  if (cur.length) out.push(cur);
  return out;
}

/**
 * Runs one task hub: dispatches orchestration episodes and activity work items from storage, with the
 * concurrency limits of host.json. Storage is the only truth: the in-memory maps are a cache of what a poll
 * (or this process's own writes) found, rebuilt by polling after a restart. One process owns a hub.
 *
 * Episodes of one instance never overlap (`busy`). Consumed messages are deleted only after the episode
 * committed; an activity's work item only after its result message is stored; so a kill -9 at any point
 * loses nothing and at worst repeats an activity (at-least-once) or an episode (de-duplicated by task id).
 */
export class TaskHubWorker {
  private readonly pending = new Map<string, Map<string, WorkMessage>>();
  private readonly activities = new Map<string, WorkMessage>();
  private readonly runningActivities = new Set<string>();
  /** Activity functions executing right now (the concurrency limit counts these, not results awaiting storage). */
  private executingActivities = 0;
  private readonly busy = new Set<string>();
  /** Instances whose remaining messages the last episode left alone (suspended): key = their row keys. */
  private readonly parked = new Map<string, string>();
  private readonly tombstones = new Map<string, number>();
  private readonly historyCache = new Map<string, { executionId: string; episodes: number; events: HistoryEvent[] }>();
  /** `$state` rows as this process last wrote them (with ETag): a stale entry only costs a failed commit. */
  private readonly stateCache = new Map<string, InstanceRecord>();
  /** `results` group rows in memory: row key -> in-memory keys of the parts no episode consumed yet. */
  private readonly resultGroups = new Map<string, Set<string>>();
  /** `activities` group rows in memory: row key -> work items without a stored result, and those with one. */
  private readonly activityGroups = new Map<string, { remaining: Set<string>; done: number[] }>();
  /** Activity work item row key -> the `activities` group row it came from. */
  private readonly itemGroup = new Map<string, string>();
  /** Finished activities whose result messages are written (and work items deleted) in one batch. */
  private completions: { item: WorkMessage; msg: WorkMessage }[] = [];
  private flushTimer: NodeJS.Timeout | undefined;
  private flushing: Promise<void> | undefined;
  /** A flush is chained behind the running one and will take every completion present when it starts. */
  private flushQueued = false;
  private readonly inflight = new Set<Promise<unknown>>();
  private readonly timerHandles = new Set<NodeJS.Timeout>();
  private pollTimer: NodeJS.Timeout | undefined;
  private pollInterval: number;
  private polling = false;
  private pollAgain = false;
  private stopped = true;
  private readonly maxActivities: number;
  private readonly maxOrchestrations: number;
  private readonly minPoll: number;
  private readonly maxPoll: number;

  constructor(
    readonly store: TaskHubStore,
    private readonly host: WorkerHost,
    options: WorkerOptions = {},
  ) {
    const cpus = Math.max(1, os.cpus().length);
    this.maxActivities = positive(options.maxConcurrentActivityFunctions) ?? 10 * cpus;
    this.maxOrchestrations = positive(options.maxConcurrentOrchestratorFunctions) ?? 10 * cpus;
    this.minPoll = options.minPollMs ?? 20;
    this.maxPoll = options.maxPollMs ?? 500;
    this.pollInterval = this.minPoll;
  }

  get limits(): { activities: number; orchestrations: number } {
    return { activities: this.maxActivities, orchestrations: this.maxOrchestrations };
  }

  async start(): Promise<void> {
    await this.store.init();
    this.stopped = false;
    for (const outbox of await this.store.listOutboxes()) await this.deliver(outbox);
    this.schedulePoll(0);
  }

  /** Stop taking work; wait (bounded) for episodes and activities in flight. */
  async stop(timeoutMs = 10_000): Promise<void> {
    this.stopped = true;
    if (this.pollTimer) clearTimeout(this.pollTimer);
    for (const t of this.timerHandles) clearTimeout(t);
    this.timerHandles.clear();
    const drain = async (): Promise<void> => {
      await Promise.allSettled([...this.inflight]);
      // Results of activities that finished meanwhile are stored, so they need not run again.
      await this.flushCompletions();
    };
    let timer: NodeJS.Timeout | undefined;
    await Promise.race([drain(), new Promise((r) => (timer = setTimeout(r, timeoutMs)))]);
    if (timer) clearTimeout(timer);
  }

  // ---- client operations -----------------------------------------------------------------------------

  /**
   * Create (or re-create, when the existing instance finished) an orchestration instance and its start
   * message. Throws InstanceConflictError when an instance with that id is still active.
   */
  async createInstance(name: string, instanceId: string, input: string | undefined, parent?: Omit<ChildCreation, 'instanceId' | 'name' | 'input'>): Promise<InstanceRecord> {
    try {
      // A new id (the usual case) is created without reading first: the insert fails when the row exists.
      return await this.createWith(name, instanceId, input, parent, undefined);
    } catch (err) {
      if (!(err instanceof InstanceConflictError)) throw err;
    }
    const existing = await this.store.getInstance(instanceId);
    if (existing && !isTerminal(existing.runtimeStatus)) {
      throw new InstanceConflictError(`An orchestration instance with the ID '${instanceId}' already exists and is ${existing.runtimeStatus}.`);
    }
    return this.createWith(name, instanceId, input, parent, existing);
  }

  /** Commit a new `$state` (replacing `existing`, a finished instance, when given) and deliver its start message. */
  private async createWith(
    name: string,
    instanceId: string,
    input: string | undefined,
    parent: Omit<ChildCreation, 'instanceId' | 'name' | 'input'> | undefined,
    existing: InstanceRecord | undefined,
  ): Promise<InstanceRecord> {
    const now = new Date();
    const exec = newExecutionId();
    const state: InstanceRecord = {
      instanceId,
      name,
      runtimeStatus: 'Pending',
      input,
      createdTime: now.toISOString(),
      lastUpdatedTime: now.toISOString(),
      executionId: exec,
      episodes: 0,
      etag: existing?.etag,
      ...(parent ?? {}),
    };
    const outbox: Outbox = { instanceId, rowKey: `x.${exec}.start`, items: [{ type: 'message', message: startMessage(instanceId, exec, now.getTime()) }] };
    try {
      state.etag = await this.store.commit(state, undefined, outbox);
    } catch (err) {
      if (err instanceof ConcurrencyError) throw new InstanceConflictError(`An orchestration instance with the ID '${instanceId}' was created concurrently.`);
      throw err;
    }
    this.historyCache.delete(instanceId);
    this.stateCache.set(instanceId, { ...state });
    await this.deliver(outbox);
    return state;
  }

  /** Send a message to an instance (event, terminate, suspend, resume). */
  async send(instanceId: string, kind: 'event' | 'terminate' | 'suspend' | 'resume', fields: { name?: string; data?: string; reason?: string }): Promise<void> {
    const now = Date.now();
    const msg: WorkMessage = {
      pk: 'o',
      rk: `${kind === 'event' ? 'e' : 'c'}.${pad(now)}.${newExecutionId()}`,
      instanceId,
      kind,
      enqueuedAt: now,
      visibleAt: now,
      ...fields,
    };
    await this.store.putWork([msg]);
    this.accept(msg);
    this.kick();
  }

  /** Purge a finished instance's rows. Returns false when it does not exist or is still active. */
  async purge(instance: InstanceRecord): Promise<void> {
    await this.store.purge(instance.instanceId);
    this.historyCache.delete(instance.instanceId);
    this.stateCache.delete(instance.instanceId);
  }

  // ---- dispatch --------------------------------------------------------------------------------------

  private kick(): void {
    if (this.stopped) return;
    this.pump();
  }

  private track<T>(p: Promise<T>): void {
    this.inflight.add(p);
    void p.finally(() => this.inflight.delete(p));
  }

  private accept(m: WorkMessage): boolean {
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

  private acceptResultGroup(g: WorkMessage): boolean {
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

  private acceptActivityGroup(g: WorkMessage): boolean {
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

  private dropActivityGroup(rk: string): void {
    this.activityGroups.delete(rk);
    this.tombstone('a', [rk]);
  }

  private wakeAt(m: WorkMessage): void {
    const delay = m.visibleAt - Date.now();
    if (delay > 24 * 3600_000 || this.stopped) return; // far timers are found by polling
    const h = setTimeout(() => {
      this.timerHandles.delete(h);
      if (this.accept({ ...m, visibleAt: 0 })) this.kick();
    }, delay + 1);
    this.timerHandles.add(h);
  }

  private tombstone(pk: string, rks: string[]): void {
    const until = Date.now() + TOMBSTONE_MS;
    for (const rk of rks) this.tombstones.set(`${pk}:${rk}`, until);
  }

  private pump(): void {
    if (this.stopped) return;
    for (const [instanceId, map] of this.pending) {
      if (this.busy.size >= this.maxOrchestrations) break;
      if (this.busy.has(instanceId)) continue;
      if (!map.size) {
        this.pending.delete(instanceId);
        continue;
      }
      const signature = [...map.keys()].sort().join('|');
      if (this.parked.get(instanceId) === signature) continue;
      this.busy.add(instanceId);
      this.track(this.episode(instanceId));
    }
    for (const [rk, item] of this.activities) {
      if (this.executingActivities >= this.maxActivities) break;
      this.activities.delete(rk);
      this.runningActivities.add(rk);
      this.executingActivities++;
      this.track(this.activity(item));
    }
  }

  private schedulePoll(delay: number): void {
    if (this.stopped) return;
    if (this.pollTimer) clearTimeout(this.pollTimer);
    this.pollTimer = setTimeout(() => void this.poll(), delay);
  }

  private async poll(): Promise<void> {
    if (this.stopped) return;
    if (this.polling) {
      this.pollAgain = true;
      return;
    }
    this.polling = true;
    let fresh = 0;
    try {
      const now = Date.now();
      for (const [k, until] of this.tombstones) if (until < now) this.tombstones.delete(k);
      const [orch, acts] = await Promise.all([this.store.listWork('o', now), this.store.listWork('a', now)]);
      for (const m of [...orch, ...acts]) if (this.accept(m)) fresh++;
    } catch (err) {
      this.host.log('warning', `Durable task hub '${this.store.hubName}': polling storage failed: ${errorText(err)}`);
    } finally {
      this.polling = false;
    }
    if (fresh) this.pump();
    this.pollInterval = fresh || this.pollAgain ? this.minPoll : Math.min(this.maxPoll, this.pollInterval * 2);
    this.pollAgain = false;
    this.schedulePoll(this.pollInterval);
  }

  private async episode(instanceId: string): Promise<void> {
    const map = this.pending.get(instanceId) ?? new Map<string, WorkMessage>();
    const messages = [...map.values()].sort((a, b) => a.enqueuedAt - b.enqueuedAt || (a.rk < b.rk ? -1 : 1));
    let retryLater = false;
    try {
      const state = this.stateCache.get(instanceId) ?? (await this.store.getInstance(instanceId));
      if (!state) {
        await this.release(instanceId, messages.map((m) => m.rk));
        return;
      }
      const history = await this.history(state);
      const result = await runEpisode({
        state,
        history,
        messages,
        now: new Date(),
        newExecutionId,
        invoke: (payload) => this.host.invokeOrchestrator(state.name, payload),
      });
      let outbox: Outbox | undefined;
      if (result.state) {
        if (result.outbox.length) outbox = { instanceId, rowKey: `x.${result.historyExecutionId}.${pad(state.episodes, 6)}`, items: result.outbox };
        const etag = await this.store.commit(
          { ...result.state, etag: state.etag },
          { executionId: result.historyExecutionId, episode: state.episodes, events: result.events },
          outbox,
        );
        this.stateCache.set(instanceId, { ...result.state, etag });
        if (result.state.executionId === state.executionId) {
          this.historyCache.set(instanceId, { executionId: state.executionId, episodes: result.state.episodes, events: [...history, ...result.events] });
        } else {
          this.historyCache.set(instanceId, { executionId: result.state.executionId, episodes: 0, events: [] });
        }
      }
      // Both only follow the commit: the consumed messages' effect is in the history, and the outbox row
      // keeps what is not delivered yet. So they run side by side (one round trip less per episode).
      await Promise.all([outbox ? this.deliver(outbox) : undefined, result.consumed.length ? this.release(instanceId, result.consumed) : undefined]);
      const finalStatus = result.state?.runtimeStatus ?? state.runtimeStatus;
      if (result.deferred && (finalStatus === 'Suspended' || finalStatus === 'Pending')) {
        // Left alone until a resume/terminate (or the start message) arrives: do not spin on them.
        const rest = this.pending.get(instanceId);
        if (rest) this.parked.set(instanceId, [...rest.keys()].sort().join('|'));
      } else {
        this.parked.delete(instanceId);
      }
    } catch (err) {
      retryLater = true;
      this.historyCache.delete(instanceId);
      this.stateCache.delete(instanceId);
      if (!(err instanceof ConcurrencyError)) {
        this.host.log('error', `Durable task hub '${this.store.hubName}': episode of instance '${instanceId}' failed and will be retried: ${errorText(err)}`);
      }
    } finally {
      this.busy.delete(instanceId);
    }
    if (retryLater) {
      const h = setTimeout(() => {
        this.timerHandles.delete(h);
        this.kick();
      }, 500);
      this.timerHandles.add(h);
    } else {
      this.kick();
    }
  }

  /**
   * Delete consumed messages from storage, then forget them. A part of a `results` group only empties its
   * group: the row goes when its last part is consumed (until then a restart re-reads the row, and the
   * episode drops the parts already in the history as duplicates).
   */
  private async release(instanceId: string, rks: string[]): Promise<void> {
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

  private consumed(instanceId: string, rks: string[]): void {
    this.tombstone('o', rks);
    const map = this.pending.get(instanceId);
    if (!map) return;
    for (const rk of rks) map.delete(rk);
    if (!map.size) this.pending.delete(instanceId);
  }

  private async history(state: InstanceRecord): Promise<HistoryEvent[]> {
    const cached = this.historyCache.get(state.instanceId);
    if (cached && cached.executionId === state.executionId && cached.episodes === state.episodes) return cached.events;
    const events = state.episodes === 0 ? [] : await this.store.loadHistory(state.instanceId, state.executionId);
    this.historyCache.set(state.instanceId, { executionId: state.executionId, episodes: state.episodes, events });
    return events;
  }

  private async activity(item: WorkMessage): Promise<void> {
    let r: ActivityResult;
    try {
      r = await this.host.invokeActivity(item.name ?? '', item.data, item.instanceId);
    } catch (err) {
      r = { ok: false, reason: `Activity function '${item.name}' failed: ${errorText(err)}`, details: '' };
    } finally {
      this.executingActivities--;
    }
    if (r.ok && r.result.length > MAX_RESULT_CHARS) {
      r = {
        ok: false,
        reason: `Activity function '${item.name}' failed: its result is ${r.result.length} characters of JSON, more than the ${MAX_RESULT_CHARS} a task hub row can hold.`,
        details: '',
      };
    }
    const now = Date.now();
    const msg: WorkMessage = {
      pk: 'o',
      rk: `r.${item.executionId}.${item.taskId}`,
      instanceId: item.instanceId,
      kind: r.ok ? 'taskCompleted' : 'taskFailed',
      executionId: item.executionId,
      taskId: item.taskId,
      enqueuedAt: now,
      visibleAt: now,
      ...(r.ok ? { data: r.result } : { reason: r.reason, details: r.details }),
    };
    this.completions.push({ item, msg });
    // Results finishing within a few milliseconds share one transaction (and one for the deletes).
    if (this.completions.length >= 100) void this.flushCompletions();
    else if (!this.flushTimer) this.flushTimer = setTimeout(() => void this.flushCompletions(), 3);
    this.kick();
  }

  private flushCompletions(): Promise<void> {
    if (this.flushTimer) clearTimeout(this.flushTimer);
    this.flushTimer = undefined;
    if (this.flushQueued && this.flushing) return this.flushing;
    this.flushQueued = true;
    const run = async (): Promise<void> => {
      this.flushQueued = false;
      const batch = this.completions;
      this.completions = [];
      if (!batch.length) return;
      const messages = groupResults(batch.map((c) => c.msg));
      try {
        await this.store.putWork(messages);
      } catch (err) {
        this.host.log('error', `Durable task hub '${this.store.hubName}': storing ${batch.length} activity result(s) failed, will retry: ${errorText(err)}`);
        const h = setTimeout(() => {
          this.timerHandles.delete(h);
          this.completions.push(...batch);
          void this.flushCompletions();
        }, 1000);
        this.timerHandles.add(h);
        return;
      }
      // Work items whose result is stored: single rows are deleted, groups record the task ids as done
      // (and are deleted once every item is), all in one transaction where possible.
      const deletes: string[] = [];
      const touched = new Set<string>();
      for (const c of batch) {
        const g = this.itemGroup.get(c.item.rk);
        const group = g === undefined ? undefined : this.activityGroups.get(g);
        if (g === undefined || !group) {
          deletes.push(c.item.rk);
          continue;
        }
        group.remaining.delete(c.item.rk);
        if (c.item.taskId !== undefined) group.done.push(c.item.taskId);
        touched.add(g);
      }
      const finished = [...touched].filter((g) => this.activityGroups.get(g)?.remaining.size === 0);
      const partial = [...touched].filter((g) => !finished.includes(g)).map((g) => ({ rk: g, taskIds: [...(this.activityGroups.get(g)?.done ?? [])] }));
      try {
        await this.store.settleWork('a', [...deletes, ...finished], partial);
      } catch (err) {
        // The results are stored: a leftover work item only means the activity may run once more.
        this.host.log('warning', `Durable task hub '${this.store.hubName}': deleting activity work items failed: ${errorText(err)}`);
      }
      this.tombstone('a', batch.map((c) => c.item.rk));
      for (const g of finished) this.dropActivityGroup(g);
      for (const c of batch) {
        this.runningActivities.delete(c.item.rk);
        this.itemGroup.delete(c.item.rk);
      }
      for (const m of messages) this.accept(m);
      this.kick();
    };
    const p = (this.flushing ?? Promise.resolve()).then(run);
    this.flushing = p;
    this.track(p);
    return p;
  }

  /** Deliver an episode's outbox to the work table (idempotent), then drop the outbox row. */
  private async deliver(outbox: Outbox): Promise<void> {
    const all = outbox.items.flatMap((i) => (i.type === 'message' ? [i.message] : []));
    // The activities of one episode travel as group rows (deterministic keys: a redelivery replaces them).
    const work = all.filter((m) => m.kind === 'activity');
    const messages = all.filter((m) => m.kind !== 'activity');
    if (work.length > 1) {
      const stem = outbox.rowKey.replace(/^x\./, '');
      chunkBySize(work).forEach((parts, i) => {
        const first = parts[0];
        messages.push({ pk: 'a', rk: `${stem}.g${i}`, instanceId: outbox.instanceId, kind: 'activities', enqueuedAt: first.enqueuedAt, visibleAt: first.visibleAt, parts });
      });
    } else {
      messages.push(...work);
    }
    await this.store.putWork(messages);
    // Stored: hand them over now (the outbox row's deletion need not delay the next episode or activity).
    let fresh = false;
    for (const m of messages) fresh = this.accept(m) || fresh;
    if (fresh) this.kick();
    for (const item of outbox.items) if (item.type === 'create') await this.createChild(item.child);
    await this.store.deleteOutbox(outbox.instanceId, outbox.rowKey);
  }

  private async createChild(child: ChildCreation): Promise<void> {
    const existing = await this.store.getInstance(child.instanceId);
    if (existing && existing.parentExecutionId === child.parentExecutionId && existing.parentTaskId === child.parentTaskId) return;
    try {
      await this.createInstance(child.name, child.instanceId, child.input, {
        parentInstanceId: child.parentInstanceId,
        parentExecutionId: child.parentExecutionId,
        parentTaskId: child.parentTaskId,
      });
    } catch (err) {
      if (!(err instanceof InstanceConflictError)) throw err;
      const now = Date.now();
      const msg: WorkMessage = {
        pk: 'o',
        rk: `s.${child.parentExecutionId}.${child.parentTaskId}`,
        instanceId: child.parentInstanceId,
        kind: 'subFailed',
        executionId: child.parentExecutionId,
        taskId: child.parentTaskId,
        reason: err.message,
        details: '',
        enqueuedAt: now,
        visibleAt: now,
      };
      await this.store.putWork([msg]);
      this.accept(msg);
    }
  }

  /** Status of active work (tests and diagnostics). */
  get activeCounts(): { episodes: number; activities: number } {
    return { episodes: this.busy.size, activities: this.executingActivities };
  }
}

/**
 * Activity results of one flush as few `o` rows as possible: one `results` group per execution (within the
 * size budget); a lone result keeps its own deterministic row `r.<exec>.<taskId>`. Group keys are unique, so
 * a group never replaces another; a result stored twice is dropped by the episode as a duplicate.
 */
function groupResults(msgs: WorkMessage[]): WorkMessage[] {
  const byExec = new Map<string, WorkMessage[]>();
  for (const m of msgs) {
    const k = `${m.instanceId}\u0000${m.executionId ?? ''}`;
    const list = byExec.get(k);
    if (list) list.push(m);
    else byExec.set(k, [m]);
  }
  const out: WorkMessage[] = [];
  for (const list of byExec.values()) {
    if (list.length === 1) {
      out.push(list[0]);
      continue;
    }
    for (const parts of chunkBySize(list)) {
      const first = parts[0];
      out.push({
        pk: 'o',
        rk: `r.${first.executionId ?? ''}.g${newExecutionId().slice(0, 16)}`,
        instanceId: first.instanceId,
        kind: 'results',
        executionId: first.executionId,
        enqueuedAt: first.enqueuedAt,
        visibleAt: first.visibleAt,
        parts,
      });
    }
  }
  return out;
}

function positive(n: unknown): number | undefined {
  return typeof n === 'number' && Number.isFinite(n) && n >= 1 ? Math.floor(n) : undefined;
}

export function errorText(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}

export type { RuntimeStatus };
