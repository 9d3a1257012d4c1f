import path from 'node:path';

/**
 * Azurite's table store made to scale with the number of entities. Loaded into the Azurite table process
 * (never into the service) before the store is created: see {@link installTableIndex}.
 *
 * Azurite keeps a table's entities in a LokiJS collection with binary indices on PartitionKey and RowKey.
 * Three of its paths cost time in proportion to the whole table, for every request:
 * - every insert, update and delete splices both binary indices (a memmove of the index arrays: at
 *   1,000,000 entities about a millisecond per write, so a million-row import is quadratic);
 * - a point read or write (`findOne({ PartitionKey, RowKey })`) narrows by the PartitionKey index and then
 *   scans the whole partition for the RowKey;
 * - a query page scans the whole collection with the filter and sorts every match before taking 1,000: a
 *   million-row table read page by page is a thousand full scans and sorts.
 *
 * Here each entity collection gets its own index instead: per partition a Map from RowKey to the entity and a
 * sorted RowKey list (built when a query first asks for it, then merged with the keys added and removed since
 * at each query), and a sorted list of partition keys. Point
 * reads are two Map lookups; a query visits entities in (PartitionKey, RowKey) order from its continuation,
 * only the partitions and RowKey ranges its filter allows, evaluates Azurite's own filter function on each
 * and stops after one more match than the page holds. Loki's binary indices are dropped from entity
 * collections (nothing reads them any more), so an insert no longer splices anything, and an update keeps
 * the entity in its place instead of removing and appending it.
 *
 * The answers are Azurite's: the same filter function decides what matches, the order is the order its sort
 * produced, and the continuation keys are computed by Azurite's own code. The narrowing by the filter only
 * ever visits a superset of the matches: it reads PartitionKey and RowKey comparisons from the terms of a
 * filter that is a conjunction (no `or` at its top level, no double-quoted string), each term without `or` and
 * `not` (where every comparison is a necessary condition), or a disjunction of equalities of one key (the
 * engine's batched reads `PartitionKey eq 'p' and (RowKey eq 'a' or RowKey eq 'b' ...)`, which otherwise scanned
 * the whole table for each batch: at a million identities, most of Azurite's time in an import).
 */

/** An Azurite table entity as stored in LokiJS. */
export interface StoredEntity {
  PartitionKey: string;
  RowKey: string;
  $loki?: number;
  meta?: unknown;
}

/** A range of strings: bounds compared with `<` and `>`, as Azurite's sort compares keys. */
export interface KeyRange {
  lo?: string;
  loInclusive?: boolean;
  hi?: string;
  hiInclusive?: boolean;
}

/** What a filter says about the keys of the entities it can match (omitted: any). */
export interface KeyConstraints {
  partitionKey: KeyRange;
  rowKey: KeyRange;
  /** When set, the only PartitionKeys that can match, in order, distinct (`(PartitionKey eq 'a' or ...)`). */
  partitionKeyIn?: string[];
  /** When set, the only RowKeys that can match, in order, distinct (a batched read by RowKey). */
  rowKeyIn?: string[];
}

