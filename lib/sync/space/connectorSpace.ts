import { hash } from 'node:crypto';
import type { TableEntityResult, TransactionAction } from '@azure/data-tables';
import { decodeKey, encodeKey, getEntity, isStatus, listEntities, odata, table, updateEntity } from '../../storage/tables';
import type { CsObject } from '../model';
import { getOverflow, OVERFLOW_OVER, putOverflow } from '../../storage/overflow';
import { getJson, mapLimit, putJson, putJsonText, submitBatched, submitBatchedLazy } from '../../storage/tableUtil';
import { CsSummaries, type CsSummary } from './csSummaries';

/**
 * Connector-space repository (table `ConnectorSpace`): the engine's staging copy of each connector's objects.
 *
 * Keys: 16 tables `ConnectorSpace0`..`ConnectorSpacef` (one per bucket: the first hex digit of the anchor's
 * md5), PartitionKey `<connector id>_<bucket><0-3>` (see {@link csPartition}), RowKey the key-encoded anchor. Spread over tables, not only
 * partitions, because Azurite (LokiJS) pays for each replaced or deleted row and for each query page in
 * proportion to the size of the whole table; a page of 1,000 objects still goes out in transactions of about
 * 15. The whole space of a connector is 64 partition queries.
 * Properties: `objectType`, `hash` (content hash as imported), `rh` (rules hash), `meshId`, `deleted`,
 * `updatedOn`, `dn`, and JSON (chunked) `a` attributes, `x` exported values, `p` pending export, `u` unconfirmed
 * attribute names, `error`, `rn` the names of the reference attributes, `jk` a disconnector's join keys, `dp` its deprovisioning state (JSON; `dps` the state and `dpd` when a pending one is due, for the summaries), `xe` the last export failure of its pending export (JSON, lib/sync/export/exportRetry.ts), `cid` its csObjectId when it is not the name-based one (lib/sync/space/csIds.ts), `io`/`eo` when an import or an export last wrote it (`io` only when it is not `updatedOn`). A row
 * whose attributes or exported values are too large for it (a group of many members) keeps them apart
 * (lib/storage/overflow.ts) and names them with `aref`/`xref`.
 *
 * Writes are upserts (Replace) of the whole row: replaying a page writes the same rows again.
 */
const TABLE = 'ConnectorSpace';

/**
 * Object ids (csObjectId) are part of this repository's contract, kept in lib/sync/space/csIds.ts: `csObjectIdOf(row)`
 * (computed for a row with an anchor, kept for one that was a staged add), `indexCsObjectIds` (make ids
 * resolvable) and `findCsObjectRef` (an id to its anchor or staged add, one point read).
 */
export { anchoredCsObjectId, csObjectIdOf, findCsObjectRef, indexCsObjectIds, stagedCsObjectId, type CsObjectRef } from './csIds';
const BUCKETS = '0123456789abcdef'.split('');
/** The table of a partition (`<connector id>_<bucket>`). */
const csTable = (pk: string) => table(TABLE + pk.slice(-2, -1));

/**
 * The partition of an anchor: `<connector id>_<table digit><0-3>` from the anchor's md5 (four partitions per
 * table: Azurite finds the row a write targets by scanning its partition).
 */
export function csPartition(connectorId: string, anchor: string): string {
  const h = hash('md5', anchor, 'buffer');
  return `${connectorId}_${BUCKETS[h[0] >> 4]}${h[0] & 3}`;
}
const partitions = (connectorId: string) => BUCKETS.flatMap((b) => [0, 1, 2, 3].map((i) => `${connectorId}_${b}${i}`));

export type { CsSummary } from './csSummaries';

type Row = TableEntityResult<Record<string, unknown>>;

/**
 * The row of a connector-space object. `apart`: the keys of its attributes (`a`) or exported values (`x`) kept
 * apart (lib/storage/overflow.ts: a group of many members), stored as `aref`/`xref` instead of the JSON.
 */
