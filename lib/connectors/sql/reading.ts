import type { SnapshotStore } from '../file/state';
import { contentHash, valuesOf, type AttributeValue, type ConnectorObject, type ObjectError, type ScalarValue } from '../sdk';
import type { ResolvedSqlConfig } from './config';
import { softDeleted } from './deletes';
import type { Row, SqlSession } from './drivers';
import { markOf, type MarkValue } from './marks';
import { quoteIdent } from './params';
import { openSession, wrap } from './session';
import { keyText, toAttribute, toScalar } from './values';

/**
 * What the SQL connector's imports work with: the resolved configuration, the anchor-hash snapshot store in the
 * state directory and the fingerprint of the settings that shape what is read. One per connector, made by
 * `SqlConnector`.
 */
export interface SqlParts {
  readonly config: ResolvedSqlConfig;
  readonly store: SnapshotStore;
  /** See `settingsFingerprint` (config.ts). */
  readonly settingsPrint: string;
}

/** A row read: an object with its content hash, a per-object error, or the anchor of a soft-deleted row. */
export type Built = { object: ConnectorObject; hash: string } | { error: ObjectError } | { deleted: string };

/** The multi-valued attributes of a set of anchors: attribute -> anchor -> values. */
export async function multiValues(c: ResolvedSqlConfig, s: SqlSession, anchors: string[]): Promise<Map<string, Map<string, ScalarValue[]>>> {
  const out = new Map<string, Map<string, ScalarValue[]>>();
  const queries = Object.entries(c.multiValueQueries ?? {});
  if (!queries.length || !anchors.length) return out;
  for (const [attr, sql] of queries) {
    const byAnchor = new Map<string, ScalarValue[]>();
    out.set(attr, byAnchor);
    // The anchor column's name is whatever the query calls its first column: learn it once per call.
    const shape = await s.query(wrap(c.dialect, sql, `multiValueQueries.${attr}`, '*', 'WHERE 1 = 0'));
    const [ac, vc] = shape.fields;
    for (let i = 0; i < anchors.length; i += 1000) {
      const slice = anchors.slice(i, i + 1000);
      const names = slice.map((_, k) => `a${k}`);
      const values: Record<string, unknown> = {};
      slice.forEach((a, k) => (values[`a${k}`] = a));
      const stmt = wrap(
        c.dialect,
        sql,
        `multiValueQueries.${attr}`,
        `src.${quoteIdent(ac, c.dialect)} AS a, src.${quoteIdent(vc, c.dialect)} AS v`,
        `WHERE src.${quoteIdent(ac, c.dialect)} IN (${names.map((n) => ':' + n).join(', ')})`,
      );
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
export function build(c: ResolvedSqlConfig, row: Row, mv: Map<string, Map<string, ScalarValue[]>>): Built {
  const anchor = keyText(row[c.anchorColumn]);
  if (!anchor)
    return {
      error: { code: 'object_error', objectType: c.objectType, message: `A row has no value in the anchor column '${c.anchorColumn}'.`, retriable: false },
    };
  if (softDeleted(c, row)) return { deleted: anchor };
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
      const vals = valuesOf(attributes[col])
        .map(String)
        .filter((x) => x !== '');
      if (vals.length) references[col] = vals;
    }
    object.references = references;
  }
  return { object, hash: contentHash(object) };
}

/** The largest deltaColumn value of the full query, read before its rows (same snapshot). */
export async function captureMark(c: ResolvedSqlConfig, s: SqlSession): Promise<MarkValue | null> {
  if (!c.deltaImportQuery || !c.deltaColumn) return null;
  const r = await s.query(wrap(c.dialect, c.fullImportQuery, 'fullImportQuery', `MAX(src.${quoteIdent(c.deltaColumn, c.dialect)}) AS wm`, ''));
  return markOf(r.rows[0]?.wm);
}

/**
 * A second session for the per-page lookups (a streaming read occupies its connection). In PostgreSQL it
 * shares the main session's snapshot, so children are read as of the same moment as their parents.
 */
export async function auxSession(c: ResolvedSqlConfig, snapshotId: string | null, signal?: AbortSignal): Promise<SqlSession | null> {
  if (!Object.keys(c.multiValueQueries ?? {}).length) return null;
  const aux = await openSession(c, signal);
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
