import { randomUUID } from 'node:crypto';
import { odata, RestError, TableClient, type TableEntity, type TableEntityResult, type TransactionAction } from '@azure/data-tables';
import type { HistoryEvent, RuntimeStatus } from './protocol';

/**
 * The task hub's persistent state in Azure Table Storage. Two tables per hub:
 *
 * - `<hub>Instances`, one partition per orchestration instance (partition key = instance id):
 *   `$state` (status, input, output, custom status, current execution, episode count, parent),
 *   `h.<executionId>.<episode>` (the history events one episode appended, as a JSON array),
 *   `x.<executionId>.<episode>` (the outbox: messages the episode produced, not yet delivered).
 *   An episode commits as ONE entity-group transaction on that partition (state + history + outbox), so a
 *   crash leaves either the whole episode or none of it. The outbox is then delivered to `<hub>Work` and
 *   deleted; delivery is idempotent (deterministic row keys) and is redone at start for any outbox left over.
 * - `<hub>Work`: partition `o` holds messages to orchestrations (start, task results, timers, external
 *   events, terminate/suspend/resume, sub-orchestration results) with `VisibleAt` (timers fire at it);
 *   partition `a` holds activity work items. A message or work item is deleted only after its effect is
 *   committed (the orchestration's history, or the activity result message), so nothing is lost: work is
 *   done at least once.
 *
 * Group rows keep the number of storage operations per activity low (Azurite's CPU is the bottleneck of a
 * fan-out): the activities one episode schedules are ONE `a` row (kind `activities`, `parts` = the work
 * items, `Done` = task ids whose results are stored, rewritten as results arrive, deleted when all are), and
 * the results a flush stores for one execution are ONE `o` row (kind `results`, `parts` = the taskCompleted /
 * taskFailed messages), deleted once an episode consumed every part.
 */

export type MessageKind =
  'results' | 'start' | 'taskCompleted' | 'taskFailed' | 'timerFired' | 'subCompleted' | 'subFailed' | 'event' | 'terminate' | 'suspend' | 'resume';

export interface WorkMessage {
  pk: 'o' | 'a';
  rk: string;
  instanceId: string;
  kind: MessageKind | 'activity' | 'activities';
  executionId?: string;
  taskId?: number;
  /** Activity or event name. */
  name?: string;
  /** JSON text: activity input/result, event data, sub-orchestration output. */
  data?: string;
  reason?: string;
  details?: string;
  fireAt?: string;
  enqueuedAt: number;
  visibleAt: number;
  /** Group rows (`activities`, `results`): the messages they carry. */
  parts?: WorkMessage[];
  /** An `activities` row as read from storage: task ids whose results are already stored (property `Done`). */
  done?: number[];
}

export interface InstanceRecord {
  instanceId: string;
  name: string;
  runtimeStatus: RuntimeStatus;
  /** JSON text. */
  input?: string;
  output?: string;
  customStatus?: string;
  createdTime: string;
  lastUpdatedTime: string;
  executionId: string;
  /** History rows committed for the current execution. */
  episodes: number;
  parentInstanceId?: string;
  parentExecutionId?: string;
  parentTaskId?: number;
  etag?: string;
}

export interface ChildCreation {
  instanceId: string;
  name: string;
  input?: string;
  parentInstanceId: string;
  parentExecutionId: string;
  parentTaskId: number;
}

export type OutboxItem = { type: 'message'; message: WorkMessage } | { type: 'create'; child: ChildCreation };

export interface Outbox {
  instanceId: string;
  rowKey: string;
  items: OutboxItem[];
}

export interface HistoryRow {
  executionId: string;
  episode: number;
  events: HistoryEvent[];
}

export interface InstanceFilter {
  createdTimeFrom?: Date;
  createdTimeTo?: Date;
  runtimeStatus?: RuntimeStatus[];
  instanceIdPrefix?: string;
}

const STATE_RK = '$state';
/** Azure Tables: a string property holds at most 64 KiB (32 Ki UTF-16 code units). */
const CHUNK = 30000;

export const pad = (n: number, width = 15): string => String(Math.max(0, Math.floor(n))).padStart(width, '0');

function setText(entity: Record<string, unknown>, prop: string, text: string | undefined): void {
  if (text === undefined) return;
  const parts = Math.max(1, Math.ceil(text.length / CHUNK));
  entity[prop] = text.slice(0, CHUNK);
  for (let i = 1; i < parts; i++) entity[`${prop}_${i}`] = text.slice(i * CHUNK, (i + 1) * CHUNK);
  if (parts > 1) entity[`${prop}__n`] = parts;
}

