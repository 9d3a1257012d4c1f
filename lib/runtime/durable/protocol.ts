import type { RpcTypedData } from '../coreTypes';

/**
 * The durable-functions out-of-process protocol, as the durable-functions v3 library reads and writes it:
 * history event shapes (PascalCase fields, numeric `EventType`), the orchestration trigger payload and the
 * `OrchestratorState` an orchestrator function returns.
 */

/** DurableTask.Core `EventType` numbers (durable-functions `HistoryEventType`). */
export enum EventType {
  ExecutionStarted = 0,
  ExecutionCompleted = 1,
  ExecutionFailed = 2,
  ExecutionTerminated = 3,
  TaskScheduled = 4,
  TaskCompleted = 5,
  TaskFailed = 6,
  SubOrchestrationInstanceCreated = 7,
  SubOrchestrationInstanceCompleted = 8,
  SubOrchestrationInstanceFailed = 9,
  TimerCreated = 10,
  TimerFired = 11,
  OrchestratorStarted = 12,
  OrchestratorCompleted = 13,
  EventSent = 14,
  EventRaised = 15,
  ContinueAsNew = 16,
  GenericEvent = 17,
  HistoryState = 18,
  ExecutionSuspended = 19,
  ExecutionResumed = 20,
}

/** durable-functions `ActionType` numbers. */
export enum ActionType {
  CallActivity = 0,
  CallActivityWithRetry = 1,
  CallSubOrchestrator = 2,
  CallSubOrchestratorWithRetry = 3,
  ContinueAsNew = 4,
  CreateTimer = 5,
  WaitForExternalEvent = 6,
  CallEntity = 7,
  CallHttp = 8,
  SignalEntity = 9,
  WhenAny = 11,
  WhenAll = 12,
  LockEntities = 13,
  ReleaseEntities = 14,
}

/** DurableTask.Core `OrchestrationStatus` numbers (used in ExecutionCompleted). */
export const OrchestrationStatusCode = {
  Running: 0,
  Completed: 1,
  ContinuedAsNew: 2,
  Failed: 3,
  Canceled: 4,
  Terminated: 5,
  Pending: 6,
  Suspended: 7,
} as const;

export type RuntimeStatus = 'Pending' | 'Running' | 'Completed' | 'ContinuedAsNew' | 'Failed' | 'Terminated' | 'Suspended';
export const RUNTIME_STATUSES: RuntimeStatus[] = ['Pending', 'Running', 'Completed', 'ContinuedAsNew', 'Failed', 'Terminated', 'Suspended'];
export const TERMINAL_STATUSES: RuntimeStatus[] = ['Completed', 'Failed', 'Terminated'];

export function isTerminal(status: RuntimeStatus): boolean {
  return TERMINAL_STATUSES.includes(status);
}

/**
 * One history event. Fields the library reads are PascalCase as on the wire. Fields starting with `_` are
 * this runtime's own bookkeeping (retry chains, message de-duplication); the library ignores them and the
 * HTTP API strips them.
 */
export interface HistoryEvent {
  EventType: EventType;
  EventId: number;
  Timestamp: string;
  IsPlayed: boolean;
  Name?: string;
  Input?: string;
  Result?: string;
  Reason?: string;
  Details?: string;
  TaskScheduledId?: number;
  TimerId?: number;
  FireAt?: string;
  InstanceId?: string;
  OrchestrationStatus?: number;
  ParentInstance?: { OrchestrationInstance: { InstanceId: string; ExecutionId: string }; TaskScheduleId: number; Name: string } | null;
  /** The first task id of the retry chain this scheduling/timer event belongs to. */
  _chain?: number;
  /** Retry options of a *WithRetry action (on its TaskScheduled/SubOrchestrationInstanceCreated events). */
  _retry?: RetryPolicy;
  /** True on events this runtime added for a retry (the library never sees actions for them). */
  _retryGenerated?: boolean;
  /** Row key of the message an EventRaised came from (de-duplication after a crash). */
  _msg?: string;
}

export interface RetryPolicy {
  firstRetryIntervalInMilliseconds: number;
  maxNumberOfAttempts: number;
  backoffCoefficient?: number;
  maxRetryIntervalInMilliseconds?: number;
  retryTimeoutInMilliseconds?: number;
}

