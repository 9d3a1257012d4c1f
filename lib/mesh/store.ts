import { randomUUID } from 'node:crypto';
import type { TableClient, TransactionAction } from '@azure/data-tables';
import { deleteEntity, getEntity, isStatus, listEntities, odata, submitTransaction, table, upsertEntity } from '../storage/tables';
import type { MeshObject } from './model';
import { encodeMeshObject, encodeMeshTexts, fromStoredMeshObject, fromStoredMeshObjectConsolidated } from './codec';
import { getOverflow, OVERFLOW_OVER, putOverflow } from '../storage/overflow';
import { getJson, getJsonText, mapLimit, putJsonText, submitBatched } from '../storage/tableUtil';
import { readTombstoneRetentionDays } from '../core/config';
import { deleteTombstones, putTombstones, type Tombstone } from './tombstones';
import { noteTombstones } from './tombstoneIndex';

/**
 * The mesh (table `Mesh`) and its change feed (table `MeshFeed`).
 *
 * Mesh keys: 16 tables `Mesh0`..`Meshf` by the first hex digit of the id, PartitionKey `m<that digit>` (one
 * partition per table), RowKey the mesh id. A point read needs only the id; a page of writes spreads over at
 * most 16 partitions, so it still goes out in transactions of up to 100 rows. Why 16 tables and not 16
 * partitions of one table: Azurite (LokiJS) pays for every replaced or deleted row, and for every query page,
 * in proportion to the size of the whole table (index positions are shifted, queries filter and sort the whole
 * collection), so one 100,000-row table made every write of a large import slower as the table filled. Columns: `objectType`, `anchorValue`, `anchorLower` (for range scans),
 * `updatedOn`, and the whole {@link MeshObject} in its stored form (lib/mesh/codec.ts) as chunked JSON (`d0..`, `dn`),
 * or, for an object too large for a row, `dref`: the key of that text kept apart (lib/storage/overflow.ts);
 * its feed entry then carries `ref` (the same key) instead of `state`.
 *
 * Change feed: PartitionKey `f`; RowKey the sequence number (15 digits, zero-padded), `writer` (the writing
 * process), `n` (entries) and chunked JSON `e`: an array of {@link FeedEntry}, each the object's whole new
 * state or a tombstone, so a reader applies it without another read (a relationship made from a connector's
 * reference attribute comes without the connector's resolution of it, which only the engine uses and reads
 * from the mesh row: lib/mesh/codec.ts `encodeMeshTexts`; a kept-apart state comes whole). The counter row `~seq` holds the last
 * sequence number; an append inserts its rows and advances the counter in ONE entity-group transaction,
 * conditional on the counter's ETag. So sequence numbers are gapless and appear in commit order: a reader
 * that has applied everything up to N can ask for `RowKey gt N` and never miss a row. Writers append after
 * their mesh rows are committed, so a feed row never names a state the mesh does not have.
 *
 * Reader protocol (lib/mesh/feed.ts `MeshFeedReader`): note the counter, load the mesh, then apply feed rows
 * after the noted counter in order (states are whole objects, so applying an older state before a newer one
 * converges).
 */
const MESH = 'Mesh';
/** The table holding a mesh partition. */
const meshTable = (pk: string) => table(MESH + pk[1]);
const FEED = 'MeshFeed';
const FEED_PK = 'f';
const COUNTER = '~seq';
const SEQ_DIGITS = 15;
/** Characters of entries JSON per feed row (UTF-16 in storage: 400 KB of a 1 MiB entity). */
const FEED_ROW_CHARS = 200_000;
/** Feed rows per transaction: a transaction body is at most 4 MiB, and the JSON is escaped once more in it. */
const FEED_ROWS_PER_TRANSACTION = 8;

/** This process as a writer of the feed (lets a reader skip rows it wrote itself). */
export const PROCESS_WRITER = randomUUID();

/**
 * A feed entry: an object's new state, or its tombstone. `x`: the connector whose export wrote this state (it
 * linked the object to what the export added); that connector's next export has nothing to look at in it.
 * A state read from the table has its connectors' relationships without `c`, `ca`, `v` and `by` (see
 * lib/mesh/codec.ts `encodeMeshTexts`; the mesh row has them).
 */
export type FeedEntry =
  | { id: string; objectType: string; state: MeshObject; x?: string }
  | { id: string; objectType: string; deleted: true }
  | { id: string; objectType: string; link: LinkState; x?: string };

/**
 * An object's links as an export writes them (lib/sync/export/exportPage.ts commitLinks): every link and
 * provisioned connector of the object and its new `updatedOn`. Kept on the mesh row as the column `lk` beside
 * the stored form `d` (a Merge of that column, not a rewrite of the whole object: {@link patchMeshLinks}), and
 * appended to the feed as a link entry instead of the whole state. A row read with `lk` takes its links,
 * provisioned connectors and updatedOn from it ({@link fromMeshEntity}); a whole-state write of the row
 * (commitMeshWrite) carries the links in `d` and drops `lk`.
 */