/** The first position at or after `from` whose key is not below `key` (`sorted` in order). */
function lowerBound(sorted: readonly string[], key: string, from = 0): number {
  let lo = from;
  let hi = sorted.length;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if (sorted[mid] < key) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

function startOf(sorted: readonly string[], r: KeyRange): number {
  if (r.lo === undefined) return 0;
  const i = lowerBound(sorted, r.lo);
  return !r.loInclusive && sorted[i] === r.lo ? i + 1 : i;
}

function beyond(key: string, r: KeyRange): boolean {
  return r.hi !== undefined && (r.hiInclusive ? key > r.hi : key >= r.hi);
}

/**
 * One partition: its entities by RowKey, and its RowKeys in order once a query has asked for them. The order
 * is kept lazily: a key added out of order waits in `pending` and a removed one stays in `sorted` as `stale`
 * (a scan skips keys whose row is gone) until the next query merges them in one pass, O(n + k log k). Splicing
 * each key in as it came cost O(n) per insert: the history partitions (random mesh ids, a row per change, read
 * by range between pages) made that 18 % of Azurite's time in a million-person HR import, and quadratic.
 */
class Partition {
  readonly rows = new Map<string, StoredEntity>();
  /** The RowKeys in order (with the stale ones); null until a query needs them. */
  private sorted: string[] | null = null;
  /** Keys added since the last merge that are not in `sorted`. */
  private readonly pending = new Set<string>();
  /** Keys in `sorted` whose rows were removed since the last merge. */
  private readonly stale = new Set<string>();

  sortedKeys(): string[] {
    if (!this.sorted) this.sorted = [...this.rows.keys()].sort(compareKeys);
    else if (this.pending.size || this.stale.size) this.merge(this.sorted);
    return this.sorted!;
  }

  /** `key` has just been added to `rows` (it was not there). */
  keyAdded(key: string): void {
    const s = this.sorted;
    if (!s || this.stale.delete(key)) return;
    if (!this.pending.size && (!s.length || s[s.length - 1] < key)) s.push(key);
    else this.pending.add(key);
  }

  /** `key` has just been removed from `rows`. */
  keyRemoved(key: string): void {
    if (!this.sorted || this.pending.delete(key)) return;
    this.stale.add(key);
  }

  private merge(sorted: string[]): void {
    const stale = this.stale;
    if (this.pending.size + stale.size <= 32) {
      // A few (a query after each write): spliced in place, a memmove each, no new array.
      for (const key of stale) {
        const i = lowerBound(sorted, key);
        if (sorted[i] === key) sorted.splice(i, 1);
      }
      for (const key of this.pending) sorted.splice(lowerBound(sorted, key), 0, key);
      this.pending.clear();
      stale.clear();
      return;
    }
    const add = [...this.pending].sort(compareKeys);
    const out: string[] = new Array(sorted.length + add.length);
    let k = 0;
    const copy = (from: number, to: number) => {
      if (stale.size) {
        for (let j = from; j < to; j++) if (!stale.has(sorted[j])) out[k++] = sorted[j];
      } else for (let j = from; j < to; j++) out[k++] = sorted[j];
    };
    let i = 0;
    for (const a of add) {
      // The run of kept keys before `a`, found by binary search and copied without comparing each.
      const lo = lowerBound(sorted, a, i);
      copy(i, lo);
      i = lo;
      out[k++] = a;
    }
    copy(i, sorted.length);
    out.length = k;
    this.sorted = out;
    this.pending.clear();
    stale.clear();
  }
}

/** One table's entities by (PartitionKey, RowKey), with ordered scans. */
export class TableIndex {
  private readonly partitions = new Map<string, Partition>();
  private partitionKeys: string[] | null = null;

  get(partitionKey: string, rowKey: string): StoredEntity | undefined {
    return this.partitions.get(partitionKey)?.rows.get(rowKey);
  }

  add(e: StoredEntity): void {
    let p = this.partitions.get(e.PartitionKey);
    if (!p) {
      this.partitions.set(e.PartitionKey, (p = new Partition()));
      this.partitionKeys = null;
    }
    const known = p.rows.has(e.RowKey);
    p.rows.set(e.RowKey, e);
    if (!known) p.keyAdded(e.RowKey);
  }

  /** Forget `e` (only if it is the entity held for its keys: a stale object never removes a newer one). */
  remove(e: StoredEntity): void {
    const p = this.partitions.get(e.PartitionKey);
    if (!p || p.rows.get(e.RowKey) !== e) return;
    p.rows.delete(e.RowKey);
    if (!p.rows.size) {
      this.partitions.delete(e.PartitionKey);
      this.partitionKeys = null;
    } else p.keyRemoved(e.RowKey);
  }

  replace(next: StoredEntity, previous: StoredEntity): void {
    // An update keeps its keys: the entity changes in its map, the ordered lists stay as they are.
    const p = this.partitions.get(previous.PartitionKey);
    if (p && next.PartitionKey === previous.PartitionKey && next.RowKey === previous.RowKey && p.rows.get(previous.RowKey) === previous) {
      p.rows.set(next.RowKey, next);
      return;
    }
    this.remove(previous);
    this.add(next);
  }

  get size(): number {
    let n = 0;
    for (const p of this.partitions.values()) n += p.rows.size;
    return n;
  }

  /**
   * The entities within `keys`, in (PartitionKey, RowKey) order, from the continuation `from`: entities of
   * partitions after `from.partitionKey`, and of that partition those with a RowKey at or after
   * `from.rowKey` (all of it when `from.rowKey` is undefined), as Azurite's continuation predicate says.
   */
  *scan(keys: KeyConstraints, from: { partitionKey?: string; rowKey?: string } = {}): Generator<StoredEntity> {
    if (!this.partitionKeys) this.partitionKeys = [...this.partitions.keys()].sort(compareKeys);
    const pks = keys.partitionKeyIn ?? this.partitionKeys;
    let i = startOf(pks, keys.partitionKey);
    if (from.partitionKey !== undefined) i = Math.max(i, lowerBound(pks, from.partitionKey));
    for (; i < pks.length; i++) {
      const pk = pks[i];
      if (beyond(pk, keys.partitionKey)) return;
      const p = this.partitions.get(pk);
      if (!p) continue;
      const rks = keys.rowKeyIn ?? p.sortedKeys();
      let j = startOf(rks, keys.rowKey);
      if (pk === from.partitionKey && from.rowKey !== undefined) j = Math.max(j, lowerBound(rks, from.rowKey));
      for (; j < rks.length; j++) {
        const rk = rks[j];
        if (beyond(rk, keys.rowKey)) break;
        const e = p.rows.get(rk);
        if (e) yield e;
      }
      // The generator's consumer may have changed the index meanwhile (it does not: queries are synchronous).
      if (!keys.partitionKeyIn && this.partitionKeys !== pks) return;
    }
  }
}

const compareKeys = (a: string, b: string): number => (a < b ? -1 : a > b ? 1 : 0);

function narrowInto(r: KeyRange, op: string, value: string): void {
  const lo = () => {
    const inc = op === 'ge' || op === 'eq';
    if (r.lo === undefined || value > r.lo || (value === r.lo && !inc)) {
      r.lo = value;
      r.loInclusive = inc;
    }
  };
  const hi = () => {
    const inc = op === 'le' || op === 'eq';
    if (r.hi === undefined || value < r.hi || (value === r.hi && !inc)) {
      r.hi = value;
      r.hiInclusive = inc;
    }
  };
  if (op === 'eq') {
    lo();
    hi();
  } else if (op === 'ge' || op === 'gt') lo();
  else if (op === 'le' || op === 'lt') hi();
}

/**
 * `bare` (a filter with its string literals replaced) split at the operator `word` (`and`, `or`) outside
 * parentheses; null when parentheses do not balance.
 */
function splitTop(bare: string, word: 'and' | 'or'): string[] | null {
  const parts: string[] = [];
  let depth = 0;
  let start = 0;
  const re = new RegExp(`^${word}(?=[\\s(])`, 'i');
  for (let i = 0; i < bare.length; i++) {
    const ch = bare[i];
    if (ch === '(') depth++;
    else if (ch === ')') {
      if (--depth < 0) return null;
    } else if (depth === 0 && (i === 0 || /[\s)]/.test(bare[i - 1])) && re.test(bare.slice(i, i + word.length + 1))) {
      parts.push(bare.slice(start, i));
      start = i + word.length;
    }
  }
  if (depth !== 0) return null;
  parts.push(bare.slice(start));
  return parts;
}

