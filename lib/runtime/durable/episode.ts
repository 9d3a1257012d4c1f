import {
  actionInputToJson,
  ActionType,
  consumesTaskId,
  EventType,
  flattenActions,
  HTTP_ASYNC_SLEEP_MS,
  isTerminal,
  LONG_RUNNING_TIMER_INTERVAL,
  MAXIMUM_SHORT_TIMER_DURATION,
  OrchestrationStatusCode,
  parseJson,
  UPPER_SCHEMA_VERSION,
  type HistoryEvent,
  type OrchestratorAction,
  type OrchestratorState,
  type RetryPolicy,
} from './protocol';
import type { InstanceRecord, OutboxItem, WorkMessage } from './store';

/**
 * One orchestration episode, as DurableTask.Core runs it: take the instance's pending messages, turn them
 * into new history events, replay the orchestrator function over the whole history, execute the NEW actions
 * it returns (schedule activities, timers, sub-orchestrations), and produce the history to append, the
 * messages to send and the new instance state. Pure apart from `invoke`: the caller commits the result.
 *
 * Task ids: the library numbers every id-consuming task (activity, timer, sub-orchestration) in the order
 * it tracks them and matches completions by that number, so this runtime must hand out the same ids. The
 * next id is the number of id-consuming events in the history. Retries are the subtle part: the library
 * silently tracks one extra task for the retry timer (when a retried task fails) and one for the
 * rescheduled attempt (when that timer fires), at the moment it processes that history event. So at most
 * one retry-related event goes into an episode, first after OrchestratorStarted; the runtime then knows
 * that id is taken before any new action's.
 */

export interface OrchestrationTriggerPayload {
  history: HistoryEvent[];
  input: unknown;
  instanceId: string;
  isReplaying: boolean;
  parentInstanceId: string | null;
  upperSchemaVersion: number;
  maximumShortTimerDuration: string;
  longRunningTimerIntervalDuration: string;
  defaultHttpAsyncRequestSleepTimeMillseconds: number;
}

export type InvokeResult = { ok: true; state: OrchestratorState } | { ok: false; error: string; state?: OrchestratorState };

export interface EpisodeInput {
  state: InstanceRecord;
  /** History of the current execution. */
  history: HistoryEvent[];
  /** The instance's pending messages, oldest first. */
  messages: WorkMessage[];
  now: Date;
  invoke(payload: OrchestrationTriggerPayload): Promise<InvokeResult>;
  newExecutionId(): string;
}

export interface EpisodeResult {
  /** Row keys of the messages this episode consumed (delete them after the commit). */
  consumed: string[];
  /** Messages left for a later episode (suspended instance, a second retry event). */
  deferred: number;
  /** The new state; undefined when nothing changed (no commit needed). */
  state?: InstanceRecord;
  /** The history row to append (to `historyExecutionId`, which differs from state's after ContinueAsNew). */
  events: HistoryEvent[];
  historyExecutionId: string;
  outbox: OutboxItem[];
  /** True when the orchestrator function ran. */
  invoked: boolean;
}

const RESULT_KINDS = new Set(['taskCompleted', 'taskFailed', 'timerFired', 'subCompleted', 'subFailed']);

function ev(type: EventType, at: Date, fields: Partial<HistoryEvent> = {}): HistoryEvent {
  return { EventType: type, EventId: -1, Timestamp: at.toISOString(), IsPlayed: false, ...fields };
}

/** DurableTask.Core RetryInterceptor: firstRetryInterval * backoff^attempt, capped by maxRetryInterval. */
export function retryDelayMs(policy: RetryPolicy, failuresSoFar: number): number {
  const backoff = policy.backoffCoefficient && policy.backoffCoefficient > 0 ? policy.backoffCoefficient : 1;
  const delay = policy.firstRetryIntervalInMilliseconds * Math.pow(backoff, Math.max(0, failuresSoFar - 1));
  const max = policy.maxRetryIntervalInMilliseconds && policy.maxRetryIntervalInMilliseconds > 0 ? policy.maxRetryIntervalInMilliseconds : Infinity;
  return Math.min(delay, max);
}

export function activityMessage(instanceId: string, executionId: string, taskId: number, name: string, input: string | undefined, now: number): WorkMessage {
  return { pk: 'a', rk: `${executionId}.${taskId}`, instanceId, kind: 'activity', executionId, taskId, name, data: input, enqueuedAt: now, visibleAt: now };
}

export function startMessage(instanceId: string, executionId: string, now: number): WorkMessage {
  return { pk: 'o', rk: `start.${executionId}`, instanceId, kind: 'start', executionId, enqueuedAt: now, visibleAt: now };
}

