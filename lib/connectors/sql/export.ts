import {
  ConnectorError,
  throwIfAborted,
  valuesOf,
  withApplied,
  type AttributeValue,
  type ExistingObject,
  type ExportChange,
  type ExportResult,
  type ObjectError,
} from '../sdk';
import type { ResolvedSqlConfig } from './config';
import type { QueryResult, SqlSession } from './drivers';
import { uniqueKeyOf } from './errors';
import { compileSql, quoteIdent, type CompiledStatement } from './params';
import { build, multiValues } from './reading';
import { openSession, wrap } from './session';
import { keyText } from './values';

const OBJECT_LEVEL = new Set(['object_error', 'not_found', 'already_exists', 'constraint_violation']);

const isObjectLevel = (err: unknown): err is ConnectorError => err instanceof ConnectorError && OBJECT_LEVEL.has(err.code);

/**
 * The reference columns that hold one value: the `referenceColumns` that are not multi-valued attributes
 * (`multiValueQueries`). Their values are keys of other rows, bound as scalars (never JSON text).
 */
function singleReferences(c: ResolvedSqlConfig): Set<string> {
  const multi = new Set(Object.keys(c.multiValueQueries ?? {}).map((k) => k.toLowerCase()));
  return new Set(
    Object.keys(c.referenceColumns ?? {})
      .map((k) => k.toLowerCase())
      .filter((k) => !multi.has(k)),
  );
}

/**
 * The value bound for one parameter: JSON text for multi-valued attributes, scalars as they are. A reference
 * column that holds one value (see {@link singleReferences}) is bound as its value even when the engine gives
 * it as a one-element array (a relationship's values are lists); several values there are the object's error,
 * naming the column, rather than JSON text written into a key column.
 */
function paramValue(name: string, v: AttributeValue | undefined, single: Set<string>): unknown {
  if (v === undefined) return null;
  if (!Array.isArray(v)) return v;
  if (!single.has(name.toLowerCase())) return JSON.stringify(v);
  const vals = v.filter((x) => x !== null);
  if (vals.length > 1)
    throw new ConnectorError(
      'object_error',
      `The reference column '${name}' holds one value (the key of another row), but the change gives it ${vals.length} values.`,
      { retriable: false },
    );
  return vals.length ? vals[0] : null;
}

/**
 * The parameter values of a change: `:anchor`, every attribute, `__add`/`__remove`. Each attribute's value is
 * the change's (`attributes`), else the intended full state's (`state`), else the engine's `previous`, so a
 * statement that writes whole rows (the tutorial's `UPDATE staff SET given_name = :given_name, ...,
 * manager_id = :manager_id`) keeps the columns an update does not change. Throws `object_error` for a value
 * that cannot be bound (several values in a single reference column).
 */
function exportValues(c: ResolvedSqlConfig, change: ExportChange): Record<string, unknown> {
  const merged: Record<string, AttributeValue> = { ...(change.previous ?? {}), ...(change.state ?? {}), ...change.attributes };
  const values: Record<string, unknown> = {};
  const mvNames = new Set([...Object.keys(change.multiValueAdds ?? {}), ...Object.keys(change.multiValueRemoves ?? {})]);
  for (const attr of mvNames) {
    const adds = change.multiValueAdds?.[attr] ?? [];
    const removes = new Set((change.multiValueRemoves?.[attr] ?? []).map((v) => JSON.stringify(v)));
    if (!(attr in change.attributes)) {
      // Idempotent over a `state` that already holds the new list: removes are dropped, adds kept once.
      const current = valuesOf(merged[attr]).filter((v) => !removes.has(JSON.stringify(v)));
      for (const a of adds) if (!current.some((v) => JSON.stringify(v) === JSON.stringify(a))) current.push(a);
      merged[attr] = current;
    }
    values[`${attr}__add`] = JSON.stringify(adds);
    values[`${attr}__remove`] = JSON.stringify([...(change.multiValueRemoves?.[attr] ?? [])]);
  }
  const single = singleReferences(c);
  for (const [k, v] of Object.entries(merged)) values[k] = paramValue(k, v, single);
  const anchor = change.anchor ?? (merged[c.anchorColumn] === undefined ? undefined : keyText(merged[c.anchorColumn]));
  values.anchor = anchor ?? null;
  if (values[c.anchorColumn] === undefined || values[c.anchorColumn] === null) values[c.anchorColumn] = anchor ?? null;
  return values;
}