function getText(entity: Record<string, unknown>, prop: string): string | undefined {
  const first = entity[prop];
  if (typeof first !== 'string') return undefined;
  const parts = typeof entity[`${prop}__n`] === 'number' ? (entity[`${prop}__n`] as number) : 1;
  let text = first;
  for (let i = 1; i < parts; i++) text += String(entity[`${prop}_${i}`] ?? '');
  return text;
}

export function isRest(err: unknown, status: number): boolean {
  return err instanceof RestError && err.statusCode === status;
}

/** Thrown when the instance's `$state` row changed since it was read (ETag mismatch) or already exists. */
export class ConcurrencyError extends Error {}

export class TaskHubStore {
  readonly instances: TableClient;
  readonly work: TableClient;

  constructor(
    connectionString: string,
    readonly hubName: string,
  ) {
    const insecure = /(Table|Blob|Queue)Endpoint=http:/i.test(connectionString) || /UseDevelopmentStorage=true/i.test(connectionString);
    const opts = { allowInsecureConnection: insecure };
    this.instances = TableClient.fromConnectionString(connectionString, `${hubName}Instances`, opts);
    this.work = TableClient.fromConnectionString(connectionString, `${hubName}Work`, opts);
  }

  async init(): Promise<void> {
    for (const t of [this.instances, this.work]) {
      try {
        await t.createTable();
      } catch (err) {
        if (!isRest(err, 409)) throw err;
      }
    }
  }

  // ---- instance state -------------------------------------------------------------------------------

  async getInstance(instanceId: string): Promise<InstanceRecord | undefined> {
    try {
      const e = await this.instances.getEntity<Record<string, unknown>>(instanceId, STATE_RK);
      return toRecord(e);
    } catch (err) {
      if (isRest(err, 404)) return undefined;
      throw err;
    }
  }

  async listInstances(filter: InstanceFilter = {}): Promise<InstanceRecord[]> {
    const parts = [odata`RowKey eq ${STATE_RK}`];
    if (filter.createdTimeFrom) parts.push(odata`CreatedTime ge ${filter.createdTimeFrom.toISOString()}`);
    if (filter.createdTimeTo) parts.push(odata`CreatedTime le ${filter.createdTimeTo.toISOString()}`);
    const out: InstanceRecord[] = [];
    for await (const e of this.instances.listEntities<Record<string, unknown>>({ queryOptions: { filter: parts.join(' and ') } })) {
      const r = toRecord(e);
      if (filter.runtimeStatus?.length && !filter.runtimeStatus.includes(r.runtimeStatus)) continue;
      if (filter.instanceIdPrefix && !r.instanceId.startsWith(filter.instanceIdPrefix)) continue;
      out.push(r);
    }
    out.sort((a, b) => (a.createdTime < b.createdTime ? -1 : a.createdTime > b.createdTime ? 1 : a.instanceId.localeCompare(b.instanceId)));
    return out;
  }

  /** History of one execution, in order. */
  async loadHistory(instanceId: string, executionId: string): Promise<HistoryEvent[]> {
    const filter = odata`PartitionKey eq ${instanceId} and RowKey ge ${`h.${executionId}.`} and RowKey lt ${`h.${executionId}.~`}`;
    const rows: { rk: string; events: HistoryEvent[] }[] = [];
    for await (const e of this.instances.listEntities<Record<string, unknown>>({ queryOptions: { filter } })) {
      rows.push({ rk: String(e.rowKey), events: JSON.parse(getText(e, 'Events') ?? '[]') as HistoryEvent[] });
    }
    rows.sort((a, b) => (a.rk < b.rk ? -1 : 1));
    return rows.flatMap((r) => r.events);
  }

