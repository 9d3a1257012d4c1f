import { randomUUID } from 'node:crypto';
import type { TableClient, TableEntity, TableEntityResult, TransactionAction } from '@azure/data-tables';
import { AppError } from '../core/errors';
import { legacyPrincipal, parsePrincipalRecord, type PrincipalRecord } from '../core/principal';
import { createEntity, deleteEntity, getEntity, isStatus, listEntities, odata, submitTransaction, table, updateEntity, upsertEntity } from './tables';

/**
 * Runs repository (table `Runs`): import and export runs, their history, and the one-active-run-per-connector
 * lock.
 *
 * Keys (all RowKeys of run rows are `<inverted ms timestamp, 13 digits>_<runId>`, so a plain partition query
 * returns the newest run first, with no sort and no scan):
 * - `c_<connectorId>` / `<runKey>`: the run itself (the source of truth, read by `getRun`).
 * - `c_<connectorId>` / `~active`: the connector's active-run lock `{ runId, runKey }`. It lives in the same
 *   partition as the run rows, so `createRun` inserts lock + run and `completeRun` updates run + deletes lock
 *   in one entity-group transaction: two concurrent triggers cannot both get a run.
 * - `all` / `<runKey>` and `i_<instanceId>` / `<runKey>`: copies of the run for the history without a
 *   connector filter and for the per-instance history. Copies are written after the primary with Merge, so a
 *   copy only ever lags by the write in flight.
 * - `id` / `<runId>`: pointer `{ connectorId, runKey }`, so `getRun(id)` is two point reads, and one once this
 *   process has read or written the pointer (it never changes, so it is kept).
 *
 * `listRuns` counts exactly: Table Storage has no COUNT, so it reads the one chosen partition (connector,
 * instance or all, newest first, status filtered server-side) and keeps only the requested window.
 */

export const RUN_TYPES = ['FullImport', 'DeltaImport', 'Export', 'FullSync', 'OrphanSweep'] as const;
export type RunType = (typeof RUN_TYPES)[number];

export const RUN_STATUSES = ['Queued', 'Running', 'Completed', 'CompletedWithErrors', 'Failed', 'Cancelled', 'AwaitingApproval', 'Rejected'] as const;
export type RunStatus = (typeof RUN_STATUSES)[number];
/** Runs the engine is working on (an orchestration runs them); an AwaitingApproval run waits, holding its connector's lock. */
export const ACTIVE_RUN_STATUSES: readonly RunStatus[] = ['Queued', 'Running'];
export type TerminalRunStatus = Exclude<RunStatus, 'Queued' | 'Running' | 'AwaitingApproval'>;

/** The operations thresholds count (a connector's `config.thresholds` keys). */
export const THRESHOLD_OPERATIONS = ['adds', 'updates', 'deletes', 'renames', 'blanks'] as const;
export type ThresholdOperation = (typeof THRESHOLD_OPERATIONS)[number];

/** One threshold a run would exceed: its count of that operation and the limit it exceeds. */
export interface ApprovalReason {
  operation: ThresholdOperation;
  count: number;
  limit: number;
}

/** Why and until when an AwaitingApproval run waits (kept on the run once decided). */
export interface RunApproval {
  reasons: ApprovalReason[];
  /** Who triggered the run (its trigger's actor: a UPN, `schedule:<name>`), null when unknown. */
  requestedBy: string | null;
  /**
   * The person the four-eyes rule holds as the run's requester (UPN, or application id): the caller of a manual
   * run or an apply; for a schedule's run, who pressed run-now, or for a tick the last person who changed the
   * schedule or what it runs since its last approved run. Null: no person (a tick with no such change).
   */
  requester?: string | null;
  expiresOn: string;
}

/** A dry run's plan: applicable through POST /runs/{id}/apply until `expiresOn`. */
export interface RunPlan {
  expiresOn: string;
}

export interface RunStats {
  objectsProcessed: number;
  objectsCreated: number;
  objectsUpdated: number;
  objectsDeleted: number;
  errors: number;
  /**
   * Imports: objects read that are as the engine knew them (unchanged, or a confirming import reading back what
   * an export wrote). Absent on exports and on runs recorded before it was counted.
   */
  objectsUnchanged?: number;
}

