import type { TransactionAction } from '@azure/data-tables';
import { AppError } from '../core/errors';
import type { PrincipalRecord } from '../core/principal';
import type { RunType } from './runs';
import { concurrencyConflict, isStatus, odata, submitTransaction, table } from './tables';

/**
 * Schedules repository: the schedules (table `Schedules`) and their schedule runs, tick claims and locks
 * (table `ScheduleRuns`).
 *
 * `Schedules`:
 * - `s` / `<scheduleId>`: the schedule, its fields as JSON in `body`.
 * - `n` / `<lower-cased name>`: the name index `{ scheduleId }`. Names are unique case-insensitively: a create
 *   inserts the name row first (taken: 409, nothing written), a rename inserts the new name before it replaces
 *   the schedule (ETag-conditional) and frees the old one after.
 *
 * `ScheduleRuns`, one partition per schedule (PartitionKey = scheduleId):
 * - `<inverted ms, 13 digits>_<scheduleRunId>`: a schedule run (newest first in a plain partition query).
 * - `id_<scheduleRunId>`: pointer `{ runKey }`, so a schedule run is two point reads.
 * - `t_<tick ISO time>`: the claim of one tick of the cron, insert-only. Of all processes sharing the storage
 *   account exactly one inserts it (`claimTick` true); the others get 409 (false). Nothing is started before
 *   the claim, so a tick starts at most one schedule run. Claims older than a day are purged (`purgeClaims`).
 * - `~active`: the lock `{ scheduleRunId, runKey }` of the schedule's Running schedule run, inserted in one
 *   entity-group transaction with the run row (a second start while one runs: 409, nothing written) and
 *   deleted in one transaction with the final write of the run.
 * - `~tick`: `{ tick }`, the last tick this schedule handled (claimed by anyone), for past-due ticks at start.
 * - `~approved`: `{ on }`, when a run this schedule started was last approved: configuration changes before it
 *   were reviewed, so a later tick's requester is only who changed something after it.
 *
 * Writes of a schedule run are conditional on its ETag; a lost race is a ConflictError (the caller reads again).
 */
const SCHEDULES = 'Schedules';
const RUNS = 'ScheduleRuns';
const DEF_PK = 's';
const NAME_PK = 'n';
const LOCK_ROW = '~active';
const TICK_ROW = '~tick';
const APPROVED_ROW = '~approved';
/** Run rows sort before `a` (they start with digits); pointers, claims and markers after. */
const RUN_ROWS = "RowKey lt 'a'";

export const SCHEDULE_RUN_STATUSES = ['Running', 'Completed', 'CompletedWithErrors', 'Failed', 'Skipped', 'Cancelled'] as const;
export type ScheduleRunStatus = (typeof SCHEDULE_RUN_STATUSES)[number];
/**
 * A step: `NotStarted` until the sequence reaches it, `NotRun` when the sequence ended before it, `Queued` while
 * all its unfinished runs wait for a paused instance, `Running` while any run is unfinished, then its outcome.
 */
export const STEP_STATUSES = ['NotStarted', 'Queued', 'Running', 'Completed', 'CompletedWithErrors', 'Failed', 'Cancelled', 'NotRun'] as const;
export type StepStatus = (typeof STEP_STATUSES)[number];

export interface ScheduleStep {
  runType: RunType;
  connectorIds: string[];
}

export interface Schedule {
  scheduleId: string;
  name: string;
  cron: string;
  timeZone: string;
  isEnabled: boolean;
  steps: ScheduleStep[];
  stopOnFailure: boolean;
  /** Why the service disabled it (a forced delete of a connector it runs); cleared by the next save of it. */
  disabledReason?: string;
  createdOn: string;
  updatedOn: string;
}
export type StoredSchedule = Schedule & { etag: string };

/**
 * One connector's run in a step: `runId` null and status `NotStarted` until it is started, `NotRun` when the
 * sequence ended first, `Failed` with `runId` null when it could not start (the connector already had an active
 * run, or no longer exists); else the run's own status as last seen.
 */
