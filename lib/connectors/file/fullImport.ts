import { ConnectorError, throwIfAborted, type ConnectorObject, type FullImportOptions, type ImportPage, type ObjectError } from '../sdk';
import type { FileStat } from './files';
import type { JsonLayout } from './jsonRecords';
import { clampPageSize, duplicateError, guardedFiles, itemHash, readFileBatches, rowState, type FileParts } from './reading';
import { SnapshotStore, type RowState } from './state';
import type { Watermark } from './watermark';

/** A full import's resume point: the file and byte offset after the last row of a committed page. */
interface Cursor {
  v: 1;
  /** The row-hash snapshot being built, and its length at this point. */
  snap: string;
  sb: number;
  /** The folder's files when the import started; index of the current one. */
  files: FileStat[];
  fi: number;
  off: number;
  line: number;
  hdr?: string[];
  lay?: JsonLayout;
}

/**
 * A full import: every matching file streamed page by page. The page cursor is a byte offset, so a resumed
 * import reads on from there; a file that changed since the import started makes the cursor invalid. Every row's
 * hash goes into a new snapshot, which the last page's watermark names.
 */
export async function* fullImport(parts: FileParts, options: FullImportOptions): AsyncGenerator<ImportPage> {
  const { store, guard } = parts;
  const pageSize = clampPageSize(options.pageSize);
  let cur: Cursor;
  let seen: Set<string>;
  await guard.stateDirectory();
  if (options.cursor) {
    cur = parseCursor(options.cursor);
    const now = await guardedFiles(parts);
    for (let i = cur.fi; i < cur.files.length; i++) {
      const was = cur.files[i];
      const is = now.find((f) => f.name === was.name);
      if (!is || is.size !== was.size || is.mtimeMs !== was.mtimeMs) {
        throw new ConnectorError('cursor_invalid', `The file '${was.name}' changed since the import started; the full import must start again.`);
      }
    }
    const resumed = await store.resume(cur.snap, cur.sb);
    if (!resumed) throw new ConnectorError('cursor_invalid', 'The state of the interrupted import is gone; the full import must start again.');
    seen = resumed;
  } else {
    const files = await guardedFiles(parts);
    const snap = store.newId();
    await store.begin(snap);
    // Completed snapshots may still back a committed watermark: keep the two newest.
    await store.pruneOld(snap, 2);
    cur = { v: 1, snap, sb: 0, files, fi: 0, off: 0, line: 1 };
    seen = new Set();
  }

  let objects: ConnectorObject[] = [];
  let errors: ObjectError[] = [];
  let rows: RowState[] = [];
  for (let fi = cur.fi; fi < cur.files.length; fi++) {
    const f = cur.files[fi];
    const resuming = fi === cur.fi && cur.off > 0;
    let hdr = resuming ? cur.hdr : undefined;
    let lay = resuming ? cur.lay : undefined;
    for await (const batch of readFileBatches(parts, f, resuming ? cur.off : 0, resuming ? cur.line : 1, hdr, lay)) {
      for (const item of batch) {
        if (item.header) {
          hdr = item.header;
          continue;
        }
        lay = item.layout ?? lay;
        const r = item.make();
        if ('object' in r) {
          if (seen.has(r.object.anchor)) {
            errors.push(duplicateError(r.object, f.name));
          } else {
            seen.add(r.object.anchor);
            objects.push(r.object);
            rows.push(rowState(r.object, f.name, itemHash(item.pfx, item.h1, item.h2, item.len)));
          }
        } else {
          errors.push(r.error);
        }
        if (objects.length + errors.length >= pageSize) {
          cur.sb = await store.append(cur.snap, rows);
          rows = [];
          const next: Cursor = { ...cur, fi, off: item.end, line: item.nextLine, hdr, lay };
          yield { objects, errors, cursor: JSON.stringify(next) };
          objects = [];
          errors = [];
          throwIfAborted(options.signal);
        }
      }
    }
  }
  await store.append(cur.snap, rows);
  await store.finish(cur.snap);
  const wm: Watermark = { v: 1, snap: cur.snap, files: cur.files, cfg: parts.settingsPrint };
  yield { objects, errors, cursor: null, watermark: JSON.stringify(wm) };
}

function parseCursor(text: string): Cursor {
  let c: Partial<Cursor>;
  try {
    c = JSON.parse(text) as Partial<Cursor>;
  } catch {
    throw new ConnectorError('cursor_invalid', 'The import cursor is not one this connector wrote.');
  }
  if (
    c?.v !== 1 ||
    !SnapshotStore.isId(c.snap) ||
    !Array.isArray(c.files) ||
    !Number.isInteger(c.fi) ||
    !Number.isInteger(c.off) ||
    !Number.isInteger(c.line) ||
    !Number.isInteger(c.sb)
  ) {
    throw new ConnectorError('cursor_invalid', 'The import cursor is not one this connector wrote.');
  }
  return c as Cursor;
}