/** One per-object failure of a run (the run keeps the first `MAX_RUN_ERRORS`). */
export interface RunObjectError {
  /** The object's anchor or DN, when known. */
  object?: string;
  message: string;
}

/** Who or what started a run: a person (`manual`), a schedule, the apply of a plan, or a connector's continuous mode. */
export interface RunTrigger {
  type: 'manual' | 'schedule' | 'apply' | 'due' | 'continuous';
  /** The caller's UPN (manual), `schedule:<name>` (schedule), `system:due` (due), `continuous:<name>` (continuous); null when the caller has no UPN. */
  actorUpn: string | null;
  scheduleId?: string;
  scheduleRunId?: string;
  planRunId?: string;
  /** continuous: a reconciling delta import (docs/continuous.md). */
  reconcile?: boolean;
  /** continuous: the Export run of the changes of this import run. */
  sourceRunId?: string;
}

export const RUN_PHASES = ['reading', 'planning', 'applying', 'exporting', 'finishing'] as const;
export type RunPhase = (typeof RUN_PHASES)[number];

/** Where a Running run is (refreshed with its stats, at every page). */
export interface RunProgressView {
  phase: RunPhase;
  objectsProcessed: number;
  /** Null when the number of objects is not known in advance. */
  objectsTotal: number | null;
  updatedOn: string;
}

export interface Run {
  runId: string;
  connectorId: string;
  /** The engine instance that runs it (null when the connector had no instance). */
  instanceId: string | null;
  /** The instance's name when the run started, kept current by instance renames. */
  instanceName: string | null;
  runType: RunType;
  status: RunStatus;
  startedAt: string;
  completedAt?: string;
  stats: RunStats;
  /** First `MAX_RUN_ERRORS` per-object errors. */
  errors?: RunObjectError[];
  /** Why the run failed or stopped. */
  error?: string;
  dryRun?: boolean;
  trigger: RunTrigger;
  /** Present from the moment the run is Running (see `runView`). */
  progress?: RunProgressView;
  /** A completed dry run: its plan and when it expires. */
  plan?: RunPlan;
  /** A run that exceeded a threshold: why it waits (or waited) for an Admin's approval. */
  approval?: RunApproval;
  /** A run that waited for approval and was approved: who approved it (UPN, or application id). */
  approvedBy?: string;
}

/** A cancel asked of an active run (storage only): the run's next page boundary ends it as Cancelled. */
export interface RunCancelRequest {
  requestedAt: string;
  requestedBy: string | null;
}

/**
 * Where a run's orchestration was started: set once the orchestration exists (`dispatchedAt`), with the task
 * hub it lives in when the starter knew it. Kept on the run row only (not in the API's view of a run): the
 * reconciliation of runs with their orchestrations (lib/runs/runs.ts) reads it.
 */
export interface RunDispatch {
  dispatchedAt: string;
  taskHub: string | null;
}

/** A run as read from storage, with the ETag of its row for conditional updates. */
export type StoredRun = Run & {
  etag: string;
  dispatch?: RunDispatch;
  cancel?: RunCancelRequest;
  /** The stable identity (token `oid`, Windows SID) of the caller who triggered it (runs before `requester`). */
  actorId?: string;
  /**
   * The principal the four-eyes rule compares the approver with (every alias of the person who asked for the
   * run; see {@link RunApproval.requester}); absent when no person asked. Storage only.
   */
  requester?: PrincipalRecord;
  /** A plan whose apply was started: the run that applies it (a plan is applied once). */
  appliedBy?: string;
  /** The principal who approved it (storage only; the API shows `approvedBy`). */
  approver?: PrincipalRecord;
};

/**
 * The principal who asked for the run: as recorded, else rebuilt from what runs recorded before principals
 * were (the trigger's UPN and the stable id), else null (no person: a schedule's tick, or not known).
 */
export function runRequester(run: Pick<StoredRun, 'requester' | 'actorId' | 'trigger'>): PrincipalRecord | null {
  if (run.requester) return run.requester;
  const upn = run.trigger.type === 'schedule' || run.trigger.type === 'continuous' ? null : run.trigger.actorUpn;
  return legacyPrincipal(upn, run.actorId ?? null);
}

