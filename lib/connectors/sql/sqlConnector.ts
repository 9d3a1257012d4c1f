import { createHash } from 'node:crypto';
import { promises as fs } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import {
  ConnectorError,
  contentHash,
  isConnectorError,
  throwIfAborted,
  valuesOf,
  type AttributeSchema,
  type AttributeValue,
  type ConnectionTestResult,
  type ConnectorContext,
  type ConnectorObject,
  type ConnectorSchema,
  type DeltaChange,
  type DeltaImportOptions,
  type DeltaPage,
  type ExportChange,
  type ExportResult,
  type FullImportOptions,
  type ImportPage,
  type ObjectError,
  type ScalarValue,
  withApplied,
} from '../sdk';
import { SnapshotStore, type RowState } from '../file/state';
import { connect, type ConnectionSettings, type QueryResult, type Row, type SqlSession } from './drivers';
import { uniqueKeyOf } from './errors';
import { compileSql, quoteIdent, type CompiledStatement, type SqlDialect } from './params';
import type { SqlConfig } from './schema';
import { softDeleteColumnQuery } from './validate';

/** A delta watermark value: the largest deltaColumn value read, typed so it can be bound again. */
interface MarkValue {
  /** `num`: integer or decimal (kept as text, exact); `ts`: ISO timestamp; `str`: anything else. */
  t: 'num' | 'ts' | 'str';
  v: string;
}

/** A full import's resume point (base64url JSON): the last anchor of a committed page and the run's state. */
interface FullCursor {
  v: 1;
  cfg: string;
  /** The anchor-hash snapshot being built, and its byte length after the committed page. */
  snap: string;
  sb: number;
  /** Keyset position: the last anchor read (text form). */
  after: string;
  /** The watermark captured before the first page. */
  wm: MarkValue | null;
}

/** What a watermark names: the deltaColumn mark, the snapshot of anchors and hashes, the delta count. */
interface Watermark {
  v: 1;
  cfg: string;
  snap: string;
  wm: MarkValue | null;
  /** Deltas run since the last anchor-set diff (for deleteDetection anchorDiff). */
  n: number;
}

type Built = { object: ConnectorObject; hash: string } | { error: ObjectError } | { deleted: string };

const MAX_PAGE = 10000;
const OBJECT_LEVEL = new Set(['object_error', 'not_found', 'already_exists', 'constraint_violation']);

const encode = (o: unknown) => Buffer.from(JSON.stringify(o)).toString('base64url');
function decode<T>(token: string, what: string): T {
  try {
    const o = JSON.parse(Buffer.from(token, 'base64url').toString('utf8')) as T & { v?: number };
    if (o && o.v === 1) return o;
  } catch {
    // fall through
  }
  throw new ConnectorError('cursor_invalid', `The ${what} is not one this SQL connector wrote.`);
}

/** Connection and query settings with their defaults applied. */
export interface ResolvedSqlConfig extends SqlConfig {
  port: number;
  objectType: string;
  timeoutSeconds: number;
  deltaOverlapSeconds: number;
  stateDirectory: string;
}

const DEFAULT_PORTS: Record<SqlDialect, number> = { postgres: 5432, mysql: 3306, mssql: 1433 };

export function resolveSqlConfig(config: SqlConfig, context: ConnectorContext = {}): ResolvedSqlConfig {
  const key = context.connectorId ?? createHash('sha256').update(JSON.stringify([config.dialect, config.host, config.port ?? null, config.database, config.fullImportQuery])).digest('hex').slice(0, 24);
  const base = context.stateDirectory ?? path.join(os.tmpdir(), 'identity-sync-sql-connector');
  return {
    ...config,
    port: config.port ?? DEFAULT_PORTS[config.dialect],
    objectType: config.objectType ?? 'User',
    timeoutSeconds: config.timeoutSeconds ?? 30,
    deltaOverlapSeconds: config.deltaOverlapSeconds ?? 0,
    stateDirectory: path.join(base, 'sql-' + key.replace(/[^A-Za-z0-9_.-]/g, '_')),
  };
}

