import { ConnectorError, valuesOf, withApplied, type AttributeValue, type ExportChange, type ExportResult, type ObjectError } from '../sdk';
import type { ResolvedSqlConfig } from './config';
import type { QueryResult, SqlSession } from './drivers';
import { uniqueKeyOf } from './errors';
import { compileSql, type CompiledStatement } from './params';
import { openSession } from './session';
import { keyText } from './values';

const OBJECT_LEVEL = new Set(['object_error', 'not_found', 'already_exists', 'constraint_violation']);

/** Values for export parameters: JSON text for multi-valued attributes, scalars as they are. */
function paramValue(v: AttributeValue | undefined): unknown {
  if (v === undefined) return null;
  return Array.isArray(v) ? JSON.stringify(v) : v;
}

/** The parameter values of a change: `:anchor`, every attribute (new value over previous), `__add`/`__remove`. */
function exportValues(c: ResolvedSqlConfig, change: ExportChange): Record<string, unknown> {
  const merged: Record<string, AttributeValue> = { ...(change.previous ?? {}), ...change.attributes };
  const values: Record<string, unknown> = {};
  const mvNames = new Set([...Object.keys(change.multiValueAdds ?? {}), ...Object.keys(change.multiValueRemoves ?? {})]);
  for (const attr of mvNames) {
    const adds = change.multiValueAdds?.[attr] ?? [];
    const removes = new Set((change.multiValueRemoves?.[attr] ?? []).map((v) => JSON.stringify(v)));
    if (!(attr in change.attributes)) {
      const current = valuesOf(merged[attr]).filter((v) => !removes.has(JSON.stringify(v)));
      for (const a of adds) if (!current.some((v) => JSON.stringify(v) === JSON.stringify(a))) current.push(a);
      merged[attr] = current;
    }
    values[`${attr}__add`] = JSON.stringify(adds);
    values[`${attr}__remove`] = JSON.stringify([...(change.multiValueRemoves?.[attr] ?? [])]);
  }
  for (const [k, v] of Object.entries(merged)) values[k] = paramValue(v);
  const anchor = change.anchor ?? (merged[c.anchorColumn] === undefined ? undefined : keyText(merged[c.anchorColumn]));
  values.anchor = anchor ?? null;
  if (values[c.anchorColumn] === undefined || values[c.anchorColumn] === null) values[c.anchorColumn] = anchor ?? null;
  return values;
}

function statements(c: ResolvedSqlConfig, kind: 'insert' | 'update' | 'delete'): CompiledStatement[] | undefined {
  const sql = c.exportStatements?.[kind];
  if (!sql) return undefined;
  const r = compileSql(sql, c.dialect);
  if (r.rawPlaceholders.length)
    throw new ConnectorError('configuration_invalid', `exportStatements.${kind} uses driver placeholders (${r.rawPlaceholders[0]}): use :name parameters.`);
  return r.statements;
}

/** Apply one change on an open session. DB errors throw (the caller decides whether they are per-object). */
async function exportOne(c: ResolvedSqlConfig, s: SqlSession, change: ExportChange): Promise<ExportResult> {
  const fail = (code: ObjectError['code'], message: string, anchor?: string): ExportResult => {
    const error: ObjectError = { code, message, objectType: change.objectType, retriable: false };
    if (anchor !== undefined) error.anchor = anchor;
    return anchor === undefined ? { status: 'error', error } : { status: 'error', anchor, error };
  };
  const kind = change.kind === 'add' ? 'insert' : change.kind === 'delete' ? 'delete' : 'update';
  const stmts = statements(c, kind);
  const values = exportValues(c, change);
  const anchor = values.anchor === null ? undefined : String(values.anchor);
  if (!stmts) return fail('unsupported', `No exportStatements.${kind} is configured: cannot ${change.kind} objects.`, anchor);
  let first: QueryResult | undefined;
  for (const st of stmts) {
    const r = await s.query(st, values);
    first ??= r;
    // An update whose first statement matched no row stops there: the object is not in the table.
    if (kind === 'update' && r === first && r.rowCount === 0) break;
  }
  if (kind === 'insert') {
    const returned = first?.rows[0];
    const a = anchor ?? (returned ? keyText(returned[c.anchorColumn] ?? Object.values(returned)[0]) : '');
    if (!a) return fail('object_error', 'The insert did not give the new row an anchor: set the anchor attribute or RETURN it.');
    return { status: 'success', anchor: a };
  }
  if (anchor === undefined) return fail('object_error', `The change has no anchor: cannot ${change.kind} it.`);
  if (kind === 'update' && (first?.rowCount ?? 0) === 0) return fail('not_found', `No row has the anchor '${anchor}'.`, anchor);
  return { status: 'success', anchor };
}