/** Each configuration's compiled export statements (compiled once, not once per row). */
const compiledStatements = new WeakMap<ResolvedSqlConfig, Map<StatementKind, CompiledStatement[] | undefined>>();

type StatementKind = 'insert' | 'update' | 'delete';

function statements(c: ResolvedSqlConfig, kind: StatementKind): CompiledStatement[] | undefined {
  let byKind = compiledStatements.get(c);
  if (!byKind) compiledStatements.set(c, (byKind = new Map()));
  if (byKind.has(kind)) return byKind.get(kind);
  const sql = c.exportStatements?.[kind];
  let compiled: CompiledStatement[] | undefined;
  if (sql) {
    const r = compileSql(sql, c.dialect);
    if (r.rawPlaceholders.length)
      throw new ConnectorError('configuration_invalid', `exportStatements.${kind} uses driver placeholders (${r.rawPlaceholders[0]}): use :name parameters.`);
    compiled = r.statements;
  }
  byKind.set(kind, compiled);
  return compiled;
}

const statementKind = (change: ExportChange): StatementKind => (change.kind === 'add' ? 'insert' : change.kind === 'delete' ? 'delete' : 'update');

/** The error result of a change (the change's own anchor on it, when it has one). */
function errorResult(change: ExportChange, err: ConnectorError, existing?: ExistingObject): ExportResult {
  const e = err.toObjectError(change.objectType);
  if (change.anchor !== undefined) e.anchor = change.anchor;
  const r: ExportResult = change.anchor === undefined ? { status: 'error', error: e } : { status: 'error', anchor: change.anchor, error: e };
  if (existing) r.existing = existing;
  return r;
}

/** A change's error result that no statement gave (the connector's own checks). */
function failed(change: ExportChange, code: ObjectError['code'], message: string, anchor?: string): ExportResult {
  const error: ObjectError = { code, message, objectType: change.objectType, retriable: false };
  if (anchor !== undefined) error.anchor = anchor;
  return anchor === undefined ? { status: 'error', error } : { status: 'error', anchor, error };
}

const anchorValue = (values: Record<string, unknown>): string | undefined => (values.anchor === null ? undefined : String(values.anchor));

/** The result of a change no statement is configured for. */
function unsupported(change: ExportChange, values: Record<string, unknown>): ExportResult {
  const kind = statementKind(change);
  return failed(change, 'unsupported', `No exportStatements.${kind} is configured: cannot ${change.kind} objects.`, anchorValue(values));
}

/** A change's result from the answer to its first statement. */
function changeResult(c: ResolvedSqlConfig, change: ExportChange, values: Record<string, unknown>, first: QueryResult | undefined): ExportResult {
  const kind = statementKind(change);
  const anchor = anchorValue(values);
  if (kind === 'insert') {
    const returned = first?.rows[0];
    const a = anchor ?? (returned ? keyText(returned[c.anchorColumn] ?? Object.values(returned)[0]) : '');
    if (!a) return failed(change, 'object_error', 'The insert did not give the new row an anchor: set the anchor attribute or RETURN it.');
    return { status: 'success', anchor: a };
  }
  if (anchor === undefined) return failed(change, 'object_error', `The change has no anchor: cannot ${change.kind} it.`);
  if (kind === 'update' && (first?.rowCount ?? 0) === 0) return failed(change, 'not_found', `No row has the anchor '${anchor}'.`, anchor);
  return { status: 'success', anchor };
}

/**
 * Apply one change on an open session with its parameter values (see {@link exportValues}). DB errors throw
 * (the caller decides whether they are per-object).
 */
async function exportOne(c: ResolvedSqlConfig, s: SqlSession, change: ExportChange, values: Record<string, unknown>): Promise<ExportResult> {
  const kind = statementKind(change);
  const stmts = statements(c, kind);
  if (!stmts) return unsupported(change, values);
  let first: QueryResult | undefined;
  for (const st of stmts) {
    const r = await s.query(st, values);
    first ??= r;
    // An update whose first statement matched no row stops there: the object is not in the table.
    if (kind === 'update' && r === first && r.rowCount === 0) break;
  }
  return changeResult(c, change, values, first);
}

