import os from 'node:os';
import { ActivityRunner } from './activityRuns';
import type { WorkerHost } from './workCache';
import { chunkBySize, errorText } from './workGroups';
import { runEpisode, startMessage } from './episode';
import { isTerminal, type HistoryEvent, type RuntimeStatus } from './protocol';
import { ConcurrencyError, newExecutionId, pad, TaskHubStore, type ChildCreation, type InstanceRecord, type Outbox, type WorkMessage } from './store';

export interface WorkerOptions {
  maxConcurrentActivityFunctions?: number;
  maxConcurrentOrchestratorFunctions?: number;
  /** Poll interval bounds in ms (adaptive: shortest while work keeps appearing, doubling to the longest). */
  minPollMs?: number;
  maxPollMs?: number;
}

export class InstanceConflictError extends Error {}

/**
 * Runs one task hub: dispatches orchestration episodes and activity work items from storage, with the
 * concurrency limits of host.json. Storage is the only truth: the in-memory maps are a cache of what a poll
 * (or this process's own writes) found, rebuilt by polling after a restart. One process owns a hub.
 *
 * Episodes of one instance never overlap (`busy`). Consumed messages are deleted only after the episode
 * committed; an activity's work item only after its result message is stored; so a kill -9 at any point
 * loses nothing and at worst repeats an activity (at-least-once) or an episode (de-duplicated by task id).
 */
export class TaskHubWorker extends ActivityRunner {
  private readonly busy = new Set<string>();
  /** Instances whose remaining messages the last episode left alone (suspended): key = their row keys. */
  private readonly parked = new Map<string, string>();
  private readonly historyCache = new Map<string, { executionId: string; episodes: number; events: HistoryEvent[] }>();
  /** `$state` rows as this process last wrote them (with ETag): a stale entry only costs a failed commit. */
  private readonly stateCache = new Map<string, InstanceRecord>();
  private pollTimer: NodeJS.Timeout | undefined;
  private pollInterval: number;
  private polling = false;
  private pollAgain = false;
  private readonly maxActivities: number;
  private readonly maxOrchestrations: number;
  private readonly minPoll: number;
  private readonly maxPoll: number;

  constructor(store: TaskHubStore, host: WorkerHost, options: WorkerOptions = {}) {
    super(store, host);
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
  async createInstance(
    name: string,
    instanceId: string,
    input: string | undefined,
    parent?: Omit<ChildCreation, 'instanceId' | 'name' | 'input'>,
  ): Promise<InstanceRecord> {
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

  protected kick(): void {
    if (this.stopped) return;
    this.pump();
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
        await this.release(
          instanceId,
          messages.map((m) => m.rk),
        );
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

  private async history(state: InstanceRecord): Promise<HistoryEvent[]> {
    const cached = this.historyCache.get(state.instanceId);
    if (cached && cached.executionId === state.executionId && cached.episodes === state.episodes) return cached.events;
    const events = state.episodes === 0 ? [] : await this.store.loadHistory(state.instanceId, state.executionId);
    this.historyCache.set(state.instanceId, { executionId: state.executionId, episodes: state.episodes, events });
    return events;
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
        messages.push({
          pk: 'a',
          rk: `${stem}.g${i}`,
          instanceId: outbox.instanceId,
          kind: 'activities',
          enqueuedAt: first.enqueuedAt,
          visibleAt: first.visibleAt,
          parts,
        });
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

function positive(n: unknown): number | undefined {
  return typeof n === 'number' && Number.isFinite(n) && n >= 1 ? Math.floor(n) : undefined;
}

export type { RuntimeStatus };
