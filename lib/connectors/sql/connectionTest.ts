import { ConnectorError, isConnectorError, type AttributeSchema, type ConnectionTestResult, type ConnectorSchema } from '../sdk';
import type { ResolvedSqlConfig } from './config';
import type { QueryResult, SqlSession } from './drivers';
import { compileSql } from './params';
import { openSession, wrap } from './session';
import { softDeleteColumnQuery } from './validate';

/**
 * The connection test: connect, authenticate, and run every configured query without rows (see `describeAll`).
 * Throws a ConnectorError saying what failed.
 */
export async function testConnection(c: ResolvedSqlConfig): Promise<ConnectionTestResult> {
  const s = await openSession(c);
  try {
    await s.query({ text: 'SELECT 1', params: [] });
    const cols = await describeAll(c, s);
    return {
      message: `Connected to ${c.dialect} database '${c.database}' on ${c.host}:${c.port}; the full import query returns ${cols.full.fields.length} column(s).`,
    };
  } finally {
    await s.close();
  }
}

/** Run one configured query with no rows; a query the database rejects says which setting holds it. */
async function probe(c: ResolvedSqlConfig, s: SqlSession, sql: string, what: string, values?: Record<string, unknown>): Promise<QueryResult> {
  try {
    return await s.query(wrap(c.dialect, sql, what, '*', 'WHERE 1 = 0'), values);
  } catch (err) {
    if (isConnectorError(err) && err.code === 'configuration_invalid' && !err.message.startsWith(what)) {
      throw new ConnectorError('configuration_invalid', `${what}: ${err.message}`, { cause: err.cause });
    }
    throw err;
  }
}

/**
 * Run every configured query with no rows (`WHERE 1 = 0`) to check it against the server, and check that the
 * configured columns and export parameters exist. Throws `configuration_invalid` naming the problem.
 */
async function describeAll(c: ResolvedSqlConfig, s: SqlSession): Promise<{ full: QueryResult }> {
  const full = await probe(c, s, c.fullImportQuery, 'fullImportQuery');
  const cols = new Set(full.fields);
  const need = (col: string | undefined, what: string, fields: Set<string>) => {
    if (col !== undefined && !fields.has(col))
      throw new ConnectorError('configuration_invalid', `${what} '${col}' is not a column of the query (it returns: ${[...fields].join(', ')}).`);
  };
  need(c.anchorColumn, 'anchorColumn', cols);
  let dcols: Set<string> | undefined;
  if (c.deltaImportQuery) {
    const d = await probe(c, s, c.deltaImportQuery, 'deltaImportQuery', { watermark: null });
    dcols = new Set(d.fields);
    need(c.anchorColumn, 'anchorColumn (in deltaImportQuery)', dcols);
    need(c.deltaColumn, 'deltaColumn (in deltaImportQuery)', dcols);
    need(c.deltaColumn, 'deltaColumn (in fullImportQuery)', cols);
  }
  if (c.deleteDetection?.mode === 'softDeleteColumn') {
    const inDelta = softDeleteColumnQuery(c) === 'deltaImportQuery';
    need(c.deleteDetection.column, inDelta ? 'deleteDetection.column (in deltaImportQuery)' : 'deleteDetection.column', inDelta ? dcols! : cols);
  }
  if (c.deleteDetection?.mode === 'query') await probe(c, s, c.deleteDetection.query, 'deleteDetection.query', { watermark: null });
  const attrs = new Set(cols);
  for (const [attr, sql] of Object.entries(c.multiValueQueries ?? {})) {
    const r = await probe(c, s, sql, `multiValueQueries.${attr}`);
    if (r.fields.length < 2) throw new ConnectorError('configuration_invalid', `multiValueQueries.${attr} must return two columns: the anchor and the value.`);
    attrs.add(attr);
  }
  for (const col of Object.keys(c.referenceColumns ?? {})) need(col, 'referenceColumns', attrs);
  for (const [kind, sql] of Object.entries(c.exportStatements ?? {})) {
    for (const name of compileSql(sql, c.dialect).names) {
      const base = name.replace(/__(add|remove)$/, '');
      if (name !== 'anchor' && !attrs.has(base)) {
        throw new ConnectorError(
          'configuration_invalid',
          `exportStatements.${kind} uses the parameter :${name}, which is neither :anchor nor a column or multi-valued attribute the connector reads.`,
        );
      }
    }
  }
  return { full };
}

/** The schema: the full query's columns (with the types the driver reports) and the multi-valued attributes. */
export async function schema(c: ResolvedSqlConfig): Promise<ConnectorSchema> {
  const s = await openSession(c);
  let full: QueryResult;
  try {
    full = (await describeAll(c, s)).full;
  } finally {
    await s.close();
  }
  const refs = c.referenceColumns ?? {};
  const attributes: AttributeSchema[] = [];
  full.fields.forEach((name, i) => {
    if (name === c.deltaColumn) return;
    const a: AttributeSchema = { name, type: full.types?.[i] ?? 'string', multiValued: false };
    if (name === c.anchorColumn) a.required = true;
    if (refs[name]) a.reference = { objectType: refs[name], resolveBy: 'anchor' };
    attributes.push(a);
  });
  for (const name of Object.keys(c.multiValueQueries ?? {})) {
    const a: AttributeSchema = { name, type: 'string', multiValued: true };
    if (refs[name]) a.reference = { objectType: refs[name], resolveBy: 'anchor' };
    attributes.push(a);
  }
  return { objectTypes: [{ name: c.objectType, anchorAttribute: c.anchorColumn, attributes }] };
}
