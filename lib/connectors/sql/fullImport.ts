import { promises as fs } from 'node:fs';
import path from 'node:path';
import { ConnectorError, throwIfAborted, type ConnectorObject, type FullImportOptions, type ImportPage, type ObjectError } from '../sdk';
import { SnapshotStore, type RowState } from '../file/state';
import { pageSizeOf } from './config';
import type { Row, SqlSession } from './drivers';
import { decode, encode, type FullCursor, type Watermark } from './marks';
import { quoteIdent } from './params';
import { auxSession, build, captureMark, multiValues, type SqlParts } from './reading';
import { openSession, wrap } from './session';
import { keyText } from './values';

/**
 * A full import: streams `fullImportQuery` ordered by the anchor column inside one read-only snapshot
 * transaction; a page's cursor is the last anchor read, so a resumed import runs the query again with
 * `anchor > :after` (keyset). Multi-valued attributes come from `multiValueQueries`, one query per page for the
 * page's anchors. Every object's content hash is recorded in an anchor-hash snapshot in the state directory,
 * which the last page's watermark names with the largest `deltaColumn` value (read first).
 */
export async function* fullImport(parts: SqlParts, options: FullImportOptions): AsyncGenerator<ImportPage> {
  const c = parts.config;
  const pageSize = pageSizeOf(options.pageSize);
  let cur: FullCursor;
  if (options.cursor) {
    cur = decode<FullCursor>(options.cursor, 'full import cursor');
    if (cur.cfg !== parts.settingsPrint || !SnapshotStore.isId(cur.snap) || typeof cur.after !== 'string') {
      throw new ConnectorError('cursor_invalid', 'The full import cursor no longer fits the configuration: the import starts again.');
    }
    if (!(await resumePartial(parts.store, cur.snap, cur.sb)))
      throw new ConnectorError('cursor_invalid', 'The state of the interrupted full import is gone: the import starts again.');
  } else {
    cur = { v: 1, cfg: parts.settingsPrint, snap: parts.store.newId(), sb: 0, after: '', wm: null };
  }
  // The import's sessions stop their statement when the engine aborts the import (a cancel of the run).
  const main = await openSession(c, options.signal);
  let aux: SqlSession | null = null;
  try {
    await main.begin(true);
    let snapshotId: string | null = null;
    if (c.dialect === 'postgres' && c.multiValueQueries && Object.keys(c.multiValueQueries).length) {
      snapshotId = String((await main.query({ text: 'SELECT pg_export_snapshot() AS s', params: [] })).rows[0]?.s ?? '') || null;
    }
    if (!options.cursor) {
      cur.wm = await captureMark(c, main);
      await parts.store.begin(cur.snap);
    }
    aux = await auxSession(c, snapshotId, options.signal);
    const anchorCol = `src.${quoteIdent(c.anchorColumn, c.dialect)}`;
    const stmt = wrap(c.dialect, c.fullImportQuery, 'fullImportQuery', 'src.*', `${options.cursor ? `WHERE ${anchorCol} > :after ` : ''}ORDER BY ${anchorCol}`);
    for await (const { rows, last } of regroup(main.stream(stmt, { after: cur.after }, pageSize), pageSize)) {
      throwIfAborted(options.signal);
      const mv = aux ? await multiValues(c, aux, rows.map((r) => keyText(r[c.anchorColumn])).filter(Boolean)) : new Map();
      const objects: ConnectorObject[] = [];
      const errors: ObjectError[] = [];
      const states: RowState[] = [];
      for (const row of rows) {
        const b = build(c, row, mv);
        if ('object' in b) {
          objects.push(b.object);
          states.push({ anchor: b.object.anchor, hash: b.hash, file: '', dn: null, container: null });
        } else if ('error' in b) errors.push(b.error);
      }
      cur.sb = await parts.store.append(cur.snap, states);
      if (rows.length) cur.after = keyText(rows[rows.length - 1][c.anchorColumn]);
      if (!last) {
        yield { objects, errors, cursor: encode(cur) };
        continue;
      }
      await parts.store.finish(cur.snap);
      await parts.store.pruneOld(cur.snap, 2);
      const wm: Watermark = { v: 1, cfg: parts.settingsPrint, snap: cur.snap, wm: cur.wm, n: 0 };
      yield { objects, errors, cursor: null, watermark: encode(wm) };
    }
    await main.commit().catch(() => undefined);
  } finally {
    await aux?.close();
    await main.close();
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