export interface ScheduleRunEntry {
  connectorId: string;
  runId: string | null;
  status: string;
}
export interface ScheduleRunStep {
  runType: RunType;
  status: StepStatus;
  runs: ScheduleRunEntry[];
}
export interface ScheduleRun {
  scheduleRunId: string;
  scheduleId: string;
  trigger: 'schedule' | 'manual';
  status: ScheduleRunStatus;
  startedOn: string;
  completedOn: string | null;
  steps: ScheduleRunStep[];
}
/** What the engine keeps besides the API shape: the tick, who it runs as, the stop rule, the task hub. */
export interface ScheduleRunState {
  tick: string | null;
  scheduleName: string;
  /**
   * The person its runs are asked for (the four-eyes rule's requester): who pressed run-now, or for a tick the
   * last person who changed the schedule or what it runs since its last approved run; null: nobody.
   */
  requester?: PrincipalRecord | null;
  stopOnFailure: boolean;
  taskHub: string | null;
}
export type StoredScheduleRun = ScheduleRun & ScheduleRunState & { etag: string; runKey: string };

const notFound = (what: string) => new AppError('not_found', what);

// ---------------------------------------------------------------------------------------------------------
// Schedules

function scheduleOf(e: { body?: unknown; etag: string }): StoredSchedule {
  return { ...(JSON.parse(String(e.body)) as Schedule), etag: e.etag };
}

function scheduleEntity(s: Schedule) {
  const { scheduleId, ...rest } = s;
  return { partitionKey: DEF_PK, rowKey: scheduleId, body: JSON.stringify({ scheduleId, ...rest }) };
}

const nameKey = (name: string) => encodeURIComponent(name.toLowerCase()).slice(0, 700);

async function claimName(name: string, scheduleId: string): Promise<void> {
  const client = await table(SCHEDULES);
  try {
    await client.createEntity({ partitionKey: NAME_PK, rowKey: nameKey(name), scheduleId });
  } catch (err) {
    if (!isStatus(err, 409)) throw err;
    const holder = await client.getEntity<{ scheduleId: string }>(NAME_PK, nameKey(name)).catch(() => null);
    if (holder?.scheduleId === scheduleId) return;
    throw new AppError('conflict', `A schedule named '${name}' already exists (names are compared case-insensitively).`);
  }
}

async function freeName(name: string, scheduleId: string): Promise<void> {
  const client = await table(SCHEDULES);
  try {
    const holder = await client.getEntity<{ scheduleId: string }>(NAME_PK, nameKey(name));
    if (holder.scheduleId === scheduleId) await client.deleteEntity(NAME_PK, nameKey(name), { etag: holder.etag });
  } catch (err) {
    if (!isStatus(err, 404) && !isStatus(err, 412)) throw err;
  }
}

export async function getSchedule(scheduleId: string): Promise<StoredSchedule | null> {
  const client = await table(SCHEDULES);
  try {
    return scheduleOf(await client.getEntity(DEF_PK, scheduleId));
  } catch (err) {
    if (isStatus(err, 404)) return null;
    throw err;
  }
}

/** Every schedule, by name (case-insensitive). */
export async function listSchedules(): Promise<StoredSchedule[]> {
  const client = await table(SCHEDULES);
  const out: StoredSchedule[] = [];
  for await (const e of client.listEntities<{ body: string }>({ queryOptions: { filter: `PartitionKey eq ${odata(DEF_PK)}` } })) out.push(scheduleOf(e));
  return out.sort((a, b) => a.name.toLowerCase().localeCompare(b.name.toLowerCase()) || a.scheduleId.localeCompare(b.scheduleId));
}

/** Insert a schedule; its name taken (any case): 409 and nothing written. */
export async function insertSchedule(s: Schedule): Promise<StoredSchedule> {
  await claimName(s.name, s.scheduleId);
  const client = await table(SCHEDULES);
  try {
    await client.createEntity(scheduleEntity(s));
  } catch (err) {
    await freeName(s.name, s.scheduleId);
    concurrencyConflict(err, 'The schedule already exists.');
  }
  return (await getSchedule(s.scheduleId))!;
}