/** One value from a driver as a connector value (dates as ISO text, binary as base64, JSON as text). */
export function toScalar(v: unknown): ScalarValue {
  if (v === null || v === undefined) return null;
  if (typeof v === 'string' || typeof v === 'boolean') return v;
  if (typeof v === 'number') return Number.isFinite(v) ? v : String(v);
  if (typeof v === 'bigint') return v.toString();
  if (v instanceof Date) return Number.isNaN(v.getTime()) ? null : v.toISOString();
  if (Buffer.isBuffer(v)) return v.toString('base64');
  return JSON.stringify(v);
}

function toAttribute(v: unknown): AttributeValue {
  if (Array.isArray(v)) return v.map(toScalar);
  return toScalar(v);
}

/** The text form of an anchor or key value ('' when absent). */
function keyText(v: unknown): string {
  const s = toScalar(v);
  return s === null ? '' : String(s);
}

function markOf(v: unknown): MarkValue | null {
  if (v === null || v === undefined) return null;
  if (v instanceof Date) return Number.isNaN(v.getTime()) ? null : { t: 'ts', v: v.toISOString() };
  if (typeof v === 'number' || typeof v === 'bigint') return { t: 'num', v: String(v) };
  const s = String(v);
  return /^-?\d+(\.\d+)?$/.test(s) ? { t: 'num', v: s } : { t: 'str', v: s };
}

function compareNum(a: string, b: string): number {
  if (/^-?\d+$/.test(a) && /^-?\d+$/.test(b)) {
    const x = BigInt(a);
    const y = BigInt(b);
    return x < y ? -1 : x > y ? 1 : 0;
  }
  return Number(a) - Number(b);
}

/** The larger of two marks (a mark of another type than the current one replaces nothing). */
function maxMark(a: MarkValue | null, b: MarkValue | null): MarkValue | null {
  if (!a) return b;
  if (!b || a.t !== b.t) return a;
  if (a.t === 'num') return compareNum(b.v, a.v) > 0 ? b : a;
  if (a.t === 'ts') return Date.parse(b.v) > Date.parse(a.v) ? b : a;
  return b.v > a.v ? b : a;
}

/** The value bound to `:watermark`: a timestamp goes back by the overlap window. */
function markParam(m: MarkValue, overlapSeconds: number, dialect: SqlDialect): unknown {
  if (m.t === 'ts') return new Date(Date.parse(m.v) - overlapSeconds * 1000);
  if (m.t === 'num') {
    // MySQL compares a text parameter with an integer column as a double: bind a number when it is exact.
    const n = Number(m.v);
    return dialect !== 'postgres' && Number.isSafeInteger(n) ? n : m.v;
  }
  return m.v;
}

function matches(value: unknown, expected: string | number | boolean): boolean {
  if (typeof expected === 'boolean') {
    const truthy = value === true || value === 1 || value === '1' || value === 't' || value === 'true' || value === 'TRUE';
    const falsy = value === false || value === 0 || value === '0' || value === 'f' || value === 'false' || value === 'FALSE';
    return expected ? truthy : falsy;
  }
  return value !== null && value !== undefined && keyText(value) === String(expected);
}

/** Values for export parameters: JSON text for multi-valued attributes, scalars as they are. */
function paramValue(v: AttributeValue | undefined): unknown {
  if (v === undefined) return null;
  return Array.isArray(v) ? JSON.stringify(v) : v;
}

/**
 * The SQL connector (type `sql`; see docs/connector-sql.md). PostgreSQL, MySQL/MariaDB and SQL Server through
 * their Node drivers, loaded on first use.
 *
 * - Full import streams `fullImportQuery` ordered by the anchor column inside one read-only snapshot
 *   transaction; a page's cursor is the last anchor read, so a resumed import runs the query again with
 *   `anchor > :after` (keyset). Multi-valued attributes come from `multiValueQueries`, one query per page for
 *   the page's anchors. Every object's content hash is recorded in an anchor-hash snapshot in the state
 *   directory, which the last page's watermark names with the largest `deltaColumn` value (read first).
 * - Delta import runs `deltaImportQuery` with `:watermark` (the stored value, minus `deltaOverlapSeconds` for a
 *   timestamp), compares each row's hash with the snapshot (so rows re-read through the overlap are not
 *   reported twice, and an unknown anchor is an add), and finds deletes by the configured detection. Without a
 *   delta query, or without a mark yet, it reads the full query and diffs it with the snapshot.
 * - Export runs `exportStatements` with `:name` parameters bound by the driver, one transaction per batch; a
 *   batch with a failing row is run again row by row, each in its own transaction.
 */
