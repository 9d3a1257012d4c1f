import { createHash } from 'node:crypto';
import type { TableClient } from '@azure/data-tables';
import { mapLimit } from './tableUtil';
import { createEntity, decodeKey, deleteEntity, encodeKey, getEntity, isStatus, listEntities, odata, submitTransaction, table, updateEntity } from './tables';

/**
 * Unique values repository (table `UniqueValues`): the values an outbound flow's `unique` rule handed out
 * (docs/unique-values.md). Two kinds of rows:
 *
 * - a **reservation**, one per value in a pool: PartitionKey `v.<pool key>`, RowKey the normalised value
 *   (both {@link encodeKey}-encoded, so `/`, `\`, `#`, `?` and control characters are allowed in values). It names
 *   its owner (a mesh object id, or `external`: a value the target holds for an object the engine does not
 *   know), the rule and connector that reserved it, when; once released, `releasedOn` and `quarantineUntil`.
 *   A reservation is made by a conditional insert ({@link reserveValue}): of two runs or two engine instances
 *   that want the same value at the same moment, exactly one insert succeeds, the other is told who holds it.
 * - a **holding**, one per mesh object and pool: PartitionKey `h.<pool key>`, RowKey the mesh object id; the
 *   value the object keeps for life, the first candidate's value when it was chosen (`basis`: a rule with
 *   keepOnRename false chooses again when it changes), and why earlier candidates were skipped (`why`, JSON).
 *
 * Both kinds live in the pool's partitions, so a page of objects reads its holdings in a few queries and writes
 * its reservations and holdings in a transaction each (a page of 100 adds: about 10 requests, not 300).
 * Releasing an object's values (after its tombstone is purged) marks its reservations released with a
 * quarantine and deletes its holdings; {@link sweepUniqueValues} deletes reservations whose quarantine is over.
 * Nothing here knows rules or connectors beyond their ids: lib/sync/unique decides what to reserve.
 */
const TABLE = 'UniqueValues';

/** Where a unique rule's values must be unique (docs/unique-values.md). */
export type UniqueScope = 'connector' | 'targets' | 'mesh';

/** The `unique` part of an outbound FlowRule, stored with its defaults applied. */
export interface UniqueRule {
  /** Expressions tried in order; one that reads `counter` is tried for each counter value. */
  candidates: string[];
  scope: UniqueScope;
  /** scope `targets`: the connectors whose values the value must not collide with (this one included). */
  connectorIds?: string[];
  /** scope `mesh`: the mesh attribute no other mesh object may hold the value in (default the target attribute). */
  meshAttribute?: string;
  counter: { from: number; to: number };
  caseSensitive: boolean;
  keepOnRename: boolean;
  quarantineDays: number;
}

export const EXTERNAL_OWNER = 'external';
/** The longest value a unique rule hands out (a RowKey holds at most 1 KiB once encoded). */
export const MAX_UNIQUE_VALUE_LENGTH = 256;

export interface Reservation {
  pool: string;
  /** The normalised value (the key). */
  key: string;
  /** The value as handed out (its case). */
  value: string;
  /** A mesh object id, or {@link EXTERNAL_OWNER}. */
  owner: string;
  ruleId: string;
  connectorId: string;
  reservedOn: string;
  /** Why an external reservation was made (the target's refusal). */
  reason?: string;
  releasedOn?: string;
  quarantineUntil?: string;
}

/** Why a candidate was not chosen (kept with the holding, shown by explain). */
export interface SkippedCandidate {
  /** The candidate's index in the rule's list. */
  candidate: number;
  counter?: number;
  /** Null when the expression gave nothing. */
  value: string | null;
  reason: string;
}

export interface Holding {
  meshId: string;
  pool: string;
  value: string;
  key: string;
  ruleId: string;
  connectorId: string;
  /** The first candidate's value when the value was chosen. */
  basis: string;
  candidate: number;
  counter?: number;
  skipped: SkippedCandidate[];
  reservedOn: string;
  quarantineDays: number;
}

/**
 * The pool a rule's values are reserved in: `connector/<id>/<target attribute>` (scope connector), `targets/<ids>`
 * (scope targets: the rules of every connector of the list share it, whatever attribute each writes), or
 * `mesh/<attribute>` (scope mesh).
 */
export function poolOf(rule: { connectorId: string | null; targetAttribute: string | null }, unique: UniqueRule): string {
  if (unique.scope === 'targets') return `targets/${[...(unique.connectorIds ?? [])].sort().join(',')}`;
  if (unique.scope === 'mesh') return `mesh/${(unique.meshAttribute ?? rule.targetAttribute ?? '').toLowerCase()}`;
  return `connector/${rule.connectorId ?? ''}/${(rule.targetAttribute ?? '').toLowerCase()}`;
}

