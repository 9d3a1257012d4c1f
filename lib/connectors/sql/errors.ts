import { ConnectorError, isConnectorError, redactSecrets, type ConnectorErrorCode } from '../sdk';
import type { SqlDialect } from './params';

const NETWORK = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'EPIPE',
  'ENOTFOUND',
  'EAI_AGAIN',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'ETIMEDOUT',
  'PROTOCOL_CONNECTION_LOST',
  'ESOCKET',
  'ECONNCLOSED',
  'ENOTOPEN',
  'ECLOSE',
]);

/** PostgreSQL SQLSTATE classes and codes to connector error codes. */
function pgCode(state: string): ConnectorErrorCode | undefined {
  if (state === '28P01' || state === '28000') return 'authentication_failed';
  if (state === '57014') return 'timeout';
  if (state === '23505') return 'already_exists';
  if (state.startsWith('23')) return 'constraint_violation';
  if (state.startsWith('22')) return 'object_error';
  if (state.startsWith('08') || state === '57P01' || state === '57P02' || state === '57P03') return 'connection_failed';
  // 42: syntax, unknown table/column, permissions; 3D000: unknown database; 3F000: unknown schema.
  if (state.startsWith('42') || state === '3D000' || state === '3F000') return 'configuration_invalid';
  return undefined;
}

/** MySQL/MariaDB error numbers. */
function mysqlCode(errno: number): ConnectorErrorCode | undefined {
  if (errno === 1045 || errno === 1044 || errno === 1698) return 'authentication_failed';
  if (errno === 1969 || errno === 3024 || errno === 1317) return 'timeout';
  if (errno === 1062) return 'already_exists';
  if ([1048, 1451, 1452, 1216, 1217, 1364, 3819, 4025].includes(errno)) return 'constraint_violation';
  if ([1264, 1265, 1292, 1366, 1406, 1411].includes(errno)) return 'object_error';
  if (errno === 2002 || errno === 2003 || errno === 2006 || errno === 2013 || errno === 1927 || errno === 1053) return 'connection_failed';
  // Unknown table/column/database, syntax, denied access to a table.
  if ([1146, 1054, 1049, 1064, 1142, 1143, 1109, 1051, 1052, 1060, 1210].includes(errno)) return 'configuration_invalid';
  return undefined;
}

/** SQL Server error numbers (and tedious codes). */
function mssqlCode(number: number): ConnectorErrorCode | undefined {
  if (number === 18456) return 'authentication_failed';
  if (number === 2627 || number === 2601) return 'already_exists';
  if (number === 547 || number === 515) return 'constraint_violation';
  if (number === 8152 || number === 2628 || number === 245 || number === 241) return 'object_error';
  if (number === 208 || number === 207 || number === 102 || number === 4060 || number === 229 || number === 156) return 'configuration_invalid';
  return undefined;
}

const HINTS: Partial<Record<ConnectorErrorCode, string>> = {
  authentication_failed: 'The database refused the credentials (check user and password)',
  timeout: 'The database did not answer in time (timeoutSeconds)',
  connection_failed: 'Cannot reach the database server, or it closed the connection',
  configuration_invalid: 'The database rejected a configured query or setting',
};

/** A unique key a row collided with, as the driver reports it. `value` is for comparison only: never show it. */
export interface UniqueKeyViolation {
  /** The constraint or index name. */
  name?: string;
  /** The key's columns (PostgreSQL says them). */
  columns?: string[];
  /** The duplicated key value the server quoted (MySQL, SQL Server, PostgreSQL's detail). */
  value?: string;
}

/**
 * What a unique violation's driver error says about the key: PostgreSQL's `constraint` and `detail`
 * ("Key (employee_id)=(E001) already exists."), MySQL's "Duplicate entry 'E001' for key 'people.employee_id'",
 * SQL Server's "Violation of UNIQUE KEY constraint 'UQ_x' ... The duplicate key value is (E001).".
 */