export interface LinkState {
  links: Record<string, string>;
  provisioned?: string[];
  updatedOn: string;
}

/** The link state of a row (`lk`), or undefined. */
function linkStateOf(e: Record<string, unknown>): LinkState | undefined {
  if (typeof e.lk !== 'string' || !e.lk) return undefined;
  return linkStateFromText(JSON.parse(e.lk) as { l?: Record<string, string>; p?: string[]; u?: string });
}

/** The text of a link state (the row's `lk` and the feed's link entry). */
function linkText(l: LinkState): string {
  return JSON.stringify({ l: l.links, ...(l.provisioned?.length ? { p: l.provisioned } : {}), u: l.updatedOn });
}

/** A link state over an object (in place): its links, provisioned connectors and updatedOn. `linksToo` false: updatedOn only. */
export function applyLinkState(o: MeshObject, l: LinkState, linksToo = true): MeshObject {
  if (linksToo) {
    o.links = { ...l.links };
    if (l.provisioned?.length) o.provisioned = [...l.provisioned];
    else delete o.provisioned;
  }
  if (l.updatedOn) o.updatedOn = l.updatedOn;
  return o;
}

export interface FeedRow {
  seq: number;
  writer: string;
  entries: FeedEntry[];
}

/**
 * The partition of a mesh id: `m`, the table digit (first hex digit), the sub-partition (second hex digit mod 4).
 * Four partitions per table: Azurite finds the row an insert or replace targets by scanning the rows of its
 * partition, so smaller partitions make every write cheaper; four still leave ~15 rows per transaction.
 */
export const meshPartition = (id: string) => 'm' + id[0].toLowerCase() + (Number.isNaN(parseInt(id[1], 16)) ? 0 : parseInt(id[1], 16) & 3);
/** The 16 mesh tables, by the key of their first partition (scans go table by table). */
export const MESH_PARTITIONS = '0123456789abcdef'.split('').map((c) => 'm' + c);
export const seqKey = (seq: number) => String(seq).padStart(SEQ_DIGITS, '0');

/**
 * The row of a mesh object. `overflow`: the key of its stored form kept apart (lib/storage/overflow.ts; an
 * object over {@link OVERFLOW_OVER} characters, a group of many members), stored as `dref` instead of `d`.
 */
export function toMeshEntity(o: MeshObject, json = encodeMeshObject(o), overflow?: string): Record<string, unknown> & { partitionKey: string; rowKey: string } {
  const e: Record<string, unknown> & { partitionKey: string; rowKey: string } = {
    partitionKey: meshPartition(o.id),
    rowKey: o.id,
    objectType: o.objectType,
    anchorValue: o.anchorValue,
    anchorLower: o.anchorValue.toLowerCase(),
    updatedOn: o.updatedOn,
  };
  if (overflow) e.dref = overflow;
  else putJsonText(e, 'd', json);
  return e;
}

/** A mesh row as an object; a row whose stored form is kept apart must have gone through {@link inflateRows}. */
export function fromMeshEntity(e: Record<string, unknown>): MeshObject {
  const o = fromStoredMeshObject(getJson<unknown>(e, 'd'));
  const l = linkStateOf(e);
  return l ? applyLinkState(o, l) : o;
}

/** Bring the stored forms kept apart (`dref`) into their rows, in memory. */
async function inflateRows<T extends Record<string, unknown>>(rows: T[]): Promise<T[]> {
  await mapLimit(
    rows.filter((e) => typeof e.dref === 'string' && e.dn === undefined),
    4,
    async (e) => {
      putJsonText(e as Record<string, unknown>, 'd', await getOverflow(String(e.dref)));
    },
  );
  return rows;
}

/** Feed entries as stored (states in their stored form, see lib/mesh/codec.ts) to entries; kept-apart states are read. */
async function feedEntries(e: Record<string, unknown>): Promise<FeedEntry[]> {
  const entries = getJson<(FeedEntry | { id: string; objectType: string; ref: string; x?: string })[]>(e, 'e') ?? [];
  const out: FeedEntry[] = [];
  for (const en of entries) {
    if ('ref' in en)
      out.push({ id: en.id, objectType: en.objectType, state: fromStoredMeshObject(JSON.parse(await getOverflow(en.ref))), ...(en.x ? { x: en.x } : {}) });
    else {
      if ('state' in en) en.state = fromStoredMeshObject(en.state);
      else if ('link' in en) en.link = linkStateFromText(en.link as unknown as { l?: Record<string, string>; p?: string[]; u?: string });
      out.push(en);
    }
  }
  return out;
}