  /**
   * Commit one episode (or an instance creation) atomically: the new `$state` (replacing the row read with
   * `state.etag`, or creating it when `state.etag` is undefined), the history row and the outbox row.
   * Returns the new ETag of `$state`. Throws ConcurrencyError when the state changed or already exists.
   */
  async commit(state: InstanceRecord, history?: HistoryRow, outbox?: Outbox): Promise<string> {
    const actions: TransactionAction[] = [];
    const entity = fromRecord(state);
    actions.push(state.etag ? ['update', entity, 'Replace', { etag: state.etag }] : ['create', entity]);
    if (history && history.events.length) {
      const row: Record<string, unknown> = { partitionKey: state.instanceId, rowKey: `h.${history.executionId}.${pad(history.episode, 6)}` };
      setText(row, 'Events', JSON.stringify(history.events));
      actions.push(['upsert', row as TableEntity, 'Replace']);
    }
    if (outbox && outbox.items.length) {
      const row: Record<string, unknown> = { partitionKey: state.instanceId, rowKey: outbox.rowKey };
      setText(row, 'Items', JSON.stringify(outbox.items));
      actions.push(['upsert', row as TableEntity, 'Replace']);
    }
    try {
      const res = await this.instances.submitTransaction(actions);
      const etag = res.subResponses.find((r) => r.rowKey === STATE_RK)?.etag;
      if (etag) return etag;
      return (await this.getInstance(state.instanceId))?.etag ?? '';
    } catch (err) {
      if (isRest(err, 412) || isRest(err, 409) || (err instanceof RestError && /UpdateConditionNotSatisfied|EntityAlreadyExists/.test(err.message))) {
        throw new ConcurrencyError(`Instance '${state.instanceId}' changed concurrently.`);
      }
      throw err;
    }
  }

  async deleteOutbox(instanceId: string, rowKey: string): Promise<void> {
    try {
      await this.instances.deleteEntity(instanceId, rowKey);
    } catch (err) {
      if (!isRest(err, 404)) throw err;
    }
  }

  /** Outboxes a crash left undelivered (scanned once at start). */
  async listOutboxes(): Promise<Outbox[]> {
    const filter = odata`RowKey ge ${'x.'} and RowKey lt ${'x.~'}`;
    const out: Outbox[] = [];
    for await (const e of this.instances.listEntities<Record<string, unknown>>({ queryOptions: { filter } })) {
      out.push({ instanceId: String(e.partitionKey), rowKey: String(e.rowKey), items: JSON.parse(getText(e, 'Items') ?? '[]') as OutboxItem[] });
    }
    return out;
  }

  /** Delete every row of an instance (state, history, outboxes). */
  async purge(instanceId: string): Promise<void> {
    const keys: string[] = [];
    const filter = odata`PartitionKey eq ${instanceId}`;
    for await (const e of this.instances.listEntities({ queryOptions: { filter, select: ['RowKey'] } })) keys.push(e.rowKey as string);
    for (let i = 0; i < keys.length; i += 100) {
      await this.instances.submitTransaction(keys.slice(i, i + 100).map((rk) => ['delete', { partitionKey: instanceId, rowKey: rk }]));
    }
  }

  // ---- work ------------------------------------------------------------------------------------------

  /** Upsert messages/work items (idempotent: row keys are deterministic), batched per partition. */
  async putWork(messages: WorkMessage[]): Promise<void> {
    for (const pk of ['o', 'a'] as const) {
      const list = messages.filter((m) => m.pk === pk);
      for (let i = 0; i < list.length; i += 100) {
        const chunk = list.slice(i, i + 100);
        if (chunk.length === 1) {
          await this.work.upsertEntity(toWorkEntity(chunk[0]), 'Replace');
        } else {
          await this.work.submitTransaction(chunk.map((m) => ['upsert', toWorkEntity(m), 'Replace']));
        }
      }
    }
  }

  async deleteWork(pk: 'o' | 'a', rowKeys: string[]): Promise<void> {
    for (let i = 0; i < rowKeys.length; i += 100) {
      const chunk = rowKeys.slice(i, i + 100);
      try {
        if (chunk.length === 1) await this.work.deleteEntity(pk, chunk[0]);
        else await this.work.submitTransaction(chunk.map((rk) => ['delete', { partitionKey: pk, rowKey: rk }]));
      } catch (err) {
        if (!isRest(err, 404)) throw err;
        // Some row was already gone (a redelivery raced a delete): delete the rest one by one.
        for (const rk of chunk) {
          try {
            await this.work.deleteEntity(pk, rk);
          } catch (e) {
            if (!isRest(e, 404)) throw e;
          }
        }
      }
    }
  }

