import type { TableClient } from '@azure/data-tables';
import { getEntity, isStatus, listEntities, odata, submitTransaction } from './tables';

/**
 * A pool's reservations as a log (table `UniqueValues`, docs/unique-values.md "Storage"): PartitionKey
 * `l.<pool key>`, a **head** row (RowKey `head`, `seq`: the number of pages) and one row per **page** (RowKey
 * `p.<seq>`, ten digits), each holding the entries one writer appended at once (JSON in `e0`, `e1`, ...: a
 * string property holds at most 32K characters). An entry sets a value's reservation (owner, rule, connector,
 * release and quarantine) or frees it; a later entry of a key replaces an earlier one.
 *
 * Every append is one entity-group transaction of two rows: the next page, inserted, and the head, merged with
 * `seq + 1` on the condition of the ETag this process last saw it with (the previous transaction's answer, or
 * its read). So appends to a pool are totally ordered by the head, and a writer only appends entries decided
 * against every page before its own: one whose head was stale loses the whole transaction (412; 409 for the
 * head's first insert or a page already there), reads the pages added since, and decides again. Writers of
 * one process and pool are combined: while one transaction is out, the next requests wait and go together in
 * the following one (a page of up to 100 entries). A request whose decision writes nothing (the value is
 * another's, or already the claimant's) is answered from memory at once, as of the head last seen: a refusal on
 * an older view is never a second owner. The rule, connector and time a page's entries share are written once,
 * as the page row's `r`, `c` and `t`.
 *
 * Each process keeps each pool it used in memory (read whole on first use, then kept current by its own
 * transactions' answers and by reading the pages added since when it lost a race or a reader asks for the
 * latest). Rows of the earlier shape (a row per value, PartitionKey `v.<pool key>`) are read with the pool on
 * first use; an entry of the log replaces the row of its key.
 */
export interface LogEntry {
  /** The normalised value. */
  k: string;
  /** The value as handed out, when it differs from `k`. */
  v?: string;
  /** The owner: a mesh object id, or `external`; absent: the value is free (released without quarantine, swept). */
  o?: string;
  r?: string;
  c?: string;
  /** reservedOn. */
  t?: string;
  /** Why an external reservation was made. */
  why?: string;
  releasedOn?: string;
  quarantineUntil?: string;
}

/** The view a decision is made on: the pool's entries (the log's over the old rows'), and what this page adds. */
export type Lookup = (key: string) => LogEntry | undefined;

/**
 * A request to append: given the pool as the head orders it, the entries to write (none: nothing to write) and
 * the caller's answer. Called again after a lost race, so it must decide from `lookup` alone.
 */
export type Decide<T> = (lookup: Lookup) => { entries: LogEntry[]; result: T };

interface PoolState {
  pk: string;
  seq: number;
  /** The head's ETag at `seq`; null: the pool has no head yet. */
  etag: string | null;
  entries: Map<string, LogEntry>;
  loaded: boolean;
  /** Requests waiting for the next transaction. */
  queue: Waiting[];
  /** The last of the pool's exclusive steps: a transaction, a read of the pages added (never two at once). */
  tail: Promise<void>;
}

interface Waiting {
  decide: Decide<unknown>;
  resolve: (v: unknown) => void;
  reject: (err: unknown) => void;
}

type Legacy = (e: Record<string, unknown> & { rowKey: string }) => LogEntry;

const PAGE_ENTRIES = 100;
const CHUNK = 30_000;
const pools = new Map<string, PoolState>();

const pageKey = (seq: number) => `p.${String(seq).padStart(10, '0')}`;

/** The state of a pool in this process (one per table and pool). */
function stateOf(client: TableClient, pk: string): PoolState {
  const id = `${client.url}|${client.tableName}|${pk}`;
  let s = pools.get(id);
  if (!s) {
    s = { pk, seq: 0, etag: null, entries: new Map(), loaded: false, queue: [], tail: Promise.resolve() };
    pools.set(id, s);
  }
  return s;
}