/** A feed link entry's `link` as stored ({@link linkText}'s form) to a {@link LinkState}. */
function linkStateFromText(x: { l?: Record<string, string>; p?: string[]; u?: string }): LinkState {
  return { links: x.l ?? {}, ...(x.p?.length ? { provisioned: x.p } : {}), updatedOn: String(x.u ?? '') };
}

/** One mesh object, or null. */
export async function getMeshObject(id: string): Promise<MeshObject | null> {
  if (!/^[0-9a-f]/i.test(id)) return null;
  const pk = meshPartition(id);
  const client = await meshTable(pk);
  try {
    const [row] = await inflateRows([await getEntity<Record<string, unknown>>(client, pk, id.toLowerCase())]);
    return fromMeshEntity(row);
  } catch (err) {
    if (isStatus(err, 404)) return null;
    throw err;
  }
}

/** RowKey comparisons per query (Azure Table Storage allows at most 15 discrete comparisons in a filter). */
const IDS_PER_QUERY = 14;

/**
 * Several mesh objects by id (missing ones are absent from the map). One query per partition and 14 ids
 * (`RowKey eq .. or ..`) instead of a point read each: a delta of 1,000 objects is about 80 requests, not 1,000.
 */
export async function getMeshObjects(ids: Iterable<string>): Promise<Map<string, MeshObject>> {
  const out = new Map<string, MeshObject>();
  await queryByIds(ids, undefined, async (rows, wanted) => {
    for (const e of await inflateRows(rows)) {
      const id = wanted.get(String(e.rowKey));
      if (id !== undefined) out.set(id, fromMeshEntity(e));
    }
  });
  return out;
}

/**
 * Which of these mesh ids exist, as given: the same queries as {@link getMeshObjects} with only the row keys
 * selected (nothing decoded or held but the ids). An export's deletes step asks this of every object its
 * target holds: at a million, fetching the whole objects took minutes and gigabytes to learn that none was gone.
 */
export async function existingMeshIds(ids: Iterable<string>): Promise<Set<string>> {
  const out = new Set<string>();
  await queryByIds(ids, ['RowKey'], async (rows, wanted) => {
    for (const e of rows) {
      const id = wanted.get(String(e.rowKey));
      if (id !== undefined) out.add(id);
    }
  });
  return out;
}

/** The batched id queries of {@link getMeshObjects}: each query's rows with its ids (lower-cased -> as given). */
async function queryByIds(
  ids: Iterable<string>,
  select: string[] | undefined,
  take: (rows: Record<string, unknown>[], wanted: Map<string, string>) => Promise<void>,
): Promise<void> {
  const byPk = new Map<string, string[]>();
  for (const raw of new Set(ids)) {
    if (!/^[0-9a-f]/i.test(raw)) continue;
    const pk = meshPartition(raw);
    const list = byPk.get(pk);
    if (list) list.push(raw);
    else byPk.set(pk, [raw]);
  }
  const queries: { pk: string; ids: string[] }[] = [];
  for (const [pk, list] of byPk) for (let i = 0; i < list.length; i += IDS_PER_QUERY) queries.push({ pk, ids: list.slice(i, i + IDS_PER_QUERY) });
  await mapLimit(queries, 8, async ({ pk, ids: some }) => {
    const wanted = new Map(some.map((id) => [id.toLowerCase(), id]));
    const filter = `PartitionKey eq '${pk}' and (${[...wanted.keys()].map((id) => `RowKey eq ${odata(id)}`).join(' or ')})`;
    const rows: Record<string, unknown>[] = [];
    for await (const e of listEntities<Record<string, unknown>>(await meshTable(pk), { queryOptions: { filter, ...(select ? { select } : {}) } })) rows.push(e);
    await take(rows, wanted);
  });
}

/**
 * Every mesh object, page by page (index builds, export planning). Optionally of one object type, one partition
 * (0-15). `consolidated`: objects with their consolidated attributes only, `contributions` and `links` left
 * empty (lib/mesh/codec.ts `fromStoredMeshObjectConsolidated`: the read model's load and the join index's scan).
 */
export async function* iterateMesh(objectType?: string, partition?: number, form: 'whole' | 'consolidated' = 'whole'): AsyncGenerator<MeshObject[]> {
  const decode = form === 'consolidated' ? fromStoredMeshObjectConsolidated : fromStoredMeshObject;
  for (const pk of partition === undefined ? MESH_PARTITIONS : [MESH_PARTITIONS[partition]]) {
    const client = await meshTable(pk);
    // The table holds mesh rows only: every partition of it.
    const queryOptions = objectType ? { filter: `objectType eq ${odata(objectType)}` } : {};
    for await (const page of listEntities<Record<string, unknown>>(client, { queryOptions }).byPage({ maxPageSize: 1000 })) {
      yield (await inflateRows(page)).map((e) => {
        const o = decode(getJson<unknown>(e, 'd'));
        const l = linkStateOf(e);
        // The consolidated form has no links: only the row's updatedOn is taken from its link state.
        return l ? applyLinkState(o, l, form === 'whole') : o;
      });
    }
  }
}

