import type { FieldError } from '../../core/errors';
import { compileSql } from './params';
import type { SqlConfig } from './schema';

/** The parameters each configured query may use, and must use. */
const QUERY_PARAMETERS: { path: string; pick: (c: SqlConfig) => string | undefined; allowed: string[]; required: string[] }[] = [
  { path: '/fullImportQuery', pick: (c) => c.fullImportQuery, allowed: [], required: [] },
  { path: '/deltaImportQuery', pick: (c) => c.deltaImportQuery, allowed: ['watermark'], required: ['watermark'] },
  {
    path: '/deleteDetection/query',
    pick: (c) => (c.deleteDetection?.mode === 'query' ? c.deleteDetection.query : undefined),
    allowed: ['watermark'],
    required: ['watermark'],
  },
];

/**
 * Checks of an `sql` configuration that need no server (the Admin API runs them on create/update, after the
 * schema): each query is one statement; the delta and delete queries use `:watermark` (outside literals and
 * comments) and no other parameter; the full import and multi-value queries take none; no query uses driver
 * placeholders (`?`, `$1`) that would bypass named binding. Paths are relative to `config`.
 */
export function validateSqlConfig(config: SqlConfig): FieldError[] {
  const errors: FieldError[] = [];
  const check = (path: string, sql: string, allowed: string[], required: string[], statements: 'one' | 'many') => {
    const r = compileSql(sql, config.dialect);
    if (statements === 'one' && r.statements.length !== 1) errors.push({ path, message: 'must be exactly one SQL statement' });
    if (r.rawPlaceholders.length) errors.push({ path, message: `must not use driver placeholders (${r.rawPlaceholders[0]}): use :name parameters` });
    for (const name of required) if (!r.names.includes(name)) errors.push({ path, message: `must use the parameter :${name}` });
    for (const name of r.names)
      if (!allowed.includes(name))
        errors.push({
          path,
          message: `uses the unknown parameter :${name}${allowed.length ? ` (allowed: ${allowed.map((a) => ':' + a).join(', ')})` : ' (this query takes no parameters)'}`,
        });
  };
  for (const q of QUERY_PARAMETERS) {
    const sql = q.pick(config);
    if (sql !== undefined) check(q.path, sql, q.allowed, q.required, 'one');
  }
  for (const [attr, sql] of Object.entries(config.multiValueQueries ?? {})) check(`/multiValueQueries/${attr}`, sql, [], [], 'one');
  for (const kind of ['insert', 'update', 'delete'] as const) {
    const sql = config.exportStatements?.[kind];
    if (sql === undefined) continue;
    const r = compileSql(sql, config.dialect);
    if (!r.statements.length) errors.push({ path: `/exportStatements/${kind}`, message: 'holds no SQL statement' });
    if (r.rawPlaceholders.length)
      errors.push({ path: `/exportStatements/${kind}`, message: `must not use driver placeholders (${r.rawPlaceholders[0]}): use :name parameters` });
  }
  if (config.deltaImportQuery !== undefined && config.deltaColumn === undefined)
    errors.push({ path: '/deltaColumn', message: 'is required with deltaImportQuery' });
  return errors;
}

/**
 * The query a `softDeleteColumn` must be a column of: the one whose rows are checked for the flag. A delta
 * import reads `deltaImportQuery` (when there is one) and a flagged row there is a delete; the full import
 * needs no flag (a row it does not return is gone), so the usual full query filters deleted rows out and does
 * not return the column. Without a delta query, deltas run the full query, which must then return it.
 */
export function softDeleteColumnQuery(config: Pick<SqlConfig, 'deltaImportQuery'>): 'deltaImportQuery' | 'fullImportQuery' {
  return config.deltaImportQuery !== undefined ? 'deltaImportQuery' : 'fullImportQuery';
}