const reservationPk = (pool: string) => 'v.' + encodeKey(shortPool(pool));
const holdingPk = (pool: string) => 'h.' + encodeKey(shortPool(pool));
/** A pool key long enough to threaten the key size (many connectors) is shortened to a digest. */
const shortPool = (pool: string) => (pool.length <= 200 ? pool : `h.${createHash('sha256').update(pool).digest('base64url')}`);

type Entity = Record<string, unknown> & { partitionKey: string; rowKey: string; etag?: string };

function toReservation(e: Entity, pool: string): Reservation {
  // The pool is the caller's (the partition's); the key is the RowKey's; the value is kept only when it is not the key.
  const key = e.key !== undefined ? String(e.key) : decodeKey(e.rowKey);
  const r: Reservation = {
    pool,
    key,
    value: e.value !== undefined ? String(e.value) : key,
    owner: String(e.owner),
    ruleId: String(e.ruleId ?? ''),
    connectorId: String(e.connectorId ?? ''),
    reservedOn: String(e.reservedOn),
  };
  if (e.reason) r.reason = String(e.reason);
  if (e.releasedOn) r.releasedOn = String(e.releasedOn);
  if (e.quarantineUntil) r.quarantineUntil = String(e.quarantineUntil);
  return r;
}

function reservationEntity(r: Reservation): Entity {
  const e: Entity = {
    partitionKey: reservationPk(r.pool),
    rowKey: encodeKey(r.key),
    owner: r.owner,
    ruleId: r.ruleId,
    connectorId: r.connectorId,
    reservedOn: r.reservedOn,
  };
  // A reservation per value is the unique rules' one write per object: kept small (no pool, no key; the value
  // only when it differs from the normalised key, e.g. its case).
  if (r.value !== r.key) e.value = r.value;
  if (r.reason) e.reason = r.reason;
  if (r.releasedOn) e.releasedOn = r.releasedOn;
  if (r.quarantineUntil) e.quarantineUntil = r.quarantineUntil;
  return e;
}

export type ReserveOutcome = { won: true } | { won: false; holder: Reservation };

/**
 * Reserve `r.value` in its pool for `r.owner`: a conditional insert. Won when the insert succeeds, when the
 * value is already this owner's (a page sent again, the other target of a shared pool), or when its holder's
 * quarantine is over (replaced under its ETag, so two claimants of an expired value cannot both win). Else the
 * holder (another mesh object, `external`, or a released value still in quarantine).
 */
export async function reserveValue(r: Reservation, now = new Date()): Promise<ReserveOutcome> {
  const client = await table(TABLE);
  for (let attempt = 0; attempt < 3; attempt++) {
    try {
      await createEntity(client, reservationEntity(r));
      return { won: true };
    } catch (err) {
      if (!isStatus(err, 409)) throw err;
    }
    const current = await readEntity(client, reservationPk(r.pool), encodeKey(r.key));
    if (!current) continue; // swept in between: insert again
    const holder = toReservation(current, r.pool);
    if (holder.owner === r.owner && !holder.releasedOn) return { won: true };
    const expired = !!holder.releasedOn && (!holder.quarantineUntil || holder.quarantineUntil <= now.toISOString());
    // The object itself back (restored from its tombstone) reclaims its own released value.
    if (!expired && !(holder.releasedOn && holder.owner === r.owner)) return { won: false, holder };
    try {
      await updateEntity(client, reservationEntity(r), 'Replace', { etag: current.etag });
      return { won: true };
    } catch (err) {
      if (!isStatus(err, 412) && !isStatus(err, 404)) throw err;
    }
  }
  const holder = await readReservation(r.pool, r.key);
  return holder ? { won: false, holder } : { won: false, holder: { ...r, owner: EXTERNAL_OWNER, reason: 'contended' } };
}

/** The reservation of a normalised value, or null. */
export async function readReservation(pool: string, key: string): Promise<Reservation | null> {
  const e = await readEntity(await table(TABLE), reservationPk(pool), encodeKey(key));
  return e ? toReservation(e, pool) : null;
}

/**
 * The target refused a value this owner reserved because something the engine does not know holds it there:
 * the reservation passes to {@link EXTERNAL_OWNER} with the reason (only if it is still this owner's), and
 * the owner's holding of the pool goes.
 */