/**
 * Every mesh object of a type with its row's ETag, page by page over the 16 partitions or one (a full export's scope
 * step: lib/sync/export/exportRun.ts keeps them for its pages, and its link writes start from these ETags).
 */
export async function* iterateMeshRows(
  objectType: string,
  partition?: number,
): AsyncGenerator<{ doc: MeshObject; etag: string; text: string; link?: LinkState }[]> {
  for (const pk of partition === undefined ? MESH_PARTITIONS : [MESH_PARTITIONS[partition]]) {
    const client = await meshTable(pk);
    const queryOptions = { filter: `objectType eq ${odata(objectType)}` };
    for await (const page of listEntities<Record<string, unknown>>(client, { queryOptions }).byPage({ maxPageSize: 1000 }))
      yield (await inflateRows(page)).map((e) => {
        // The stored form's text as read (a caller keeping it need not encode the object again), the link state beside it.
        const text = getJsonText(e, 'd') ?? 'null';
        const link = linkStateOf(e);
        const doc = fromStoredMeshObject(JSON.parse(text));
        return { doc: link ? applyLinkState(doc, link) : doc, etag: String(e.etag), text, ...(link ? { link } : {}) };
      });
  }
}

export interface MeshWrite {
  upserts: MeshObject[];
  /**
   * Objects to delete. With `last` (its last live state: what it was before its last contributor left), the
   * object becomes a tombstone (lib/mesh/tombstones.ts), written before its row is deleted.
   */
  deletes: { id: string; objectType: string; last?: MeshObject }[];
  /** The run and connector whose import deletes the objects (recorded on their tombstones). */
  deletedBy?: { run: string; connector: string };
  /** Ids among `upserts` brought back from their tombstones: the tombstones go once the rows are written. */
  revived?: readonly string[];
  /** Ids among `upserts` the writer knows are not stored yet: inserted, not upserted (cheaper in Azurite). */
  fresh?: ReadonlySet<string>;
  /** Ids among `upserts` the writer knows are stored: replaced, not upserted. */
  stored?: ReadonlySet<string>;
  /** The connector whose export writes these states (see {@link FeedEntry}). */
  exportOf?: string;
  /**
   * Called with each upsert's stored form (lib/mesh/codec.ts) as it is encoded for the write, so a caller that
   * keeps stored forms (the engine's objects waiting for a reference target) does not encode them again.
   */
  encoded?: (o: MeshObject, text: string) => void;
}

/**
 * Commit mesh changes: the rows (upserts and deletes, batched per partition), then one feed append with every
 * new state and tombstone. Safe to repeat (upserts; deleting a missing row is ignored). Returns the last
 * sequence number appended (0 when there was nothing to write).
 */
export async function commitMeshWrite(w: MeshWrite): Promise<number> {
  if (!w.upserts.length && !w.deletes.length) return 0;
  // Each state is encoded once, for its row and for its feed entry (without the connectors' resolution of
  // their references, see encodeMeshTexts); the caller may keep the row's text (w.encoded).
  const both = w.upserts.map(encodeMeshTexts);
  const texts = both.map((t) => t.row);
  if (w.encoded) w.upserts.forEach((o, i) => w.encoded!(o, texts[i]));
  // Objects too large for a row (a group of many members) are kept apart first: a row never names a text
  // that is not stored yet.
  const overflow = new Map<number, string>();
  for (let i = 0; i < texts.length; i++) if (texts[i].length > OVERFLOW_OVER) overflow.set(i, await putOverflow(texts[i]));
  const actions: TransactionAction[] = w.upserts.map((o, i) => {
    const e = toMeshEntity(o, texts[i], overflow.get(i));
    if (w.fresh?.has(o.id)) return ['create', e];
    return w.stored?.has(o.id) ? ['update', e, 'Replace'] : ['upsert', e, 'Replace'];
  });
  // Tombstones land with the live rows, before the rows they stand for are deleted: a crash in between leaves
  // both (the live object wins), never neither.
  const tombs = tombstonesOf(w);
  await Promise.all([submitBatched(meshTable, actions), putTombstones(tombs)]);
  await deleteRows(w.deletes.map((d) => d.id));
  if (w.revived?.length) await deleteTombstones(w.revived);
  if (tombs.length || w.revived?.length)
    noteTombstones(
      tombs.map((t) => t.state),
      w.revived ?? [],
    );
  const entries: FeedEntry[] = [
    ...w.upserts.map((o): FeedEntry => ({ id: o.id, objectType: o.objectType, state: o, ...(w.exportOf ? { x: w.exportOf } : {}) })),
    ...w.deletes.map((d): FeedEntry => ({ id: d.id, objectType: d.objectType, deleted: true })),
  ];
  const entryTexts: string[] = [
    ...w.upserts.map((o, i) => {
      const ref = overflow.get(i);
      const head = `{"id":${JSON.stringify(o.id)},"objectType":${JSON.stringify(o.objectType)},${w.exportOf ? `"x":${JSON.stringify(w.exportOf)},` : ''}`;
      return ref ? `${head}"ref":${JSON.stringify(ref)}}` : `${head}"state":${both[i].feed}}`;
    }),
    ...w.deletes.map((d, i) => JSON.stringify(entries[w.upserts.length + i])),
  ];
  return appendFeedText(entryTexts, entries, w.exportOf);
}