export function toCsEntity(
  connectorId: string,
  o: CsObject,
  apart: { a?: string; x?: string; aText?: string; xText?: string } = {},
  /** The row's partition key when the caller has it already ({@link csPartition}). */
  partitionKey = csPartition(connectorId, o.anchor),
): Record<string, unknown> & { partitionKey: string; rowKey: string } {
  const e: Record<string, unknown> & { partitionKey: string; rowKey: string } = {
    partitionKey,
    rowKey: encodeKey(o.anchor),
    objectType: o.objectType,
    hash: o.hash,
    rh: o.rulesHash,
    meshId: o.meshId ?? '',
    deleted: !!o.deleted,
    updatedOn: o.updatedOn,
  };
  if (o.dn) e.dn = o.dn;
  if (apart.a) e.aref = apart.a;
  else putJsonText(e, 'a', apart.aText ?? JSON.stringify(o.attributes));
  if (apart.x) e.xref = apart.x;
  else if (apart.xText !== undefined) putJsonText(e, 'x', apart.xText);
  else if (o.exported) putJson(e, 'x', o.exported);
  if (o.pendingExport) putJson(e, 'p', o.pendingExport);
  if (o.unconfirmed?.length) e.u = JSON.stringify(o.unconfirmed);
  if (o.error) e.error = o.error.slice(0, 2000);
  if (o.refNames?.length) e.rn = JSON.stringify(o.refNames);
  if (o.joinKeys?.length && !o.meshId && !o.deleted) e.jk = JSON.stringify(o.joinKeys);
  if (isFailed(o)) e.failed = true;
  if (o.provisioned && !o.deleted) e.pv = true;
  if (o.exportError) e.xe = JSON.stringify(o.exportError);
  if (o.csObjectId) e.cid = o.csObjectId;
  // An import writes the row when it reads it: `io` is kept only when another write came since (no bytes more per import).
  if (o.importedOn && o.importedOn !== o.updatedOn) e.io = o.importedOn;
  if (o.exportedOn) e.eo = o.exportedOn;
  if (o.deprovisioned) {
    e.dp = JSON.stringify(o.deprovisioned);
    e.dps = o.deprovisioned.state;
    if (o.deprovisioned.due) e.dpd = o.deprovisioned.due;
  }
  return e;
}

export function fromCsEntity(e: Record<string, unknown>): CsObject {
  const o: CsObject = {
    anchor: decodeKey(String(e.rowKey)),
    objectType: String(e.objectType),
    attributes: getJson(e, 'a') ?? {},
    hash: String(e.hash ?? ''),
    rulesHash: String(e.rh ?? ''),
    meshId: e.meshId ? String(e.meshId) : null,
    updatedOn: String(e.updatedOn ?? ''),
  };
  if (e.deleted) o.deleted = true;
  if (e.dn) o.dn = String(e.dn);
  const x = getJson<CsObject['exported']>(e, 'x');
  if (x) o.exported = x;
  const p = getJson<CsObject['pendingExport']>(e, 'p');
  if (p) o.pendingExport = p;
  if (e.u) o.unconfirmed = JSON.parse(String(e.u)) as string[];
  if (e.error) o.error = String(e.error);
  if (e.rn) o.refNames = JSON.parse(String(e.rn)) as string[];
  if (e.jk) o.joinKeys = JSON.parse(String(e.jk)) as string[];
  if (e.dp) o.deprovisioned = JSON.parse(String(e.dp)) as CsObject['deprovisioned'];
  if (e.pv) o.provisioned = true;
  if (e.xe) o.exportError = JSON.parse(String(e.xe)) as CsObject['exportError'];
  if (e.cid) o.csObjectId = String(e.cid);
  if (e.io) o.importedOn = String(e.io);
  else if (o.hash || e.error) o.importedOn = o.updatedOn;
  if (e.eo) o.exportedOn = String(e.eo);
  return o;
}

/** Bring the JSON kept apart (`aref`, `xref`) into the rows, in memory, before {@link fromCsEntity}. */
async function inflateCsRows<T extends Record<string, unknown>>(rows: T[]): Promise<T[]> {
  await mapLimit(
    rows.filter((e) => typeof e.aref === 'string' || typeof e.xref === 'string'),
    4,
    async (e) => {
      const row = e as Record<string, unknown>;
      if (typeof row.aref === 'string' && row.an === undefined) putJsonText(row, 'a', await getOverflow(row.aref));
      if (typeof row.xref === 'string' && row.xn === undefined) putJsonText(row, 'x', await getOverflow(row.xref));
    },
  );
  return rows;
}