export async function markExternal(pool: string, key: string, owner: string, reason: string, now = new Date()): Promise<void> {
  const client = await table(TABLE);
  const current = await readEntity(client, reservationPk(pool), encodeKey(key));
  const base: Reservation = current
    ? toReservation(current, pool)
    : { pool, key, value: key, owner, ruleId: '', connectorId: '', reservedOn: now.toISOString() };
  if (current && base.owner !== owner && base.owner !== EXTERNAL_OWNER) return;
  const next: Reservation = { ...base, owner: EXTERNAL_OWNER, reason, reservedOn: now.toISOString() };
  delete next.releasedOn;
  delete next.quarantineUntil;
  try {
    if (current) await updateEntity(client, reservationEntity(next), 'Replace', { etag: current.etag });
    else await createEntity(client, reservationEntity(next));
  } catch (err) {
    if (!isStatus(err, 412) && !isStatus(err, 409) && !isStatus(err, 404)) throw err;
  }
  const holding = await readEntity(client, holdingPk(pool), encodeKey(owner));
  if (holding && String(holding.key) === key) await deleteEntity(client, holdingPk(pool), encodeKey(owner)).catch(ignore404);
}

function toHolding(e: Entity): Holding {
  return {
    meshId: String(e.meshId),
    pool: String(e.pool),
    value: String(e.value),
    key: String(e.key),
    ruleId: String(e.ruleId ?? ''),
    connectorId: String(e.connectorId ?? ''),
    basis: String(e.basis ?? ''),
    candidate: Number(e.candidate ?? 0),
    ...(e.counter !== undefined && e.counter !== null ? { counter: Number(e.counter) } : {}),
    skipped: e.why ? (JSON.parse(String(e.why)) as SkippedCandidate[]) : [],
    reservedOn: String(e.reservedOn),
    quarantineDays: Number(e.quarantineDays ?? 90),
  };
}

const IDS_PER_QUERY = 14;

/** What these mesh objects hold in a pool, by mesh object id (queries of 14 ids: the service's limit of comparisons). */
export async function readHoldings(pool: string, meshIds: readonly string[]): Promise<Map<string, Holding>> {
  const client = await table(TABLE);
  const out = new Map<string, Holding>();
  const chunks: string[][] = [];
  for (let i = 0; i < meshIds.length; i += IDS_PER_QUERY) chunks.push(meshIds.slice(i, i + IDS_PER_QUERY));
  await mapLimit(chunks, 4, async (ids) => {
    const filter = `PartitionKey eq ${odata(holdingPk(pool))} and (${ids.map((id) => `RowKey eq ${odata(encodeKey(id))}`).join(' or ')})`;
    for await (const e of listEntities<Entity>(client, { queryOptions: { filter } })) {
      const h = toHolding(e as Entity);
      out.set(h.meshId, h);
    }
  });
  return out;
}

function holdingEntity(h: Holding): Entity {
  const e: Entity = {
    partitionKey: holdingPk(h.pool),
    rowKey: encodeKey(h.meshId),
    meshId: h.meshId,
    pool: h.pool,
    value: h.value,
    key: h.key,
    ruleId: h.ruleId,
    connectorId: h.connectorId,
    basis: h.basis,
    candidate: h.candidate,
    why: JSON.stringify(h.skipped.slice(0, 20)),
    reservedOn: h.reservedOn,
    quarantineDays: h.quarantineDays,
  };
  if (h.counter !== undefined) e.counter = h.counter;
  return e;
}

/** Record (or replace) what objects hold: one transaction per pool and 100 holdings. At most 20 skipped candidates are kept. */
export async function writeHoldings(holdings: readonly Holding[]): Promise<void> {
  const client = await table(TABLE);
  const byPool = new Map<string, Holding[]>();
  for (const h of holdings) byPool.set(h.pool, [...(byPool.get(h.pool) ?? []), h]);
  for (const list of byPool.values())
    for (let i = 0; i < list.length; i += 100)
      await submitTransaction(
        client,
        list.slice(i, i + 100).map((h) => ['upsert', holdingEntity(h), 'Replace'] as const),
      );
}

/**
 * Reserve several values of one pool at once, all or nothing (one entity-group transaction per 100, keys
 * distinct): true when every insert succeeded; false when any value was taken (then nothing of that transaction
 * was inserted, and the caller reserves them one by one with {@link reserveValue}). Other failures throw.
 */
export async function reserveAll(reservations: readonly Reservation[]): Promise<boolean[]> {
  const client = await table(TABLE);
  const out: boolean[] = [];
  for (let i = 0; i < reservations.length; i += 100) {
    const chunk = reservations.slice(i, i + 100);
    try {
      await submitTransaction(
        client,
        chunk.map((r) => ['create', reservationEntity(r)] as const),
      );
      out.push(...chunk.map(() => true));
    } catch (err) {
      if (!isStatus(err, 409)) throw err;
      out.push(...chunk.map(() => false));
    }
  }
  return out;
}