/**
 * A unique violation as an operator reads it: the row's anchor and the key, never the values the database
 * quoted (a unique column may hold anything). When the key is the anchor itself (the key's columns, or the
 * duplicated value the server quoted, are the anchor's), the row is simply there already.
 */
function duplicateError(c: ResolvedSqlConfig, err: ConnectorError, change: ExportChange): ConnectorError {
  const column = c.anchorColumn;
  const a = exportValues(c, change).anchor;
  const anchor = a === null || a === undefined ? undefined : String(a);
  const key = uniqueKeyOf(err.cause);
  const isAnchor =
    anchor !== undefined &&
    (key.columns ? key.columns.length === 1 && key.columns[0].toLowerCase() === column.toLowerCase() : key.value !== undefined && key.value === anchor);
  const keyName = key.name ? `the unique key '${key.name}'${key.columns ? ` (${key.columns.join(', ')})` : ''}` : 'a unique key';
  const row = anchor === undefined ? 'the row' : `the row with the anchor ${column} '${anchor}'`;
  const message =
    change.kind === 'add' && isAnchor
      ? `A row with the anchor ${column} '${anchor}' already exists${key.name ? ` (unique key '${key.name}')` : ''}.`
      : `${change.kind === 'add' ? 'Adding' : 'Updating'} ${row}: another row already has the same value in ${keyName}.`;
  return new ConnectorError('already_exists', message, { retriable: false, cause: err.cause, ...(anchor !== undefined ? { anchor } : {}) });
}

/**
 * One transaction for the batch. A row the database rejects rolls it back; the batch then runs again one
 * row per transaction, so the other rows land and the rejected one is a per-object error. Run-level
 * failures (connection lost, bad statement) throw. An abort of `signal` cancels the statement in flight (its
 * transaction is rolled back) and throws `aborted`, with the rows committed before it when going row by row.
 */
export async function exportBatch(c: ResolvedSqlConfig, changes: ExportChange[], signal?: AbortSignal): Promise<ExportResult[]> {
  if (!changes.length) return [];
  const s = await openSession(c, signal);
  try {
    const results: ExportResult[] = [];
    let failed = false;
    await s.begin();
    try {
      for (const ch of changes) {
        try {
          results.push(await exportOne(c, s, ch));
        } catch (err) {
          if (!(err instanceof ConnectorError) || !OBJECT_LEVEL.has(err.code)) throw err;
          failed = true;
          break;
        }
      }
    } catch (err) {
      await s.rollback().catch(() => undefined);
      throw err;
    }
    if (!failed) {
      await s.commit();
      return results;
    }
    await s.rollback();
    const out: ExportResult[] = [];
    for (const ch of changes) {
      await s.begin();
      try {
        const r = await exportOne(c, s, ch);
        await s.commit();
        out.push(r);
      } catch (err) {
        await s.rollback().catch(() => undefined);
        // Rows before this one are committed: a run-level failure says so.
        if (!(err instanceof ConnectorError) || !OBJECT_LEVEL.has(err.code)) throw withApplied(err, out);
        const e = (err.code === 'already_exists' ? duplicateError(c, err, ch) : err).toObjectError(ch.objectType);
        if (ch.anchor !== undefined) e.anchor = ch.anchor;
        out.push(ch.anchor === undefined ? { status: 'error', error: e } : { status: 'error', anchor: ch.anchor, error: e });
      }
    }
    return out;
  } finally {
    await s.close();
  }
}
