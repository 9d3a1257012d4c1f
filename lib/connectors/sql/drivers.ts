import type { Readable } from 'node:stream';
import type * as PgModule from 'pg';
import type PgCursorClass from 'pg-cursor';
import type * as MysqlModule from 'mysql2';
import type * as MssqlModule from 'mssql';
import { ConnectorError } from '../sdk';
import { sqlError } from './errors';
import { bindValues, type CompiledStatement, type SqlDialect } from './params';

/** A row as a driver returns it: column name to value (Date, Buffer, bigint strings...). */
export type Row = Record<string, unknown>;

export interface QueryResult {
  rows: Row[];
  /** Column names in order. */
  fields: string[];
  /** Rows changed by an INSERT/UPDATE/DELETE. */
  rowCount: number;
  /** The columns' value types, where the driver tells them. */
  types?: ColumnType[];
}

export type ColumnType = 'string' | 'number' | 'boolean' | 'datetime' | 'binary';

/** PostgreSQL type OIDs: int2/int4/float4/float8, bool, date/timestamp/timestamptz, bytea (int8 and numeric stay exact text). */
function pgType(oid: number): ColumnType {
  if (oid === 21 || oid === 23 || oid === 700 || oid === 701) return 'number';
  if (oid === 16) return 'boolean';
  if (oid === 1082 || oid === 1114 || oid === 1184) return 'datetime';
  if (oid === 17) return 'binary';
  return 'string';
}

/** MySQL column types: tiny/short/long/float/double/int24/year, date/datetime/timestamp (bigint stays exact text). */
function mysqlType(t: number | undefined): ColumnType {
  if (t === undefined) return 'string';
  if ([1, 2, 3, 4, 5, 9, 13].includes(t)) return 'number';
  if ([7, 10, 12, 14].includes(t)) return 'datetime';
  return 'string';
}

/** What the connector needs from a database connection, the same for every dialect. */
export interface SqlSession {
  readonly dialect: SqlDialect;
  /** Run one statement, buffering its (small) result. */
  query(stmt: CompiledStatement, values?: Record<string, unknown>): Promise<QueryResult>;
  /**
   * Stream the rows of one statement in chunks of at most `chunk` rows: memory holds one chunk whatever the
   * result size (pg-cursor, mysql2's row stream, mssql's readable stream). Leaving the loop early is allowed;
   * the session is then closed by its owner.
   */
  stream(stmt: CompiledStatement, values: Record<string, unknown>, chunk: number): AsyncGenerator<Row[]>;
  /** Start a transaction; `snapshot` asks for one consistent read-only snapshot (a full import's reads). */
  begin(snapshot?: boolean): Promise<void>;
  commit(): Promise<void>;
  rollback(): Promise<void>;
  /** Close the connection (idempotent; never throws). */
  close(): Promise<void>;
}

/** Connection settings, already defaulted. */
export interface ConnectionSettings {
  dialect: SqlDialect;
  host: string;
  port: number;
  database: string;
  user: string;
  password: string;
  ssl?: boolean | { ca?: string; rejectUnauthorized?: boolean };
  timeoutSeconds: number;
}

const DRIVER_PACKAGES: Record<SqlDialect, string[]> = { postgres: ['pg', 'pg-cursor'], mysql: ['mysql2'], mssql: ['mssql'] };

/**
 * Drivers load on first use, so a deployment needs only the one it uses; a missing one is a clear
 * configuration error naming the package to install.
 */
function load<T>(dialect: SqlDialect, name: string): T {
  try {
    return require(name) as T;
  } catch {
    throw new ConnectorError(
      'unsupported',
      `The '${dialect}' dialect needs the npm package '${name}', which is not installed (npm install ${DRIVER_PACKAGES[dialect].join(' ')}).`,
      { retriable: false },
    );
  }
}