/** The phase a Running run starts in, before its first page reports. */
export const firstPhase = (runType: RunType): RunPhase =>
  runType === 'Export' || runType === 'OrphanSweep' ? 'exporting' : runType === 'FullSync' ? 'applying' : 'reading';

/**
 * The run as the API shows it: without the storage-only ETag, dispatch marker and cancel request. A Running
 * run carries `progress` from its start (before its first page reports, its first phase and no objects yet).
 */
export function runView(run: StoredRun): Run {
  const {
    etag: _etag,
    dispatch: _dispatch,
    cancel: _cancel,
    actorId: _actorId,
    requester: _requester,
    approver: _approver,
    appliedBy: _appliedBy,
    progress,
    ...view
  } = run;
  if (run.status === 'Running') {
    return {
      ...view,
      progress: progress ?? { phase: firstPhase(run.runType), objectsProcessed: run.stats.objectsProcessed, objectsTotal: null, updatedOn: run.startedAt },
    };
  }
  return progress ? { ...view, progress } : view;
}

export const MAX_RUN_ERRORS = 100;
const MAX_ERROR_MESSAGE = 1000;
/** Table Storage string properties hold at most 32K UTF-16 characters. */
const MAX_ERRORS_JSON = 30_000;

const TABLE = 'Runs';
const LOCK_ROW = '~active';
const MAX_TIME = 9_999_999_999_999;

export const emptyStats = (): RunStats => ({ objectsProcessed: 0, objectsCreated: 0, objectsUpdated: 0, objectsDeleted: 0, errors: 0 });

/** RowKey of a run: newer runs sort first. Exported for the ordering tests. */
export function runKey(startedAtMs: number, runId: string): string {
  return `${String(MAX_TIME - startedAtMs).padStart(13, '0')}_${runId}`;
}

const connectorPk = (connectorId: string) => `c_${connectorId}`;
const instancePk = (instanceId: string) => `i_${instanceId}`;
const ALL_PK = 'all';
const ID_PK = 'id';
/** Run rows start with a digit; the lock row (`~active`) sorts after them. */
const RUN_ROWS = `RowKey lt ':'`;

interface RunEntity extends TableEntity {
  [key: string]: unknown;
  partitionKey: string;
  rowKey: string;
  runId: string;
  connectorId: string;
  instanceId?: string;
  instanceName?: string;
  runType: string;
  status: string;
  startedAt: string;
  completedAt?: string;
  stats: string;
  errors?: string;
  error?: string;
  dryRun?: boolean;
  dispatchedAt?: string;
  taskHub?: string;
  trigger?: string;
  progress?: string;
  cancelRequestedAt?: string;
  cancelRequestedBy?: string;
  plan?: string;
  approval?: string;
  actorId?: string;
  requester?: string;
  appliedBy?: string;
  approvedBy?: string;
  approver?: string;
}

/** Keep the first MAX_RUN_ERRORS errors, each message bounded, and the whole list within one property. */
export function boundErrors(errors: RunObjectError[]): RunObjectError[] {
  const out = errors.slice(0, MAX_RUN_ERRORS).map((e) => ({
    ...(e.object !== undefined ? { object: String(e.object).slice(0, 400) } : {}),
    message: String(e.message).slice(0, MAX_ERROR_MESSAGE),
  }));
  while (out.length && JSON.stringify(out).length > MAX_ERRORS_JSON) out.pop();
  return out;
}

function toEntity(pk: string, run: Run, key: string): RunEntity {
  const e: RunEntity = {
    partitionKey: pk,
    rowKey: key,
    runId: run.runId,
    connectorId: run.connectorId,
    runType: run.runType,
    status: run.status,
    startedAt: run.startedAt,
    stats: JSON.stringify(run.stats),
    trigger: JSON.stringify(run.trigger),
  };
  if (run.progress) e.progress = JSON.stringify(run.progress);
  if (run.instanceId) e.instanceId = run.instanceId;
  if (run.instanceName) e.instanceName = run.instanceName;
  if (run.completedAt) e.completedAt = run.completedAt;
  if (run.errors) e.errors = JSON.stringify(boundErrors(run.errors));
  if (run.error) e.error = run.error.slice(0, MAX_ERROR_MESSAGE);
  if (run.dryRun !== undefined) e.dryRun = run.dryRun;
  if (run.plan) e.plan = JSON.stringify(run.plan);
  if (run.approval) e.approval = JSON.stringify(run.approval);
  return e;
}