/**
 * Change the links of mesh objects as they are stored now, not as a caller loaded them earlier: each is read
 * with its ETag, `patch` changes its links and provisioned connectors (false: nothing to write), and its link
 * state ({@link LinkState}: the links, the provisioned connectors, updatedOn) is merged into its row as the
 * column `lk` only if no other writer wrote the row since; a conflict reads it again and patches again. The
 * stored form `d` is not written again: a link is a few dozen bytes where the whole object is hundreds. Then
 * one feed append with a link entry per object. An export records its links so: two exports (to two targets)
 * or an import writing the same objects at the same time each keep what the other wrote. Objects that are gone
 * are skipped. `patch` may change only `links`, `provisioned` and `updatedOn`. Returns the written states.
 */
export async function patchMeshLinks(
  ids: Iterable<string>,
  patch: (doc: MeshObject) => boolean,
  exportOf?: string,
  known?: (id: string) => { doc: MeshObject; etag: string } | undefined,
): Promise<MeshObject[]> {
  const written = new Map<string, MeshObject>();
  /** The link text each written row got (its feed entry carries the same). */
  const linkTexts = new Map<string, string>();
  let todo = [...new Set(ids)];
  for (let attempt = 0; todo.length; attempt++) {
    const read: { doc: MeshObject; etag: string }[] = [];
    // `known`: a copy of the object with the ETag the caller read it with, taken instead of a read on the first
    // attempt (the write is conditional on that ETag: if anybody wrote it since, the conflict reads it again).
    const unread: string[] = [];
    for (const id of todo) {
      const k = attempt === 0 ? known?.(id) : undefined;
      if (k) read.push(k);
      else unread.push(id);
    }
    await queryByIds(unread, undefined, async (rows) => {
      for (const e of await inflateRows(rows)) read.push({ doc: fromMeshEntity(e), etag: String(e.etag) });
    });
    const conflicted: string[] = [];
    const byPk = new Map<string, { doc: MeshObject; etag: string }[]>();
    for (const r of read) {
      if (!patch(r.doc)) continue;
      const pk = meshPartition(r.doc.id);
      const list = byPk.get(pk);
      if (list) list.push(r);
      else byPk.set(pk, [r]);
    }
    const chunks: { pk: string; chunk: { doc: MeshObject; etag: string }[] }[] = [];
    for (const [pk, list] of byPk) for (let i = 0; i < list.length; i += 100) chunks.push({ pk, chunk: list.slice(i, i + 100) });
    await mapLimit(chunks, 4, async ({ pk, chunk }) => {
      const client = await meshTable(pk);
      const texts = chunk.map((r) => linkText(linkStateOfDoc(r.doc)));
      const actions: TransactionAction[] = chunk.map((r, i) => [
        'update',
        { partitionKey: pk, rowKey: r.doc.id, lk: texts[i], updatedOn: r.doc.updatedOn },
        'Merge',
        { etag: r.etag },
      ]);
      try {
        await submitTransaction(client, actions);
        chunk.forEach((r, i) => {
          written.set(r.doc.id, r.doc);
          linkTexts.set(r.doc.id, texts[i]);
        });
      } catch (err) {
        const conflict = isStatus(err, 412) || isStatus(err, 404) || (err instanceof Error && /UpdateConditionNotSatisfied|ResourceNotFound/.test(err.message));
        if (!conflict || attempt >= 20) throw err;
        conflicted.push(...chunk.map((r) => r.doc.id));
      }
    });
    todo = conflicted;
  }
  const states = [...written.values()];
  if (states.length) {
    const entries: FeedEntry[] = states.map((o) => ({ id: o.id, objectType: o.objectType, link: linkStateOfDoc(o), ...(exportOf ? { x: exportOf } : {}) }));
    const texts = entries.map((en) => {
      const l = (en as { link: LinkState }).link;
      return `{"id":${JSON.stringify(en.id)},"objectType":${JSON.stringify(en.objectType)},${exportOf ? `"x":${JSON.stringify(exportOf)},` : ''}"link":${linkTexts.get(en.id) ?? linkText(l)}}`;
    });
    await appendFeedText(texts, entries, exportOf);
  }
  return states;
}