/** `s` without the parentheses that enclose all of it. */
function unwrap(s: string): string {
  for (;;) {
    const t = s.trim();
    if (!t.startsWith('(') || !t.endsWith(')')) return t;
    const inner = t.slice(1, -1);
    // `(a) and (b)` starts and ends with parentheses that are not one pair.
    if (splitTop(inner, 'and') === null) return t;
    s = inner;
  }
}

const distinctSorted = (values: string[]): string[] => [...new Set(values)].sort(compareKeys);

/**
 * The key ranges an OData filter confines its matches to. Only a conjunction is read (a filter with `or` at its
 * top level, or with a double-quoted string, gives no constraint: the scan then visits everything, in order).
 * Each of its terms that has no `or` and no `not` gives its PartitionKey and RowKey comparisons; a term that is
 * a disjunction of equalities of one key (`(RowKey eq 'a' or RowKey eq 'b')`: the engine's batched reads) gives
 * the list of the only values that key can take; any other term constrains nothing. Typed literals
 * (`guid'...'`, `datetime'...'`) and comparisons written the other way round constrain nothing.
 */
export function keyConstraints(filter: string | undefined): KeyConstraints {
  const out: KeyConstraints = { partitionKey: {}, rowKey: {} };
  if (!filter || filter.includes('"')) return out;
  const literals: string[] = [];
  const bare = filter.replace(/([A-Za-z]*)'((?:[^']|'')*)'/g, (_m, prefix: string, body: string) => {
    if (prefix) return ' typed ';
    literals.push(body.replace(/''/g, "'"));
    return ` \u0000${literals.length - 1}\u0000 `;
  });
  if ((splitTop(bare, 'or')?.length ?? 0) !== 1) return out;
  const terms = splitTop(bare, 'and');
  if (!terms) return out;
  for (const raw of terms) {
    const term = unwrap(raw);
    if (/\bnot\b/i.test(term)) continue;
    if (/\bor\b/i.test(term)) {
      const alternatives = splitTop(term, 'or') ?? [];
      const eq = alternatives.map((a) => /^(PartitionKey|RowKey)\s+eq\s+\u0000(\d+)\u0000$/i.exec(unwrap(a)));
      const name = eq[0]?.[1];
      if ((name !== 'PartitionKey' && name !== 'RowKey') || !eq.every((m) => m?.[1] === name)) continue;
      const values = distinctSorted(eq.map((m) => literals[Number(m![2])]));
      const field = name === 'PartitionKey' ? 'partitionKeyIn' : 'rowKeyIn';
      const known = out[field];
      out[field] = known ? values.filter((v) => known.includes(v)) : values;
      continue;
    }
    const re = /(?:^|[\s(])(PartitionKey|RowKey)\s+(eq|ne|ge|gt|le|lt)\s+\u0000(\d+)\u0000/gi;
    for (let m = re.exec(term); m; m = re.exec(term)) {
      const [, name, op] = m;
      if (name !== 'PartitionKey' && name !== 'RowKey') continue;
      narrowInto(name === 'PartitionKey' ? out.partitionKey : out.rowKey, op.toLowerCase(), literals[Number(m[3])]);
    }
  }
  return out;
}

