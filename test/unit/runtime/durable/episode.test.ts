import path from 'node:path';
import { runEpisode, type EpisodeResult } from '../../../../lib/runtime/durable/episode';
import { EventType, typedDataToJson, typedDataToValue, type HistoryEvent, type OrchestratorState } from '../../../../lib/runtime/durable/protocol';
import type { InstanceRecord, WorkMessage } from '../../../../lib/runtime/durable/store';
import { invokeFunction } from '../../../../lib/runtime/invoke';
import { createCoreApi, FunctionRegistry } from '../../../../lib/runtime/registry';
import { parseOrchestratorFailure } from '../../../../lib/runtime/durable/protocol';

/**
 * History replay corner cases: the fixture app's real orchestrators (durable-functions v3) run through the
 * real invocation pipeline against histories built episode by episode by the runtime's episode engine,
 * with messages (activity results, timers, events) delivered in controlled orders.
 */
const mockRegistry = new FunctionRegistry();
const registry = mockRegistry;
// Jest has its own module loader, so the core module is provided the way installCoreModule does it for Node.
jest.mock('@azure/functions-core', () => createCoreApi(mockRegistry), { virtual: true });
require(path.resolve(__dirname, '../../../fixtures/durable-app/src/orchestrations.js'));

const log = () => undefined;

async function invokeOrchestrator(name: string, payload: unknown) {
  const fn = registry.get(name)!;
  const out = await invokeFunction(registry, fn, { inputData: [{ name: fn.triggerName, data: { json: JSON.stringify(payload) } }] }, { log });
  if (out.response.result?.status === 'success') return { ok: true as const, state: typedDataToValue(out.response.returnValue) as OrchestratorState };
  const f = parseOrchestratorFailure(out.response.result?.exception?.message ?? '');
  return { ok: false as const, error: f.error, state: f.state };
}

async function runActivity(m: WorkMessage, instanceId: string): Promise<WorkMessage> {
  const fn = registry.get(m.name!)!;
  const out = await invokeFunction(registry, fn, { inputData: [{ name: fn.triggerName, data: m.data === undefined ? undefined : { json: m.data } }] }, { log });
  const ok = out.response.result?.status === 'success';
  return {
    pk: 'o',
    rk: `r.${m.executionId}.${m.taskId}`,
    instanceId,
    kind: ok ? 'taskCompleted' : 'taskFailed',
    executionId: m.executionId,
    taskId: m.taskId,
    enqueuedAt: 0,
    visibleAt: 0,
    ...(ok
      ? { data: typedDataToJson(out.response.returnValue) }
      : { reason: `Activity function '${m.name}' failed: ${out.response.result?.exception?.message}`, details: '' }),
  };
}

let execCounter = 0;
/** An in-memory task hub: one instance (plus sub-orchestrations), episodes run until nothing is pending. */
class Sim {
  states = new Map<string, InstanceRecord>();
  histories = new Map<string, HistoryEvent[]>();
  inbox = new Map<string, WorkMessage[]>();
  activities: WorkMessage[] = [];
  timers: WorkMessage[] = [];
  episodes: EpisodeResult[] = [];

  create(name: string, instanceId: string, input: unknown, parent?: Partial<InstanceRecord>): void {
    const exec = `e${++execCounter}`;
    this.states.set(instanceId, {
      instanceId,
      name,
      runtimeStatus: 'Pending',
      input: input === undefined ? undefined : JSON.stringify(input),
      createdTime: '',
      lastUpdatedTime: '',
      executionId: exec,
      episodes: 0,
      ...parent,
    });
    this.histories.set(instanceId, []);
    this.push({ pk: 'o', rk: `start.${exec}`, instanceId, kind: 'start', executionId: exec, enqueuedAt: 0, visibleAt: 0 });
  }

  push(m: WorkMessage): void {
    const list = this.inbox.get(m.instanceId) ?? [];
    list.push(m);
    this.inbox.set(m.instanceId, list);
  }

  async episode(instanceId: string, order?: (msgs: WorkMessage[]) => WorkMessage[]): Promise<EpisodeResult> {
    const state = this.states.get(instanceId)!;
    const all = this.inbox.get(instanceId) ?? [];
    const msgs = order ? order(all) : all;
    const r = await runEpisode({
      state,
      history: this.histories.get(instanceId)!,
      messages: msgs,
      now: new Date(),
      newExecutionId: () => `e${++execCounter}`,
      invoke: (p) => invokeOrchestrator(state.name, p),
    });
    this.inbox.set(
      instanceId,
      all.filter((m) => !r.consumed.includes(m.rk)),
    );
    if (r.state) {
      this.states.set(instanceId, r.state);
      this.histories.set(instanceId, r.state.executionId === state.executionId ? [...this.histories.get(instanceId)!, ...r.events] : []);
    }
    for (const o of r.outbox) {
      if (o.type === 'create') this.create(o.child.name, o.child.instanceId, o.child.input === undefined ? undefined : JSON.parse(o.child.input), o.child);
      else if (o.message.pk === 'a') this.activities.push(o.message);
      else if (o.message.kind === 'timerFired') this.timers.push(o.message);
      else this.push(o.message);
    }
    this.episodes.push(r);
    return r;
  }