/** Whether a row carries exported values (inline or kept apart). */
const hasExported = (e: Record<string, unknown>) => Number(e.xn ?? 0) > 0 || typeof e.xref === 'string';

function summaryOf(e: Record<string, unknown>): CsSummary {
  const s: CsSummary = {
    hash: String(e.hash ?? ''),
    rulesHash: String(e.rh ?? ''),
    meshId: e.meshId ? String(e.meshId) : null,
    deleted: !!e.deleted,
    exported: hasExported(e) || Number(e.pn ?? 0) > 0,
  };
  if (e.dn) s.dn = String(e.dn);
  if (e.jk) s.joinKeys = JSON.parse(String(e.jk)) as string[];
  if (e.failed) s.failed = true;
  if (e.dps) s.deprov = String(e.dps) as CsSummary['deprov'];
  if (e.dpd) s.due = String(e.dpd);
  if (e.pv) s.provisioned = true;
  if (e.cid) s.cid = String(e.cid);
  if (e.eo) s.eo = String(e.eo);
  return s;
}

/** The summary of a row about to be written (what {@link loadCsSummaries} would read back). */
export const summarize = (_connectorId: string, o: CsObject): CsSummary => {
  const s: CsSummary = {
    hash: o.hash,
    rulesHash: o.rulesHash,
    meshId: o.meshId || null,
    deleted: !!o.deleted,
    exported: !!o.exported || !!o.pendingExport,
  };
  if (o.dn) s.dn = o.dn;
  if (o.joinKeys?.length && !o.meshId && !o.deleted) s.joinKeys = o.joinKeys;
  if (isFailed(o)) s.failed = true;
  if (o.deprovisioned) s.deprov = o.deprovisioned.state;
  if (o.deprovisioned?.due) s.due = o.deprovisioned.due;
  if (o.provisioned && !o.deleted) s.provisioned = true;
  if (o.csObjectId) s.cid = o.csObjectId;
  if (o.exportedOn) s.eo = o.exportedOn;
  return s;
};

/** A row whose rules failed: it has an error and no hash (so it is never taken as unchanged), and is not deleted. */
const isFailed = (o: CsObject) => !!o.error && !o.hash && !o.deleted && Object.keys(o.attributes).length > 0;

/**
 * A connector's space table by table: each of the 16 tables and the filter of the connector's four partitions in
 * it (`<connector id>_<bucket>0` to `..3`), so a read of every row is 16 queries instead of 64. The rows visited
 * are the same (the embedded Azurite's index and the Table service both read a PartitionKey range in key
 * order); what goes is 48 requests, each with its own round trip and fixed cost in both processes.
 */
export const csTableRanges = (connectorId: string): { table: string; filter: string }[] =>
  BUCKETS.map((b) => ({
    table: TABLE + b,
    filter: `PartitionKey ge ${odata(`${connectorId}_${b}0`)} and PartitionKey le ${odata(`${connectorId}_${b}3`)}`,
  }));

/** Every row's summary of a connector: anchor -> summary (kept compactly). A query per table with a narrow $select. */
export async function loadCsSummaries(connectorId: string): Promise<CsSummaries> {
  const out = new CsSummaries();
  await mapLimit(csTableRanges(connectorId), 4, async (range) => {
    const it = listEntities<Record<string, unknown>>(await table(range.table), {
      queryOptions: {
        filter: range.filter,
        select: ['RowKey', 'hash', 'rh', 'meshId', 'deleted', 'xn', 'xref', 'pn', 'dn', 'jk', 'failed', 'dps', 'dpd', 'pv', 'cid', 'eo'],
      },
    });
    for await (const e of it) out.set(decodeKey(String(e.rowKey)), summaryOf(e));
  });
  return out.fit();
}

/** Full rows for these anchors (absent anchors are left out). */
export async function readCsObjects(connectorId: string, anchors: readonly string[]): Promise<Map<string, CsObject>> {
  const out = new Map<string, CsObject>();
  await mapLimit(anchors, 16, async (a) => {
    try {
      const pk = csPartition(connectorId, a);
      const [e] = await inflateCsRows([(await getEntity(await csTable(pk), pk, encodeKey(a))) as Row]);
      out.set(a, fromCsEntity(e));
    } catch (err) {
      if (!isStatus(err, 404)) throw err;
    }
  });
  return out;
}

