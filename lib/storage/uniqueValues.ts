import { createHash } from 'node:crypto';
import type { TableClient } from '@azure/data-tables';
import { mapLimit } from './tableUtil';
import { decodeKey, deleteEntity, encodeKey, getEntity, isStatus, listEntities, odata, submitTransaction, table } from './tables';
import { append, entriesOf, latest, type LogEntry } from './uniquePoolLog';

/**
 * Unique values repository (table `UniqueValues`): the values an outbound flow's `unique` rule handed out
 * (docs/unique-values.md). Two kinds of rows:
 *
 * - the **reservations** of a pool, as the pool's log (lib/storage/uniquePoolLog.ts: PartitionKey `l.<pool key>`,
 *   a head row and a row per page of entries): each names a normalised value, its owner (a mesh object id, or
 *   `external`: a value the target holds for an object the engine does not know), the rule and connector that
 *   reserved it, when; once released, `releasedOn` and `quarantineUntil`. Every change is appended in one
 *   transaction with the head's ETag-checked merge, decided against every entry before it: of two runs or two
 *   engine instances that want the same value at the same moment, exactly one appends it, the other reads what
 *   was added and is told who holds it. Rows of the earlier shape (one per value, PartitionKey `v.<pool key>`,
 *   RowKey the normalised value, {@link encodeKey}-encoded) are still read; the log's entry of a key replaces them.
 * - a **holding**, one per mesh object and pool: PartitionKey `h.<pool key>`, RowKey the mesh object id; the
 *   value the object keeps for life, the first candidate's value when it was chosen (`basis`: a rule with
 *   keepOnRename false chooses again when it changes), and why earlier candidates were skipped (`why`, JSON).
 *
 * Both kinds live in the pool's partitions, so a page of objects reads its holdings in a few queries and writes
 * its reservations (one page of the log) and holdings in a transaction each. Releasing an object's values (after
 * its tombstone is purged) appends them released with a quarantine and deletes its holdings; a value past its
 * quarantine is free to the next claimant; {@link sweepUniqueValues} deletes old-shape rows whose quarantine is over.
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

export type ReserveOutcome = { won: true } | { won: false; holder: Reservation };

const logPk = (pool: string) => 'l.' + encodeKey(shortPool(pool));

function entryOf(r: Reservation): LogEntry {
  const e: LogEntry = { k: r.key, o: r.owner, r: r.ruleId, c: r.connectorId, t: r.reservedOn };
  if (r.value !== r.key) e.v = r.value;
  if (r.reason) e.why = r.reason.slice(0, 1000);
  if (r.releasedOn) e.releasedOn = r.releasedOn;
  if (r.quarantineUntil) e.quarantineUntil = r.quarantineUntil;
  return e;
}

/** A reservation of the log (null: the value is free). */
function reservationOf(e: LogEntry | undefined, pool: string): Reservation | null {
  if (!e || e.o === undefined) return null;
  const r: Reservation = { pool, key: e.k, value: e.v ?? e.k, owner: e.o, ruleId: e.r ?? '', connectorId: e.c ?? '', reservedOn: e.t ?? '' };
  if (e.why) r.reason = e.why;
  if (e.releasedOn) r.releasedOn = e.releasedOn;
  if (e.quarantineUntil) r.quarantineUntil = e.quarantineUntil;
  return r;
}

/** A row of the earlier shape (a row per value) as the log's entry of its key. */
function legacyEntry(e: Record<string, unknown> & { rowKey: string }): LogEntry {
  return entryOf(toReservation(e as Entity, ''));
}

/** Append to a pool's log (lib/storage/uniquePoolLog.ts): `decide` sees the pool's reservations as its head orders them. */
async function appendTo<T>(
  pool: string,
  decide: (current: (key: string) => Reservation | null) => { write: Reservation[]; free?: string[]; result: T },
): Promise<T> {
  return append(await table(TABLE), logPk(pool), reservationPk(pool), legacyEntry, (lookup) => {
    const { write, free = [], result } = decide((key) => reservationOf(lookup(key), pool));
    return { entries: [...write.map(entryOf), ...free.map((k) => ({ k }))], result };
  });
}

/** The pool's reservations as of now (its head read, and the pages added since this process last saw them). */
async function current(pool: string): Promise<(key: string) => Reservation | null> {
  const lookup = await latest(await table(TABLE), logPk(pool), reservationPk(pool), legacyEntry);
  return (key) => reservationOf(lookup(key), pool);
}

const expiredAt = (holder: Reservation, now: Date) => !!holder.releasedOn && (!holder.quarantineUntil || holder.quarantineUntil <= now.toISOString());