/** Open a session; failures are {@link ConnectorError}s without secrets. */
export async function connect(s: ConnectionSettings): Promise<SqlSession> {
  try {
    if (s.dialect === 'postgres') return await PgSession.open(s);
    if (s.dialect === 'mysql') return await MysqlSession.open(s);
    return await MssqlSession.open(s);
  } catch (err) {
    throw sqlError(err, s.dialect, [s.password], 'connect');
  }
}

function tlsOptions(ssl: ConnectionSettings['ssl']): false | { ca?: string; rejectUnauthorized: boolean } {
  if (!ssl) return false;
  if (ssl === true) return { rejectUnauthorized: true };
  const o: { ca?: string; rejectUnauthorized: boolean } = { rejectUnauthorized: ssl.rejectUnauthorized ?? true };
  if (ssl.ca) o.ca = ssl.ca;
  return o;
}

// ---------------------------------------------------------------------------------------------------------
// PostgreSQL: pg + pg-cursor

class PgSession implements SqlSession {
  readonly dialect = 'postgres' as const;
  private closed = false;
  private broken: unknown;
  /** Rejects when the connection drops: a pending cursor read does not always settle by itself. */
  private readonly gone: Promise<never>;

  private constructor(
    private readonly client: PgModule.Client,
    private readonly Cursor: typeof PgCursorClass,
    private readonly timeoutMs: number,
    private readonly secrets: string[],
  ) {
    this.gone = new Promise<never>((_, reject) => {
      // A connection that drops emits 'error' (or just 'end') on the client: remember it instead of crashing.
      client.on('error', (err) => {
        this.broken = err;
        reject(err);
      });
      client.on('end', () => reject(new Error('Connection terminated')));
    });
    this.gone.catch(() => undefined);
  }

  static async open(s: ConnectionSettings): Promise<PgSession> {
    const pg = load<typeof PgModule>('postgres', 'pg');
    const Cursor = load<typeof PgCursorClass>('postgres', 'pg-cursor');
    const client = new pg.Client({
      host: s.host,
      port: s.port,
      database: s.database,
      user: s.user,
      password: s.password,
      ssl: tlsOptions(s.ssl),
      connectionTimeoutMillis: s.timeoutSeconds * 1000,
      statement_timeout: s.timeoutSeconds * 1000,
      application_name: 'identity-sync',
    });
    const session = new PgSession(client, Cursor, s.timeoutSeconds * 1000, [s.password]);
    try {
      await client.connect();
    } catch (err) {
      await session.close();
      throw err;
    }
    return session;
  }

  private fail(err: unknown, what: 'connect' | 'query'): ConnectorError {
    return sqlError(this.broken ?? err, 'postgres', this.secrets, what);
  }

  async query(stmt: CompiledStatement, values: Record<string, unknown> = {}): Promise<QueryResult> {
    try {
      const r = await Promise.race([this.client.query({ text: stmt.text, values: bindValues(stmt, values, 'postgres') as unknown[] }), this.gone]);
      const fields = r.fields ?? [];
      return { rows: r.rows as Row[], fields: fields.map((f) => f.name), rowCount: r.rowCount ?? 0, types: fields.map((f) => pgType(f.dataTypeID)) };
    } catch (err) {
      throw this.fail(err, 'query');
    }
  }