/** How many partitions a connector's space has ({@link readCsPartition} takes 0 to this less one). */
export const CS_PARTITIONS = 64;

/** Every full row of one partition of a connector's space (a FullSync reads the space partition by partition). */
export async function readCsPartition(connectorId: string, index: number): Promise<CsObject[]> {
  const pk = partitions(connectorId)[index];
  const out: CsObject[] = [];
  const rows: Record<string, unknown>[] = [];
  for await (const e of listEntities<Record<string, unknown>>(await csTable(pk), { queryOptions: { filter: `PartitionKey eq ${odata(pk)}` } })) rows.push(e);
  for (const e of await inflateCsRows(rows)) out.push(fromCsEntity(e));
  return out;
}

/** Every full row of a connector, page by page (export and deletes). */
export async function* iterateCsObjects(connectorId: string): AsyncGenerator<CsObject[]> {
  for (const pk of partitions(connectorId)) {
    const pages = listEntities<Record<string, unknown>>(await csTable(pk), { queryOptions: { filter: `PartitionKey eq ${odata(pk)}` } }).byPage({
      maxPageSize: 1000,
    });
    for await (const page of pages) yield (await inflateCsRows(page)).map(fromCsEntity);
  }
}

/**
 * Write whole rows in transactions of 100: with `known` (anchor -> present in storage, as the caller's cache
 * says), an insert or a replace, else an upsert (see submitBatched for a cache that was wrong).
 */
export async function writeCsObjects(connectorId: string, objects: readonly CsObject[], known?: (anchor: string) => boolean | undefined): Promise<void> {
  if (!objects.length) return;
  // Each transaction's rows are serialized when it is about to go (submitBatchedLazy): the first go at once,
  // the rest are made while the storage works on those in flight.
  const keyed = objects.map((o) => ({ o, pk: csPartition(connectorId, o.anchor) }));
  await submitBatchedLazy(
    csTable,
    keyed,
    (k) => k.pk,
    async (chunk) => {
      const actions: TransactionAction[] = [];
      for (const { o, pk } of chunk) {
        // Attributes or exported values too large for a row (a group of many members) are kept apart first,
        // before the transaction that names them: a row never names a text that is not stored yet.
        const a = JSON.stringify(o.attributes);
        const x = o.exported ? JSON.stringify(o.exported) : '';
        const apart =
          a.length > OVERFLOW_OVER || x.length > OVERFLOW_OVER
            ? {
                ...(a.length > OVERFLOW_OVER ? { a: await putOverflow(a) } : { aText: a }),
                ...(x.length > OVERFLOW_OVER ? { x: await putOverflow(x) } : x ? { xText: x } : {}),
              }
            : x
              ? { aText: a, xText: x }
              : { aText: a };
        const e = toCsEntity(connectorId, o, apart, pk);
        const present = known?.(o.anchor);
        actions.push(present === undefined ? ['upsert', e, 'Replace'] : present ? ['update', e, 'Replace'] : ['create', e]);
      }
      return actions;
    },
  );
}

/** Remove a connector's whole space (connector deletion). Safe to repeat. */
export async function deleteConnectorSpace(connectorId: string): Promise<void> {
  const keys: TransactionAction[] = [];
  for (const pk of partitions(connectorId)) {
    for await (const e of listEntities(await csTable(pk), { queryOptions: { filter: `PartitionKey eq ${odata(pk)}`, select: ['RowKey'] } })) {
      keys.push(['delete', { partitionKey: pk, rowKey: String(e.rowKey) }]);
    }
  }
  await submitBatched(csTable, keys);
}

/**
 * Reset the export failure of an object (its pending change stays: the next export tries it again). A Merge of
 * the one property, so a run writing the row at the same moment is not undone. False when the row is gone.
 */
export async function clearCsExportError(connectorId: string, anchor: string): Promise<boolean> {
  const pk = csPartition(connectorId, anchor);
  try {
    await updateEntity(await csTable(pk), { partitionKey: pk, rowKey: encodeKey(anchor), xe: '' }, 'Merge');
    return true;
  } catch (err) {
    if (isStatus(err, 404)) return false;
    throw err;
  }
}