interface LokiCollectionLike {
  data: StoredEntity[];
  binaryIndices: Record<string, unknown>;
  on(event: string, listener: (...args: unknown[]) => void): void;
  update(doc: StoredEntity): StoredEntity;
}

interface QueryResponse {
  nextPartitionKeyResponse?: string;
  nextRowKeyResponse?: string;
}

/** The parts of Azurite's LokiTableMetadataStore this module replaces or calls (Azurite 3.x). */
interface StoreLike {
  getEntityCollection(account: string, table: string, context: unknown): LokiCollectionLike;
  getMaxResultsOption(queryOptions: unknown): number;
  adjustQueryResultforTop(result: StoredEntity[], maxResults: number): QueryResponse;
  decodeContinuationHeader(input?: string): string | undefined;
  encodeIfMatch(ifMatch?: string): string | undefined;
  transactionRollbackTheseEntities: StoredEntity[];
}

const INDEX = Symbol('meshsync.tableIndex');
type Indexed = LokiCollectionLike & { [INDEX]?: TableIndex };

/** The collection's index, built on first use from its entities (after a load from disk: one pass). */
function indexOf(coll: Indexed): TableIndex {
  let ix = coll[INDEX];
  if (ix) return ix;
  ix = new TableIndex();
  for (const e of coll.data) ix.add(e);
  coll.binaryIndices = {};
  const own = ix;
  coll.on('insert', (doc) => {
    for (const e of Array.isArray(doc) ? (doc as StoredEntity[]) : [doc as StoredEntity]) own.add(e);
  });
  coll.on('update', (next, previous) => own.replace(next as StoredEntity, previous as StoredEntity));
  coll.on('delete', (doc) => own.remove(doc as StoredEntity));
  coll[INDEX] = ix;
  return ix;
}

let installed = false;

/**
 * Patches Azurite's table store class (from the Azurite package at `azuriteRoot`, default: the one this
 * project depends on). Idempotent. Must run in the Azurite table process before its server starts.
 */
