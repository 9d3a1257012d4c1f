import type { TableEntityResult } from '@azure/data-tables';
import { FORMAT, packItems, unpackItems } from './changeCodec';
import { type ChangeOperation, type ChangeOutcome, type RunChange, type StoredChange } from './runChangeTypes';
import { deleteEntity, getEntity, isStatus, listEntities, odata, table, upsertEntity } from './tables';
import { mapLimit } from './tableUtil';

/**
 * The changes of a run (table `RunChanges`): one item per object the run changed, or would change (a dry run,
 * a run waiting for approval), with attribute-level old and new values, its outcome and, for a plan, the
 * fingerprint of the inputs it was planned from (never shown).
 *
 * Layout: PartitionKey the run id; one row per page of the run's engine steps (RowKey chosen by the step,
 * `<step letter><page, zero-padded>`, so rows sort in the order the run made them, and a page written again
 * after a crash or a replay replaces its row instead of adding one). A row holds its page's items compressed
 * (lib/storage/changeCodec.ts; `f` the format, absent on rows of format 1) cut into binary columns `z0..z<n-1>` of {@link CHUNK} bytes (a table property holds
 * at most 64 KiB, an entity 1 MiB): a page whose compressed items are larger goes on in rows `<key>.1`,
 * `<key>.2`. Next to the data, `k` counts the row's items by `<operation>|<outcome>`, so a filtered, paged read
 * knows which rows its window falls in from a projection of `k` alone and decompresses only those.
 *
 * Cost: one write per page (about 2,000 objects), never a row per object, never one blob per run. Kept as long
 * as the run record; {@link deleteRunChanges} removes them with it.
 */

export { CHANGE_TARGETS, CHANGE_OPERATIONS, CHANGE_OUTCOMES } from './runChangeTypes';
export type { ChangeTarget, ChangeOperation, ChangeOutcome, RunChange, StoredChange } from './runChangeTypes';

const TABLE = 'RunChanges';
/** Bytes per binary column (a property holds at most 64 KiB). */
const CHUNK = 60_000;
/** Columns per row: 10 x 60,000 bytes (800 KB as the base64 the service receives) stays under the 1 MiB entity limit. */
const CHUNKS_PER_ROW = 10;

/** `<operation>|<outcome>` -> number of items. */
export type ChangeCounts = Record<string, number>;

export const countKey = (operation: ChangeOperation, outcome: ChangeOutcome) => `${operation}|${outcome}`;

const empty = (v: unknown) => v === null || v === undefined || v === '' || (Array.isArray(v) && v.length === 0);

/**
 * The counts of a page's items by `<operation>|<outcome>`, and, under `Blank|<outcome>`, the updates that empty
 * an attribute that had a value (a `blanks` threshold counts them; the list's totals leave them out).
 */
export function countChanges(items: readonly Pick<RunChange, 'operation' | 'outcome' | 'attributes'>[]): ChangeCounts {
  const k: ChangeCounts = {};
  const add = (key: string) => (k[key] = (k[key] ?? 0) + 1);
  for (const c of items) {
    add(countKey(c.operation, c.outcome));
    if ((c.operation === 'Update' || c.operation === 'Rename') && Object.values(c.attributes).some((a) => !empty(a.old) && empty(a.new)))
      add(`Blank|${c.outcome}`);
  }
  return k;
}

/** RowKey of a page: a step letter and the page number, zero-padded so rows sort in page order. */
export function pageKey(step: string, page: number): string {
  return `${step}${String(page).padStart(7, '0')}`;
}

/**
 * Write one page of a run's changes (replacing the page's row when it exists: a replayed page). Nothing is
 * written for a page with no changes (a replay that finds nothing to do leaves the first write as it was).
 * The compression runs on the thread pool, so the page's other writes go on meanwhile.
 */