/** Replace a schedule as read (`etag`); a rename claims the new name first. A lost race or a taken name: 409. */
export async function replaceSchedule(current: StoredSchedule, next: Schedule): Promise<StoredSchedule> {
  const renamed = current.name.toLowerCase() !== next.name.toLowerCase();
  if (renamed) await claimName(next.name, next.scheduleId);
  const client = await table(SCHEDULES);
  try {
    await client.updateEntity(scheduleEntity(next), 'Replace', { etag: current.etag });
  } catch (err) {
    if (renamed) await freeName(next.name, next.scheduleId);
    if (isStatus(err, 404)) throw notFound(`Schedule '${current.scheduleId}' does not exist.`);
    concurrencyConflict(err, 'The schedule changed while it was being updated; read it again.');
  }
  if (renamed) await freeName(current.name, current.scheduleId);
  return (await getSchedule(next.scheduleId))!;
}

/** Delete a schedule as read, with its name and its schedule runs, claims and markers. */
export async function deleteSchedule(current: StoredSchedule): Promise<void> {
  await removeScheduleRow(current);
  await deleteScheduleRuns(current.scheduleId);
}

/**
 * Delete a schedule as read and free its name, keeping its schedule runs (a configuration import deletes them
 * with {@link deleteScheduleRuns} once all its changes are made, so an undone import finds them again).
 */
export async function removeScheduleRow(current: StoredSchedule): Promise<void> {
  const client = await table(SCHEDULES);
  try {
    await client.deleteEntity(DEF_PK, current.scheduleId, { etag: current.etag });
  } catch (err) {
    if (isStatus(err, 404)) throw notFound(`Schedule '${current.scheduleId}' does not exist.`);
    concurrencyConflict(err, 'The schedule changed while it was being deleted; read it again.');
  }
  await freeName(current.name, current.scheduleId);
}

/** Delete every schedule run, claim and marker of a schedule. Safe to repeat. */
export async function deleteScheduleRuns(scheduleId: string): Promise<void> {
  const runs = await table(RUNS);
  const keys: string[] = [];
  for await (const e of runs.listEntities({ queryOptions: { filter: `PartitionKey eq ${odata(scheduleId)}`, select: ['RowKey'] } }))
    keys.push(String(e.rowKey));
  for (let i = 0; i < keys.length; i += 100) {
    await submitTransaction(
      runs,
      keys.slice(i, i + 100).map((rowKey): TransactionAction => ['delete', { partitionKey: scheduleId, rowKey }]),
    );
  }
}

/** Claim one tick of a schedule for this process: true when this insert made the claim, false when another did. */
export async function claimTick(scheduleId: string, tick: Date, claimedBy: string): Promise<boolean> {
  const client = await table(RUNS);
  try {
    await client.createEntity({ partitionKey: scheduleId, rowKey: `t_${tick.toISOString()}`, claimedBy, claimedOn: new Date().toISOString() });
    return true;
  } catch (err) {
    if (isStatus(err, 409)) return false;
    throw err;
  }
}

/**
 * Delete the schedule's claims of ticks before `before` (a claim matters only around its tick: past-due ticks go
 * by the `~tick` row). One RowKey-range query of the partition; returns how many were deleted.
 */
export async function purgeClaims(scheduleId: string, before: Date): Promise<number> {
  const client = await table(RUNS);
  const keys: string[] = [];
  const filter = `PartitionKey eq ${odata(scheduleId)} and RowKey ge 't_' and RowKey lt ${odata(`t_${before.toISOString()}`)}`;
  for await (const e of client.listEntities({ queryOptions: { filter, select: ['RowKey'] } })) keys.push(String(e.rowKey));
  for (let i = 0; i < keys.length; i += 100) {
    await submitTransaction(
      client,
      keys.slice(i, i + 100).map((rowKey): TransactionAction => ['delete', { partitionKey: scheduleId, rowKey }]),
    );
  }
  return keys.length;
}