function fromEntity(e: TableEntityResult<Record<string, unknown>>): StoredRun {
  const run: StoredRun = {
    runId: String(e.runId),
    connectorId: String(e.connectorId),
    instanceId: typeof e.instanceId === 'string' ? e.instanceId : null,
    instanceName: typeof e.instanceName === 'string' ? e.instanceName : null,
    runType: e.runType as RunType,
    status: e.status as RunStatus,
    startedAt: String(e.startedAt),
    stats: { ...emptyStats(), ...(JSON.parse(String(e.stats ?? '{}')) as Partial<RunStats>) },
    // Runs recorded before triggers were: started by a person, who is not known.
    trigger: typeof e.trigger === 'string' ? (JSON.parse(e.trigger) as RunTrigger) : { type: 'manual', actorUpn: null },
    etag: e.etag,
  };
  if (typeof e.progress === 'string') run.progress = JSON.parse(e.progress) as RunProgressView;
  if (typeof e.cancelRequestedAt === 'string')
    run.cancel = { requestedAt: e.cancelRequestedAt, requestedBy: typeof e.cancelRequestedBy === 'string' ? e.cancelRequestedBy : null };
  if (typeof e.completedAt === 'string') run.completedAt = e.completedAt;
  if (typeof e.errors === 'string') run.errors = JSON.parse(e.errors) as RunObjectError[];
  if (typeof e.error === 'string') run.error = e.error;
  if (typeof e.dryRun === 'boolean') run.dryRun = e.dryRun;
  if (typeof e.plan === 'string') run.plan = JSON.parse(e.plan) as RunPlan;
  if (typeof e.approval === 'string') run.approval = JSON.parse(e.approval) as RunApproval;
  if (typeof e.actorId === 'string' && e.actorId) run.actorId = e.actorId;
  if (typeof e.appliedBy === 'string' && e.appliedBy) run.appliedBy = e.appliedBy;
  if (typeof e.approvedBy === 'string' && e.approvedBy) run.approvedBy = e.approvedBy;
  const requester = parsePrincipalRecord(e.requester);
  if (requester) run.requester = requester;
  const approver = parsePrincipalRecord(e.approver);
  if (approver) run.approver = approver;
  if (typeof e.dispatchedAt === 'string')
    run.dispatch = { dispatchedAt: e.dispatchedAt, taskHub: typeof e.taskHub === 'string' && e.taskHub ? e.taskHub : null };
  return run;
}

function copyPartitions(run: Pick<Run, 'instanceId'>): string[] {
  return run.instanceId ? [ALL_PK, instancePk(run.instanceId)] : [ALL_PK];
}

interface Pointer {
  connectorId: string;
  runKey: string;
}

/**
 * Pointers read or written by this process. A run's pointer never changes (its connector and row key are fixed
 * when it is created), so a read of an active run, which a client polls, costs one storage request, not two. A
 * pointer whose run row is gone still reads as "no such run": every reader of the run row answers its 404.
 */
const pointers = new Map<string, Pointer>();
const POINTERS_KEPT = 2000;

function keepPointer(runId: string, p: Pointer): Pointer {
  if (pointers.size >= POINTERS_KEPT) pointers.delete(pointers.keys().next().value!);
  pointers.set(runId, p);
  return p;
}

async function pointer(client: TableClient, runId: string): Promise<Pointer | null> {
  const known = pointers.get(runId);
  if (known) return known;
  try {
    const p = await getEntity<{ connectorId: string; runKey: string }>(client, ID_PK, runId);
    return keepPointer(runId, { connectorId: p.connectorId, runKey: p.runKey });
  } catch (err) {
    if (isStatus(err, 404)) return null;
    throw err;
  }
}

async function readPrimary(client: TableClient, p: Pointer): Promise<StoredRun | null> {
  try {
    return fromEntity(await getEntity(client, connectorPk(p.connectorId), p.runKey));
  } catch (err) {
    if (isStatus(err, 404)) return null;
    throw err;
  }
}

