import { throwIfAborted, type DeltaChange, type DeltaImportOptions, type DeltaPage, type ObjectError } from '../sdk';
import { SnapshotStore, type RowState } from '../file/state';
import { pageSizeOf } from './config';
import { anchorsPresent, deletedByQuery, deletePlan } from './deletes';
import type { SqlSession } from './drivers';
import { decode, encode, markOf, markParam, maxMark, type Watermark } from './marks';
import { auxSession, build, captureMark, multiValues, type Built, type SqlParts } from './reading';
import { openSession, wrap } from './session';
import { keyText } from './values';

/**
 * A delta import: runs `deltaImportQuery` with `:watermark` (the stored value, minus `deltaOverlapSeconds` for a
 * timestamp), compares each row's hash with the snapshot (so rows re-read through the overlap are not reported
 * twice, and an unknown anchor is an add), and finds deletes by the configured detection (deletes.ts). Without a
 * delta query, or without a mark yet, it reads the full query and diffs it with the snapshot. A watermark it
 * cannot use is answered with `fullImportRequired`.
 */
export async function* deltaImport(parts: SqlParts, watermark: string | null, options: DeltaImportOptions): AsyncGenerator<DeltaPage> {
  const c = parts.config;
  const pageSize = pageSizeOf(options.pageSize);
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
  if (wm.cfg !== parts.settingsPrint || !SnapshotStore.isId(wm.snap)) {
    yield { changes: [], errors: [], fullImportRequired: { reason: 'The connector configuration changed since the last import.' } };
    return;
  }
  const known = await parts.store.loadRows(wm.snap);
  if (!known) {
    yield { changes: [], errors: [], fullImportRequired: { reason: "The connector's state for this watermark is gone." } };
    return;
  }
  // The watermark we were given is the committed one: older snapshots are no longer needed.
  await parts.store.pruneExcept([wm.snap]);

  const changes: DeltaChange[] = [];
  const errors: ObjectError[] = [];
  let mark = wm.wm;
  const dd = c.deleteDetection;
  const { n, diffAll, anchorDiff } = deletePlan(c, wm);
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

  const main = await openSession(c, options.signal);
  let aux: SqlSession | null = null;
  try {
    aux = await auxSession(c, null, options.signal);
    const stmt = diffAll
      ? wrap(c.dialect, c.fullImportQuery, 'fullImportQuery', 'src.*', '')
      : wrap(c.dialect, c.deltaImportQuery!, 'deltaImportQuery', 'src.*', '');
    const values = diffAll ? {} : { watermark: markParam(wm.wm!, c.deltaOverlapSeconds, c.dialect) };
    for await (const rows of main.stream(stmt, values, pageSize)) {
      throwIfAborted(options.signal);
      const mv = aux ? await multiValues(c, aux, rows.map((r) => keyText(r[c.anchorColumn])).filter(Boolean)) : new Map();
      for (const row of rows) {
        if (!diffAll && c.deltaColumn) mark = maxMark(mark, markOf(row[c.deltaColumn]));
        apply(build(c, row, mv));
      }
      while (changes.length + errors.length >= pageSize) yield takePage(changes, errors, pageSize);
    }
    if (diffAll && c.deltaColumn && c.deltaImportQuery) mark = maxMark(mark, await captureMark(c, main));
    // Deletes (deletes.ts says how each mode finds them).
    const gone = (anchor: string) => {
      if (!known.has(anchor)) return;
      known.delete(anchor);
      changes.push({ kind: 'delete', anchor, objectType: c.objectType });
    };
    if (diffAll) {
      for (const anchor of [...known.keys()]) if (!seen!.has(anchor)) gone(anchor);
    } else if (dd?.mode === 'query') {
      for await (const anchors of deletedByQuery(c, main, dd.query, values, pageSize)) {
        for (const anchor of anchors) gone(anchor);
        while (changes.length + errors.length >= pageSize) yield takePage(changes, errors, pageSize);
      }
    } else if (anchorDiff) {
      const present = await anchorsPresent(c, main);
      for (const anchor of [...known.keys()]) if (!present.has(anchor)) gone(anchor);
    }
    while (changes.length + errors.length > pageSize) yield takePage(changes, errors, pageSize);
    // The new snapshot; the old one stays until a delta starts from the new watermark.
    const snap = parts.store.newId();
    await parts.store.begin(snap);
    let batch: RowState[] = [];
    for (const r of known.values()) {
      batch.push(r);
      if (batch.length >= 10000) {
        await parts.store.append(snap, batch);
        batch = [];
      }
    }
    await parts.store.append(snap, batch);
    await parts.store.finish(snap);
    const next: Watermark = { v: 1, cfg: parts.settingsPrint, snap, wm: mark, n: anchorDiff ? 0 : n };
    yield { ...takePage(changes, errors, pageSize), nextWatermark: encode(next) };
  } finally {
    await aux?.close();
    await main.close();
  }
}

function takePage(changes: DeltaChange[], errors: ObjectError[], size: number): DeltaPage {
  const c = changes.splice(0, size);
  const e = errors.splice(0, Math.max(0, size - c.length));
  return { changes: c, errors: e };
}