  /**
   * Delete rows and rewrite the `Done` list of group rows of one partition, in as few transactions as
   * possible (100 operations each). Rows already gone are ignored.
   */
  async settleWork(pk: 'o' | 'a', deletes: string[], done: { rk: string; taskIds: number[] }[]): Promise<void> {
    const actions: TransactionAction[] = deletes.map((rk) => ['delete', { partitionKey: pk, rowKey: rk }]);
    for (const d of done) {
      const row: Record<string, unknown> = { partitionKey: pk, rowKey: d.rk };
      setText(row, 'Done', JSON.stringify(d.taskIds));
      actions.push(['update', row as TableEntity, 'Merge']);
    }
    for (let i = 0; i < actions.length; i += 100) {
      const chunk = actions.slice(i, i + 100);
      try {
        if (chunk.length === 1) await this.settleOne(chunk[0]);
        else await this.work.submitTransaction(chunk);
      } catch (err) {
        if (!isRest(err, 404)) throw err;
        // Some row was already gone (a redelivery raced a delete): settle the rest one by one.
        for (const action of chunk) await this.settleOne(action);
      }
    }
  }

  private async settleOne(action: TransactionAction): Promise<void> {
    try {
      const entity = action[1] as TableEntity;
      if (action[0] === 'delete') await this.work.deleteEntity(entity.partitionKey, entity.rowKey);
      else await this.work.updateEntity(entity, 'Merge');
    } catch (err) {
      if (!isRest(err, 404)) throw err;
    }
  }

  /** Orchestration messages visible now, or activity work items. */
  async listWork(pk: 'o' | 'a', now = Date.now()): Promise<WorkMessage[]> {
    const filter = pk === 'o' ? odata`PartitionKey eq ${pk} and VisibleAt le ${pad(now)}` : odata`PartitionKey eq ${pk}`;
    const out: WorkMessage[] = [];
    for await (const e of this.work.listEntities<Record<string, unknown>>({ queryOptions: { filter } })) {
      const m = JSON.parse(getText(e, 'Body') ?? '{}') as WorkMessage;
      const done = getText(e, 'Done');
      if (done !== undefined) m.done = JSON.parse(done) as number[];
      out.push(m);
    }
    return out;
  }

  /** The earliest VisibleAt of a future orchestration message (timer), if any. */
  async nextTimer(now = Date.now()): Promise<number | undefined> {
    const filter = odata`PartitionKey eq ${'o'} and VisibleAt gt ${pad(now)}`;
    let min: number | undefined;
    for await (const e of this.work.listEntities<Record<string, unknown>>({ queryOptions: { filter, select: ['VisibleAt'] } })) {
      const v = Number(e.VisibleAt);
      if (min === undefined || v < min) min = v;
    }
    return min;
  }
}

export function newExecutionId(): string {
  return randomUUID().replace(/-/g, '');
}

function toWorkEntity(m: WorkMessage): TableEntity {
  const e: Record<string, unknown> = { partitionKey: m.pk, rowKey: m.rk, InstanceId: m.instanceId, VisibleAt: pad(m.visibleAt) };
  setText(e, 'Body', JSON.stringify(m));
  return e as TableEntity;
}

function fromRecord(r: InstanceRecord): TableEntity {
  const e: Record<string, unknown> = {
    partitionKey: r.instanceId,
    rowKey: STATE_RK,
    Name: r.name,
    RuntimeStatus: r.runtimeStatus,
    CreatedTime: r.createdTime,
    LastUpdatedTime: r.lastUpdatedTime,
    ExecutionId: r.executionId,
    Episodes: r.episodes,
  };
  setText(e, 'Input', r.input);
  setText(e, 'Output', r.output);
  setText(e, 'CustomStatus', r.customStatus);
  if (r.parentInstanceId !== undefined) {
    e.ParentInstanceId = r.parentInstanceId;
    e.ParentExecutionId = r.parentExecutionId;
    e.ParentTaskId = r.parentTaskId;
  }
  return e as TableEntity;
}

function toRecord(e: TableEntityResult<Record<string, unknown>>): InstanceRecord {
  return {
    instanceId: e.partitionKey as string,
    name: String(e.Name),
    runtimeStatus: e.RuntimeStatus as RuntimeStatus,
    input: getText(e, 'Input'),
    output: getText(e, 'Output'),
    customStatus: getText(e, 'CustomStatus'),
    createdTime: String(e.CreatedTime),
    lastUpdatedTime: String(e.LastUpdatedTime),
    executionId: String(e.ExecutionId),
    episodes: Number(e.Episodes ?? 0),
    parentInstanceId: typeof e.ParentInstanceId === 'string' ? e.ParentInstanceId : undefined,
    parentExecutionId: typeof e.ParentExecutionId === 'string' ? e.ParentExecutionId : undefined,
    parentTaskId: typeof e.ParentTaskId === 'number' ? e.ParentTaskId : undefined,
    etag: e.etag,
  };
}