  async runActivities(): Promise<void> {
    const list = this.activities;
    this.activities = [];
    for (const a of list) this.push(await runActivity(a, a.instanceId));
  }

  fireTimers(): void {
    for (const t of this.timers) this.push(t);
    this.timers = [];
  }

  /** Run until no instance has messages, activities or timers. */
  async drain(): Promise<void> {
    for (let guard = 0; guard < 200; guard++) {
      const ready = [...this.inbox.entries()].find(([, m]) => m.length);
      if (ready) {
        await this.episode(ready[0]);
        continue;
      }
      if (this.activities.length) {
        await this.runActivities();
        continue;
      }
      if (this.timers.length) {
        this.fireTimers();
        continue;
      }
      return;
    }
    throw new Error('did not settle');
  }

  output(id: string): unknown {
    const s = this.states.get(id)!;
    return s.output === undefined ? undefined : JSON.parse(s.output);
  }
}

describe('durable episode engine: replay with real orchestrators', () => {
  it('runs a sequence episode by episode, replaying the history each time', async () => {
    const sim = new Sim();
    sim.create('sequence', 'seq', ['a', 'b', 'c']);
    await sim.drain();
    expect(sim.states.get('seq')!.runtimeStatus).toBe('Completed');
    expect(sim.output('seq')).toEqual(['Hello a!', 'Hello b!', 'Hello c!']);
    const h = sim.histories.get('seq')!;
    expect(h.filter((e) => e.EventType === EventType.TaskScheduled).map((e) => e.EventId)).toEqual([0, 1, 2]);
    expect(h.filter((e) => e.EventType === EventType.TaskCompleted).map((e) => e.TaskScheduledId)).toEqual([0, 1, 2]);
    expect(sim.episodes.filter((e) => e.invoked)).toHaveLength(4);
  });

  it('fans out in one episode and fans in whatever order results arrive', async () => {
    const sim = new Sim();
    sim.create('fanOutNoop', 'fan', 5);
    await sim.episode('fan');
    expect(sim.activities.map((a) => a.taskId)).toEqual([0, 1, 2, 3, 4]);
    await sim.runActivities();
    // Deliver results in reverse order, one episode each.
    for (let i = 0; i < 5; i++) await sim.episode('fan', (msgs) => [msgs[msgs.length - 1]]);
    await sim.drain();
    expect(sim.output('fan')).toBe(5);
  });

  it('retries a failing activity with the ids the library expects (timer, then a rescheduled task)', async () => {
    const sim = new Sim();
    sim.create('retrying', 'retry-ok', { key: 'u1', failTimes: 2, maxAttempts: 4 });
    await sim.drain();
    expect(sim.output('retry-ok')).toEqual({ ok: true, attempts: 3 });
    const h = sim.histories.get('retry-ok')!;
    const ids = h.filter((e) => [EventType.TaskScheduled, EventType.TimerCreated].includes(e.EventType)).map((e) => `${EventType[e.EventType]}:${e.EventId}`);
    expect(ids).toEqual(['TaskScheduled:0', 'TimerCreated:1', 'TaskScheduled:2', 'TimerCreated:3', 'TaskScheduled:4']);
  });

  it('gives up after maxNumberOfAttempts and surfaces the last failure', async () => {
    const sim = new Sim();
    sim.create('retrying', 'retry-ko', { key: 'u2', failTimes: 10, maxAttempts: 3 });
    await sim.drain();
    const out = sim.output('retry-ko') as { ok: boolean; message: string };
    expect(out.ok).toBe(false);
    expect(out.message).toContain('flaky attempt 3 failed');
    expect(sim.histories.get('retry-ko')!.filter((e) => e.EventType === EventType.TaskFailed)).toHaveLength(3);
  });

  it('a timer and an external event raced with Task.any: whichever is first in the history wins', async () => {
    for (const first of ['event', 'timer'] as const) {
      const sim = new Sim();
      sim.create('approval', `race-${first}`, { timeoutMs: 60000 });
      await sim.episode(`race-${first}`);
      expect(sim.timers).toHaveLength(1);
      sim.push({ pk: 'o', rk: 'e.1', instanceId: `race-${first}`, kind: 'event', name: 'Approval', data: '"yes"', enqueuedAt: 0, visibleAt: 0 });
      sim.fireTimers();
      await sim.episode(`race-${first}`, (msgs) => [...msgs].sort((a) => ((a.kind === 'event') === (first === 'event') ? -1 : 1)));
      expect(sim.states.get(`race-${first}`)!.runtimeStatus).toBe('Completed');
      expect(sim.output(`race-${first}`)).toEqual(first === 'event' ? { approved: 'yes' } : 'timeout');
      expect(JSON.parse(sim.states.get(`race-${first}`)!.customStatus!)).toBe(first === 'event' ? 'approved' : 'timed out');
    }
  });

  it('an event raised before the orchestrator waits for it is kept for it', async () => {
    const sim = new Sim();
    sim.create('waiter', 'early', undefined);
    sim.push({ pk: 'o', rk: 'e.early', instanceId: 'early', kind: 'event', name: 'go', data: '21', enqueuedAt: 1, visibleAt: 0 });
    await sim.drain();
    expect(sim.output('early')).toBe(42);
  });

  it('an activity failure fails the orchestration, or is caught by it', async () => {
    const sim = new Sim();
    sim.create('failing', 'f', 'kaputt');
    sim.create('catching', 'c', undefined);
    await sim.drain();
    expect(sim.states.get('f')!.runtimeStatus).toBe('Failed');
    expect(sim.output('f')).toContain("Orchestrator function 'failing' failed: Activity function 'boom' failed: kaputt");
    expect(sim.output('c')).toEqual({ caught: expect.stringContaining("Activity function 'boom' failed: caught me"), after: 42 });
  });

  it('runs sub-orchestrations (generated and explicit ids) and propagates a child failure', async () => {
    const sim = new Sim();
    sim.create('parent', 'p', undefined);
    await sim.drain();
    const out = sim.output('p') as { seq: string[]; kids: { child: string; parent: string; value: number }[]; childError: string };
    expect(out.seq).toEqual(['Hello A!', 'Hello B!']);
    expect(out.kids).toEqual([
      { child: 'p:1', parent: 'p', value: 2 },
      { child: 'p-named', parent: 'p', value: 4 },
    ]);
    expect(out.childError).toContain("Orchestrator function 'failing' failed");
    expect(sim.states.get('p:3')!.runtimeStatus).toBe('Failed');
  });

  it('ContinueAsNew starts a fresh execution with the new input and keeps custom status', async () => {
    const sim = new Sim();
    sim.create('counter', 'k', { n: 0, until: 3 });
    await sim.drain();
    expect(sim.output('k')).toEqual({ n: 3 });
    const continued = sim.episodes.filter((e) => e.state?.runtimeStatus === 'ContinuedAsNew');
    expect(continued).toHaveLength(2);
    expect(continued.map((e) => e.state!.input)).toEqual([JSON.stringify({ n: 1, until: 3 }), JSON.stringify({ n: 2, until: 3 })]);
    expect(JSON.parse(sim.states.get('k')!.customStatus!)).toEqual({ n: 3 });
    // The final execution's history starts afresh.
    expect(sim.histories.get('k')!.filter((e) => e.EventType === EventType.ExecutionStarted)).toHaveLength(1);
  });

  it('drops duplicate results (a redelivered message after a crash) and results of other executions', async () => {
    const sim = new Sim();
    sim.create('sequence', 'dup', ['x']);
    await sim.episode('dup');
    await sim.runActivities();
    const result = sim.inbox.get('dup')![0];
    sim.push({ ...result });
    sim.push({ ...result, rk: 'r.other.0', executionId: 'other' });
    await sim.drain();
    expect(sim.output('dup')).toEqual(['Hello x!']);
    expect(sim.histories.get('dup')!.filter((e) => e.EventType === EventType.TaskCompleted)).toHaveLength(1);
  });

  it('terminate, suspend and resume', async () => {
    const sim = new Sim();
    sim.create('waiter', 'w', undefined);
    await sim.drain();
    sim.push({ pk: 'o', rk: 'c.1', instanceId: 'w', kind: 'suspend', reason: 'pause', enqueuedAt: 1, visibleAt: 0 });
    sim.push({ pk: 'o', rk: 'e.1', instanceId: 'w', kind: 'event', name: 'go', data: '5', enqueuedAt: 2, visibleAt: 0 });
    const r = await sim.episode('w');
    expect(r.deferred).toBe(1);
    expect(sim.states.get('w')!.runtimeStatus).toBe('Suspended');
    sim.push({ pk: 'o', rk: 'c.2', instanceId: 'w', kind: 'resume', reason: 'go on', enqueuedAt: 3, visibleAt: 0 });
    await sim.drain();
    expect(sim.output('w')).toBe(10);

    sim.create('waiter', 'w2', undefined);
    await sim.drain();
    sim.push({ pk: 'o', rk: 'c.3', instanceId: 'w2', kind: 'terminate', reason: 'stop', enqueuedAt: 1, visibleAt: 0 });
    await sim.drain();
    expect(sim.states.get('w2')!.runtimeStatus).toBe('Terminated');
    expect(sim.output('w2')).toBe('stop');
  });

  it('flags a non-deterministic orchestrator', async () => {
    const sim = new Sim();
    sim.create('sequence', 'nd', ['a', 'b']);
    await sim.episode('nd');
    await sim.runActivities();
    // Rewrite history: task 0 was a different activity.
    sim.histories.get('nd')!.find((e) => e.EventType === EventType.TaskScheduled)!.Name = 'double';
    await sim.drain();
    expect(sim.states.get('nd')!.runtimeStatus).toBe('Failed');
    expect(sim.output('nd')).toContain('Non-deterministic');
  });
});