export function installTableIndex(azuriteRoot = path.dirname(require.resolve('azurite/package.json'))): void {
  if (installed) return;
  installed = true;
  const persistence = path.join(azuriteRoot, 'dist/src/table/persistence');

  const Store = (require(path.join(persistence, 'LokiTableMetadataStore.js')) as { default: { prototype: Record<string, unknown> } }).default;
  const Generator = (
    require(path.join(persistence, 'LokiTableStoreQueryGenerator.js')) as {
      default: { generateQueryForPersistenceLayer(queryOptions: unknown, context: unknown): (e: StoredEntity) => boolean };
    }
  ).default;

  const proto = Store.prototype as unknown as StoreLike & Record<string, unknown>;
  const originalGetCollection = proto.getEntityCollection;
  const originalQuery = proto.queryTableEntities as (this: StoreLike, ...args: unknown[]) => Promise<unknown>;
  const originalUpdate = proto.updateTableEntity as (this: StoreLike, ...args: unknown[]) => Promise<unknown>;

  // Point reads and writes: every store method asks `findOne({ PartitionKey, RowKey })` of the collection
  // getEntityCollection gave it; that collection's own findOne answers from the index.
  proto.getEntityCollection = function (this: StoreLike, account: string, table: string, context: unknown) {
    const coll = originalGetCollection.call(this, account, table, context) as Indexed & { findOne: (q: Record<string, unknown>) => StoredEntity | null };
    if (!coll[INDEX]) {
      const ix = indexOf(coll);
      const plain = coll.findOne;
      coll.findOne = (q) => {
        const keys = Object.keys(q);
        if (keys.length === 2 && typeof q.PartitionKey === 'string' && typeof q.RowKey === 'string') return ix.get(q.PartitionKey, q.RowKey) ?? null;
        return plain.call(coll, q);
      };
    }
    return coll;
  };

  proto.queryTableEntities = async function (
    this: StoreLike,
    context: unknown,
    account: string,
    table: string,
    queryOptions: { filter?: string },
    nextPartitionKey?: string,
    nextRowKey?: string,
  ) {
    const from = { partitionKey: this.decodeContinuationHeader(nextPartitionKey), rowKey: this.decodeContinuationHeader(nextRowKey) };
    // A RowKey continuation without a PartitionKey is not something a client sends: Azurite's own path.
    if (from.partitionKey === undefined && from.rowKey !== undefined)
      return originalQuery.apply(this, [context, account, table, queryOptions, nextPartitionKey, nextRowKey]);
    const coll = this.getEntityCollection(account, table, context);
    const where = Generator.generateQueryForPersistenceLayer(queryOptions, context);
    const max = this.getMaxResultsOption(queryOptions);
    const result: StoredEntity[] = [];
    for (const e of indexOf(coll).scan(keyConstraints(queryOptions.filter), from)) {
      if (!where(e)) continue;
      result.push(e);
      if (result.length > max) break;
    }
    const response = this.adjustQueryResultforTop(result, max);
    return [result, response.nextPartitionKeyResponse, response.nextRowKeyResponse];
  };

  // An update replaces the entity in its place (Loki's update: a binary search on its id) instead of
  // removing it (a splice of the whole collection) and appending the new one. Same checks, same answers.
  proto.updateTableEntity = async function (
    this: StoreLike,
    context: unknown,
    table: string,
    account: string,
    entity: StoredEntity & { properties: Record<string, unknown>; lastModifiedTime: unknown },
    ifMatch: string | undefined,
    batchId: string,
  ) {
    const coll = this.getEntityCollection(account, table, context);
    const doc = indexOf(coll).get(entity.PartitionKey, entity.RowKey);
    if (!doc) return originalUpdate.apply(this, [context, table, account, entity, ifMatch, batchId]);
    const etag = this.encodeIfMatch((doc as unknown as { eTag?: string }).eTag);
    const wanted = ifMatch === undefined ? undefined : this.encodeIfMatch(ifMatch);
    if (wanted !== undefined && wanted !== '*' && wanted !== etag) return originalUpdate.apply(this, [context, table, account, entity, ifMatch, batchId]);
    if (batchId !== '') this.transactionRollbackTheseEntities.push(doc);
    entity.properties.Timestamp = entity.lastModifiedTime;
    entity.properties['Timestamp@odata.type'] = 'Edm.DateTime';
    entity.$loki = doc.$loki;
    entity.meta = doc.meta;
    coll.update(entity);
    return entity;
  };
}
