import { createHash } from 'node:crypto';
import type { TransactionAction } from '@azure/data-tables';
import { listEntities, odata, submitTransaction, table } from './tables';
import { PROPERTY_CHARS, splitText } from './tableUtil';

/**
 * Large JSON texts kept apart from the rows that name them (table `Overflow`).
 *
 * A table entity holds at most 1 MiB (strings count two bytes a character) and a transaction at most 4 MiB, so
 * a row cannot carry a group of 50,000 members: its mesh object's relationships and its connector-space
 * attributes are several megabytes. Such a text is written here first, content-addressed (PartitionKey the
 * SHA-256 of the text, RowKey the piece number), and the row keeps only the key: a crash between the two
 * writes leaves an unreferenced text, never a row that names a missing one. The same text written twice is
 * the same rows (upserts), so a replayed write is harmless.
 *
 * Texts are not removed when the rows that named them change (the change feed keeps naming old states too,
 * and is not compacted either): a known limit, measured in BENCHMARKS.md.
 */
const TABLE = 'Overflow';
/** Characters per property (a string property holds at most 64 KiB). */
const PIECE = PROPERTY_CHARS;
/** Properties per row: 12 x 30,000 characters is 720 KB in storage, under the 1 MiB entity limit. */
const PIECES_PER_ROW = 12;
/** Rows per transaction (a transaction body is at most 4 MiB). */
const ROWS_PER_TRANSACTION = 4;

/** Texts longer than this are kept apart by the writers that use this store. */
export const OVERFLOW_OVER = 150_000;

const keyOf = (text: string) => createHash('sha256').update(text).digest('hex');

/** Store `text`; returns its key. */
export async function putOverflow(text: string): Promise<string> {
  const key = keyOf(text);
  const client = await table(TABLE);
  const perRow = PIECE * PIECES_PER_ROW;
  const rows = Math.max(1, Math.ceil(text.length / perRow));
  const actions: TransactionAction[] = [];
  for (let r = 0; r < rows; r++) {
    const e: Record<string, unknown> & { partitionKey: string; rowKey: string } = {
      partitionKey: key,
      rowKey: String(r).padStart(6, '0'),
      rows,
      length: text.length,
    };
    const part = text.slice(r * perRow, (r + 1) * perRow);
    splitText(part, PIECE).forEach((piece, i) => (e[`p${i}`] = piece));
    actions.push(['upsert', e, 'Replace']);
  }
  for (let i = 0; i < actions.length; i += ROWS_PER_TRANSACTION) await submitTransaction(client, actions.slice(i, i + ROWS_PER_TRANSACTION));
  return key;
}

/** The text stored under `key`. Throws when it is missing or damaged (a row names a text that is not there). */
export async function getOverflow(key: string): Promise<string> {
  const client = await table(TABLE);
  const rows: Record<string, unknown>[] = [];
  for await (const e of listEntities<Record<string, unknown>>(client, { queryOptions: { filter: `PartitionKey eq ${odata(key)}` } })) rows.push(e);
  rows.sort((a, b) => (String(a.rowKey) < String(b.rowKey) ? -1 : 1));
  let text = '';
  for (const e of rows) for (let i = 0; e[`p${i}`] !== undefined; i++) text += String(e[`p${i}`]);
  if (!rows.length || rows.length !== Number(rows[0].rows) || text.length !== Number(rows[0].length)) {
    throw new Error(`A stored object refers to overflow text ${key.slice(0, 12)}..., which is missing or incomplete.`);
  }
  return text;
}