  /**
   * Rows of a cursor, `chunk` at a time. The server's statement_timeout would count the whole life of the
   * cursor (its fetches are one statement until it closes), and an import keeps it open across engine pages
   * for minutes: so it is off while the cursor is open, and each fetch is bounded here by timeoutSeconds
   * instead (a fetch that does not answer in time fails the read with `timeout` and drops the connection).
   */
  async *stream(stmt: CompiledStatement, values: Record<string, unknown>, chunk: number): AsyncGenerator<Row[]> {
    await this.query({ text: 'SET statement_timeout = 0', params: [] });
    const cursor = this.client.query(new this.Cursor<Row>(stmt.text, bindValues(stmt, values, 'postgres') as unknown[]));
    try {
      for (;;) {
        let rows: Row[];
        let timer: NodeJS.Timeout | undefined;
        const late = new Promise<never>((_, reject) => {
          timer = setTimeout(() => reject(Object.assign(new Error('The cursor read timed out.'), { code: '57014' })), this.timeoutMs);
        });
        try {
          rows = await Promise.race([cursor.read(chunk), this.gone, late]);
        } catch (err) {
          if ((err as { code?: string }).code === '57014' && !this.broken) {
            this.broken = err;
            await this.close();
          }
          throw this.fail(err, 'query');
        } finally {
          clearTimeout(timer);
        }
        if (rows.length === 0) return;
        yield rows;
        if (rows.length < chunk) return;
      }
    } finally {
      if (!this.closed && !this.broken) {
        await Promise.race([cursor.close(), this.gone]).catch(() => undefined);
        await this.query({ text: `SET statement_timeout = ${this.timeoutMs}`, params: [] }).catch(() => undefined);
      }
    }
  }

  async begin(snapshot = false): Promise<void> {
    await this.query({ text: snapshot ? 'BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY' : 'BEGIN', params: [] });
  }

  async commit(): Promise<void> {
    await this.query({ text: 'COMMIT', params: [] });
  }

  async rollback(): Promise<void> {
    await this.query({ text: 'ROLLBACK', params: [] });
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    await this.client.end().catch(() => undefined);
  }
}

// ---------------------------------------------------------------------------------------------------------
// MySQL / MariaDB: mysql2, server-side prepared statements (`execute`), so values are never interpolated.

class MysqlSession implements SqlSession {
  readonly dialect = 'mysql' as const;
  private closed = false;

  private constructor(
    private readonly conn: MysqlModule.Connection,
    private readonly timeoutSeconds: number,
    private readonly secrets: string[],
  ) {
    conn.on('error', () => {
      // A fatal error is also delivered to the pending command; this only keeps the process alive.
    });
  }

  static async open(s: ConnectionSettings): Promise<MysqlSession> {
    const mysql = load<typeof MysqlModule>('mysql', 'mysql2');
    const tls = tlsOptions(s.ssl);
    const conn = mysql.createConnection({
      host: s.host,
      port: s.port,
      database: s.database,
      user: s.user,
      password: s.password,
      ssl: tls || undefined,
      connectTimeout: s.timeoutSeconds * 1000,
      // Dates are UTC both ways (with the session time zone below), big integers stay exact strings.
      timezone: 'Z',
      supportBigNumbers: true,
      bigNumberStrings: true,
      multipleStatements: false,
      charset: 'utf8mb4',
    });
    const session = new MysqlSession(conn, s.timeoutSeconds, [s.password]);
    try {
      await new Promise<void>((resolve, reject) => conn.connect((err) => (err ? reject(err) : resolve())));
      await session.raw("SET time_zone = '+00:00'");
      // MariaDB bounds any statement (seconds); MySQL only SELECTs (milliseconds).
      await session
        .raw(`SET SESSION max_statement_time = ${s.timeoutSeconds}`)
        .catch(() => session.raw(`SET SESSION max_execution_time = ${s.timeoutSeconds * 1000}`).catch(() => undefined));
    } catch (err) {
      await session.close();
      throw err;
    }
    return session;
  }

  private raw(text: string): Promise<void> {
    return new Promise((resolve, reject) => this.conn.query(text, (err) => (err ? reject(err) : resolve())));
  }