/** The run, or null when there is no such run. */
export async function getRun(runId: string): Promise<StoredRun | null> {
  const client = await table(TABLE);
  const p = await pointer(client, runId);
  return p ? readPrimary(client, p) : null;
}

/** The connector's Running or Queued run, or null. */
export async function findActiveRun(connectorId: string): Promise<StoredRun | null> {
  const client = await table(TABLE);
  let lock: { runId: string; runKey: string };
  try {
    lock = await getEntity<{ runId: string; runKey: string }>(client, connectorPk(connectorId), LOCK_ROW);
  } catch (err) {
    if (isStatus(err, 404)) return null;
    throw err;
  }
  return readPrimary(client, { connectorId, runKey: lock.runKey });
}

export interface CreateRunInput {
  connectorId: string;
  instanceId: string | null;
  instanceName?: string | null;
  runType: RunType;
  /** `Queued` when the instance is paused, else `Running`. */
  status: 'Queued' | 'Running';
  dryRun?: boolean;
  /** Defaults to a manual run by an unknown caller. */
  trigger?: RunTrigger;
  /** Defaults to now. */
  startedAt?: Date;
  /** The triggering caller's stable identity (oid, SID), for the four-eyes rule of approvals. */
  actorId?: string | null;
  /** The principal who asked for it (the four-eyes rule's requester); null: no person. */
  requester?: PrincipalRecord | null;
}

/**
 * Start a run. Atomic per connector: the run row and the connector's active-run lock are inserted in one
 * transaction, so while a run is Running or Queued every other `createRun` for the connector fails with a
 * 409 ConflictError (and writes nothing).
 */
export async function createRun(input: CreateRunInput): Promise<StoredRun> {
  const client = await table(TABLE);
  const started = input.startedAt ?? new Date();
  const runId = randomUUID();
  const key = runKey(started.getTime(), runId);
  const run: Run = {
    runId,
    connectorId: input.connectorId,
    instanceId: input.instanceId,
    instanceName: input.instanceName ?? null,
    runType: input.runType,
    status: input.status,
    startedAt: started.toISOString(),
    stats: emptyStats(),
    trigger: input.trigger ?? { type: 'manual', actorUpn: null },
  };
  if (input.dryRun !== undefined) run.dryRun = input.dryRun;
  // The pointer goes first: a crash after it leaves a pointer to nothing, which reads as "no such run".
  await createEntity(client, { partitionKey: ID_PK, rowKey: runId, connectorId: input.connectorId, runKey: key });
  const pk = connectorPk(input.connectorId);
  const primary = toEntity(pk, run, key);
  if (input.actorId) primary.actorId = input.actorId;
  if (input.requester) primary.requester = JSON.stringify(input.requester);
  const actions: TransactionAction[] = [
    ['create', { partitionKey: pk, rowKey: LOCK_ROW, runId, runKey: key }],
    ['create', primary],
  ];
  try {
    await submitTransaction(client, actions);
  } catch (err) {
    await deleteEntity(client, ID_PK, runId).catch(() => undefined);
    if (isStatus(err, 409)) throw new AppError('conflict', 'A run of this connector is already Running, Queued or AwaitingApproval.');
    throw err;
  }
  await Promise.all(copyPartitions(run).map((cp) => upsertEntity(client, toEntity(cp, run, key), 'Replace')));
  const stored = await readPrimary(client, keepPointer(runId, { connectorId: run.connectorId, runKey: key }));
  return stored!;
}

export interface RunProgress {
  status?: RunStatus;
  stats?: RunStats;
  errors?: RunObjectError[];
  error?: string;
  progress?: RunProgressView;
  plan?: RunPlan;
  approval?: RunApproval;
  /** Storage only (see {@link StoredRun}): written on the run row alone. */
  appliedBy?: string;
  approvedBy?: string;
  approver?: PrincipalRecord;
}