/** The most statements sent together before their answers are read (see {@link applyInTransaction}). */
const PIPELINE_PART = 250;

/**
 * The batch's changes on an open session, in a transaction begun by the caller: their results in order, or
 * `failed` at the first change the database refused for that row (the caller rolls back and goes row by row).
 * Where the session sends statements together ({@link SqlSession.queryMany}) and every change is one statement
 * (an update of two statements stops when the first matched no row: one at a time), they go at once.
 */
async function applyInTransaction(
  c: ResolvedSqlConfig,
  s: SqlSession,
  prepared: readonly { change: ExportChange; values?: Record<string, unknown>; refused?: ExportResult }[],
): Promise<{ results: ExportResult[]; failed: boolean }> {
  const results: ExportResult[] = [];
  const together = s.queryMany && prepared.every((p) => p.refused || (statements(c, statementKind(p.change))?.length ?? 0) <= 1);
  if (together) {
    // Each change's one statement, looked up once (undefined: refused before, or none configured for its kind).
    const single = prepared.map((p) => (p.refused ? undefined : statements(c, statementKind(p.change))?.[0]));
    // In parts of PIPELINE_PART statements, two parts on the wire at a time: the next part goes once the part
    // before the one in flight was answered without a refusal, so the server works on one part while this
    // process reads the answers of the other. After a refused statement the server refuses every statement of
    // the aborted transaction (and logs each): at most the rest of its part and the part after it.
    const send = (start: number) => {
      const end = Math.min(start + PIPELINE_PART, prepared.length);
      const sent: { stmt: CompiledStatement; values: Record<string, unknown> }[] = [];
      for (let i = start; i < end; i++) if (single[i]) sent.push({ stmt: single[i]!, values: prepared[i].values! });
      const answers = sent.length ? s.queryMany!(sent) : Promise.resolve([]);
      // Awaited below, or settled before this returns; never an unhandled rejection meanwhile.
      answers.catch(() => undefined);
      return { start, end, answers };
    };
    const onWire: ReturnType<typeof send>[] = [];
    let next = 0;
    const more = () => {
      if (next < prepared.length) {
        onWire.push(send(next));
        next += PIPELINE_PART;
      }
    };
    more();
    more();
    try {
      while (onWire.length) {
        const { start, end, answers: answered } = onWire.shift()!;
        const answers = await answered;
        if (!answers.some((a) => a instanceof ConnectorError)) more();
        let k = 0;
        for (let i = start; i < end; i++) {
          const p = prepared[i];
          if (p.refused) results.push(p.refused);
          else if (!single[i]) results.push(unsupported(p.change, p.values!));
          else {
            const answer = answers[k++];
            if (answer instanceof ConnectorError) {
              if (!isObjectLevel(answer)) throw answer;
              return { results, failed: true };
            }
            results.push(changeResult(c, p.change, p.values!, answer));
          }
        }
      }
    } finally {
      // A part still on the wire (the one after a refusal, or a failure): its answers are read before the caller
      // rolls back, on the same connection.
      await Promise.allSettled(onWire.map((w) => w.answers));
    }
    return { results, failed: false };
  }
  for (const p of prepared) {
    if (p.refused) {
      results.push(p.refused);
      continue;
    }
    try {
      results.push(await exportOne(c, s, p.change, p.values!));
    } catch (err) {
      if (!isObjectLevel(err)) throw err;
      return { results, failed: true };
    }
  }
  return { results, failed: false };
}

/**
 * A unique violation as an operator reads it: the row's anchor and the key, never the values the database
 * quoted (a unique column may hold anything). When the key is the anchor itself (the key's columns, or the
 * duplicated value the server quoted, are the anchor's), the row is simply there already: an add refused so
 * returns that anchor (`existingAnchor`) for the row to be read.
 */