  async query(stmt: CompiledStatement, values: Record<string, unknown> = {}): Promise<QueryResult> {
    const params = bindValues(stmt, values, 'mysql') as MysqlModule.ExecuteValues[];
    try {
      return await new Promise<QueryResult>((resolve, reject) => {
        const cb = (err: unknown, result: unknown, fields: unknown) => {
          if (err) return reject(err);
          const list = Array.isArray(fields) ? (fields as { name: string; columnType?: number }[]) : [];
          const names = list.map((f) => f.name);
          if (Array.isArray(result))
            resolve({ rows: result as Row[], fields: names, rowCount: result.length, types: list.map((f) => mysqlType(f.columnType)) });
          else resolve({ rows: [], fields: names, rowCount: (result as { affectedRows?: number }).affectedRows ?? 0 });
        };
        // Statements without parameters go through the text protocol (some, like BEGIN, cannot be prepared).
        if (params.length === 0) this.conn.query(stmt.text, cb);
        else this.conn.execute(stmt.text, params, cb);
      });
    } catch (err) {
      throw sqlError(err, 'mysql', this.secrets, 'query');
    }
  }

  async *stream(stmt: CompiledStatement, values: Record<string, unknown>, chunk: number): AsyncGenerator<Row[]> {
    const params = bindValues(stmt, values, 'mysql') as MysqlModule.ExecuteValues[];
    // max_statement_time would count the whole stream, which an import keeps open across engine pages.
    await this.raw('SET SESSION max_statement_time = 0').catch(() => this.raw('SET SESSION max_execution_time = 0').catch(() => undefined));
    const cmd = params.length ? this.conn.execute(stmt.text, params) : this.conn.query(stmt.text);
    const rows = (cmd as unknown as { stream(o: { highWaterMark: number }): Readable }).stream({ highWaterMark: chunk });
    const timeout = { ms: this.timeoutSeconds * 1000, error: () => Object.assign(new Error('The statement timed out.'), { errno: 1969 }) };
    try {
      yield* batches(
        rows,
        chunk,
        (err) => sqlError(err, 'mysql', this.secrets, 'query'),
        () => rows.destroy(),
        timeout,
      );
    } finally {
      if (!this.closed)
        await this.raw(`SET SESSION max_statement_time = ${this.timeoutSeconds}`).catch(() =>
          this.raw(`SET SESSION max_execution_time = ${this.timeoutSeconds * 1000}`).catch(() => undefined),
        );
    }
  }

  async begin(snapshot = false): Promise<void> {
    try {
      await this.raw(snapshot ? 'START TRANSACTION WITH CONSISTENT SNAPSHOT, READ ONLY' : 'START TRANSACTION');
    } catch (err) {
      throw sqlError(err, 'mysql', this.secrets, 'query');
    }
  }

  async commit(): Promise<void> {
    await this.raw('COMMIT').catch((err) => {
      throw sqlError(err, 'mysql', this.secrets, 'query');
    });
  }

  async rollback(): Promise<void> {
    await this.raw('ROLLBACK').catch((err) => {
      throw sqlError(err, 'mysql', this.secrets, 'query');
    });
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    // destroy, not end: a stream left early still has rows in flight, and end() would wait for them.
    this.conn.destroy();
  }
}

// ---------------------------------------------------------------------------------------------------------
// SQL Server: mssql (tedious). Untested against a live server (none can run here): see docs/connector-sql.md.

class MssqlSession implements SqlSession {
  readonly dialect = 'mssql' as const;
  private closed = false;
  private tx?: MssqlModule.Transaction;

  private constructor(
    private readonly mssql: typeof MssqlModule,
    private readonly pool: MssqlModule.ConnectionPool,
    private readonly secrets: string[],
  ) {
    pool.on('error', () => undefined);
  }

  static async open(s: ConnectionSettings): Promise<MssqlSession> {
    const mssql = load<typeof MssqlModule>('mssql', 'mssql');
    const tls = tlsOptions(s.ssl);
    const pool = new mssql.ConnectionPool({
      server: s.host,
      port: s.port,
      database: s.database,
      user: s.user,
      password: s.password,
      connectionTimeout: s.timeoutSeconds * 1000,
      requestTimeout: s.timeoutSeconds * 1000,
      pool: { min: 0, max: 1 },
      options: {
        encrypt: tls !== false,
        trustServerCertificate: tls !== false && !tls.rejectUnauthorized,
        ...(tls && tls.ca ? { cryptoCredentialsDetails: { ca: tls.ca } } : {}),
      },
    });
    await pool.connect();
    return new MssqlSession(mssql, pool, [s.password]);
  }