function patchEntity(pk: string, key: string, patch: RunProgress & { completedAt?: string; instanceName?: string }): TableEntity<Record<string, unknown>> {
  const e: TableEntity<Record<string, unknown>> = { partitionKey: pk, rowKey: key };
  if (patch.status) e.status = patch.status;
  if (patch.stats) e.stats = JSON.stringify(patch.stats);
  if (patch.progress) e.progress = JSON.stringify(patch.progress);
  if (patch.errors) e.errors = JSON.stringify(boundErrors(patch.errors));
  if (patch.error !== undefined) e.error = patch.error.slice(0, MAX_ERROR_MESSAGE);
  if (patch.completedAt) e.completedAt = patch.completedAt;
  if (patch.instanceName !== undefined) e.instanceName = patch.instanceName;
  if (patch.plan) e.plan = JSON.stringify(patch.plan);
  if (patch.approval) e.approval = JSON.stringify(patch.approval);
  if (patch.appliedBy) e.appliedBy = patch.appliedBy;
  if (patch.approvedBy) e.approvedBy = patch.approvedBy;
  if (patch.approver) e.approver = JSON.stringify(patch.approver);
  return e;
}

/** Apply a patch to the run's history copies; a copy whose first write was interrupted is written whole. */
async function mergeCopies(client: TableClient, run: Run, key: string, patch: Parameters<typeof patchEntity>[2]): Promise<void> {
  // The copies are rows of their own (history, the instance's history): written at the same time.
  await Promise.all(
    copyPartitions(run).map(async (cp) => {
      try {
        await updateEntity(client, patchEntity(cp, key, patch), 'Merge');
      } catch (err) {
        if (!isStatus(err, 404)) throw err;
        await upsertEntity(client, toEntity(cp, run, key), 'Replace');
      }
    }),
  );
}

async function mustPointer(client: TableClient, runId: string): Promise<Pointer> {
  const p = await pointer(client, runId);
  if (!p) throw new AppError('not_found', 'The run does not exist.');
  return p;
}

/**
 * Record progress (stats, per-object errors, status Queued -> Running). With `etag` the write only happens
 * when the run row is unchanged since it was read (else a 409 ConflictError); without it, the fields given
 * are merged over whatever is stored.
 */
export async function updateRun(runId: string, progress: RunProgress, options: { etag?: string } = {}): Promise<StoredRun> {
  const client = await table(TABLE);
  const p = await mustPointer(client, runId);
  try {
    await updateEntity(client, patchEntity(connectorPk(p.connectorId), p.runKey, progress), 'Merge', { etag: options.etag ?? '*' });
  } catch (err) {
    if (isStatus(err, 412)) throw new AppError('conflict', 'The run changed since it was read.');
    if (isStatus(err, 404)) throw new AppError('not_found', 'The run does not exist.');
    throw err;
  }
  const run = (await readPrimary(client, p))!;
  await mergeCopies(client, run, p.runKey, progress);
  return run;
}

/**
 * Note on the run row that its orchestration now exists (started by this process's durable client), and in
 * which task hub when known. Only the run row carries it (the history copies do not need it). A run that is
 * gone does nothing.
 */
export async function markRunDispatched(runId: string, taskHub: string | null, at: Date = new Date()): Promise<void> {
  const client = await table(TABLE);
  const p = await pointer(client, runId);
  if (!p) return;
  const e: TableEntity<Record<string, unknown>> = { partitionKey: connectorPk(p.connectorId), rowKey: p.runKey, dispatchedAt: at.toISOString() };
  if (taskHub) e.taskHub = taskHub;
  try {
    await updateEntity(client, e, 'Merge');
  } catch (err) {
    if (!isStatus(err, 404)) throw err;
  }
}

/**
 * Ask an active run to stop: conditional on the run row's ETag (a run that moved on in between is a 409
 * ConflictError, and the caller reads it again). Only the run row carries the request.
 */
export async function requestRunCancel(run: StoredRun, requestedBy: string | null, at: Date = new Date()): Promise<StoredRun> {
  const client = await table(TABLE);
  const p = await mustPointer(client, run.runId);
  const e: TableEntity<Record<string, unknown>> = { partitionKey: connectorPk(p.connectorId), rowKey: p.runKey, cancelRequestedAt: at.toISOString() };
  if (requestedBy) e.cancelRequestedBy = requestedBy;
  try {
    await updateEntity(client, e, 'Merge', { etag: run.etag });
  } catch (err) {
    if (isStatus(err, 412)) throw new AppError('conflict', 'The run changed since it was read.');
    if (isStatus(err, 404)) throw new AppError('not_found', 'The run does not exist.');
    throw err;
  }
  return (await readPrimary(client, p))!;
}