export async function runEpisode(inp: EpisodeInput): Promise<EpisodeResult> {
  const { state, history, now } = inp;
  const nowMs = now.getTime();
  const instanceId = state.instanceId;
  const exec = state.executionId;
  const result: EpisodeResult = { consumed: [], deferred: 0, events: [], historyExecutionId: exec, outbox: [], invoked: false };

  if (isTerminal(state.runtimeStatus)) {
    // Late results, timers and events for a finished instance are dropped, as DurableTask.Core does.
    result.consumed = inp.messages.map((m) => m.rk);
    return result;
  }

  const scheduled = new Map<number, HistoryEvent>();
  const completed = new Set<number>();
  const seenMessages = new Set<string>();
  let started = false;
  for (const e of history) {
    if (consumesTaskId(e)) scheduled.set(e.EventId, e);
    if (e.TaskScheduledId !== undefined) completed.add(e.TaskScheduledId);
    if (e.EventType === EventType.TimerFired && e.TimerId !== undefined) completed.add(e.TimerId);
    if (e._msg) seenMessages.add(e._msg);
    if (e.EventType === EventType.ExecutionStarted) started = true;
  }
  const isRetryRelevant = (m: WorkMessage): boolean => {
    const s = m.taskId === undefined ? undefined : scheduled.get(m.taskId);
    if (!s) return false;
    if (m.kind === 'timerFired') return s._retryGenerated === true;
    const primary = scheduled.get(s._chain ?? s.EventId);
    return (m.kind === 'taskFailed' || m.kind === 'subFailed') && primary?._retry !== undefined;
  };

  let status = state.runtimeStatus;
  const newEvents: HistoryEvent[] = [];
  const controlEvents: HistoryEvent[] = [];
  let retryMsg: WorkMessage | undefined;
  let retryEvent: HistoryEvent | undefined;
  let terminateReason: string | undefined;
  let startInput: string | undefined;

  for (const m of inp.messages) {
    if (terminateReason !== undefined) {
      result.consumed.push(m.rk);
      continue;
    }
    if (m.kind === 'terminate') {
      terminateReason = m.reason ?? '';
      result.consumed.push(m.rk);
      continue;
    }
    if (status === 'Suspended' && m.kind !== 'resume') {
      result.deferred++;
      continue;
    }
    if (m.kind === 'suspend' || m.kind === 'resume') {
      result.consumed.push(m.rk);
      if (m.kind === 'suspend' && status !== 'Suspended') {
        status = 'Suspended';
        controlEvents.push(ev(EventType.ExecutionSuspended, now, { Reason: m.reason }));
      } else if (m.kind === 'resume' && status === 'Suspended') {
        status = started ? 'Running' : state.runtimeStatus === 'Suspended' ? 'Running' : state.runtimeStatus;
        controlEvents.push(ev(EventType.ExecutionResumed, now, { Reason: m.reason }));
      }
      continue;
    }
    if (m.kind === 'start') {
      result.consumed.push(m.rk);
      if (!started && m.executionId === exec) {
        started = true;
        startInput = state.input;
        newEvents.push(
          ev(EventType.ExecutionStarted, now, {
            Name: state.name,
            Input: state.input,
            ParentInstance: state.parentInstanceId
              ? {
                  OrchestrationInstance: { InstanceId: state.parentInstanceId, ExecutionId: state.parentExecutionId ?? '' },
                  TaskScheduleId: state.parentTaskId ?? -1,
                  Name: '',
                }
              : null,
          }),
        );
      }
      continue;
    }
    if (!started) {
      // Results and events cannot arrive before the start message in practice; keep them until it does.
      result.deferred++;
      continue;
    }
    if (m.kind === 'event') {
      result.consumed.push(m.rk);
      if (!seenMessages.has(m.rk)) newEvents.push(ev(EventType.EventRaised, now, { Name: m.name, Input: m.data, _msg: m.rk }));
      continue;
    }
    if (RESULT_KINDS.has(m.kind)) {
      if (m.executionId !== exec || m.taskId === undefined || completed.has(m.taskId) || !scheduled.has(m.taskId)) {
        result.consumed.push(m.rk);
        continue;
      }
      const e = resultEvent(m, now);
      if (isRetryRelevant(m)) {
        if (retryMsg) {
          result.deferred++;
          continue;
        }
        retryMsg = m;
        retryEvent = e;
      } else {
        newEvents.push(e);
      }
      completed.add(m.taskId);
      result.consumed.push(m.rk);
    }
  }

  const base: InstanceRecord = { ...state, runtimeStatus: status, lastUpdatedTime: now.toISOString() };
  const orchestratorStarted = ev(EventType.OrchestratorStarted, now);

  if (terminateReason !== undefined) {
    const output = JSON.stringify(terminateReason);
    result.events = [
      orchestratorStarted,
      ...controlEvents,
      ev(EventType.ExecutionTerminated, now, { Input: output }),
      ev(EventType.OrchestratorCompleted, now),
    ];
    result.state = { ...base, runtimeStatus: 'Terminated', output, episodes: state.episodes + 1 };
    notifyParent(result, state, false, `Orchestration '${instanceId}' was terminated: ${terminateReason}`, undefined, nowMs);
    return result;
  }

  if (!newEvents.length && !retryEvent) {
    if (controlEvents.length) {
      result.events = [orchestratorStarted, ...controlEvents, ev(EventType.OrchestratorCompleted, now)];
      result.state = { ...base, episodes: state.episodes + 1 };
    }
    return result;
  }

  // ---- replay -----------------------------------------------------------------------------------------
  let nextId = 0;
  let primaryCount = 0;
  for (const e of history) {
    if (!consumesTaskId(e)) continue;
    nextId = Math.max(nextId, e.EventId + 1);
    if (!e._retryGenerated) primaryCount++;
  }
  const scheduling: HistoryEvent[] = [];

  if (retryEvent && retryMsg) {
    const failedOrFired = scheduled.get(retryMsg.taskId as number) as HistoryEvent;
    const chain = failedOrFired._chain ?? failedOrFired.EventId;
    const primary = scheduled.get(chain) as HistoryEvent;
    const policy = primary._retry as RetryPolicy;
    const failures =
      history.filter(
        (e) =>
          (e.EventType === EventType.TaskFailed || e.EventType === EventType.SubOrchestrationInstanceFailed) &&
          (scheduled.get(e.TaskScheduledId ?? -1)?._chain ?? e.TaskScheduledId) === chain,
      ).length + (retryMsg.kind === 'timerFired' ? 0 : 1);
    if (retryMsg.kind !== 'timerFired') {
      // The library tracks the retry timer now; DurableTask.Core's RetryInterceptor creates it.
      const fireAt = new Date(nowMs + retryDelayMs(policy, failures));
      const id = nextId++;
      scheduling.push(ev(EventType.TimerCreated, now, { EventId: id, FireAt: fireAt.toISOString(), _chain: chain, _retryGenerated: true }));
      result.outbox.push({ type: 'message', message: timerMessage(instanceId, exec, id, fireAt) });
    } else if (failures < policy.maxNumberOfAttempts) {
      const id = nextId++;
      if (primary.EventType === EventType.TaskScheduled) {
        scheduling.push(ev(EventType.TaskScheduled, now, { EventId: id, Name: primary.Name, Input: primary.Input, _chain: chain, _retryGenerated: true }));
        result.outbox.push({ type: 'message', message: activityMessage(instanceId, exec, id, primary.Name ?? '', primary.Input, nowMs) });
      } else {
        const childId = `${primary.InstanceId ?? instanceId}:retry${id}`;
        scheduling.push(
          ev(EventType.SubOrchestrationInstanceCreated, now, {
            EventId: id,
            Name: primary.Name,
            Input: primary.Input,
            InstanceId: childId,
            _chain: chain,
            _retryGenerated: true,
          }),
        );
        result.outbox.push({
          type: 'create',
          child: {
            instanceId: childId,
            name: primary.Name ?? '',
            input: primary.Input,
            parentInstanceId: instanceId,
            parentExecutionId: exec,
            parentTaskId: id,
          },
        });
      }
    }
  }

  const episodeEvents = [orchestratorStarted, ...controlEvents, ...(retryEvent ? [retryEvent] : []), ...newEvents];
  const played = history.map((e) => ({ ...e, IsPlayed: true }));
  const startedEvent = [...history, ...newEvents].find((e) => e.EventType === EventType.ExecutionStarted);
  const payload: OrchestrationTriggerPayload = {
    history: [...played, ...episodeEvents, ...scheduling].map(stripInternal),
    input: parseJson(startedEvent?.Input ?? startInput),
    instanceId,
    isReplaying: history.length > 0,
    parentInstanceId: state.parentInstanceId ?? null,
    upperSchemaVersion: UPPER_SCHEMA_VERSION,
    maximumShortTimerDuration: MAXIMUM_SHORT_TIMER_DURATION,
    longRunningTimerIntervalDuration: LONG_RUNNING_TIMER_INTERVAL,
    defaultHttpAsyncRequestSleepTimeMillseconds: HTTP_ASYNC_SLEEP_MS,
  };
  result.invoked = true;
  const outcome = await inp.invoke(payload);
  const orchestratorState = outcome.state;
  const customStatus = orchestratorState?.customStatus === undefined ? base.customStatus : JSON.stringify(orchestratorState.customStatus);
  const running: InstanceRecord = { ...base, runtimeStatus: status === 'Suspended' ? 'Suspended' : 'Running', customStatus, episodes: state.episodes + 1 };

  let failure: string | undefined = outcome.ok ? undefined : outcome.error;
  let continueAsNew: OrchestratorAction | undefined;
  if (!failure && orchestratorState) {
    const atomic = flattenActions(orchestratorState.actions).filter((a) => a.actionType !== ActionType.WaitForExternalEvent);
    continueAsNew = atomic.find((a) => a.actionType === ActionType.ContinueAsNew);
    const tasks = atomic.filter((a) => a.actionType !== ActionType.ContinueAsNew);
    const primaries = history.filter((e) => consumesTaskId(e) && !e._retryGenerated);
    for (let i = 0; i < Math.min(primaryCount, tasks.length); i++) {
      const want = tasks[i].functionName;
      const had = primaries[i];
      const hadName = had?.EventType === EventType.TimerCreated ? undefined : had?.Name;
      if (want !== undefined && hadName !== undefined && want !== hadName) {
        failure = `Non-deterministic workflow detected: task ${had.EventId} was '${hadName}' in the history but the orchestrator now schedules '${want}'.`;
        break;
      }
    }
    if (!failure) {
      for (const action of tasks.slice(primaryCount)) {
        const problem = scheduleAction(action, nextId, instanceId, exec, now, scheduling, result.outbox);
        if (problem) {
          failure = problem;
          break;
        }
        nextId++;
      }
    }
  }

  const fname = state.name;
  if (failure !== undefined) {
    const message = `Orchestrator function '${fname}' failed: ${failure}`;
    const output = JSON.stringify(message);
    // A failed episode executes none of its actions, as DurableTask.Core discards them.
    result.outbox = [];
    result.events = [
      ...episodeEvents,
      ev(EventType.ExecutionCompleted, now, { OrchestrationStatus: OrchestrationStatusCode.Failed, Result: output }),
      ev(EventType.OrchestratorCompleted, now),
    ];
    result.state = { ...running, runtimeStatus: 'Failed', output };
    notifyParent(result, state, false, message, '', nowMs);
    return result;
  }

  const os = orchestratorState as OrchestratorState;
  if (os.isDone && continueAsNew) {
    const newExec = inp.newExecutionId();
    const input = actionInputToJson(continueAsNew.input);
    result.events = [
      ...episodeEvents,
      ...scheduling,
      ev(EventType.ExecutionCompleted, now, { OrchestrationStatus: OrchestrationStatusCode.ContinuedAsNew, Result: input }),
      ev(EventType.OrchestratorCompleted, now),
    ];
    // Work scheduled by the old execution is not carried over (its results would be dropped anyway).
    result.outbox = [{ type: 'message', message: startMessage(instanceId, newExec, nowMs) }];
    result.state = { ...running, runtimeStatus: 'ContinuedAsNew', input, output: undefined, executionId: newExec, episodes: 0 };
    return result;
  }
  if (os.isDone) {
    const output = os.output === undefined ? 'null' : JSON.stringify(os.output);
    result.events = [
      ...episodeEvents,
      ...scheduling,
      ev(EventType.ExecutionCompleted, now, { OrchestrationStatus: OrchestrationStatusCode.Completed, Result: output }),
      ev(EventType.OrchestratorCompleted, now),
    ];
    result.state = { ...running, runtimeStatus: 'Completed', output };
    notifyParent(result, state, true, undefined, output, nowMs);
    return result;
  }
  result.events = [...episodeEvents, ...scheduling, ev(EventType.OrchestratorCompleted, now)];
  result.state = running;
  return result;
}

