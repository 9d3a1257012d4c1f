import type { TransactionAction } from '@azure/data-tables';
import { yieldToLoop } from '../../core/yieldLoop';
import { deleteEntity, getEntity, isStatus, listEntities, odata, table, upsertEntity } from '../../storage/tables';
import { getJson, putJson, submitBatched } from '../../storage/tableUtil';

/**
 * Sync state repository (table `SyncState`):
 * - `connector` / `<connectorId>`: `watermark` (the committed delta watermark), `csOwner` (the process whose
 *   in-memory connector-space summary is current: another process that writes takes ownership and a former
 *   owner reloads before its next page), `frh` (the rules hash of the last completed full pass) and `fra`
 *   (what the last completed full import read of a directory: the attributes, or `*`; lib/sync/import/readAttributes.ts).
 * - `seen_<runId>` / `<page, 8 digits>`: the anchors a full import saw on that page (chunked JSON), so the end
 *   of the run can tell which objects disappeared, however many processes the run moved through.
 * - `del_<runId>` / `<page>`: the anchors a full import will delete, in pages.
 * Rows of a run are removed when it finishes (best effort; `deleteRunState`).
 */
const TABLE = 'SyncState';
const CONNECTOR_PK = 'connector';
const pageKey = (n: number) => String(n).padStart(8, '0');

export interface ConnectorSyncState {
  watermark: string | null;
  csOwner: string | null;
  /** The rules hash of the connector's last completed full pass (full import or FullSync); null: none recorded. */
  fullRulesHash: string | null;
  /** What the last completed full import read (a directory connector's attributes, or `*`); null: not recorded. */
  fullReadAttributes: string[] | '*' | null;
  /** Exports: the change-feed position the last completed export considered everything up to; null: none yet. */
  exportSeq: number | null;
  /** Exports: what the last completed export ran with (outbound rules and connector configuration). */
  exportHash: string | null;
}

export async function readSyncState(connectorId: string): Promise<ConnectorSyncState> {
  const client = await table(TABLE);
  try {
    const e = await getEntity<Record<string, unknown>>(client, CONNECTOR_PK, connectorId);
    return {
      watermark: getJson<string>(e, 'w') ?? null,
      csOwner: e.csOwner ? String(e.csOwner) : null,
      fullRulesHash: e.frh ? String(e.frh) : null,
      fullReadAttributes: getJson<string[] | '*'>(e, 'fra') ?? null,
      exportSeq: typeof e.xseq === 'number' || typeof e.xseq === 'string' ? Number(e.xseq) : null,
      exportHash: e.xh ? String(e.xh) : null,
    };
  } catch (err) {
    if (isStatus(err, 404)) return { watermark: null, csOwner: null, fullRulesHash: null, fullReadAttributes: null, exportSeq: null, exportHash: null };
    throw err;
  }
}

/** Record what a completed export considered: the feed position and what it ran with. */
export async function saveExportState(connectorId: string, seq: number, hash: string): Promise<void> {
  const client = await table(TABLE);
  await upsertEntity(client, { partitionKey: CONNECTOR_PK, rowKey: connectorId, xseq: seq, xh: hash }, 'Merge');
}

/**
 * Mesh objects a target connector's next export must look at although the mesh did not change them: the
 * target's own import saw their objects differ (drift, values not confirmed), or an object they reference
 * was moved in the target. Partition `xd_<connector>`, one row per page that marked some.
 */
export async function markExportDirty(connectorId: string, meshIds: Iterable<string>): Promise<void> {
  const ids = [...new Set(meshIds)];
  if (!ids.length) return;
  const client = await table(TABLE);
  const e: Record<string, unknown> & { partitionKey: string; rowKey: string } = {
    partitionKey: `xd_${connectorId}`,
    rowKey: `${String(Date.now()).padStart(15, '0')}-${Math.random().toString(36).slice(2, 10)}`,
  };
  putJson(e, 'a', ids);
  await upsertEntity(client, e, 'Replace');
}

/** The marks of {@link markExportDirty}: their row keys (to clear them once handled) and the ids. */
export async function readExportDirty(connectorId: string): Promise<{ keys: string[]; ids: string[] }> {
  const client = await table(TABLE);
  const keys: string[] = [];
  const ids = new Set<string>();
  for await (const e of listEntities<Record<string, unknown>>(client, { queryOptions: { filter: `PartitionKey eq ${odata(`xd_${connectorId}`)}` } })) {
    keys.push(String(e.rowKey));
    for (const id of getJson<string[]>(e, 'a') ?? []) ids.add(id);
  }
  return { keys, ids: [...ids] };
}

/** Remove handled marks (later ones stay for the next export). */
export async function clearExportDirty(connectorId: string, keys: string[]): Promise<void> {
  if (!keys.length) return;
  const client = await table(TABLE);
  await submitBatched(
    client,
    keys.map((k): TransactionAction => ['delete', { partitionKey: `xd_${connectorId}`, rowKey: k }]),
  ).catch((err: unknown) => {
    if (!isStatus(err, 404)) throw err;
  });
}