/** The last tick handled for the schedule (by any process), or null. */
export async function lastTick(scheduleId: string): Promise<Date | null> {
  const client = await table(RUNS);
  try {
    const e = await client.getEntity<{ tick: string }>(scheduleId, TICK_ROW);
    return new Date(e.tick);
  } catch (err) {
    if (isStatus(err, 404)) return null;
    throw err;
  }
}

/** Remember `tick` as handled, unless a later one already is. */
export async function recordTick(scheduleId: string, tick: Date): Promise<void> {
  const known = await lastTick(scheduleId);
  if (known && known.getTime() >= tick.getTime()) return;
  const client = await table(RUNS);
  await client.upsertEntity({ partitionKey: scheduleId, rowKey: TICK_ROW, tick: tick.toISOString() }, 'Replace');
}

/** When a run this schedule started was last approved, or null. */
export async function lastScheduleApproval(scheduleId: string): Promise<Date | null> {
  const client = await table(RUNS);
  try {
    const e = await client.getEntity<{ on: string }>(scheduleId, APPROVED_ROW);
    return new Date(e.on);
  } catch (err) {
    if (isStatus(err, 404)) return null;
    throw err;
  }
}

/** Remember that a run this schedule started was approved at `on`, unless a later approval already is. */
export async function recordScheduleApproval(scheduleId: string, on: Date): Promise<void> {
  const known = await lastScheduleApproval(scheduleId);
  if (known && known.getTime() >= on.getTime()) return;
  const client = await table(RUNS);
  await client.upsertEntity({ partitionKey: scheduleId, rowKey: APPROVED_ROW, on: on.toISOString() }, 'Replace');
}

// ---------------------------------------------------------------------------------------------------------
// Schedule runs

const inverted = (ms: number) => String(9_999_999_999_999 - ms).padStart(13, '0');

function runOf(e: { body?: unknown; etag: string; rowKey?: string }): StoredScheduleRun {
  return { ...(JSON.parse(String(e.body)) as ScheduleRun & ScheduleRunState), etag: e.etag, runKey: String(e.rowKey) };
}

function runEntity(run: ScheduleRun & ScheduleRunState, runKey: string) {
  return { partitionKey: run.scheduleId, rowKey: runKey, status: run.status, body: JSON.stringify(run) };
}

export interface NewScheduleRun extends ScheduleRun, ScheduleRunState {}

/**
 * Record a schedule run that starts now, holding the schedule's lock: lock, run row and pointer in one
 * transaction. Null when another schedule run of the schedule holds the lock (nothing written).
 */
export async function insertRunningScheduleRun(run: NewScheduleRun): Promise<StoredScheduleRun | null> {
  const client = await table(RUNS);
  const runKey = `${inverted(Date.parse(run.startedOn))}_${run.scheduleRunId}`;
  try {
    await submitTransaction(client, [
      ['create', { partitionKey: run.scheduleId, rowKey: LOCK_ROW, scheduleRunId: run.scheduleRunId, runKey }],
      ['create', runEntity(run, runKey)],
      ['create', { partitionKey: run.scheduleId, rowKey: `id_${run.scheduleRunId}`, runKey }],
    ]);
  } catch (err) {
    if (isStatus(err, 409)) return null;
    throw err;
  }
  return (await getScheduleRun(run.scheduleId, run.scheduleRunId))!;
}

/** Record a schedule run that is already over (a `Skipped` tick): run row and pointer, no lock. */
export async function insertFinishedScheduleRun(run: NewScheduleRun): Promise<StoredScheduleRun> {
  const client = await table(RUNS);
  const runKey = `${inverted(Date.parse(run.startedOn))}_${run.scheduleRunId}`;
  await submitTransaction(client, [
    ['create', runEntity(run, runKey)],
    ['create', { partitionKey: run.scheduleId, rowKey: `id_${run.scheduleRunId}`, runKey }],
  ]);
  return (await getScheduleRun(run.scheduleId, run.scheduleRunId))!;
}

