import { isStatus, table } from './tables';
import { getJson, putJson } from './tableUtil';

/**
 * The configuration a run was made with (table `RunBindings`, PartitionKey `b`, RowKey the run id): the
 * connectors and rules in force when the run began, each as a fingerprint of its stored state. Written once,
 * when the run begins; read when its plan is applied or its held changes are approved (lib/plans/binding.ts).
 * A run recorded before bindings were has none: it is applied and approved as before.
 */
export interface BoundItem {
  targetType: 'connector' | 'rule';
  id: string;
  name: string;
  /** A rule's type (`FlowRule`...). */
  kind?: string;
  /** The fingerprint of the item's stored state (what changes when the item is changed). */
  hash: string;
}

export interface StoredBinding {
  runId: string;
  /** When the configuration was read. */
  boundOn: string;
  items: BoundItem[];
}

const TABLE = 'RunBindings';
const PK = 'b';

/** Record (or replace: a replayed begin) the binding of a run. */
export async function putRunBinding(b: StoredBinding): Promise<void> {
  const entity: Record<string, unknown> & { partitionKey: string; rowKey: string } = { partitionKey: PK, rowKey: b.runId, boundOn: b.boundOn };
  putJson(entity, 'items', b.items);
  await (await table(TABLE)).upsertEntity(entity, 'Replace');
}

/** The binding of a run, or null (none recorded). */
export async function getRunBinding(runId: string): Promise<StoredBinding | null> {
  try {
    const e = await (await table(TABLE)).getEntity<Record<string, unknown>>(PK, runId);
    return { runId, boundOn: String(e.boundOn), items: getJson<BoundItem[]>(e, 'items') ?? [] };
  } catch (err) {
    if (isStatus(err, 404)) return null;
    throw err;
  }
}