function stripInternal(e: HistoryEvent): HistoryEvent {
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(e)) if (!k.startsWith('_')) out[k] = v;
  return out as unknown as HistoryEvent;
}

function timerMessage(instanceId: string, exec: string, id: number, fireAt: Date): WorkMessage {
  const at = fireAt.getTime();
  return {
    pk: 'o',
    rk: `t.${exec}.${id}`,
    instanceId,
    kind: 'timerFired',
    executionId: exec,
    taskId: id,
    fireAt: fireAt.toISOString(),
    enqueuedAt: at,
    visibleAt: at,
  };
}

function resultEvent(m: WorkMessage, now: Date): HistoryEvent {
  const id = m.taskId as number;
  switch (m.kind) {
    case 'taskCompleted':
      return ev(EventType.TaskCompleted, now, { TaskScheduledId: id, Result: m.data ?? 'null' });
    case 'taskFailed':
      return ev(EventType.TaskFailed, now, { TaskScheduledId: id, Reason: m.reason ?? '', Details: m.details ?? '' });
    case 'subCompleted':
      return ev(EventType.SubOrchestrationInstanceCompleted, now, { TaskScheduledId: id, Result: m.data ?? 'null' });
    case 'subFailed':
      return ev(EventType.SubOrchestrationInstanceFailed, now, { TaskScheduledId: id, Reason: m.reason ?? '', Details: m.details ?? '' });
    default:
      return ev(EventType.TimerFired, now, { TimerId: id, FireAt: m.fireAt });
  }
}