function duplicateError(
  c: ResolvedSqlConfig,
  err: ConnectorError,
  change: ExportChange,
  values: Record<string, unknown>,
): { error: ConnectorError; existingAnchor?: string } {
  const column = c.anchorColumn;
  const a = values.anchor;
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
  const error = new ConnectorError('already_exists', message, { retriable: false, cause: err.cause, ...(anchor !== undefined ? { anchor } : {}) });
  // Only an add refused on the anchor's own key has found its row: another unique key is another object's.
  return change.kind === 'add' && isAnchor ? { error, existingAnchor: anchor } : { error };
}

/**
 * The row that holds this anchor, read as the full import reads it (`fullImportQuery` wrapped as a subquery,
 * filtered on the anchor column, with its multi-valued attributes): undefined when the query does not return it
 * (a row the query filters out, a soft-deleted row) or the read fails for this object only. Run-level failures
 * throw.
 */
async function readExisting(c: ResolvedSqlConfig, s: SqlSession, anchor: string): Promise<ExistingObject | undefined> {
  try {
    const stmt = wrap(c.dialect, c.fullImportQuery, 'fullImportQuery', 'src.*', `WHERE src.${quoteIdent(c.anchorColumn, c.dialect)} = :existing_anchor`);
    const r = await s.query(stmt, { existing_anchor: anchor });
    if (r.rows.length !== 1) return undefined;
    const b = build(c, r.rows[0], await multiValues(c, s, [anchor]));
    return 'object' in b ? { anchor: b.object.anchor, attributes: b.object.attributes } : undefined;
  } catch (err) {
    if (isObjectLevel(err)) return undefined;
    throw err;
  }
}

/**
 * A row the database refused at COMMIT (a deferred constraint, like the tutorial's `manager_id REFERENCES
 * staff DEFERRABLE INITIALLY DEFERRED`): the error names the row, which the driver's error does not.
 */
function commitError(c: ResolvedSqlConfig, err: ConnectorError, change: ExportChange, values: Record<string, unknown>): ConnectorError {
  const anchor = change.anchor ?? (values.anchor === null || values.anchor === undefined ? undefined : String(values.anchor));
  const row = anchor === undefined ? 'the row' : `the row with the anchor ${c.anchorColumn} '${anchor}'`;
  return new ConnectorError(err.code, `The database refused ${row} at commit: ${err.message}`, {
    retriable: err.retriable,
    cause: err.cause,
    ...(anchor !== undefined ? { anchor } : {}),
  });
}

/**
 * One transaction for the batch. A row the database rejects, by a statement or at COMMIT (a deferred
 * constraint), rolls it back; the batch then runs again one row per transaction, in order (a row may refer to
 * one before it), so each row's deferred checks run at its own commit, the other rows land and the rejected one
 * is a per-object error naming it. A value that cannot be bound is the object's error before anything runs.
 * Run-level failures (connection lost, bad statement) throw. An abort of `signal` cancels the statement in flight
 * (its transaction is rolled back) and throws `aborted`, with the rows committed before it when going row by row.
 */
export async function exportBatch(c: ResolvedSqlConfig, changes: ExportChange[], signal?: AbortSignal, connection?: ExportConnection): Promise<ExportResult[]> {
  if (!changes.length) return [];
  // Without a connection to share, one for this batch alone.
  if (!connection) {
    const own = new ExportConnection(c);
    try {
      return await exportBatch(c, changes, signal, own);
    } finally {
      await own.close();
    }
  }
  const prepared = changes.map((change): { change: ExportChange; values?: Record<string, unknown>; refused?: ExportResult } => {
    try {
      return { change, values: exportValues(c, change) };
    } catch (err) {
      if (!isObjectLevel(err)) throw err;
      return { change, refused: errorResult(change, err) };
    }
  });
  return connection.run(signal, async (s) => {
    let applied: { results: ExportResult[]; failed: boolean };
    try {
      applied = await applyInTransaction(c, s, prepared);
    } catch (err) {
      await s.rollback().catch(() => undefined);
      throw err;
    }
    const { results, failed } = applied;
    if (!failed) {
      try {
        await s.commit();
        return results;
      } catch (err) {
        // Refused at COMMIT: PostgreSQL has ended the transaction already; the ROLLBACK makes sure of it.
        if (!isObjectLevel(err)) throw err;
        await s.rollback().catch(() => undefined);
      }
    } else {
      await s.rollback();
    }
    const out: ExportResult[] = [];
    for (const { change: ch, values, refused } of prepared) {
      if (refused) {
        out.push(refused);
        continue;
      }
      await s.begin();
      let r: ExportResult;
      try {
        r = await exportOne(c, s, ch, values!);
        try {
          await s.commit();
        } catch (err) {
          throw isObjectLevel(err) ? commitError(c, err, ch, values!) : err;
        }
      } catch (err) {
        await s.rollback().catch(() => undefined);
        // Rows before this one are committed: a run-level failure says so.
        if (!isObjectLevel(err)) throw withApplied(err, out);
        try {
          out.push(await refusedRow(c, s, ch, values!, err));
        } catch (readErr) {
          throw withApplied(readErr, out);
        }
        continue;
      }
      out.push(r);
    }
    return out;
  });
}