/** An action as the library serializes it (replay schema V3: a tree of WhenAll/WhenAny). */
export interface OrchestratorAction {
  actionType: ActionType;
  functionName?: string;
  input?: unknown;
  retryOptions?: RetryPolicy;
  instanceId?: string;
  fireAt?: string;
  isCanceled?: boolean;
  externalEventName?: string;
  compoundActions?: OrchestratorAction[];
}

export interface OrchestratorState {
  isDone: boolean;
  actions: OrchestratorAction[][];
  output?: unknown;
  error?: string;
  customStatus?: unknown;
  schemaVersion?: number;
}

/** Replay schema V3 (tree-shaped actions, timers with long-timer settings). */
export const UPPER_SCHEMA_VERSION = 2;
/** Timers up to ten years are plain timers: this runtime does not split long timers. */
export const MAXIMUM_SHORT_TIMER_DURATION = '3650.00:00:00';
export const LONG_RUNNING_TIMER_INTERVAL = '3.00:00:00';
export const HTTP_ASYNC_SLEEP_MS = 30000;

/** Events that consume a task id (sequence number) in the library's replay. */
export function consumesTaskId(e: HistoryEvent): boolean {
  return (
    e.EventType === EventType.TaskScheduled ||
    e.EventType === EventType.TimerCreated ||
    e.EventType === EventType.SubOrchestrationInstanceCreated ||
    e.EventType === EventType.EventSent
  );
}

/** Depth-first list of the atomic actions in the action tree, in the order the library assigns task ids. */
export function flattenActions(actions: unknown): OrchestratorAction[] {
  const out: OrchestratorAction[] = [];
  const visit = (a: unknown): void => {
    if (Array.isArray(a)) {
      a.forEach(visit);
      return;
    }
    if (!a || typeof a !== 'object') return;
    const act = a as OrchestratorAction;
    if (act.actionType === ActionType.WhenAll || act.actionType === ActionType.WhenAny) {
      (act.compoundActions ?? []).forEach(visit);
      return;
    }
    out.push(act);
  };
  visit(actions);
  return out;
}

/**
 * The value the library put in an action's `input`: it JSON-encodes strings itself (`Utils.processInput`)
 * and leaves other values as they are; the extension parses strings back (ParseToJToken). Returns JSON text.
 */
export function actionInputToJson(input: unknown): string | undefined {
  if (input === undefined) return undefined;
  if (typeof input === 'string') {
    try {
      JSON.parse(input);
      return input;
    } catch {
      return JSON.stringify(input);
    }
  }
  return JSON.stringify(input);
}

export function parseJson(text: string | undefined | null): unknown {
  if (text === undefined || text === null || text === '') return undefined;
  try {
    return JSON.parse(text);
  } catch {
    return text;
  }
}

/** Convert a function's RPC return value to JSON text (what TaskCompleted.Result carries). */
export function typedDataToJson(data: RpcTypedData | null | undefined): string {
  if (!data) return 'null';
  if (data.json !== undefined && data.json !== null) return data.json;
  if (data.string !== undefined && data.string !== null) return JSON.stringify(data.string);
  if (data.int !== undefined && data.int !== null) return JSON.stringify(Number(data.int));
  if (data.double !== undefined && data.double !== null) return JSON.stringify(data.double);
  if (data.bytes) return JSON.stringify(Buffer.from(data.bytes).toString('base64'));
  return 'null';
}

/** Convert a function's RPC return value to a JS value. */
export function typedDataToValue(data: RpcTypedData | null | undefined): unknown {
  return parseJson(typedDataToJson(data));
}

const OUT_OF_PROC_LABEL = '\n\n$OutOfProcData$:';

/**
 * A failed orchestrator invocation carries its OrchestratorState after `$OutOfProcData$:` in the exception
 * message (durable-functions `OrchestrationFailureError`).
 */
export function parseOrchestratorFailure(message: string): { state?: OrchestratorState; error: string } {
  const i = message.indexOf(OUT_OF_PROC_LABEL);
  if (i < 0) return { error: message };
  try {
    const state = JSON.parse(message.slice(i + OUT_OF_PROC_LABEL.length)) as OrchestratorState;
    return { state, error: state.error ?? message.slice(0, i) };
  } catch {
    return { error: message.slice(0, i) };
  }
}

/**
 * Instance ids are table partition keys: 1-256 characters, none of `/ \ # ?` nor control characters
 * (the same characters Azure Table keys forbid).
 */
export function isValidInstanceId(id: string): boolean {
  return id.length >= 1 && id.length <= 256 && !/[/\\#?\u0000-\u001f\u007f-\u009f]/.test(id);
}