/** What a claim of `r` meets: won (with a write, or none when it is already the owner's), or the holder. */
function claim(r: Reservation, holder: Reservation | null, now: Date): { write: boolean; outcome: ReserveOutcome } {
  if (!holder) return { write: true, outcome: { won: true } };
  if (holder.owner === r.owner && !holder.releasedOn) return { write: false, outcome: { won: true } };
  // Past its quarantine, or the object itself back (restored from its tombstone) reclaiming its own released value.
  if (expiredAt(holder, now) || (holder.releasedOn && holder.owner === r.owner)) return { write: true, outcome: { won: true } };
  return { write: false, outcome: { won: false, holder } };
}

/**
 * Reserve `r.value` in its pool for `r.owner`, appended to the pool's log in the order its head gives. Won when
 * the value is free, already this owner's (a page sent again, the other target of a shared pool), or its holder's
 * quarantine is over. Else the holder (another mesh object, `external`, or a released value still in quarantine).
 */
export async function reserveValue(r: Reservation, now = new Date()): Promise<ReserveOutcome> {
  return appendTo(r.pool, (current) => {
    const { write, outcome } = claim(r, current(r.key), now);
    return { write: write ? [r] : [], result: outcome };
  });
}

/** The reservation of a normalised value, or null. */
export async function readReservation(pool: string, key: string): Promise<Reservation | null> {
  return (await current(pool))(key);
}

/**
 * The target refused a value this owner reserved because something the engine does not know holds it there:
 * the reservation passes to {@link EXTERNAL_OWNER} with the reason (only if it is still this owner's, or free),
 * and the owner's holding of the pool goes.
 */
export async function markExternal(pool: string, key: string, owner: string, reason: string, now = new Date()): Promise<void> {
  const client = await table(TABLE);
  await appendTo(pool, (current) => {
    const base = current(key) ?? { pool, key, value: key, owner, ruleId: '', connectorId: '', reservedOn: now.toISOString() };
    if (base.owner !== owner && base.owner !== EXTERNAL_OWNER) return { write: [], result: undefined };
    const next: Reservation = { ...base, owner: EXTERNAL_OWNER, reason, reservedOn: now.toISOString() };
    delete next.releasedOn;
    delete next.quarantineUntil;
    return { write: [next], result: undefined };
  });
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
 * Reserve several values of one pool at once (keys distinct; appended to the pool's log, 100 a page): for each,
 * true when it is now its owner's, false when another holds it (the caller chooses that object's value again).
 * Other failures throw.
 */
export async function reserveAll(reservations: readonly Reservation[], now = new Date()): Promise<boolean[]> {
  const byPool = new Map<string, number[]>();
  reservations.forEach((r, i) => {
    const list = byPool.get(r.pool);
    if (list) list.push(i);
    else byPool.set(r.pool, [i]);
  });
  const out: boolean[] = reservations.map(() => false);
  for (const [pool, indexes] of byPool)
    for (let i = 0; i < indexes.length; i += 100) {
      const chunk = indexes.slice(i, i + 100);
      const won = await appendTo(pool, (current) => {
        const write: Reservation[] = [];
        const result = chunk.map((j) => {
          const c = claim(reservations[j], current(reservations[j].key), now);
          if (c.write) write.push(reservations[j]);
          return c.outcome.won;
        });
        return { write, result };
      });
      chunk.forEach((j, k) => (out[j] = won[k]));
    }
  return out;
}

/**
 * Release one value of an owner: its reservation is kept, marked released, until `quarantineDays` have passed
 * (freed at once for 0). Only a reservation that is still this owner's is touched.
 */
export async function releaseValue(pool: string, key: string, owner: string, quarantineDays: number, now = new Date()): Promise<void> {
  await appendTo(pool, (current) => {
    const r = current(key);
    if (!r || r.owner !== owner || r.releasedOn) return { write: [], result: undefined };
    if (quarantineDays <= 0) return { write: [], free: [key], result: undefined };
    const released: Reservation = {
      ...r,
      releasedOn: now.toISOString(),
      quarantineUntil: new Date(now.getTime() + quarantineDays * 86_400_000).toISOString(),
    };
    return { write: [released], result: undefined };
  });
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

/** The live reservations of a pool these owners hold (the pool's log, as of now). */
async function ownedReservations(pool: string, owners: readonly string[]): Promise<Reservation[]> {
  const client = await table(TABLE);
  await current(pool);
  const wanted = new Set(owners);
  const out: Reservation[] = [];
  for (const e of entriesOf(client, logPk(pool))) {
    const r = reservationOf(e, pool);
    if (r && wanted.has(r.owner)) out.push(r);
  }
  return out;
}

/**
 * Delete rows of the earlier shape (a row per value) whose quarantine ended before `now` (at most `budget`): the
 * number deleted. A value of the log past its quarantine is free as it is (a claimant takes it over).
 */
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
  await current(pool);
  const out: Reservation[] = [];
  for (const e of entriesOf(client, logPk(pool))) {
    const r = reservationOf(e, pool);
    if (r) out.push(r);
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