/** Record the rules hash a full pass (full import or FullSync) of the connector completed with. */
export async function saveFullRulesHash(connectorId: string, hash: string): Promise<void> {
  const client = await table(TABLE);
  await upsertEntity(client, { partitionKey: CONNECTOR_PK, rowKey: connectorId, frh: hash }, 'Merge');
}

/** Record what a completed full import read (see ConnectorSyncState.fullReadAttributes). */
export async function saveFullReadAttributes(connectorId: string, read: string[] | '*'): Promise<void> {
  const client = await table(TABLE);
  const e: Record<string, unknown> & { partitionKey: string; rowKey: string } = { partitionKey: CONNECTOR_PK, rowKey: connectorId };
  putJson(e, 'fra', read);
  await upsertEntity(client, e, 'Merge');
}

export async function saveWatermark(connectorId: string, watermark: string | null): Promise<void> {
  const client = await table(TABLE);
  const e: Record<string, unknown> & { partitionKey: string; rowKey: string } = { partitionKey: CONNECTOR_PK, rowKey: connectorId };
  putJson(e, 'w', watermark);
  await upsertEntity(client, e, 'Merge');
}

export async function claimCsOwner(connectorId: string, owner: string): Promise<void> {
  const client = await table(TABLE);
  await upsertEntity(client, { partitionKey: CONNECTOR_PK, rowKey: connectorId, csOwner: owner }, 'Merge');
}

export async function deleteSyncState(connectorId: string): Promise<void> {
  const client = await table(TABLE);
  try {
    await deleteEntity(client, CONNECTOR_PK, connectorId);
  } catch (err) {
    if (!isStatus(err, 404)) throw err;
  }
}

async function writeList(pk: string, page: number, anchors: string[]): Promise<void> {
  const client = await table(TABLE);
  const e: Record<string, unknown> & { partitionKey: string; rowKey: string } = { partitionKey: pk, rowKey: pageKey(page) };
  putJson(e, 'a', anchors);
  await upsertEntity(client, e, 'Replace');
}

async function readLists(pk: string): Promise<string[][]> {
  const client = await table(TABLE);
  const out: string[][] = [];
  for await (const e of listEntities<Record<string, unknown>>(client, { queryOptions: { filter: `PartitionKey eq ${odata(pk)}` } }))
    out.push(getJson<string[]>(e, 'a') ?? []);
  return out;
}

export const saveSeen = (runId: string, page: number, anchors: string[]) => writeList(`seen_${runId}`, page, anchors);
export async function loadSeen(runId: string): Promise<Set<string>> {
  const seen = new Set<string>();
  for (const list of await readLists(`seen_${runId}`)) {
    for (const a of list) seen.add(a);
    // A page at a time: at a million anchors the API and other runs are answered between pages.
    await yieldToLoop();
  }
  return seen;
}

export const saveDeletePage = (runId: string, page: number, anchors: string[]) => writeList(`del_${runId}`, page, anchors);
export const loadDeletePage = (runId: string, page: number) => readList(`del_${runId}`, page);

/** An incremental export's pages of mesh ids to look at (and, page -1, the mesh ids deleted since). */
export const saveExportPage = (runId: string, page: number, ids: string[]) => writeList(`xp_${runId}`, page + 1, ids);
export const loadExportPage = (runId: string, page: number) => readList(`xp_${runId}`, page + 1);

async function readList(pk: string, page: number): Promise<string[]> {
  const client = await table(TABLE);
  try {
    return getJson<string[]>(await getEntity(client, pk, pageKey(page)), 'a') ?? [];
  } catch (err) {
    if (isStatus(err, 404)) return [];
    throw err;
  }
}

/** Remove the per-run rows (seen anchors, delete pages, export pages). Safe to repeat. */
export async function deleteRunState(runId: string): Promise<void> {
  const client = await table(TABLE);
  for (const pk of [`seen_${runId}`, `del_${runId}`, `xp_${runId}`]) {
    const actions: TransactionAction[] = [];
    for await (const e of listEntities(client, { queryOptions: { filter: `PartitionKey eq ${odata(pk)}`, select: ['RowKey'] } })) {
      actions.push(['delete', { partitionKey: pk, rowKey: String(e.rowKey) }]);
    }
    await submitBatched(client, actions).catch((err: unknown) => {
      if (!isStatus(err, 404)) throw err;
    });
  }
}

/** Every connector's export position (the feed position its last completed export considered), where it has one. */
export async function listExportSeqs(): Promise<{ connectorId: string; exportSeq: number }[]> {
  const client = await table(TABLE);
  const out: { connectorId: string; exportSeq: number }[] = [];
  const filter = `PartitionKey eq ${odata(CONNECTOR_PK)}`;
  for await (const e of listEntities<Record<string, unknown>>(client, { queryOptions: { filter, select: ['RowKey', 'xseq'] } })) {
    if (typeof e.xseq === 'number' || typeof e.xseq === 'string') out.push({ connectorId: e.rowKey!, exportSeq: Number(e.xseq) });
  }
  return out;
}
