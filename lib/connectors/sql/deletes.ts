import { MAX_PAGE, type ResolvedSqlConfig } from './config';
import type { Row, SqlSession } from './drivers';
import type { Watermark } from './marks';
import { quoteIdent } from './params';
import { wrap } from './session';
import { keyText } from './values';

/**
 * How a delta import finds deletes (`deleteDetection`, docs/connector-sql.md):
 *
 * - Without a delta query or deltaColumn, or without a mark yet (`diffAll`), the delta reads the full query and
 *   every known anchor it does not return is deleted.
 * - `softDeleteColumn`: a row whose column holds the configured value is a delete (`softDeleted`, as rows are
 *   built).
 * - `query`: `deleteDetection.query` returns the deleted anchors (`deletedByQuery`).
 * - `anchorDiff`: every `everyNthDelta`-th delta reads every anchor and diffs them with the snapshot
 *   (`anchorsPresent`); `n` counts the deltas since the last such diff.
 */
export interface DeletePlan {
  n: number;
  diffAll: boolean;
  anchorDiff: boolean;
}

/** What a delta from this watermark does about deletes. */
export function deletePlan(c: ResolvedSqlConfig, wm: Watermark): DeletePlan {
  const n = wm.n + 1;
  const dd = c.deleteDetection;
  const diffAll = !c.deltaImportQuery || !c.deltaColumn || wm.wm === null;
  const anchorDiff = !diffAll && dd?.mode === 'anchorDiff' && n % dd.everyNthDelta === 0;
  return { n, diffAll, anchorDiff };
}

/** A row the soft-delete column marks as deleted. */
export function softDeleted(c: ResolvedSqlConfig, row: Row): boolean {
  const dd = c.deleteDetection;
  return dd?.mode === 'softDeleteColumn' && matches(row[dd.column], dd.value);
}

function matches(value: unknown, expected: string | number | boolean): boolean {
  if (typeof expected === 'boolean') {
    const truthy = value === true || value === 1 || value === '1' || value === 't' || value === 'true' || value === 'TRUE';
    const falsy = value === false || value === 0 || value === '0' || value === 'f' || value === 'false' || value === 'FALSE';
    return expected ? truthy : falsy;
  }
  return value !== null && value !== undefined && keyText(value) === String(expected);
}
/** The anchors the delete query returns (its first column), one array per chunk read; `values` binds `:watermark`. */
export async function* deletedByQuery(
  c: ResolvedSqlConfig,
  s: SqlSession,
  query: string,
  values: Record<string, unknown>,
  pageSize: number,
): AsyncGenerator<string[]> {
  const del = wrap(c.dialect, query, 'deleteDetection.query', '*', '');
  for await (const rows of s.stream(del, values, pageSize)) yield rows.map((row) => keyText(Object.values(row)[0]));
}

/** Every anchor the full query returns now (anchors only, in large chunks). */
export async function anchorsPresent(c: ResolvedSqlConfig, s: SqlSession): Promise<Set<string>> {
  const present = new Set<string>();
  const q = wrap(c.dialect, c.fullImportQuery, 'fullImportQuery', `src.${quoteIdent(c.anchorColumn, c.dialect)} AS a`, '');
  for await (const rows of s.stream(q, {}, MAX_PAGE)) for (const row of rows) present.add(keyText(row.a));
  return present;
}
