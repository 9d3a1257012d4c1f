import { createHash } from 'node:crypto';
import type { Readable } from 'node:stream';
import type * as PgModule from 'pg';
import type PgCursorClass from 'pg-cursor';
import type * as MysqlModule from 'mysql2';
import type * as MssqlModule from 'mssql';
import { ConnectorError, throwIfAborted } from '../sdk';
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
  /**
   * Run statements in order, sent to the server together where the driver can (PostgreSQL: pipelined, written
   * to the connection at once, each with its own sync point), instead of one round trip each. Each answer is the
   * statement's result or its error ({@link ConnectorError}); a statement after one that failed inside a
   * transaction fails too (the transaction is aborted). Sent together only on a session opened with `pipeline`
   * (see {@link connect}); absent where the driver sends one statement at a time (MySQL/MariaDB, SQL Server).
   * Calls may overlap (the next part of a batch sent while the answers of the one before are read): the
   * statements go, and are answered, in the order of the calls.
   */
  queryMany?(items: readonly { stmt: CompiledStatement; values: Record<string, unknown> }[]): Promise<(QueryResult | ConnectorError)[]>;
  /**
   * Watch `signal` instead of the signal watched before (none: watch nothing): its abort cancels the statement in
   * flight and drops the connection (see {@link connect}). For a session kept across calls with their own signals.
   */
  abortOn(signal?: AbortSignal): void;
  /**
   * Whether another call may use the session: not closed, not aborted, its connection not dropped (by the server,
   * a failover, a DBA), and no transaction open where the driver tells. A session kept between calls is asked first.
   */
  usable(): boolean;
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

export interface SessionOptions {
  /**
   * A session for many small statements (an export's batch): where the driver can, it offers
   * {@link SqlSession.queryMany}. Such a session does not stream (PostgreSQL's pipelined connection cannot hold a cursor).
   */
  pipeline?: boolean;
}

/**
 * Open a session; failures are {@link ConnectorError}s without secrets. With `signal`, an abort stops the
 * statement the session is running in the server (PostgreSQL `pg_cancel_backend`, MySQL/MariaDB `KILL QUERY`,
 * each from a second short connection, since a connection busy with a statement cannot be asked anything) and
 * drops the connection: the call in flight then fails with `aborted`, and so does every later one.
 */
export async function connect(s: ConnectionSettings, signal?: AbortSignal, options: SessionOptions = {}): Promise<SqlSession> {
  throwIfAborted(signal);
  let session: PgSession | MysqlSession | MssqlSession;
  try {
    if (s.dialect === 'postgres') session = await PgSession.open(s, options.pipeline === true);
    else if (s.dialect === 'mysql') session = await MysqlSession.open(s);
    else session = await MssqlSession.open(s);
  } catch (err) {
    throw signal?.aborted ? abortedError() : sqlError(err, s.dialect, [s.password], 'connect');
  }
  if (signal) session.abortOn(signal);
  return session;
}

const abortedError = () => new ConnectorError('aborted', 'The operation was cancelled.');

/**
 * Run `stop` once when `signal` aborts (at once when it already has); returns the removal of the listener,
 * for a session that closes first.
 */