/** Run `step` after the pool's earlier steps: the state is changed by one step at a time. */
function exclusive<T>(s: PoolState, step: () => Promise<T>): Promise<T> {
  const run = s.tail.then(step);
  s.tail = run.then(
    () => undefined,
    () => undefined,
  );
  return run;
}

/**
 * The pool as of its head now (read: the head, and the pages added since this process last saw it; on first
 * use, the whole log and the old rows). For readers that must see other processes' latest entries (explain,
 * a dry run's peek, a release).
 */
export async function latest(client: TableClient, pk: string, legacyPk: string, legacy: Legacy): Promise<Lookup> {
  const s = stateOf(client, pk);
  await exclusive(s, async () => {
    if (!(await ensureLoaded(client, s, legacyPk, legacy))) await catchUp(client, s, legacyPk, legacy);
  });
  return (key) => s.entries.get(key);
}

/** Every entry of a pool (after {@link latest}). */
export function entriesOf(client: TableClient, pk: string): IterableIterator<LogEntry> {
  return stateOf(client, pk).entries.values();
}

/**
 * Append what `decide` answers to the pool, ordered by its head (see above); resolves with its result once the
 * entries are committed (or at once when there are none).
 */
export function append<T>(client: TableClient, pk: string, legacyPk: string, legacy: Legacy, decide: Decide<T>): Promise<T> {
  const s = stateOf(client, pk);
  // A decision that writes nothing (the value is another's, or already this owner's) is answered from memory at
  // once, as of the head this process last saw: only writes wait for their turn on the head.
  if (s.loaded) {
    const { entries, result } = decide((key) => s.entries.get(key));
    if (!entries.length) return Promise.resolve(result);
  }
  return new Promise<T>((resolve, reject) => {
    s.queue.push({ decide, resolve: resolve as (v: unknown) => void, reject });
    // One step takes every request waiting then (a later step may find the queue empty).
    void exclusive(s, () => flush(client, s, legacyPk, legacy));
  });
}

async function flush(client: TableClient, s: PoolState, legacyPk: string, legacy: Legacy): Promise<void> {
  while (s.queue.length) {
    try {
      await ensureLoaded(client, s, legacyPk, legacy);
      for (let attempt = 0; ; attempt++) {
        // Take requests in order while the page has room (one request alone may fill more than a page).
        const batch: Waiting[] = [];
        const page = new Map<string, LogEntry>();
        const results: unknown[] = [];
        const lookup: Lookup = (key) => page.get(key) ?? s.entries.get(key);
        for (const w of s.queue) {
          if (batch.length && page.size >= PAGE_ENTRIES) break;
          const { entries, result } = w.decide(lookup);
          if (batch.length && page.size + entries.length > PAGE_ENTRIES) break;
          for (const e of entries) page.set(e.k, e);
          batch.push(w);
          results.push(result);
        }
        if (!page.size || (await commit(client, s, [...page.values()]))) {
          s.queue.splice(0, batch.length);
          batch.forEach((w, i) => w.resolve(results[i]));
          break;
        }
        if (attempt >= 50) throw new Error(`The unique values of pool partition '${s.pk}' changed under 50 attempts in a row.`);
        // Lost the race: read the pages added since, and decide again.
        await catchUp(client, s, legacyPk, legacy);
      }
    } catch (err) {
      // Storage failed (not a lost race): every waiting request fails; the pool is read again on next use.
      const failed = s.queue.splice(0, s.queue.length);
      s.loaded = false;
      for (const w of failed) w.reject(err);
    }
  }
}