export interface RunOutcome {
  status: TerminalRunStatus;
  stats: RunStats;
  errors?: RunObjectError[];
  error?: string;
  /** A dry run that completes: its plan. */
  plan?: RunPlan;
  /** Defaults to now. */
  completedAt?: Date;
}

/**
 * Finish a run: its final status and stats, and the connector's active-run lock released, in one transaction.
 * With `etag`, conditional on the run row being unchanged (else a 409 ConflictError).
 */
export async function completeRun(runId: string, outcome: RunOutcome, options: { etag?: string } = {}): Promise<StoredRun> {
  const client = await table(TABLE);
  const p = await mustPointer(client, runId);
  const pk = connectorPk(p.connectorId);
  const patch = { ...outcome, completedAt: (outcome.completedAt ?? new Date()).toISOString() };
  const actions: TransactionAction[] = [['update', patchEntity(pk, p.runKey, patch), 'Merge', { etag: options.etag ?? '*' }]];
  try {
    const lock = await getEntity<{ runId: string }>(client, pk, LOCK_ROW);
    // No other run can take the lock while it names this run, so an unconditional delete is safe.
    if (lock.runId === runId) actions.push(['delete', { partitionKey: pk, rowKey: LOCK_ROW }]);
  } catch (err) {
    if (!isStatus(err, 404)) throw err;
  }
  try {
    await submitTransaction(client, actions);
  } catch (err) {
    if (isStatus(err, 412) || isStatus(err, 409)) throw new AppError('conflict', 'The run changed since it was read.');
    if (isStatus(err, 404)) throw new AppError('not_found', 'The run does not exist.');
    throw err;
  }
  const run = (await readPrimary(client, p))!;
  await mergeCopies(client, run, p.runKey, patch);
  return run;
}

export interface RunQuery {
  connectorId?: string;
  instanceId?: string;
  status?: RunStatus;
  skip: number;
  take: number;
}

/** History, newest first, with the exact number of runs that match the filters. */
export async function listRuns(q: RunQuery): Promise<{ items: StoredRun[]; totalCount: number }> {
  const client = await table(TABLE);
  const pk = q.connectorId ? connectorPk(q.connectorId) : q.instanceId ? instancePk(q.instanceId) : ALL_PK;
  const filters = [`PartitionKey eq ${odata(pk)}`, RUN_ROWS];
  if (q.connectorId && q.instanceId) filters.push(`instanceId eq ${odata(q.instanceId)}`);
  if (q.status) filters.push(`status eq ${odata(q.status)}`);
  const items: StoredRun[] = [];
  let totalCount = 0;
  for await (const e of listEntities<Record<string, unknown>>(client, { queryOptions: { filter: filters.join(' and ') } })) {
    if (totalCount >= q.skip && items.length < q.take) items.push(fromEntity(e));
    totalCount++;
  }
  return { items, totalCount };
}

/**
 * Set `instanceName` on every run of an instance (rename cascade). Idempotent: runs that already carry the
 * name are skipped, so an interrupted cascade is finished by running it again.
 */
export async function renameInstanceInRuns(instanceId: string, name: string): Promise<number> {
  const client = await table(TABLE);
  let changed = 0;
  const filter = `PartitionKey eq ${odata(instancePk(instanceId))} and ${RUN_ROWS}`;
  for await (const e of listEntities<Record<string, unknown>>(client, { queryOptions: { filter, select: ['RowKey', 'connectorId', 'instanceName'] } })) {
    if (e.instanceName === name) continue;
    const key = e.rowKey!;
    // The primary and the `all` copy first, the instance copy (the one this loop reads) last: a crash
    // in between leaves this run unchanged here, so the next pass visits it again.
    for (const pk of [connectorPk(String(e.connectorId)), ALL_PK, instancePk(instanceId)]) {
      try {
        await updateEntity(client, { partitionKey: pk, rowKey: key, instanceName: name }, 'Merge');
      } catch (err) {
        if (!isStatus(err, 404)) throw err;
      }
    }
    changed++;
  }
  return changed;
}