/** An object's link state ({@link LinkState}). */
function linkStateOfDoc(o: MeshObject): LinkState {
  return { links: o.links, ...(o.provisioned?.length ? { provisioned: o.provisioned } : {}), updatedOn: o.updatedOn };
}

/** The tombstones of a write's deletes that carry their last state (purged `Mesh:TombstoneRetentionDays` later). */
function tombstonesOf(w: MeshWrite): Tombstone[] {
  const withState = w.deletes.filter((d) => d.last);
  if (!withState.length) return [];
  const now = new Date();
  const deletedOn = now.toISOString();
  const purgeOn = new Date(now.getTime() + Math.round(readTombstoneRetentionDays() * 86_400_000)).toISOString();
  return withState.map((d) => ({ state: d.last!, deletedOn, purgeOn, ...(w.deletedBy ? { run: w.deletedBy.run, connector: w.deletedBy.connector } : {}) }));
}

/**
 * Feed rows this process appended, by sequence number, while a reader in this process wants them
 * ({@link keepOwnFeedRows}): the reader applies them from here instead of reading back what it just wrote
 * (a bulk import writes the whole mesh again into the feed: 100,000 states read, downloaded and parsed a
 * second time). A cache only: a row not here is read from the table. A row goes when a reader has applied it
 * ({@link releaseOwnFeedRows}), and the oldest go first beyond 64 rows.
 */
const ownRows = new Map<number, FeedEntry[]>();
const OWN_ROWS_MAX = 64;
let ownRowReaders = 0;

/** A reader of this process starts (true) or stops (false) wanting the rows this process appends. */
export function keepOwnFeedRows(on: boolean): void {
  ownRowReaders = Math.max(0, ownRowReaders + (on ? 1 : -1));
  if (!ownRowReaders) ownRows.clear();
}

/** A reader applied every row up to `seq`: kept rows up to it are no longer needed. */
export function releaseOwnFeedRows(seq: number): void {
  for (const k of ownRows.keys()) if (k <= seq) ownRows.delete(k);
}

/** Called after this process appended feed rows (a tailing reader polls at once instead of at its next tick). */
const appendListeners = new Set<() => void>();

/** Register (or with `off`, remove) a callback run after every append of this process. */
export function onOwnFeedAppend(listener: () => void, off = false): void {
  if (off) appendListeners.delete(listener);
  else appendListeners.add(listener);
}

/**
 * The feed positions this process wrote, as ranges [first, last] in order (merged when they touch): a reader of
 * this process that skips its own rows can tell, at a gap left by the trim, whether only its own rows are
 * missing ({@link ownRowsThrough}). A process's rows come in runs, so the list stays short; ranges wholly before
 * the oldest position still wanted are dropped ({@link forgetOwnRowsBefore}).
 */
const ownRanges: [number, number][] = [];

function noteOwnRows(first: number, last: number): void {
  const tail = ownRanges[ownRanges.length - 1];
  if (tail && tail[1] + 1 >= first) tail[1] = Math.max(tail[1], last);
  else ownRanges.push([first, last]);
}

/** The highest position p >= `from` such that every row after `from` up to p was written by this process. */
export function ownRowsThrough(from: number): number {
  let p = from;
  for (const [first, last] of ownRanges) {
    if (last <= p) continue;
    if (first > p + 1) break;
    p = last;
  }
  return p;
}

/** Ranges of own positions wholly at or before `seq` are no longer asked about. */
export function forgetOwnRowsBefore(seq: number): void {
  let n = 0;
  while (n < ownRanges.length && ownRanges[n][1] <= seq) n++;
  if (n) ownRanges.splice(0, n);
}

function rememberOwnRow(seq: number, entries: FeedEntry[]): void {
  noteOwnRows(seq, seq);
  if (!ownRowReaders) return;
  ownRows.set(seq, entries);
  if (ownRows.size > OWN_ROWS_MAX) ownRows.delete(ownRows.keys().next().value as number);
}

async function deleteRows(ids: string[]): Promise<void> {
  if (!ids.length) return;
  try {
    await submitBatched(
      meshTable,
      ids.map((id) => ['delete', { partitionKey: meshPartition(id), rowKey: id }]),
    );
  } catch (err) {
    // A replayed page deletes rows that are already gone, which fails the whole transaction: go one by one.
    if (!isStatus(err, 404)) throw err;
    await mapLimit(ids, 8, async (id) => {
      try {
        await deleteEntity(await meshTable(meshPartition(id)), meshPartition(id), id);
      } catch (e) {
        if (!isStatus(e, 404)) throw e;
      }
    });
  }
}