export class SqlConnector {
  readonly type = 'sql';
  readonly config: ResolvedSqlConfig;
  private readonly store: SnapshotStore;
  private readonly settingsPrint: string;
  private readonly dialect: SqlDialect;

  constructor(config: SqlConfig, context: ConnectorContext = {}) {
    this.config = resolveSqlConfig(config, context);
    this.dialect = config.dialect;
    this.store = new SnapshotStore(this.config.stateDirectory);
    const c = this.config;
    this.settingsPrint = createHash('sha256')
      .update(JSON.stringify([c.objectType, c.anchorColumn, c.fullImportQuery, c.deltaColumn ?? null, c.deleteDetection ?? null, c.referenceColumns ?? {}, c.multiValueQueries ?? {}]))
      .digest('base64url')
      .slice(0, 16);
  }

  private settings(): ConnectionSettings {
    const c = this.config;
    return { dialect: c.dialect, host: c.host, port: c.port, database: c.database, user: c.user, password: c.password, ssl: c.ssl, timeoutSeconds: c.timeoutSeconds };
  }

  private open(): Promise<SqlSession> {
    return connect(this.settings());
  }

  private one(sql: string, what: string): CompiledStatement {
    const r = compileSql(sql, this.dialect);
    if (r.statements.length !== 1) throw new ConnectorError('configuration_invalid', `${what} must be exactly one SQL statement.`);
    return r.statements[0];
  }

  private q(name: string): string {
    return quoteIdent(name, this.dialect);
  }

  /** `SELECT <cols> FROM (<query>) src [WHERE ...] [ORDER BY ...]`, the query's own parameters kept. */
  private wrap(sql: string, what: string, select: string, tail: string): CompiledStatement {
    if (compileSql(sql, this.dialect).statements.length !== 1) throw new ConnectorError('configuration_invalid', `${what} must be exactly one SQL statement.`);
    // Compiled as a whole so placeholders are numbered once across the wrapper and the query; the line breaks
    // keep a trailing `--` comment in the query from swallowing the wrapper.
    return this.one(`SELECT ${select} FROM (\n${stripSemicolons(sql)}\n) src ${tail}`, what);
  }

  async testConnection(): Promise<ConnectionTestResult> {
    const s = await this.open();
    try {
      await s.query({ text: 'SELECT 1', params: [] });
      const cols = await this.describeAll(s);
      return { message: `Connected to ${this.dialect} database '${this.config.database}' on ${this.config.host}:${this.config.port}; the full import query returns ${cols.full.fields.length} column(s).` };
    } finally {
      await s.close();
    }
  }