/** Instance names carried by the runs of an instance (consistency checks after a rename). */
export async function instanceNamesInRuns(instanceId: string): Promise<Set<string>> {
  const client = await table(TABLE);
  const names = new Set<string>();
  const keys: Array<{ connectorId: string; rowKey: string }> = [];
  const filter = `PartitionKey eq ${odata(instancePk(instanceId))} and ${RUN_ROWS}`;
  for await (const e of listEntities<Record<string, unknown>>(client, { queryOptions: { filter } })) {
    names.add(String(e.instanceName));
    keys.push({ connectorId: String(e.connectorId), rowKey: e.rowKey! });
  }
  for (const k of keys) {
    for (const pk of [connectorPk(k.connectorId), ALL_PK]) {
      const e = await getEntity<Record<string, unknown>>(client, pk, k.rowKey);
      names.add(String(e.instanceName));
    }
  }
  return names;
}

/**
 * The newest run of a connector with one of `statuses` (and of `runType` when given), or null: one partition
 * query that stops at the first match (the partition is newest first).
 */
export async function newestRun(connectorId: string, statuses: readonly RunStatus[], runType?: RunType): Promise<StoredRun | null> {
  const client = await table(TABLE);
  const filters = [`PartitionKey eq ${odata(connectorPk(connectorId))}`, RUN_ROWS, `(${statuses.map((s) => `status eq ${odata(s)}`).join(' or ')})`];
  if (runType) filters.push(`runType eq ${odata(runType)}`);
  for await (const e of listEntities<Record<string, unknown>>(client, { queryOptions: { filter: filters.join(' and ') } })) return fromEntity(e);
  return null;
}

/**
 * The run a schedule run started for a connector, if any, other than those in `except` (the runs it already
 * recorded, e.g. in an earlier step): the connector's newest runs (`within` of them, newest first) searched for
 * `trigger.scheduleRunId`. A schedule run that crashed between creating a run and
 * recording its id finds it here instead of starting it again.
 */
export async function findScheduleRunRun(
  connectorId: string,
  scheduleRunId: string,
  except: ReadonlySet<string> = new Set(),
  within = 50,
): Promise<StoredRun | null> {
  const client = await table(TABLE);
  let seen = 0;
  for await (const e of listEntities<Record<string, unknown>>(client, {
    queryOptions: { filter: `PartitionKey eq ${odata(connectorPk(connectorId))} and ${RUN_ROWS}` },
  })) {
    if (typeof e.trigger === 'string' && e.trigger.includes(scheduleRunId)) {
      const run = fromEntity(e);
      if (run.trigger.scheduleRunId === scheduleRunId && !except.has(run.runId)) return run;
    }
    if (++seen >= within) break;
  }
  return null;
}

/**
 * A token that changes whenever a run of the connector is created or updated (its newest run row's key and
 * ETag; a run updates its row at every page). One query of one row.
 */
export async function newestRunToken(connectorId: string): Promise<string> {
  const pages = listEntities<Record<string, unknown>>(await table(TABLE), {
    queryOptions: { filter: `PartitionKey eq ${odata(connectorPk(connectorId))}`, select: ['RowKey'] },
  }).byPage({ maxPageSize: 1 });
  for await (const page of pages) {
    const e = page[0];
    return e ? `${String(e.rowKey)}|${String(e.etag)}` : '';
  }
  return '';
}

/**
 * The newest runs of a connector with one of `statuses`, newest first, at most `within` of them: one partition
 * query read only as far as the caller goes.
 */
export async function* recentRuns(connectorId: string, statuses: readonly RunStatus[], within: number): AsyncGenerator<StoredRun> {
  const client = await table(TABLE);
  const filter = [`PartitionKey eq ${odata(connectorPk(connectorId))}`, RUN_ROWS, `(${statuses.map((s) => `status eq ${odata(s)}`).join(' or ')})`];
  let seen = 0;
  for await (const e of listEntities<Record<string, unknown>>(client, { queryOptions: { filter: filter.join(' and ') } })) {
    yield fromEntity(e);
    if (++seen >= within) return;
  }
}