/** Split entries (JSON texts) into feed rows of bounded size: the index ranges [start, end) of each row. */
function feedChunks(entries: string[]): [number, number][] {
  const rows: [number, number][] = [];
  let start = 0;
  let size = 0;
  entries.forEach((en, i) => {
    if (i > start && size + en.length > FEED_ROW_CHARS) {
      rows.push([start, i]);
      start = i;
      size = 0;
    }
    size += en.length + 1;
  });
  if (start < entries.length) rows.push([start, entries.length]);
  return rows;
}

/**
 * Append feed entries (gapless sequence, see the module comment), given as JSON texts with states in their
 * stored form (`objects`: the same entries, for readers of this process). Returns the last sequence number.
 */
async function appendFeedText(entries: string[], objects: FeedEntry[], exportOf?: string): Promise<number> {
  if (!entries.length) return 0;
  const client = await table(FEED);
  const rows = feedChunks(entries);
  // A bigger append is several transactions, each advancing the counter over its own rows.
  for (let start = 0; start < rows.length; start += FEED_ROWS_PER_TRANSACTION) {
    const part = rows.slice(start, start + FEED_ROWS_PER_TRANSACTION);
    for (let attempt = 0; ; attempt++) {
      const { seq, etag } = await readCounter(client);
      const actions: TransactionAction[] = part.map(([from, to], i) => {
        const e: Record<string, unknown> & { partitionKey: string; rowKey: string } = {
          partitionKey: FEED_PK,
          rowKey: seqKey(seq + 1 + i),
          writer: PROCESS_WRITER,
          n: to - from,
        };
        // The whole row is one export's link writes: that connector's next export skips it unread.
        if (exportOf) e.x = exportOf;
        putJsonText(e, 'e', '[' + entries.slice(from, to).join(',') + ']');
        return ['create', e];
      });
      const next = seq + part.length;
      actions.push(
        etag
          ? ['update', { partitionKey: FEED_PK, rowKey: COUNTER, seq: next }, 'Replace', { etag }]
          : ['create', { partitionKey: FEED_PK, rowKey: COUNTER, seq: next }],
      );
      try {
        await submitTransaction(client, actions);
      } catch (err) {
        // Another writer advanced the counter first: read it again and retry.
        if ((isStatus(err, 412) || isStatus(err, 409)) && attempt < 50) {
          await new Promise((r) => setTimeout(r, 5 + Math.random() * 20 * (attempt + 1)));
          continue;
        }
        throw err;
      }
      // Committed: hand the rows to this process's readers (their failures are theirs, not the append's).
      part.forEach(([from, to], i) => rememberOwnRow(seq + 1 + i, objects.slice(from, to)));
      for (const l of appendListeners) {
        try {
          l();
        } catch {
          // a reader reports its own errors
        }
      }
      if (start + FEED_ROWS_PER_TRANSACTION >= rows.length) return next;
      break;
    }
  }
  return 0;
}

async function readCounter(client: TableClient): Promise<{ seq: number; etag: string | null }> {
  try {
    const e = await getEntity<{ seq: number }>(client, FEED_PK, COUNTER);
    return { seq: Number(e.seq), etag: e.etag };
  } catch (err) {
    if (isStatus(err, 404)) return { seq: 0, etag: null };
    throw err;
  }
}

/** The last committed sequence number (0: empty feed). */
export async function currentFeedSeq(): Promise<number> {
  return (await readCounter(await table(FEED))).seq;
}

/**
 * The ETag of feed row `seq` (undefined: no such row). Feed rows are never changed once written, so it names
 * this storage's feed at that position: a read-model snapshot checks it before it is used
 * (lib/mesh/readModelSnapshot.ts).
 */
export async function feedRowTag(seq: number): Promise<string | undefined> {
  const client = await table(FEED);
  try {
    return (await getEntity(client, FEED_PK, seqKey(seq), { queryOptions: { select: ['RowKey'] } })).etag;
  } catch (err) {
    if (isStatus(err, 404)) return undefined;
    throw err;
  }
}

/**
 * Feed rows after `afterSeq`, in order, at most `limit` rows. With `skipWriter`, rows written by that writer
 * come back without entries (their `entries` is empty): a process skips its own writes cheaply; with
 * `skipExports`, so do the rows of every connector's export (their link writes). With
 * `ownFromMemory`, rows this process appended come from memory when still kept ({@link keepOwnFeedRows}),
 * the others from the table.
 */
