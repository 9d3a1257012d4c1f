import { ConnectorError } from '../sdk';
import type { ResolvedSqlConfig } from './config';
import { connect, type SessionOptions, type SqlSession } from './drivers';
import { compileSql, type CompiledStatement, type SqlDialect } from './params';

/**
 * A new session with the connector's connection settings; each operation opens its own and closes it. An abort
 * of `signal` cancels the statement in flight and fails the session's calls with `aborted` (see `connect`).
 */
export function openSession(c: ResolvedSqlConfig, signal?: AbortSignal, options?: SessionOptions): Promise<SqlSession> {
  return connect(
    {
      dialect: c.dialect,
      host: c.host,
      port: c.port,
      database: c.database,
      user: c.user,
      password: c.password,
      ssl: c.ssl,
      timeoutSeconds: c.timeoutSeconds,
    },
    signal,
    options,
  );
}

function one(dialect: SqlDialect, sql: string, what: string): CompiledStatement {
  const r = compileSql(sql, dialect);
  if (r.statements.length !== 1) throw new ConnectorError('configuration_invalid', `${what} must be exactly one SQL statement.`);
  return r.statements[0];
}

/**
 * `SELECT <cols> FROM (<query>) src [WHERE ...] [ORDER BY ...]`, the query's own parameters kept. `what` names
 * the setting that holds the query, for the error when it is not exactly one statement.
 */
export function wrap(dialect: SqlDialect, sql: string, what: string, select: string, tail: string): CompiledStatement {
  if (compileSql(sql, dialect).statements.length !== 1) throw new ConnectorError('configuration_invalid', `${what} must be exactly one SQL statement.`);
  // Compiled as a whole so placeholders are numbered once across the wrapper and the query; the line breaks
  // keep a trailing `--` comment in the query from swallowing the wrapper.
  return one(dialect, `SELECT ${select} FROM (\n${stripSemicolons(sql)}\n) src ${tail}`, what);
}

/** A query wrapped as a subquery cannot end with a semicolon. */
function stripSemicolons(sql: string): string {
  return sql.replace(/[\s;]+$/, '');
}