/**
 * Release one value of an owner: its reservation is kept, marked released, until `quarantineDays` have passed
 * (deleted at once for 0). Only a reservation that is still this owner's is touched.
 */
export async function releaseValue(pool: string, key: string, owner: string, quarantineDays: number, now = new Date()): Promise<void> {
  const client = await table(TABLE);
  const current = await readEntity(client, reservationPk(pool), encodeKey(key));
  if (!current || String(current.owner) !== owner || current.releasedOn) return;
  try {
    if (quarantineDays <= 0) await deleteEntity(client, reservationPk(pool), encodeKey(key), { etag: current.etag });
    else
      await updateEntity(
        client,
        {
          partitionKey: reservationPk(pool),
          rowKey: encodeKey(key),
          releasedOn: now.toISOString(),
          quarantineUntil: new Date(now.getTime() + quarantineDays * 86_400_000).toISOString(),
        },
        'Merge',
        { etag: current.etag },
      );
  } catch (err) {
    if (!isStatus(err, 412) && !isStatus(err, 404)) throw err;
  }
}

/**
 * Release every value of these mesh objects in these pools (purged: they can no longer come back): each
 * reservation enters the quarantine its rule gave it (its holding's, else `quarantineOf` its pool), and the
 * holdings are deleted. Safe to repeat. The number
 * of values released.
 */
export async function releaseUniqueValues(
  meshIds: readonly string[],
  pools: readonly string[],
  now = new Date(),
  quarantineOf: (pool: string) => number = () => 90,
): Promise<number> {
  let n = 0;
  const client = await table(TABLE);
  for (const pool of pools) {
    const held = await readHoldings(pool, meshIds);
    await mapLimit([...held.values()], 8, async (h) => {
      await releaseValue(h.pool, h.key, h.meshId, h.quarantineDays, now);
      await deleteEntity(client, holdingPk(pool), encodeKey(h.meshId)).catch(ignore404);
      n++;
    });
    // Values reserved without a holding (a first candidate won): found by their owner.
    for (const r of await ownedReservations(pool, meshIds)) {
      if (r.releasedOn) continue;
      await releaseValue(pool, r.key, r.owner, quarantineOf(pool), now);
      n++;
    }
  }
  return n;
}

/** The live reservations of a pool these owners hold (a scan of the pool's partition, 14 owners per query). */
async function ownedReservations(pool: string, owners: readonly string[]): Promise<Reservation[]> {
  const client = await table(TABLE);
  const out: Reservation[] = [];
  for (let i = 0; i < owners.length; i += IDS_PER_QUERY) {
    const ids = owners.slice(i, i + IDS_PER_QUERY);
    const filter = `PartitionKey eq ${odata(reservationPk(pool))} and (${ids.map((id) => `owner eq ${odata(id)}`).join(' or ')})`;
    for await (const e of listEntities<Entity>(client, { queryOptions: { filter } })) out.push(toReservation(e as Entity, pool));
  }
  return out;
}

/** Delete reservations whose quarantine ended before `now` (at most `budget`): the number deleted. */
export async function sweepUniqueValues(now = new Date(), budget = 1000): Promise<number> {
  const client = await table(TABLE);
  const filter = `quarantineUntil lt ${odata(now.toISOString())}`;
  const expired: Entity[] = [];
  for await (const e of listEntities<Entity>(client, { queryOptions: { filter, select: ['PartitionKey', 'RowKey'] } })) {
    expired.push(e as Entity);
    if (expired.length >= budget) break;
  }
  let n = 0;
  await mapLimit(expired, 8, async (e) => {
    try {
      await deleteEntity(client, e.partitionKey, e.rowKey, e.etag ? { etag: e.etag } : undefined);
      n++;
    } catch (err) {
      if (!isStatus(err, 404) && !isStatus(err, 412)) throw err;
    }
  });
  return n;
}

/** Every reservation of a pool (tests, explain of a pool): at most `limit`. */
export async function listReservations(pool: string, limit = 10_000): Promise<Reservation[]> {
  const client = await table(TABLE);
  const out: Reservation[] = [];
  for await (const e of listEntities<Entity>(client, { queryOptions: { filter: `PartitionKey eq ${odata(reservationPk(pool))}` } })) {
    out.push(toReservation(e as Entity, pool));
    if (out.length >= limit) break;
  }
  return out;
}

async function readEntity(client: TableClient, pk: string, rk: string): Promise<Entity | null> {
  try {
    return (await getEntity<Entity>(client, pk, rk)) as Entity;
  } catch (err) {
    if (isStatus(err, 404)) return null;
    throw err;
  }
}

function ignore404(err: unknown): void {
  if (!isStatus(err, 404)) throw err;
}