export async function readFeed(
  afterSeq: number,
  options: { limit?: number; skipWriter?: string; ownFromMemory?: boolean; skipExports?: boolean } = {},
): Promise<FeedRow[]> {
  const client = await table(FEED);
  const limit = options.limit ?? 1000;
  const filter = `PartitionKey eq '${FEED_PK}' and RowKey gt '${seqKey(afterSeq)}' and RowKey lt '~'`;
  const out: FeedRow[] = [];
  const heads: { seq: number; writer: string; x?: string }[] = [];
  if (options.skipWriter || options.ownFromMemory || options.skipExports) {
    for await (const e of listEntities<Record<string, unknown>>(client, { queryOptions: { filter, select: ['RowKey', 'writer', 'x'] } })) {
      heads.push({ seq: Number(e.rowKey), writer: String(e.writer), ...(e.x ? { x: String(e.x) } : {}) });
      if (heads.length >= limit) break;
    }
    await mapLimit(heads, 8, async (h) => {
      // Rows of that writer, or of any export, come back without their entries.
      if (h.writer === options.skipWriter || (options.skipExports && h.x !== undefined)) {
        out.push({ seq: h.seq, writer: h.writer, entries: [] });
        return;
      }
      const kept = options.ownFromMemory && h.writer === PROCESS_WRITER ? ownRows.get(h.seq) : undefined;
      if (kept) {
        out.push({ seq: h.seq, writer: h.writer, entries: kept });
        return;
      }
      const e = await getEntity<Record<string, unknown>>(client, FEED_PK, seqKey(h.seq));
      out.push({ seq: h.seq, writer: h.writer, entries: await feedEntries(e) });
    });
    return out.sort((a, b) => a.seq - b.seq);
  }
  for await (const e of listEntities<Record<string, unknown>>(client, { queryOptions: { filter } })) {
    out.push({ seq: Number(e.rowKey), writer: String(e.writer), entries: await feedEntries(e) });
    if (out.length >= limit) break;
  }
  return out;
}

/**
 * Feed holds (partition `h` of the feed's table, one row per process, RowKey the process's writer id): the feed
 * position up to which the process's readers have applied the feed, and when it said so. The feed's trim
 * (lib/sync/run/feedTrim.ts) keeps every row after the lowest hold of a live process.
 */
const HOLD_PK = 'h';

export interface FeedHold {
  writer: string;
  seq: number;
  /** When the hold was written (ISO). */
  at: string;
}

export async function writeFeedHold(seq: number, at = new Date()): Promise<void> {
  const client = await table(FEED);
  await upsertEntity(client, { partitionKey: HOLD_PK, rowKey: PROCESS_WRITER, seq, at: at.toISOString() }, 'Replace');
}

export async function readFeedHolds(): Promise<FeedHold[]> {
  const client = await table(FEED);
  const out: FeedHold[] = [];
  for await (const e of listEntities<{ seq: number; at: string }>(client, { queryOptions: { filter: `PartitionKey eq '${HOLD_PK}'` } })) {
    out.push({ writer: e.rowKey!, seq: Number(e.seq), at: String(e.at) });
  }
  return out;
}

export async function deleteFeedHold(writer: string): Promise<void> {
  const client = await table(FEED);
  try {
    await deleteEntity(client, HOLD_PK, writer);
  } catch (err) {
    if (!isStatus(err, 404)) throw err;
  }
}

/** The oldest feed rows before `beforeSeq`, oldest first, at most `limit`: their position and when they were written. */
export async function oldestFeedRows(beforeSeq: number, limit: number): Promise<{ seq: number; at: number }[]> {
  const client = await table(FEED);
  const out: { seq: number; at: number }[] = [];
  const filter = `PartitionKey eq '${FEED_PK}' and RowKey lt '${seqKey(beforeSeq)}'`;
  for await (const e of listEntities<Record<string, unknown>>(client, { queryOptions: { filter, select: ['RowKey', 'Timestamp'] } })) {
    out.push({ seq: Number(e.rowKey), at: Date.parse(String(e.timestamp)) });
    if (out.length >= limit) break;
  }
  return out;
}

/** The position of the oldest feed row (undefined: the feed has no row). */
export async function oldestFeedSeq(): Promise<number | undefined> {
  return (await oldestFeedRows(Number.MAX_SAFE_INTEGER, 1))[0]?.seq;
}

/** Delete feed rows (a row already gone is no error: two processes may trim at once). */
export async function deleteFeedRows(seqs: number[]): Promise<void> {
  const client = await table(FEED);
  try {
    await submitBatched(
      client,
      seqs.map((s) => ['delete', { partitionKey: FEED_PK, rowKey: seqKey(s) }]),
    );
  } catch (err) {
    if (!isStatus(err, 404)) throw err;
    await mapLimit(seqs, 8, async (s) => {
      try {
        await deleteEntity(client, FEED_PK, seqKey(s));
      } catch (e) {
        if (!isStatus(e, 404)) throw e;
      }
    });
  }
}

/**
 * Thrown by a feed reader that finds rows missing right after its position: the trim removed them while the
 * reader was away longer than the feed keeps rows for it. The reader loads again from the mesh.
 */
export class FeedGapError extends Error {
  constructor(
    readonly after: number,
    readonly next: number,
  ) {
    super(`The mesh change feed has no rows between position ${after} and ${next} (trimmed while this reader was behind).`);
    this.name = 'FeedGapError';
  }
}