export async function writeRunChanges(runId: string, key: string, items: readonly StoredChange[], opts: { preview?: boolean } = {}): Promise<void> {
  if (!items.length) return;
  const client = await table(TABLE);
  const data = await packItems(items);
  const counts = JSON.stringify(countChanges(items));
  const chunks: Uint8Array[] = [];
  for (let i = 0; i < data.length; i += CHUNK) chunks.push(new Uint8Array(data.subarray(i, i + CHUNK)));
  const rows = Math.max(1, Math.ceil(chunks.length / CHUNKS_PER_ROW));
  for (let r = 0; r < rows; r++) {
    const part = chunks.slice(r * CHUNKS_PER_ROW, (r + 1) * CHUNKS_PER_ROW);
    const entity: Record<string, unknown> & { partitionKey: string; rowKey: string } = {
      partitionKey: runId,
      rowKey: r === 0 ? key : `${key}.${r}`,
      // Counts on the page's first row only; parts carry the rest of the data.
      k: r === 0 ? counts : '{}',
      parts: rows,
      f: FORMAT,
      zn: part.length,
      ...(opts.preview && r === 0 ? { p: true } : {}),
    };
    part.forEach((c, i) => (entity[`z${i}`] = c));
    await upsertEntity(client, entity, 'Replace');
  }
}

interface RowHead {
  rowKey: string;
  counts: ChangeCounts;
  parts: number;
  /** A preview row (the target items of an import plan): listed, never counted against thresholds nor applied. */
  preview: boolean;
}

/**
 * The key of the preview row of a page (the target items of an import plan: lib/sync/import/importTargets.ts): right
 * after the page's own row, so the list shows a page's target items after its mesh items.
 */
export const previewKey = (key: string): string => `${key}t`;

/**
 * Remove one page row (a preview row its page's apply replaces with nothing). Rows it goes on in (`<key>.1`, a
 * page of more than about 600 KB compressed) are no longer listed without it, and go with the run.
 */
export async function deleteRunChangeRow(runId: string, key: string): Promise<void> {
  const client = await table(TABLE);
  try {
    await deleteEntity(client, runId, key);
  } catch (err) {
    if (!isStatus(err, 404)) throw err;
  }
}

async function heads(runId: string): Promise<RowHead[]> {
  const client = await table(TABLE);
  const out: RowHead[] = [];
  for await (const e of listEntities<Record<string, unknown>>(client, {
    queryOptions: { filter: `PartitionKey eq ${odata(runId)}`, select: ['RowKey', 'k', 'parts', 'p'] },
  })) {
    const rowKey = String(e.rowKey);
    if (rowKey.includes('.')) continue;
    out.push({ rowKey, counts: JSON.parse(String(e.k ?? '{}')) as ChangeCounts, parts: Number(e.parts ?? 1), preview: e.p === true });
  }
  return out;
}

function bytesOf(v: unknown): Buffer {
  if (v instanceof Uint8Array) return Buffer.from(v);
  if (typeof v === 'string') return Buffer.from(v, 'base64');
  return Buffer.alloc(0);
}

/** The items of one page (its row and the rows it goes on in). */
async function readPage(runId: string, head: RowHead): Promise<StoredChange[]> {
  const client = await table(TABLE);
  const keys = [head.rowKey, ...Array.from({ length: head.parts - 1 }, (_, i) => `${head.rowKey}.${i + 1}`)];
  const rows = await Promise.all(
    keys.map(async (rk) => {
      try {
        return await getEntity<Record<string, unknown>>(client, runId, rk);
      } catch (err) {
        if (isStatus(err, 404)) return null;
        throw err;
      }
    }),
  );
  const buffers: Buffer[] = [];
  for (const row of rows) {
    if (!row) return [];
    const n = Number((row as TableEntityResult<Record<string, unknown>>).zn ?? 0);
    for (let i = 0; i < n; i++) buffers.push(bytesOf(row[`z${i}`]));
  }
  const format = rows[0]!.f;
  return unpackItems(Buffer.concat(buffers), format === undefined || format === null ? undefined : Number(format));
}

export interface ChangeFilter {
  operation?: ChangeOperation;
  outcome?: ChangeOutcome;
}

const matches = (f: ChangeFilter) => (c: Pick<RunChange, 'operation' | 'outcome'>) =>
  (!f.operation || c.operation === f.operation) && (!f.outcome || c.outcome === f.outcome);