/**
 * The connection an export's batches share while the connector is open (the pages of an export step): opened by
 * the first batch (pipelined where the driver can), kept when a batch ends with no transaction open, closed and
 * dropped when a batch throws (a broken or aborted connection is never used again), and closed by the
 * connector's close(). Each batch's abort signal is watched only while it runs. Two batches at the same time
 * each have a connection; one is kept.
 */
export class ExportConnection {
  private idle?: SqlSession;
  private idleTimer?: NodeJS.Timeout;
  private closed = false;

  constructor(
    c: ResolvedSqlConfig,
    /** A connection kept this long with no batch is closed (a connector nobody closed does not hold it for ever). */
    private readonly idleMs = 30_000,
    /** Opens a connection (the connector's settings; pipelined where the driver can). */
    private readonly open: (signal?: AbortSignal) => Promise<SqlSession> = (signal) => openSession(c, signal, { pipeline: true }),
  ) {}

  /** `fn` on a connection with a transaction begun; it leaves none open when it returns (commit or rollback). */
  async run<T>(signal: AbortSignal | undefined, fn: (s: SqlSession) => Promise<T>): Promise<T> {
    throwIfAborted(signal);
    let s = this.take();
    // A kept connection the server closed since (a restart, a failover, a DBA) is not used: a new one is opened.
    if (s && !s.usable()) {
      await s.close();
      s = undefined;
    }
    if (s) {
      s.abortOn(signal);
      try {
        await s.begin();
      } catch {
        // Closed by the server before this process noticed: nothing was sent yet, so a new connection goes on.
        await s.close();
        s = undefined;
      }
    }
    if (!s) {
      throwIfAborted(signal);
      s = await this.open(signal);
      try {
        await s.begin();
      } catch (err) {
        await s.close();
        throw err;
      }
    }
    let out: T;
    try {
      out = await fn(s);
    } catch (err) {
      await s.close();
      throw err;
    }
    s.abortOn(undefined);
    // Not kept when the batch's cancel came as it ended (the cancel may still be on its way to the server), nor
    // with a transaction open.
    if (this.closed || this.idle || signal?.aborted || !s.usable()) await s.close();
    else {
      this.idle = s;
      this.idleTimer = setTimeout(() => void this.take()?.close(), this.idleMs);
      this.idleTimer.unref();
    }
    return out;
  }

  async close(): Promise<void> {
    this.closed = true;
    await this.take()?.close();
  }

  /** The idle connection, no longer idle. */
  private take(): SqlSession | undefined {
    clearTimeout(this.idleTimer);
    const s = this.idle;
    this.idle = undefined;
    return s;
  }
}

/** The error result of a row the database refused; an add refused on its anchor carries the row there (`existing`). */
async function refusedRow(c: ResolvedSqlConfig, s: SqlSession, ch: ExportChange, values: Record<string, unknown>, err: ConnectorError): Promise<ExportResult> {
  if (err.code !== 'already_exists') return errorResult(ch, err);
  const dup = duplicateError(c, err, ch, values);
  const existing = dup.existingAnchor === undefined ? undefined : await readExisting(c, s, dup.existingAnchor);
  return errorResult(ch, dup.error, existing);
}