export function uniqueKeyOf(err: unknown): UniqueKeyViolation {
  const e = (err ?? {}) as { constraint?: unknown; detail?: unknown; message?: unknown };
  const message = typeof e.message === 'string' ? e.message : '';
  const out: UniqueKeyViolation = {};
  if (typeof e.constraint === 'string' && e.constraint) out.name = e.constraint;
  if (typeof e.detail === 'string') {
    const m = /^Key \((.*)\)=\((.*)\) already exists\.?$/s.exec(e.detail);
    if (m) {
      out.columns = m[1].split(/,\s*/).map((c) => c.replace(/^"(.*)"$/, '$1'));
      out.value = m[2];
    }
  }
  const mysql = /^Duplicate entry '(.*)' for key '([^']+)'$/s.exec(message);
  if (mysql) {
    out.value = mysql[1];
    out.name = mysql[2];
  }
  const mssqlName = /(?:constraint|unique index) '([^']+)'/.exec(message);
  if (mssqlName) out.name ??= mssqlName[1];
  const mssqlValue = /The duplicate key value is \((.*)\)\.?$/s.exec(message);
  if (mssqlValue) out.value = mssqlValue[1];
  return out;
}

/**
 * PostgreSQL's `detail` of a foreign-key violation (23503), as `: Key (manager_id)=(E1097) is not present in
 * table "staff".` or `... is still referenced from table "staff".`; '' for anything else. The policy on values
 * the database quotes: a unique violation's value is never shown (a unique column may hold anything, see
 * `uniqueKeyOf`), nor is a check or not-null violation's `detail` (it quotes the whole row, "Failing row
 * contains (...)"). A foreign key's value is shown: it is a key of the referenced table (an identifier, like the
 * anchors messages already name), and which key is missing is what the operator needs to know. MySQL and SQL
 * Server name the constraint in the message itself, without the value.
 */
function foreignKeyDetail(err: unknown): string {
  const e = (err ?? {}) as { code?: unknown; detail?: unknown };
  if (e.code !== '23503' || typeof e.detail !== 'string') return '';
  const m = /^Key \(.*\)=\(.*\) is (?:not present in|still referenced from) table .*$/s.exec(e.detail.trim());
  return m ? `: ${m[0]}` : '';
}

/**
 * A driver error as a {@link ConnectorError}. The message names the kind of failure and, where it helps (an
 * unknown table, a constraint), the server's own text, with every secret redacted. Network failures and
 * timeouts are retriable; a wrong password or a bad query never is.
 */
export function sqlError(err: unknown, dialect: SqlDialect, secrets: string[], what: 'connect' | 'query'): ConnectorError {
  if (isConnectorError(err)) return err;
  const e = (err ?? {}) as { code?: unknown; errno?: unknown; number?: unknown; message?: unknown; originalError?: { info?: { number?: number } } };
  const driverCode = typeof e.code === 'string' ? e.code : undefined;
  let code: ConnectorErrorCode | undefined;
  if (dialect === 'postgres' && driverCode && /^[0-9A-Z]{5}$/.test(driverCode)) code = pgCode(driverCode);
  if (dialect === 'mysql' && typeof e.errno === 'number' && e.errno >= 1000) code = mysqlCode(e.errno);
  if (dialect === 'mssql') {
    const num = typeof e.number === 'number' ? e.number : e.originalError?.info?.number;
    if (typeof num === 'number') code = mssqlCode(num);
    if (!code && driverCode === 'ELOGIN') code = 'authentication_failed';
    if (!code && (driverCode === 'ETIMEOUT' || driverCode === 'ECANCEL')) code = 'timeout';
  }
  const raw = typeof e.message === 'string' ? e.message : String(err);
  if (!code && driverCode && NETWORK.has(driverCode)) code = 'connection_failed';
  if (!code && /timeout|timed out/i.test(raw)) code = what === 'connect' ? 'connection_failed' : 'timeout';
  if (
    !code &&
    /Connection terminated|connection.*(closed|lost|reset)|socket hang up|Can't add new command when connection is in closed state|server has gone away/i.test(
      raw,
    )
  )
    code = 'connection_failed';
  if (!code) code = what === 'connect' ? 'connection_failed' : 'object_error';
  if (code === 'already_exists') {
    // The server's text quotes the duplicated values (any unique column, not only the anchor): never shown.
    const key = uniqueKeyOf(err);
    const what = key.name ? `the unique key '${key.name}'${key.columns ? ` (${key.columns.join(', ')})` : ''}` : 'a unique key';
    return new ConnectorError(code, `Another row already has the same value in ${what}.`, { cause: err, retriable: false });
  }
  const detail = redactSecrets(raw + foreignKeyDetail(err), secrets)
    .replace(/\s+/g, ' ')
    .trim()
    .slice(0, 400);
  const hint = HINTS[code];
  const message = hint ? `${hint}: ${detail || code}` : detail || code;
  return new ConnectorError(code, message, { cause: err });
}