function matchingCount(counts: ChangeCounts, f: ChangeFilter): number {
  let n = 0;
  for (const [key, count] of Object.entries(counts)) {
    const [operation, outcome] = key.split('|');
    if (operation === 'Blank') continue;
    if ((!f.operation || operation === f.operation) && (!f.outcome || outcome === f.outcome)) n += count;
  }
  return n;
}

/** The item as the API shows it (no key, no fingerprint). */
export function changeView(c: StoredChange, runConnectorId: string | null = null): RunChange {
  return {
    target: c.target,
    connectorId: c.connectorId ?? runConnectorId,
    operation: c.operation,
    csObjectId: c.csObjectId,
    meshObjectId: c.meshObjectId,
    anchor: c.anchor,
    dn: c.dn,
    attributes: c.attributes,
    outcome: c.outcome,
    error: c.error,
  };
}

/**
 * A window of the run's changes in the order the run made them, filtered by operation and outcome, with the
 * exact total: the total and the rows the window falls in come from the rows' counts; only those rows are read
 * whole and decompressed.
 */
export async function listRunChanges(
  runId: string,
  f: ChangeFilter,
  skip: number,
  take: number,
  runConnectorId: string | null = null,
): Promise<{ items: RunChange[]; totalCount: number }> {
  const all = await heads(runId);
  let totalCount = 0;
  const wanted: { head: RowHead; from: number }[] = [];
  for (const head of all) {
    const n = matchingCount(head.counts, f);
    // This row's matching items are positions [totalCount, totalCount + n) of the filtered list.
    if (n && take > 0 && totalCount + n > skip && totalCount < skip + take) wanted.push({ head, from: totalCount });
    totalCount += n;
  }
  const pages = await mapLimit(wanted, 4, (w) => readPage(runId, w.head));
  const items: RunChange[] = [];
  pages.forEach((page, i) => {
    let pos = wanted[i].from;
    for (const c of page.filter(matches(f))) {
      if (pos >= skip && items.length < take) items.push(changeView(c, runConnectorId));
      pos++;
    }
  });
  return { items, totalCount };
}

/** Every stored change of the run, page by page (an apply reads its plan this way), previews left out. */
export async function* readRunChanges(runId: string): AsyncGenerator<StoredChange[]> {
  for (const head of await heads(runId)) if (!head.preview) yield await readPage(runId, head);
}

/** The counts of the run's own changes by `<operation>|<outcome>` (no row is decompressed; previews left out). */
export async function runChangeCounts(runId: string): Promise<ChangeCounts> {
  const total: ChangeCounts = {};
  for (const head of await heads(runId)) if (!head.preview) for (const [k, n] of Object.entries(head.counts)) total[k] = (total[k] ?? 0) + n;
  return total;
}

/** Remove every change of the run (with the run record). */
export async function deleteRunChanges(runId: string): Promise<void> {
  const client = await table(TABLE);
  const keys: string[] = [];
  for await (const e of listEntities(client, { queryOptions: { filter: `PartitionKey eq ${odata(runId)}`, select: ['RowKey'] } })) keys.push(String(e.rowKey));
  await mapLimit(keys, 4, async (rk) => {
    try {
      await deleteEntity(client, runId, rk);
    } catch (err) {
      if (!isStatus(err, 404)) throw err;
    }
  });
}

/** Remove the rows of one step's pages from `fromPage` on (a step that starts over writes its pages again). */
export async function deleteRunChangePages(runId: string, step: string): Promise<void> {
  const client = await table(TABLE);
  const keys: string[] = [];
  const filter = `PartitionKey eq ${odata(runId)} and RowKey ge ${odata(step)} and RowKey lt ${odata(step + '~')}`;
  for await (const e of listEntities(client, { queryOptions: { filter, select: ['RowKey'] } })) keys.push(String(e.rowKey));
  await mapLimit(keys, 4, async (rk) => {
    try {
      await deleteEntity(client, runId, rk);
    } catch (err) {
      if (!isStatus(err, 404)) throw err;
    }
  });
}