function onAbort(signal: AbortSignal, stop: () => void): () => void {
  if (signal.aborted) {
    stop();
    return () => undefined;
  }
  signal.addEventListener('abort', stop, { once: true });
  return () => signal.removeEventListener('abort', stop);
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

/** Servers (`host:port/database`) whose connections lost a prepared statement: their batches send statements unnamed. */
const unnamedServers = new Set<string>();

/** Each statement's server-side name (see {@link statementName}). */
const statementNames = new WeakMap<CompiledStatement, string>();

/**
 * The name a pipelined batch prepares a statement under on its connection: `ims_` and a digest of its text, so
 * the same text has the same name and another text another (pg refuses one name for two texts). A connection
 * parses it at its first use and binds it for every later row; the server replans it by itself after a change
 * of the table (DDL). A failed batch drops its connection (lib/connectors/sql/export.ts), and so what it prepared.
 */
function statementName(stmt: CompiledStatement): string {
  let name = statementNames.get(stmt);
  if (!name) statementNames.set(stmt, (name = `ims_${createHash('sha256').update(stmt.text).digest('hex').slice(0, 40)}`));
  return name;
}

class PgSession implements SqlSession {
  readonly dialect = 'postgres' as const;
  private closed = false;
  private broken: unknown;
  /** Set by an abort (see {@link connect}): every failure from then on is `aborted`. */
  private aborted = false;
  private unwatch: () => void = () => undefined;
  /** Rejects when the connection drops: a pending cursor read does not always settle by itself. */
  private readonly gone: Promise<never>;

  private constructor(
    private readonly client: PgModule.Client,
    private readonly Cursor: typeof PgCursorClass,
    private readonly timeoutMs: number,
    private readonly secrets: string[],
    /** Opens the second connection an abort cancels the running statement from. */
    private readonly another: () => PgModule.Client,
    /** The client sends statements without waiting for the answers before (pg's `pipeline`). */
    private readonly pipelined = false,
    /** `host:port/database`: where a pooler that loses prepared statements was found (see unnamedServers). */
    private readonly server = '',
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

  static async open(s: ConnectionSettings, pipeline = false): Promise<PgSession> {
    const pg = load<typeof PgModule>('postgres', 'pg');
    const Cursor = load<typeof PgCursorClass>('postgres', 'pg-cursor');
    const options = (connectMs: number) => ({
      host: s.host,
      port: s.port,
      database: s.database,
      user: s.user,
      password: s.password,
      ssl: tlsOptions(s.ssl),
      connectionTimeoutMillis: connectMs,
      statement_timeout: s.timeoutSeconds * 1000,
      application_name: 'identity-sync',
    });
    const client = new pg.Client({ ...options(s.timeoutSeconds * 1000), pipeline });
    const session = new PgSession(
      client,
      Cursor,
      s.timeoutSeconds * 1000,
      [s.password],
      () => new pg.Client(options(CANCEL_CONNECT_MS)),
      pipeline,
      `${s.host}:${s.port}/${s.database}`,
    );
    try {
      await client.connect();
    } catch (err) {
      await session.close();
      throw err;
    }
    return session;
  }

  private fail(err: unknown, what: 'connect' | 'query'): ConnectorError {
    if (this.aborted) return abortedError();
    return sqlError(this.broken ?? err, 'postgres', this.secrets, what);
  }

  abortOn(signal?: AbortSignal): void {
    this.unwatch();
    this.unwatch = signal ? onAbort(signal, () => void this.interrupt()) : () => undefined;
  }

  usable(): boolean {
    const status = (this.client as unknown as { getTransactionStatus?(): string | null }).getTransactionStatus?.();
    return !this.closed && !this.aborted && this.broken === undefined && (status === 'I' || status === null || status === undefined);
  }

  /**
   * Cancel the statement running in the server, then drop the connection. pg's client cannot cancel its own
   * query, and ending the connection alone leaves the statement running in the server until it next writes to
   * the client (a sleeping or sorting query: minutes). A cancel that cannot be sent still drops the connection,
   * so the call in flight here ends all the same.
   */
  private async interrupt(): Promise<void> {
    if (this.closed || this.aborted) return;
    this.aborted = true;
    const pid = (this.client as unknown as { processID?: number | null }).processID;
    if (typeof pid === 'number') {
      const other = this.another();
      other.on('error', () => undefined);
      try {
        await other.connect();
        await other.query('SELECT pg_cancel_backend($1)', [pid]);
      } catch {
        // The connection is dropped below: the server ends the statement when it notices.
      } finally {
        await other.end().catch(() => undefined);
      }
    }
    this.closed = true;
    this.unwatch();
    // Destroying the socket settles the call in flight at once (through `gone`); end() would wait for the server.
    (this.client as unknown as { connection?: { stream?: { destroy(): void } } }).connection?.stream?.destroy();
    await this.client.end().catch(() => undefined);
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

  /** The last call of queryMany on a session that is not pipelined (the next one waits for it). */
  private oneByOne: Promise<unknown> = Promise.resolve();

  /**
   * Statements pipelined: every message written to the socket in one go (the stream corked around them), the
   * answers read in order. On a session opened without `pipeline`, one after another.
   */
  async queryMany(items: readonly { stmt: CompiledStatement; values: Record<string, unknown> }[]): Promise<(QueryResult | ConnectorError)[]> {
    if (!this.pipelined) {
      // One after another, and a call made while another runs waits for it: the statements go in the calls' order.
      const run = async () => {
        const out: (QueryResult | ConnectorError)[] = [];
        for (const { stmt, values } of items) out.push(await this.query(stmt, values).catch((err: ConnectorError) => err));
        return out;
      };
      const done = this.oneByOne.then(run, run);
      this.oneByOne = done.catch(() => undefined);
      return done;
    }
    const stream = (this.client as unknown as { connection?: { stream?: { cork?(): void; uncork?(): void } } }).connection?.stream;
    // Bound first: nothing is sent unless every statement is (a statement sent is always awaited below). Named:
    // the server parses and plans each statement once per connection, not once per row (see statementName).
    const named = !unnamedServers.has(this.server);
    const bound = items.map(({ stmt, values }) => ({
      ...(named ? { name: statementName(stmt) } : {}),
      text: stmt.text,
      values: bindValues(stmt, values, 'postgres') as unknown[],
    }));
    const sent: Promise<PgModule.QueryResult>[] = [];
    stream?.cork?.();
    try {
      for (const q of bound) sent.push(this.client.query(q));
    } finally {
      stream?.uncork?.();
    }
    const settled = await Promise.race([Promise.allSettled(sent), this.gone]).catch((err: unknown) => {
      throw this.fail(err, 'query');
    });
    return settled.map((r) => {
      if (r.status === 'rejected') {
        // A pooler between here and the server that does not keep a connection's prepared statements (PgBouncer in
        // transaction mode before 1.21): this server's batches send their statements unnamed from now on, and this
        // one goes row by row (an object-level refusal does that; the rows' own statements then give their results).
        if (named && (r.reason as { code?: unknown }).code === '26000' && !this.aborted) {
          unnamedServers.add(this.server);
          return new ConnectorError(
            'object_error',
            'The connection no longer holds the statements it prepared (a pooler in between?): the batch goes row by row.',
            {
              retriable: true,
            },
          );
        }
        return this.fail(r.reason, 'query');
      }
      const fields = r.value.fields ?? [];
      return {
        rows: r.value.rows as Row[],
        fields: fields.map((f) => f.name),
        rowCount: r.value.rowCount ?? 0,
        types: fields.map((f) => pgType(f.dataTypeID)),
      };
    });
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
    this.unwatch();
    await this.client.end().catch(() => undefined);
  }
}

/** How long an abort waits to open its second connection before it just drops the first. */
const CANCEL_CONNECT_MS = 3000;

// ---------------------------------------------------------------------------------------------------------
// MySQL / MariaDB: mysql2, server-side prepared statements (`execute`), so values are never interpolated.

class MysqlSession implements SqlSession {
  readonly dialect = 'mysql' as const;
  private closed = false;
  /** Set by an abort (see {@link connect}): every failure from then on is `aborted`. */
  private aborted = false;
  private unwatch: () => void = () => undefined;
  /** Rejects on an abort: a command whose connection is destroyed is not always called back. */
  private readonly stopped: Promise<never>;
  private stop: (err: Error) => void = () => undefined;

  private constructor(
    private readonly conn: MysqlModule.Connection,
    private readonly timeoutSeconds: number,
    private readonly secrets: string[],
    /** Opens the second connection an abort kills the running statement from. */
    private readonly another: () => MysqlModule.Connection,
  ) {
    conn.on('error', () => {
      // A fatal error is also delivered to the pending command; this only keeps the process alive.
    });
    this.stopped = new Promise<never>((_, reject) => (this.stop = reject));
    this.stopped.catch(() => undefined);
  }

  private error(err: unknown): ConnectorError {
    return this.aborted ? abortedError() : sqlError(err, 'mysql', this.secrets, 'query');
  }

  abortOn(signal?: AbortSignal): void {
    this.unwatch();
    this.unwatch = signal ? onAbort(signal, () => void this.interrupt()) : () => undefined;
  }

  usable(): boolean {
    const c = this.conn as unknown as { _fatalError?: unknown; _closing?: boolean };
    return !this.closed && !this.aborted && !c._fatalError && !c._closing;
  }

  /** `KILL QUERY` the running statement from a second connection (the server rolls it back), then drop the connection. */
  private async interrupt(): Promise<void> {
    if (this.closed || this.aborted) return;
    this.aborted = true;
    const thread = this.conn.threadId;
    if (typeof thread === 'number') {
      const other = this.another();
      other.on('error', () => undefined);
      await new Promise<void>((resolve) => other.query(`KILL QUERY ${Math.trunc(thread)}`, () => resolve()));
      other.destroy();
    }
    this.stop(abortedError());
    await this.close();
  }

  static async open(s: ConnectionSettings): Promise<MysqlSession> {
    const mysql = load<typeof MysqlModule>('mysql', 'mysql2');
    const tls = tlsOptions(s.ssl);
    const options = (connectMs: number) => ({
      host: s.host,
      port: s.port,
      database: s.database,
      user: s.user,
      password: s.password,
      ssl: tls || undefined,
      connectTimeout: connectMs,
      // Dates are UTC both ways (with the session time zone below), big integers stay exact strings.
      timezone: 'Z',
      supportBigNumbers: true,
      bigNumberStrings: true,
      multipleStatements: false,
      charset: 'utf8mb4',
    });
    const conn = mysql.createConnection(options(s.timeoutSeconds * 1000));
    const session = new MysqlSession(conn, s.timeoutSeconds, [s.password], () => mysql.createConnection(options(CANCEL_CONNECT_MS)));
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
      const done = new Promise<QueryResult>((resolve, reject) => {
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
      return await Promise.race([done, this.stopped]);
    } catch (err) {
      throw this.error(err);
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
        (err) => this.error(err),
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
      await Promise.race([this.raw(snapshot ? 'START TRANSACTION WITH CONSISTENT SNAPSHOT, READ ONLY' : 'START TRANSACTION'), this.stopped]);
    } catch (err) {
      throw this.error(err);
    }
  }

  async commit(): Promise<void> {
    await Promise.race([this.raw('COMMIT'), this.stopped]).catch((err) => {
      throw this.error(err);
    });
  }

  async rollback(): Promise<void> {
    await Promise.race([this.raw('ROLLBACK'), this.stopped]).catch((err) => {
      throw this.error(err);
    });
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    this.unwatch();
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

  /** Set by an abort (see {@link connect}): every failure from then on is `aborted`. */
  private aborted = false;

  private error(err: unknown): ConnectorError {
    return this.aborted ? abortedError() : sqlError(err, 'mssql', this.secrets, 'query');
  }

  /** An abort closes the pool: tedious cancels the request in flight with it (untested here, like all of SQL Server). */
  abortOn(signal?: AbortSignal): void {
    this.unwatch();
    this.unwatch = signal
      ? onAbort(signal, () => {
          this.aborted = true;
          void this.close();
        })
      : () => undefined;
  }

  private unwatch: () => void = () => undefined;

  usable(): boolean {
    return !this.closed && !this.aborted && this.pool.connected;
  }

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
      throw this.error(err);
    }
  }

  async *stream(stmt: CompiledStatement, values: Record<string, unknown>, chunk: number): AsyncGenerator<Row[]> {
    const req = this.request(stmt, values);
    const rows = req.toReadableStream({ highWaterMark: chunk });
    req.query(stmt.text);
    yield* batches(
      rows,
      chunk,
      (err) => this.error(err),
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
      throw this.error(err);
    }
  }

  async commit(): Promise<void> {
    const tx = this.tx;
    this.tx = undefined;
    await tx?.commit().catch((err: unknown) => {
      throw this.error(err);
    });
  }

  async rollback(): Promise<void> {
    const tx = this.tx;
    this.tx = undefined;
    await tx?.rollback().catch((err: unknown) => {
      throw this.error(err);
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