  private request(stmt: CompiledStatement, values: Record<string, unknown>): MssqlModule.Request {
    const req = this.tx ? new this.mssql.Request(this.tx) : this.pool.request();
    const bound = bindValues(stmt, values, 'mssql') as Record<string, unknown>;
    for (const [name, value] of Object.entries(bound)) req.input(name, value);
    return req;
  }

  async query(stmt: CompiledStatement, values: Record<string, unknown> = {}): Promise<QueryResult> {
    try {
      const r = await this.request(stmt, values).query(stmt.text);
      const rows = (r.recordset ?? []) as unknown as Row[];
      const cols = r.recordset?.columns ? Object.keys(r.recordset.columns) : rows[0] ? Object.keys(rows[0]) : [];
      return { rows, fields: cols, rowCount: (r.rowsAffected ?? []).reduce((a, b) => a + b, 0) };
    } catch (err) {
      throw sqlError(err, 'mssql', this.secrets, 'query');
    }
  }

  async *stream(stmt: CompiledStatement, values: Record<string, unknown>, chunk: number): AsyncGenerator<Row[]> {
    const req = this.request(stmt, values);
    const rows = req.toReadableStream({ highWaterMark: chunk });
    req.query(stmt.text);
    yield* batches(
      rows,
      chunk,
      (err) => sqlError(err, 'mssql', this.secrets, 'query'),
      () => {
        req.cancel();
        rows.destroy();
      },
    );
  }

  async begin(snapshot = false): Promise<void> {
    try {
      this.tx = new this.mssql.Transaction(this.pool);
      await this.tx.begin(snapshot ? this.mssql.ISOLATION_LEVEL.SNAPSHOT : undefined);
    } catch (err) {
      this.tx = undefined;
      throw sqlError(err, 'mssql', this.secrets, 'query');
    }
  }

  async commit(): Promise<void> {
    const tx = this.tx;
    this.tx = undefined;
    await tx?.commit().catch((err: unknown) => {
      throw sqlError(err, 'mssql', this.secrets, 'query');
    });
  }

  async rollback(): Promise<void> {
    const tx = this.tx;
    this.tx = undefined;
    await tx?.rollback().catch((err: unknown) => {
      throw sqlError(err, 'mssql', this.secrets, 'query');
    });
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    await this.pool.close().catch(() => undefined);
  }
}

/**
 * A driver's row stream in batches of `chunk` rows. A driver error is rethrown as `onError` maps it (no
 * secret in it); `close` stops the stream when the consumer leaves early or fails. With `timeout`, a batch the
 * server does not deliver within `ms` (the time the consumer spends between batches does not count) stops
 * the stream and fails with `timeout.error()` mapped by `onError`: the server-side statement timeout is off
 * while a stream is open, since it would count the whole stream.
 */
async function* batches(
  rows: AsyncIterable<unknown>,
  chunk: number,
  onError: (err: unknown) => Error,
  close: () => void,
  timeout?: { ms: number; error: () => Error },
): AsyncGenerator<Row[]> {
  let batch: Row[] = [];
  let timer: NodeJS.Timeout | undefined;
  let timedOut = false;
  const arm = () => {
    if (!timeout) return;
    timer = setTimeout(() => {
      timedOut = true;
      close();
    }, timeout.ms);
  };
  try {
    arm();
    for await (const row of rows) {
      batch.push(row as Row);
      if (batch.length >= chunk) {
        clearTimeout(timer);
        yield batch;
        batch = [];
        arm();
      }
    }
    if (timedOut) throw timeout!.error();
  } catch (err) {
    throw onError(timedOut ? timeout!.error() : err);
  } finally {
    clearTimeout(timer);
    close();
  }
  if (batch.length) yield batch;
}