/** Execute one new action with task id `id`; returns an error text for actions this runtime cannot run. */
function scheduleAction(
  action: OrchestratorAction,
  id: number,
  instanceId: string,
  exec: string,
  now: Date,
  scheduling: HistoryEvent[],
  outbox: OutboxItem[],
): string | undefined {
  const nowMs = now.getTime();
  switch (action.actionType) {
    case ActionType.CallActivity:
    case ActionType.CallActivityWithRetry: {
      const input = actionInputToJson(action.input);
      const retry = action.actionType === ActionType.CallActivityWithRetry ? action.retryOptions : undefined;
      scheduling.push(
        ev(EventType.TaskScheduled, now, { EventId: id, Name: action.functionName, Input: input, ...(retry ? { _retry: retry, _chain: id } : {}) }),
      );
      outbox.push({ type: 'message', message: activityMessage(instanceId, exec, id, action.functionName ?? '', input, nowMs) });
      return undefined;
    }
    case ActionType.CallSubOrchestrator:
    case ActionType.CallSubOrchestratorWithRetry: {
      const input = actionInputToJson(action.input);
      const retry = action.actionType === ActionType.CallSubOrchestratorWithRetry ? action.retryOptions : undefined;
      const childId = action.instanceId || `${instanceId}:${id}`;
      scheduling.push(
        ev(EventType.SubOrchestrationInstanceCreated, now, {
          EventId: id,
          Name: action.functionName,
          Input: input,
          InstanceId: childId,
          ...(retry ? { _retry: retry, _chain: id } : {}),
        }),
      );
      outbox.push({
        type: 'create',
        child: { instanceId: childId, name: action.functionName ?? '', input, parentInstanceId: instanceId, parentExecutionId: exec, parentTaskId: id },
      });
      return undefined;
    }
    case ActionType.CreateTimer: {
      const fireAt = new Date(action.fireAt ?? now.toISOString());
      scheduling.push(ev(EventType.TimerCreated, now, { EventId: id, FireAt: fireAt.toISOString() }));
      if (!action.isCanceled) outbox.push({ type: 'message', message: timerMessage(instanceId, exec, id, fireAt) });
      return undefined;
    }
    case ActionType.CallHttp:
      return 'callHttp is not supported by this local runtime.';
    case ActionType.CallEntity:
    case ActionType.SignalEntity:
    case ActionType.LockEntities:
    case ActionType.ReleaseEntities:
      return 'Durable entities are not supported by this local runtime.';
    default:
      return `Unsupported orchestrator action type ${String(action.actionType)}.`;
  }
}

function notifyParent(
  result: EpisodeResult,
  state: InstanceRecord,
  ok: boolean,
  reason: string | undefined,
  detailsOrOutput: string | undefined,
  nowMs: number,
): void {
  if (!state.parentInstanceId || state.parentTaskId === undefined || !state.parentExecutionId) return;
  const message: WorkMessage = {
    pk: 'o',
    rk: `s.${state.parentExecutionId}.${state.parentTaskId}`,
    instanceId: state.parentInstanceId,
    kind: ok ? 'subCompleted' : 'subFailed',
    executionId: state.parentExecutionId,
    taskId: state.parentTaskId,
    enqueuedAt: nowMs,
    visibleAt: nowMs,
    ...(ok ? { data: detailsOrOutput } : { reason, details: detailsOrOutput ?? '' }),
  };
  result.outbox.push({ type: 'message', message });
}
