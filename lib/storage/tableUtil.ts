import type { TableClient, TransactionAction } from '@azure/data-tables';
import { isStatus, submitTransaction } from './tables';

/**
 * Helpers shared by the sync engine's repositories: JSON split over several string properties (a table
 * property holds at most 32K UTF-16 characters) and entity-group transactions of at most 100 actions.
 */
export const PROPERTY_CHARS = 30_000;

/**
 * A text cut into pieces that each fit one string property (at least one piece, empty for an empty text).
 * The one way repositories split a text over properties: JSON columns here, connector configurations
 * (lib/storage/connectors.ts), overflow rows (lib/storage/overflow.ts).
 */
export function splitText(text: string, size = PROPERTY_CHARS): string[] {
  const pieces: string[] = [];
  for (let i = 0; i * size < text.length || i === 0; i++) pieces.push(text.slice(i * size, (i + 1) * size));
  return pieces;
}

/** Put `value` as JSON into `<prefix>0..n` and `<prefix>n` (the chunk count) of `entity`. */
export function putJson(entity: Record<string, unknown>, prefix: string, value: unknown): void {
  putJsonText(entity, prefix, JSON.stringify(value));
}

/** {@link putJson} of JSON text the caller already has. */
export function putJsonText(entity: Record<string, unknown>, prefix: string, json: string): void {
  const pieces = splitText(json);
  entity[`${prefix}n`] = pieces.length;
  pieces.forEach((piece, i) => (entity[`${prefix}${i}`] = piece));
}

/** The JSON text {@link putJson} wrote, unparsed; undefined when absent. */
export function getJsonText(entity: Record<string, unknown>, prefix: string): string | undefined {
  const n = Number(entity[`${prefix}n`] ?? 0);
  if (!n) return undefined;
  let json = '';
  for (let i = 0; i < n; i++) json += String(entity[`${prefix}${i}`] ?? '');
  return json;
}

/** Read what {@link putJson} wrote; undefined when absent. */
export function getJson<T>(entity: Record<string, unknown>, prefix: string): T | undefined {
  const n = Number(entity[`${prefix}n`] ?? 0);
  if (!n) return undefined;
  let json = '';
  for (let i = 0; i < n; i++) json += String(entity[`${prefix}${i}`] ?? '');
  return JSON.parse(json) as T;
}

/** Entity-group transactions hold at most 100 actions and 4 MiB; stay well under both. */
const MAX_ACTIONS = 100;
const MAX_BYTES = 3_000_000;

/**
 * Submit actions grouped by partition, 100 (or fewer, by size) per transaction, `concurrency` transactions at
 * a time. Actions must be idempotent (upsert, delete of a row that may be gone is refused by the service, so
 * callers use upserts or tolerate 404 themselves). `client` is one table, or the table of a partition key
 * (repositories that spread partitions over several tables). A `create` (an insert of a row the caller
 * believes new: cheaper than an upsert) that finds the row present fails its transaction with 409, an
 * `update` without an ETag (a replace of a row believed present) that finds none fails it with 404: the
 * transaction is then sent again with upserts (a replayed page, a stale cache).
 */
export async function submitBatched(
  client: TableClient | ((partitionKey: string) => Promise<TableClient>),
  actions: TransactionAction[],
  concurrency = 4,
): Promise<void> {
  await submitBatchedLazy(
    client,
    actions,
    (a) => String(a[1].partitionKey),
    async (chunk) => chunk,
    concurrency,
  );
}

/**
 * {@link submitBatched} of items whose actions are made only when their transaction is about to go: `partitionOf`
 * gives an item's partition key, `build` the actions of a transaction's items (in their order). The first
 * transactions go at once and the later ones are built while the storage works on those in flight, instead of
 * every action being built (and serialized) before the first request. A transaction whose built actions pass
 * the size limit is sent in parts.
 */
export async function submitBatchedLazy<T>(
  client: TableClient | ((partitionKey: string) => Promise<TableClient>),
  items: readonly T[],
  partitionOf: (item: T) => string,
  build: (items: T[]) => Promise<TransactionAction[]>,
  concurrency = 4,
): Promise<void> {
  const clientOf = typeof client === 'function' ? client : async () => client;
  const byPk = new Map<string, T[]>();
  for (const item of items) {
    const pk = partitionOf(item);
    const list = byPk.get(pk);
    if (list) list.push(item);
    else byPk.set(pk, [item]);
  }
  const chunks: T[][] = [];
  for (const list of byPk.values()) for (let i = 0; i < list.length; i += MAX_ACTIONS) chunks.push(list.slice(i, i + MAX_ACTIONS));
  let next = 0;
  const worker = async () => {
    while (next < chunks.length) {
      const actions = await build(chunks[next++]);
      if (!actions.length) continue;
      const c = await clientOf(String(actions[0][1].partitionKey));
      let cur: TransactionAction[] = [];
      let bytes = 0;
      for (const a of actions) {
        const size = approxSize(a[1]);
        if (cur.length && bytes + size > MAX_BYTES) {
          await submitOrUpsert(c, cur);
          cur = [];
          bytes = 0;
        }
        cur.push(a);
        bytes += size;
      }
      await submitOrUpsert(c, cur);
    }
  };
  await Promise.all(Array.from({ length: Math.min(concurrency, chunks.length) }, worker));
}

/** One transaction; a `create` or an ETag-less `update` that guessed wrong sends it again with upserts (see submitBatched). */
async function submitOrUpsert(c: TableClient, b: TransactionAction[]): Promise<void> {
  try {
    await submitTransaction(c, b);
  } catch (err) {
    const guessed = (a: TransactionAction) => a[0] === 'create' || (a[0] === 'update' && a[3] === undefined);
    if (!((isStatus(err, 409) || isStatus(err, 404)) && b.some(guessed))) throw err;
    await submitTransaction(
      c,
      b.map((a): TransactionAction => (guessed(a) ? ['upsert', a[1], 'Replace'] : a)),
    );
  }
}

function approxSize(e: Record<string, unknown>): number {
  let n = 200;
  for (const [k, v] of Object.entries(e)) n += k.length + (typeof v === 'string' ? v.length * 2 : 16);
  return n;
}

/** Run `fn` over `items`, `concurrency` at a time. */
export async function mapLimit<T, R>(items: readonly T[], concurrency: number, fn: (item: T) => Promise<R>): Promise<R[]> {
  const out: R[] = new Array(items.length);
  let next = 0;
  const worker = async () => {
    while (next < items.length) {
      const i = next++;
      out[i] = await fn(items[i]);
    }
  };
  await Promise.all(Array.from({ length: Math.min(concurrency, items.length) }, worker));
  return out;
}