  /** Run one configured query with no rows; a query the database rejects says which setting holds it. */
  private async probe(s: SqlSession, sql: string, what: string, values?: Record<string, unknown>): Promise<QueryResult> {
    try {
      return await s.query(this.wrap(sql, what, '*', 'WHERE 1 = 0'), values);
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
  private async describeAll(s: SqlSession): Promise<{ full: QueryResult }> {
    const c = this.config;
    const full = await this.probe(s, c.fullImportQuery, 'fullImportQuery');
    const cols = new Set(full.fields);
    const need = (col: string | undefined, what: string, fields: Set<string>) => {
      if (col !== undefined && !fields.has(col)) throw new ConnectorError('configuration_invalid', `${what} '${col}' is not a column of the query (it returns: ${[...fields].join(', ')}).`);
    };
    need(c.anchorColumn, 'anchorColumn', cols);
    let dcols: Set<string> | undefined;
    if (c.deltaImportQuery) {
      const d = await this.probe(s, c.deltaImportQuery, 'deltaImportQuery', { watermark: null });
      dcols = new Set(d.fields);
      need(c.anchorColumn, 'anchorColumn (in deltaImportQuery)', dcols);
      need(c.deltaColumn, 'deltaColumn (in deltaImportQuery)', dcols);
      need(c.deltaColumn, 'deltaColumn (in fullImportQuery)', cols);
    }
    if (c.deleteDetection?.mode === 'softDeleteColumn') {
      const inDelta = softDeleteColumnQuery(c) === 'deltaImportQuery';
      need(c.deleteDetection.column, inDelta ? 'deleteDetection.column (in deltaImportQuery)' : 'deleteDetection.column', inDelta ? dcols! : cols);
    }
    if (c.deleteDetection?.mode === 'query') await this.probe(s, c.deleteDetection.query, 'deleteDetection.query', { watermark: null });
    const attrs = new Set(cols);
    for (const [attr, sql] of Object.entries(c.multiValueQueries ?? {})) {
      const r = await this.probe(s, sql, `multiValueQueries.${attr}`);
      if (r.fields.length < 2) throw new ConnectorError('configuration_invalid', `multiValueQueries.${attr} must return two columns: the anchor and the value.`);
      attrs.add(attr);
    }
    for (const col of Object.keys(c.referenceColumns ?? {})) need(col, 'referenceColumns', attrs);
    for (const [kind, sql] of Object.entries(c.exportStatements ?? {})) {
      for (const name of compileSql(sql, this.dialect).names) {
        const base = name.replace(/__(add|remove)$/, '');
        if (name !== 'anchor' && !attrs.has(base)) {
          throw new ConnectorError('configuration_invalid', `exportStatements.${kind} uses the parameter :${name}, which is neither :anchor nor a column or multi-valued attribute the connector reads.`);
        }
      }
    }
    return { full };
  }

  async schema(): Promise<ConnectorSchema> {
    const c = this.config;
    const s = await this.open();
    let full: QueryResult;
    try {
      full = (await this.describeAll(s)).full;
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

  async close(): Promise<void> {
    // Sessions are opened and closed by each operation.
  }

  // -------------------------------------------------------------------------------------------------------
  // Reading

  /** The multi-valued attributes of a set of anchors: attribute -> anchor -> values. */
  private async multiValues(s: SqlSession, anchors: string[]): Promise<Map<string, Map<string, ScalarValue[]>>> {
    const out = new Map<string, Map<string, ScalarValue[]>>();
    const queries = Object.entries(this.config.multiValueQueries ?? {});
    if (!queries.length || !anchors.length) return out;
    for (const [attr, sql] of queries) {
      const byAnchor = new Map<string, ScalarValue[]>();
      out.set(attr, byAnchor);
      // The anchor column's name is whatever the query calls its first column: learn it once per call.
      const shape = await s.query(this.wrap(sql, `multiValueQueries.${attr}`, '*', 'WHERE 1 = 0'));
      const [ac, vc] = shape.fields;
      for (let i = 0; i < anchors.length; i += 1000) {
        const slice = anchors.slice(i, i + 1000);
        const names = slice.map((_, k) => `a${k}`);
        const values: Record<string, unknown> = {};
        slice.forEach((a, k) => (values[`a${k}`] = a));
        const stmt = this.wrap(sql, `multiValueQueries.${attr}`, `src.${this.q(ac)} AS a, src.${this.q(vc)} AS v`, `WHERE src.${this.q(ac)} IN (${names.map((n) => ':' + n).join(', ')})`);
        const r = await s.query(stmt, values);
        for (const row of r.rows) {
          const v = toScalar(row.v);
          if (v === null) continue;
          const key = keyText(row.a);
          const list = byAnchor.get(key);
          if (list) list.push(v);
          else byAnchor.set(key, [v]);
        }
      }
    }
    return out;
  }

  /** A row as an object, a per-object error, or a soft-deleted anchor. */
  private build(row: Row, mv: Map<string, Map<string, ScalarValue[]>>): Built {
    const c = this.config;
    const anchor = keyText(row[c.anchorColumn]);
    if (!anchor) return { error: { code: 'object_error', objectType: c.objectType, message: `A row has no value in the anchor column '${c.anchorColumn}'.`, retriable: false } };
    const dd = c.deleteDetection;
    if (dd?.mode === 'softDeleteColumn' && matches(row[dd.column], dd.value)) return { deleted: anchor };
    const attributes: Record<string, AttributeValue> = {};
    for (const [k, v] of Object.entries(row)) {
      if (k === c.deltaColumn) continue;
      attributes[k] = toAttribute(v);
    }
    for (const [attr, byAnchor] of mv) attributes[attr] = byAnchor.get(anchor) ?? [];
    const object: ConnectorObject = { anchor, objectType: c.objectType, attributes };
    const refCols = Object.entries(c.referenceColumns ?? {});
    if (refCols.length) {
      const references: Record<string, string[]> = {};
      for (const [col] of refCols) {
        const vals = valuesOf(attributes[col]).map(String).filter((x) => x !== '');
        if (vals.length) references[col] = vals;
      }
      object.references = references;
    }
    return { object, hash: contentHash(object) };
  }

  /** The largest deltaColumn value of the full query, read before its rows (same snapshot). */
  private async captureMark(s: SqlSession): Promise<MarkValue | null> {
    const c = this.config;
    if (!c.deltaImportQuery || !c.deltaColumn) return null;
    const r = await s.query(this.wrap(c.fullImportQuery, 'fullImportQuery', `MAX(src.${this.q(c.deltaColumn)}) AS wm`, ''));
    return markOf(r.rows[0]?.wm);
  }

  /**
   * A second session for the per-page lookups (a streaming read occupies its connection). In PostgreSQL it
   * shares the main session's snapshot, so children are read as of the same moment as their parents.
   */
  private async auxSession(snapshotId: string | null): Promise<SqlSession | null> {
    if (!Object.keys(this.config.multiValueQueries ?? {}).length) return null;
    const aux = await this.open();
    if (snapshotId) {
      try {
        await aux.begin(true);
        await aux.query({ text: `SET TRANSACTION SNAPSHOT '${snapshotId.replace(/[^0-9A-Za-z-]/g, '')}'`, params: [] });
      } catch {
        // Sharing the snapshot is an improvement, not a requirement.
        await aux.rollback().catch(() => undefined);
      }
    }
    return aux;
  }

  async *fullImport(options: FullImportOptions): AsyncGenerator<ImportPage> {
    const c = this.config;
    const pageSize = Math.max(1, Math.min(MAX_PAGE, Math.floor(options.pageSize) || 1));
    let cur: FullCursor;
    if (options.cursor) {
      cur = decode<FullCursor>(options.cursor, 'full import cursor');
      if (cur.cfg !== this.settingsPrint || !SnapshotStore.isId(cur.snap) || typeof cur.after !== 'string') {
        throw new ConnectorError('cursor_invalid', 'The full import cursor no longer fits the configuration: the import starts again.');
      }
      if (!(await resumePartial(this.store, cur.snap, cur.sb))) throw new ConnectorError('cursor_invalid', 'The state of the interrupted full import is gone: the import starts again.');
    } else {
      cur = { v: 1, cfg: this.settingsPrint, snap: this.store.newId(), sb: 0, after: '', wm: null };
    }
    const main = await this.open();
    let aux: SqlSession | null = null;
    try {
      await main.begin(true);
      let snapshotId: string | null = null;
      if (this.dialect === 'postgres' && c.multiValueQueries && Object.keys(c.multiValueQueries).length) {
        snapshotId = String((await main.query({ text: 'SELECT pg_export_snapshot() AS s', params: [] })).rows[0]?.s ?? '') || null;
      }
      if (!options.cursor) {
        cur.wm = await this.captureMark(main);
        await this.store.begin(cur.snap);
      }
      aux = await this.auxSession(snapshotId);
      const anchorCol = `src.${this.q(c.anchorColumn)}`;
      const stmt = this.wrap(c.fullImportQuery, 'fullImportQuery', 'src.*', `${options.cursor ? `WHERE ${anchorCol} > :after ` : ''}ORDER BY ${anchorCol}`);
      for await (const { rows, last } of regroup(main.stream(stmt, { after: cur.after }, pageSize), pageSize)) {
        throwIfAborted(options.signal);
        const mv = aux ? await this.multiValues(aux, rows.map((r) => keyText(r[c.anchorColumn])).filter(Boolean)) : new Map();
        const objects: ConnectorObject[] = [];
        const errors: ObjectError[] = [];
        const states: RowState[] = [];
        for (const row of rows) {
          const b = this.build(row, mv);
          if ('object' in b) {
            objects.push(b.object);
            states.push({ anchor: b.object.anchor, hash: b.hash, file: '', dn: null, container: null });
          } else if ('error' in b) errors.push(b.error);
        }
        cur.sb = await this.store.append(cur.snap, states);
        if (rows.length) cur.after = keyText(rows[rows.length - 1][c.anchorColumn]);
        if (!last) {
          yield { objects, errors, cursor: encode(cur) };
          continue;
        }
        await this.store.finish(cur.snap);
        await this.store.pruneOld(cur.snap, 2);
        const wm: Watermark = { v: 1, cfg: this.settingsPrint, snap: cur.snap, wm: cur.wm, n: 0 };
        yield { objects, errors, cursor: null, watermark: encode(wm) };
      }
      await main.commit().catch(() => undefined);
    } finally {
      await aux?.close();
      await main.close();
    }
  }

  async *deltaImport(watermark: string | null, options: DeltaImportOptions): AsyncGenerator<DeltaPage> {
    const c = this.config;
    const pageSize = Math.max(1, Math.min(MAX_PAGE, Math.floor(options.pageSize) || 1));
    if (watermark === null) {
      yield { changes: [], errors: [], fullImportRequired: { reason: 'There is no watermark yet: a full import sets the baseline.' } };
      return;
    }
    let wm: Watermark;
    try {
      wm = decode<Watermark>(watermark, 'watermark');
    } catch {
      yield { changes: [], errors: [], fullImportRequired: { reason: 'The watermark is not one this SQL connector wrote.' } };
      return;
    }
    if (wm.cfg !== this.settingsPrint || !SnapshotStore.isId(wm.snap)) {
      yield { changes: [], errors: [], fullImportRequired: { reason: 'The connector configuration changed since the last import.' } };
      return;
    }
    const known = await this.store.loadRows(wm.snap);
    if (!known) {
      yield { changes: [], errors: [], fullImportRequired: { reason: "The connector's state for this watermark is gone." } };
      return;
    }
    // The watermark we were given is the committed one: older snapshots are no longer needed.
    await this.store.pruneExcept([wm.snap]);

    const changes: DeltaChange[] = [];
    const errors: ObjectError[] = [];
    let mark = wm.wm;
    const n = wm.n + 1;
    const dd = c.deleteDetection;
    const diffAll = !c.deltaImportQuery || !c.deltaColumn || wm.wm === null;
    const anchorDiff = !diffAll && dd?.mode === 'anchorDiff' && n % dd.everyNthDelta === 0;
    const seen = diffAll ? new Set<string>() : undefined;

    const apply = (b: Built) => {
      if ('error' in b) {
        errors.push(b.error);
        return;
      }
      if ('deleted' in b) {
        seen?.delete(b.deleted);
        if (known.has(b.deleted)) {
          known.delete(b.deleted);
          changes.push({ kind: 'delete', anchor: b.deleted, objectType: c.objectType });
        }
        return;
      }
      const anchor = b.object.anchor;
      seen?.add(anchor);
      const prev = known.get(anchor);
      if (prev && prev.hash === b.hash) return;
      known.set(anchor, { anchor, hash: b.hash, file: '', dn: null, container: null });
      changes.push({ kind: prev ? 'update' : 'add', anchor, objectType: c.objectType, object: b.object });
    };

    const main = await this.open();
    let aux: SqlSession | null = null;
    try {
      aux = await this.auxSession(null);
      const stmt = diffAll
        ? this.wrap(c.fullImportQuery, 'fullImportQuery', 'src.*', '')
        : this.wrap(c.deltaImportQuery!, 'deltaImportQuery', 'src.*', '');
      const values = diffAll ? {} : { watermark: markParam(wm.wm!, c.deltaOverlapSeconds, this.dialect) };
      for await (const rows of main.stream(stmt, values, pageSize)) {
        throwIfAborted(options.signal);
        const mv = aux ? await this.multiValues(aux, rows.map((r) => keyText(r[c.anchorColumn])).filter(Boolean)) : new Map();
        for (const row of rows) {
          if (!diffAll && c.deltaColumn) mark = maxMark(mark, markOf(row[c.deltaColumn]));
          apply(this.build(row, mv));
        }
        while (changes.length + errors.length >= pageSize) yield takePage(changes, errors, pageSize);
      }
      if (diffAll && c.deltaColumn && c.deltaImportQuery) mark = maxMark(mark, await this.captureMark(main));
      // Deletes.
      const gone = (anchor: string) => {
        if (!known.has(anchor)) return;
        known.delete(anchor);
        changes.push({ kind: 'delete', anchor, objectType: c.objectType });
      };
      if (diffAll) {
        for (const anchor of [...known.keys()]) if (!seen!.has(anchor)) gone(anchor);
      } else if (dd?.mode === 'query') {
        const del = this.wrap(dd.query, 'deleteDetection.query', '*', '');
        for await (const rows of main.stream(del, values, pageSize)) {
          for (const row of rows) gone(keyText(Object.values(row)[0]));
          while (changes.length + errors.length >= pageSize) yield takePage(changes, errors, pageSize);
        }
      } else if (anchorDiff) {
        const present = new Set<string>();
        const q = this.wrap(c.fullImportQuery, 'fullImportQuery', `src.${this.q(c.anchorColumn)} AS a`, '');
        for await (const rows of main.stream(q, {}, MAX_PAGE)) for (const row of rows) present.add(keyText(row.a));
        for (const anchor of [...known.keys()]) if (!present.has(anchor)) gone(anchor);
      }
      while (changes.length + errors.length > pageSize) yield takePage(changes, errors, pageSize);
      // The new snapshot; the old one stays until a delta starts from the new watermark.
      const snap = this.store.newId();
      await this.store.begin(snap);
      let batch: RowState[] = [];
      for (const r of known.values()) {
        batch.push(r);
        if (batch.length >= 10000) {
          await this.store.append(snap, batch);
          batch = [];
        }
      }
      await this.store.append(snap, batch);
      await this.store.finish(snap);
      const next: Watermark = { v: 1, cfg: this.settingsPrint, snap, wm: mark, n: anchorDiff ? 0 : n };
      yield { ...takePage(changes, errors, pageSize), nextWatermark: encode(next) };
    } finally {
      await aux?.close();
      await main.close();
    }
  }

  // -------------------------------------------------------------------------------------------------------
  // Export

  /** The parameter values of a change: `:anchor`, every attribute (new value over previous), `__add`/`__remove`. */
  private exportValues(change: ExportChange): Record<string, unknown> {
    const c = this.config;
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

  private statements(kind: 'insert' | 'update' | 'delete'): CompiledStatement[] | undefined {
    const sql = this.config.exportStatements?.[kind];
    if (!sql) return undefined;
    const r = compileSql(sql, this.dialect);
    if (r.rawPlaceholders.length) throw new ConnectorError('configuration_invalid', `exportStatements.${kind} uses driver placeholders (${r.rawPlaceholders[0]}): use :name parameters.`);
    return r.statements;
  }

  /** Apply one change on an open session. DB errors throw (the caller decides whether they are per-object). */
  private async exportOne(s: SqlSession, change: ExportChange): Promise<ExportResult> {
    const c = this.config;
    const fail = (code: ObjectError['code'], message: string, anchor?: string): ExportResult => {
      const error: ObjectError = { code, message, objectType: change.objectType, retriable: false };
      if (anchor !== undefined) error.anchor = anchor;
      return anchor === undefined ? { status: 'error', error } : { status: 'error', anchor, error };
    };
    const kind = change.kind === 'add' ? 'insert' : change.kind === 'delete' ? 'delete' : 'update';
    const stmts = this.statements(kind);
    const values = this.exportValues(change);
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

  async export(change: ExportChange): Promise<ExportResult> {
    return (await this.exportBatch([change]))[0];
  }

  /**
   * A unique violation as an operator reads it: the row's anchor and the key, never the values the database
   * quoted (a unique column may hold anything). When the key is the anchor itself (the key's columns, or the
   * duplicated value the server quoted, are the anchor's), the row is simply there already.
   */
  private duplicateError(err: ConnectorError, change: ExportChange): ConnectorError {
    const column = this.config.anchorColumn;
    const a = this.exportValues(change).anchor;
    const anchor = a === null || a === undefined ? undefined : String(a);
    const key = uniqueKeyOf(err.cause);
    const isAnchor =
      anchor !== undefined && (key.columns ? key.columns.length === 1 && key.columns[0].toLowerCase() === column.toLowerCase() : key.value !== undefined && key.value === anchor);
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
   * failures (connection lost, bad statement) throw.
   */
  async exportBatch(changes: ExportChange[]): Promise<ExportResult[]> {
    if (!changes.length) return [];
    const s = await this.open();
    try {
      const results: ExportResult[] = [];
      let failed = false;
      await s.begin();
      try {
        for (const ch of changes) {
          try {
            results.push(await this.exportOne(s, ch));
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
          const r = await this.exportOne(s, ch);
          await s.commit();
          out.push(r);
        } catch (err) {
          await s.rollback().catch(() => undefined);
          // Rows before this one are committed: a run-level failure says so.
          if (!(err instanceof ConnectorError) || !OBJECT_LEVEL.has(err.code)) throw withApplied(err, out);
          const e = (err.code === 'already_exists' ? this.duplicateError(err, ch) : err).toObjectError(ch.objectType);
          if (ch.anchor !== undefined) e.anchor = ch.anchor;
          out.push(ch.anchor === undefined ? { status: 'error', error: e } : { status: 'error', anchor: ch.anchor, error: e });
        }
      }
      return out;
    } finally {
      await s.close();
    }
  }
}

/** Regroup chunks of rows into pages of exactly `size` rows, knowing which page is the last (one row of look-ahead). */
async function* regroup(chunks: AsyncIterable<Row[]>, size: number): AsyncGenerator<{ rows: Row[]; last: boolean }> {
  let buf: Row[] = [];
  for await (const chunk of chunks) {
    for (const r of chunk) buf.push(r);
    while (buf.length > size) {
      yield { rows: buf.slice(0, size), last: false };
      buf = buf.slice(size);
    }
  }
  yield { rows: buf, last: true };
}

function takePage(changes: DeltaChange[], errors: ObjectError[], size: number): DeltaPage {
  const c = changes.splice(0, size);
  const e = errors.splice(0, Math.max(0, size - c.length));
  return { changes: c, errors: e };
}

/**
 * Cut a partial snapshot back to the length a page cursor recorded. SnapshotStore.resume does that too but also
 * reads every anchor back, which the SQL connector does not need (the keyset finds the place): with the engine
 * calling once per page, that read made a 100-page import quadratic. Relies on the store's `<id>.partial` name.
 */
async function resumePartial(store: SnapshotStore, id: string, size: number): Promise<boolean> {
  const file = path.join(store.dir, `${id}.partial`);
  try {
    const st = await fs.stat(file);
    if (st.size < size) return false;
    if (st.size > size) await fs.truncate(file, size);
    return true;
  } catch {
    return false;
  }
}

/** A query wrapped as a subquery cannot end with a semicolon. */
function stripSemicolons(sql: string): string {
  return sql.replace(/[\s;]+$/, '');
}