/** One transaction: the next page and the head under its ETag. False: another writer was first (412, 409, 404). */
async function commit(client: TableClient, s: PoolState, entries: LogEntry[]): Promise<boolean> {
  const seq = s.seq + 1;
  // ASCII only (other characters as \u escapes), so a cut between two properties never splits a character.
  const page: Record<string, unknown> & { partitionKey: string; rowKey: string } = { partitionKey: s.pk, rowKey: pageKey(seq) };
  // The rule, connector and time most entries of a page share are written once, as the page's own (a page of
  // adds: every entry's): the entries then say their value and owner.
  const shared = { r: entries[0].r, c: entries[0].c, t: entries[0].t };
  for (const k of ['r', 'c', 't'] as const) if (shared[k] !== undefined) page[k] = shared[k];
  const written = entries.map((e) => (e.r === shared.r && e.c === shared.c && e.t === shared.t ? { ...e, r: undefined, c: undefined, t: undefined } : e));
  const json = JSON.stringify(written).replace(/[\u007f-\uffff]/g, (c) => '\\u' + c.charCodeAt(0).toString(16).padStart(4, '0'));
  for (let i = 0, n = 0; i < json.length; i += CHUNK, n++) page[`e${n}`] = json.slice(i, i + CHUNK);
  const head = { partitionKey: s.pk, rowKey: 'head', seq };
  let etags: (string | undefined)[];
  try {
    etags = await submitTransaction(client, [s.etag === null ? ['create', head] : ['update', head, 'Merge', { etag: s.etag }], ['create', page]]);
  } catch (err) {
    if (isStatus(err, 412) || isStatus(err, 409) || isStatus(err, 404)) return false;
    throw err;
  }
  for (const e of entries) s.entries.set(e.k, e);
  s.seq = seq;
  s.etag = etags[0] ?? null;
  // No ETag in the answer (a service that gives none): read the head.
  if (s.etag === null) await catchUp(client, s);
  return true;
}

/** Read the pool whole on first use (the old rows, then the log): true when it was read now. */
async function ensureLoaded(client: TableClient, s: PoolState, legacyPk: string, legacy: Legacy): Promise<boolean> {
  if (s.loaded) return false;
  s.entries = new Map();
  s.seq = 0;
  s.etag = null;
  for await (const e of listEntities<Record<string, unknown>>(client, { queryOptions: { filter: `PartitionKey eq ${odata(legacyPk)}` } })) {
    const entry = legacy(e as Record<string, unknown> & { rowKey: string });
    s.entries.set(entry.k, entry);
  }
  await catchUp(client, s);
  s.loaded = true;
  return true;
}

/**
 * Bring the state to the head: read it, then the pages after the state's up to the head's `seq` (written in the
 * same transactions as the head, so they are all there). No head, or one behind the state (the table was emptied
 * and written again): the pool is read again from the start.
 */
async function catchUp(client: TableClient, s: PoolState, legacyPk?: string, legacy?: Legacy): Promise<void> {
  let head: { seq?: unknown; etag?: string } | null = null;
  try {
    head = await getEntity<{ seq?: unknown }>(client, s.pk, 'head');
  } catch (err) {
    if (!isStatus(err, 404)) throw err;
  }
  const seq = head ? Number(head.seq ?? 0) : 0;
  if (seq < s.seq && legacyPk && legacy) {
    s.loaded = false;
    await ensureLoaded(client, s, legacyPk, legacy);
    return;
  }
  if (seq > s.seq) {
    const filter = `PartitionKey eq ${odata(s.pk)} and RowKey gt ${odata(pageKey(s.seq))} and RowKey le ${odata(pageKey(seq))}`;
    const rows: (Record<string, unknown> & { rowKey?: string })[] = [];
    for await (const row of listEntities<Record<string, unknown>>(client, { queryOptions: { filter } })) rows.push(row);
    // In the order of the pages (the service answers in RowKey order; not relied on).
    rows.sort((a, b) => String(a.rowKey).localeCompare(String(b.rowKey)));
    for (const row of rows) for (const e of entriesOfPage(row)) s.entries.set(e.k, e);
  }
  s.seq = seq;
  s.etag = head?.etag ?? null;
}

function entriesOfPage(row: Record<string, unknown>): LogEntry[] {
  let json = '';
  for (let n = 0; typeof row[`e${n}`] === 'string'; n++) json += row[`e${n}`] as string;
  const entries = json ? (JSON.parse(json) as LogEntry[]) : [];
  // An entry without its rule, connector and time has the page's (see commit).
  for (const e of entries)
    if (e.r === undefined && e.c === undefined && e.t === undefined) {
      if (typeof row.r === 'string') e.r = row.r;
      if (typeof row.c === 'string') e.c = row.c;
      if (typeof row.t === 'string') e.t = row.t;
    }
  return entries;
}