export async function getScheduleRun(scheduleId: string, scheduleRunId: string): Promise<StoredScheduleRun | null> {
  const client = await table(RUNS);
  try {
    const p = await client.getEntity<{ runKey: string }>(scheduleId, `id_${scheduleRunId}`);
    return runOf(await client.getEntity(scheduleId, p.runKey));
  } catch (err) {
    if (isStatus(err, 404)) return null;
    throw err;
  }
}

/** The schedule's Running schedule run (the lock holder), or null. */
export async function activeScheduleRun(scheduleId: string): Promise<StoredScheduleRun | null> {
  const client = await table(RUNS);
  try {
    const lock = await client.getEntity<{ scheduleRunId: string }>(scheduleId, LOCK_ROW);
    return getScheduleRun(scheduleId, lock.scheduleRunId);
  } catch (err) {
    if (isStatus(err, 404)) return null;
    throw err;
  }
}

/** Newest first, with the exact count. */
export async function listScheduleRuns(scheduleId: string, skip: number, take: number): Promise<{ items: StoredScheduleRun[]; totalCount: number }> {
  const client = await table(RUNS);
  const items: StoredScheduleRun[] = [];
  let totalCount = 0;
  const filter = `PartitionKey eq ${odata(scheduleId)} and ${RUN_ROWS}`;
  for await (const e of client.listEntities<{ body: string }>({ queryOptions: { filter } })) {
    if (totalCount >= skip && items.length < take) items.push(runOf(e));
    totalCount++;
  }
  return { items, totalCount };
}

/** The newest schedule run of the schedule, or null: one page of one entity. */
export async function latestScheduleRun(scheduleId: string): Promise<StoredScheduleRun | null> {
  const client = await table(RUNS);
  const pages = client
    .listEntities<{ body: string }>({ queryOptions: { filter: `PartitionKey eq ${odata(scheduleId)} and ${RUN_ROWS}` } })
    .byPage({ maxPageSize: 1 });
  for await (const page of pages) return page[0] ? runOf(page[0]) : null;
  return null;
}

/** Replace the steps (and status) of a schedule run as read; a lost race is a ConflictError. */
export async function updateScheduleRun(
  run: StoredScheduleRun,
  patch: Partial<Pick<ScheduleRun, 'steps' | 'status'>> & { taskHub?: string | null },
): Promise<StoredScheduleRun> {
  const client = await table(RUNS);
  const { etag: _e, runKey, ...plain } = run;
  const next = { ...plain, ...patch };
  try {
    await client.updateEntity(runEntity(next, runKey), 'Replace', { etag: run.etag });
  } catch (err) {
    concurrencyConflict(err, 'The schedule run changed meanwhile.');
  }
  return (await getScheduleRun(run.scheduleId, run.scheduleRunId))!;
}

/**
 * End a Running schedule run as read: its final status, steps and `completedOn`, and the schedule's lock released,
 * in one transaction. A run that moved on meanwhile (another writer ended it): ConflictError.
 */
export async function finishScheduleRun(
  run: StoredScheduleRun,
  status: Exclude<ScheduleRunStatus, 'Running'>,
  steps: ScheduleRunStep[],
  completedOn: Date = new Date(),
): Promise<StoredScheduleRun> {
  const client = await table(RUNS);
  const { etag: _e, runKey, ...plain } = run;
  const next = { ...plain, status, steps, completedOn: completedOn.toISOString() };
  const actions: TransactionAction[] = [['update', runEntity(next, runKey), 'Replace', { etag: run.etag }]];
  const lock = await client.getEntity<{ scheduleRunId: string }>(run.scheduleId, LOCK_ROW).catch(() => null);
  if (lock?.scheduleRunId === run.scheduleRunId) actions.push(['delete', { partitionKey: run.scheduleId, rowKey: LOCK_ROW }]);
  try {
    await submitTransaction(client, actions);
  } catch (err) {
    concurrencyConflict(err, 'The schedule run changed meanwhile.');
  }
  return (await getScheduleRun(run.scheduleId, run.scheduleRunId))!;
}
