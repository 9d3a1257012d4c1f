import { promises as fsp } from 'node:fs';
import * as path from 'node:path';
import type { AttributeValue } from '../connectors/sdk';
import { areaLog } from '../core/log';
import type { ConsolidatedAttribute, MeshObject, PendingReference, Relationship } from './model';
import type { MeshReadModel } from './readModel';
import { NO_SOURCE, type MeshRecord } from './readModelIndexes';
import type { MeshSnapshotSource } from './feed';
import { feedRowTag } from './store';

const log = areaLog('mesh');

/**
 * A snapshot of the mesh read model on disk, so that a restart loads the mesh from a local file and then
 * catches up with the change feed, instead of scanning the 16 mesh tables through the storage (its HTTP, its
 * JSON, the stored forms' decoding). See docs/mesh-queries.md, "The snapshot".
 *
 * The file holds what the model keeps of each object (the consolidated attributes with their source,
 * confidence and time, relationships, the references not resolved yet) at one feed position, as JSON lines:
 * a header (format, version, feed position, the ETag of that feed row, the object count), then one line per
 * page of up to 250 objects (`[keys, objects]`: every repeated string, such as attribute names, types,
 * connector ids and timestamps, once per line in `keys` and named by its index), then a trailer with the count.
 * It is written to a temporary file and renamed, so a reader sees a whole snapshot or the one before.
 *
 * A snapshot is used only when the feed row at its position still has the ETag it noted (the same storage,
 * the same history: a data folder restored or pointed at another account scans instead), when it is not
 * ahead of the feed, and when catching up means applying at most one feed row per 500 objects (past that, a
 * scan costs less than replaying the changes). A snapshot that cannot be read whole is deleted and the model
 * scans the mesh instead.
 */

const FORMAT = 'mesh-read-model-snapshot';
const VERSION = 1;
/** Objects per line: encoding one takes a few milliseconds, and the write lets requests in between lines. */
const PAGE = 250;

export interface SnapshotHeader {
  format: string;
  version: number;
  /** The feed position the snapshot is at. */
  seq: number;
  /** The ETag of the feed row at `seq` when the snapshot was written. */
  feedTag: string;
  objects: number;
  writtenAt: string;
}

/** An object as a snapshot line holds it: id, type, anchor, created, updated, attributes, relationships, pending references. */
type Row = [string, number, string, number, number, unknown[], unknown[], PendingReference[] | 0];

const EMPTY: Record<string, never> = Object.freeze({}) as Record<string, never>;

/** The file of the process's snapshot under the service's data folder. */
export function snapshotFile(dataDir: string): string {
  return path.resolve(dataDir, 'mesh', 'read-model.snapshot');
}

/**
 * Write the model as it is at feed position `seq` (whose row has `feedTag`) to `file`. The pages are written
 * one at a time, letting the process serve between them; the write gives up (false, nothing replaced) if
 * the model changes meanwhile, since the file would mix two positions.
 */
export async function writeSnapshot(file: string, model: MeshReadModel, seq: number, feedTag: string): Promise<boolean> {
  const changes = model.changes;
  await fsp.mkdir(path.dirname(file), { recursive: true });
  const tmp = `${file}.${process.pid}.tmp`;
  await removeOrphans(file);
  const records = [...model.records()];
  const fh = await fsp.open(tmp, 'w', 0o600);
  let done = false;
  try {
    const header: SnapshotHeader = { format: FORMAT, version: VERSION, seq, feedTag, objects: records.length, writtenAt: new Date().toISOString() };
    await fh.write(JSON.stringify(header) + '\n');
    for (let i = 0; i < records.length; i += PAGE) {
      if (model.changes !== changes) return false;
      await fh.write(encodePage(model, records, i, Math.min(records.length, i + PAGE)) + '\n');
    }
    if (model.changes !== changes) return false;
    await fh.write(JSON.stringify({ end: true, objects: records.length }) + '\n');
    await fh.datasync();
    done = true;
  } finally {
    await fh.close();
    if (done) await fsp.rename(tmp, file);
    else await fsp.rm(tmp, { force: true });
  }
  return true;
}

/** Temporary files of writes cut short (a process killed while writing): those of processes no longer running. */
async function removeOrphans(file: string): Promise<void> {
  const dir = path.dirname(file);
  const prefix = path.basename(file) + '.';
  for (const name of await fsp.readdir(dir)) {
    const m = name.startsWith(prefix) ? /^(\d+)\.tmp$/.exec(name.slice(prefix.length)) : null;
    if (!m || Number(m[1]) === process.pid || running(Number(m[1]))) continue;
    await fsp.rm(path.join(dir, name), { force: true });
  }
}

function running(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}

function encodePage(model: MeshReadModel, records: MeshRecord[], from: number, to: number): string {
  const keys: string[] = [];
  const ids = new Map<string, number>();
  const k = (s: string): number => {
    let n = ids.get(s);
    if (n === undefined) {
      ids.set(s, (n = keys.length));
      keys.push(s);
    }
    return n;
  };
  const rows: Row[] = [];
  for (let i = from; i < to; i++) {
    const r = records[i];
    const attrs: unknown[] = [];
    for (const n of r.names) {
      const column = model.columns[n];
      const m = r.slot * 3;
      const source = column.meta[m];
      attrs.push(
        k(model.names.values[n]),
        column.values[r.slot] ?? null,
        source === NO_SOURCE ? -1 : k(model.sources.values[source]),
        column.meta[m + 1],
        k(model.stamps.values[column.meta[m + 2]]),
      );
    }
    const rels: unknown[] = [];
    for (const x of r.relationships) rels.push(k(x.type), x.targetId, x.targetAnchor, k(x.targetType));
    rows.push([r.id, k(r.objectType), r.anchorValue, k(r.createdOn), k(r.updatedOn), attrs, rels, r.pending.length ? [...r.pending] : 0]);
  }
  return JSON.stringify([keys, rows]);
}

function decodePage(line: string): MeshObject[] {
  const [keys, rows] = JSON.parse(line) as [string[], Row[]];
  const out: MeshObject[] = new Array(rows.length);
  for (let i = 0; i < rows.length; i++) {
    const [id, type, anchorValue, createdOn, updatedOn, attrs, rels, pending] = rows[i];
    const attributes: Record<string, ConsolidatedAttribute> = {};
    for (let j = 0; j < attrs.length; j += 5) {
      const source = attrs[j + 2] as number;
      attributes[keys[attrs[j] as number]] = {
        value: attrs[j + 1] as AttributeValue,
        sourceConnectorId: source === -1 ? null : keys[source],
        confidence: attrs[j + 3] as number,
        updatedOn: keys[attrs[j + 4] as number],
      };
    }
    const relationships: Relationship[] = [];
    for (let j = 0; j < rels.length; j += 4) {
      relationships.push({
        type: keys[rels[j] as number],
        targetId: rels[j + 1] as string,
        targetAnchor: rels[j + 2] as string,
        targetType: keys[rels[j + 3] as number],
      });
    }
    out[i] = {
      id,
      objectType: keys[type],
      anchorValue,
      createdOn: keys[createdOn],
      updatedOn: keys[updatedOn],
      attributes,
      contributions: EMPTY,
      links: EMPTY,
      relationships,
      pendingReferences: pending || [],
    };
  }
  return out;
}

/** The lines of `file`, read in chunks of 4 MB (a line is a page of objects, a few hundred KB). */
async function* fileLines(fh: fsp.FileHandle): AsyncGenerator<string> {
  const chunk = Buffer.allocUnsafe(4 << 20);
  let carry: Buffer[] = [];
  for (;;) {
    const { bytesRead } = await fh.read(chunk, 0, chunk.length, null);
    if (bytesRead === 0) break;
    let start = 0;
    for (let nl = chunk.indexOf(10, 0); nl !== -1 && nl < bytesRead; nl = chunk.indexOf(10, start)) {
      const piece = chunk.subarray(start, nl);
      yield carry.length ? Buffer.concat([...carry, piece]).toString('utf8') : piece.toString('utf8');
      carry = [];
      start = nl + 1;
    }
    if (start < bytesRead) carry.push(Buffer.from(chunk.subarray(start, bytesRead)));
  }
  if (carry.length) yield Buffer.concat(carry).toString('utf8');
}

/** The header of the snapshot in `file`, and its lines after it; undefined when there is no such file. */
async function openLines(file: string): Promise<{ header: SnapshotHeader; lines: AsyncGenerator<string> } | undefined> {
  let fh: fsp.FileHandle;
  try {
    fh = await fsp.open(file, 'r');
  } catch {
    return undefined;
  }
  const read = fileLines(fh);
  // Closed when the lines are done, or given up on (return()).
  const lines = (async function* () {
    try {
      yield* read;
    } finally {
      await fh.close();
    }
  })();
  try {
    const first = await lines.next();
    const header = (first.done ? undefined : JSON.parse(first.value)) as SnapshotHeader | undefined;
    if (!header || header.format !== FORMAT || header.version !== VERSION || !(header.seq > 0) || typeof header.feedTag !== 'string') {
      throw new Error('not a snapshot of this version');
    }
    return { header, lines };
  } catch (err) {
    await lines.return(undefined);
    throw err;
  }
}

/**
 * Where the read model of this process starts from: the snapshot in `file` when it is usable (see the module
 * comment), else a scan of the mesh. A snapshot found unusable is left in place (the next write replaces
 * it); one that cannot be read is deleted.
 */
export function snapshotSource(file: string): MeshSnapshotSource {
  const discard = async (why: string) => {
    log.warn(`The mesh read model's snapshot ${file} is ${why}: deleted; the mesh is loaded from the storage.`);
    await fsp.rm(file, { force: true });
  };
  return {
    async open(currentSeq) {
      let opened;
      try {
        opened = await openLines(file);
      } catch (err) {
        await discard(`unreadable (${(err as Error).message})`);
        return undefined;
      }
      if (!opened) return undefined;
      const { header, lines } = opened;
      const close = () => void lines.return(undefined);
      const behind = currentSeq - header.seq;
      const limit = Math.max(50, Math.floor(header.objects / 500));
      let unusable: string | undefined;
      if (behind < 0) unusable = `ahead of this storage's mesh change feed (position ${header.seq}, the feed's ${currentSeq})`;
      else if (behind > limit) unusable = `${behind} feed rows behind the mesh (more than ${limit}: scanning costs less)`;
      else if ((await feedRowTag(header.seq)) !== header.feedTag) unusable = `not of this storage's mesh (its feed row ${header.seq} differs)`;
      if (unusable) {
        close();
        log.info(`The mesh read model's snapshot is ${unusable}; the mesh is loaded from the storage.`);
        return undefined;
      }
      log.info(`Loading the mesh read model from its snapshot (${header.objects} object(s) at feed position ${header.seq}, ${behind} row(s) to catch up).`);
      async function* pages(): AsyncGenerator<MeshObject[]> {
        let objects = 0;
        try {
          for (;;) {
            const next = await lines.next();
            if (next.done) throw new Error('it ends before its last line');
            if (next.value.startsWith('{')) {
              const end = JSON.parse(next.value) as { end?: boolean; objects?: number };
              if (!end.end || end.objects !== objects || objects !== header.objects) throw new Error('its object count does not match');
              return;
            }
            const page = decodePage(next.value);
            objects += page.length;
            yield page;
          }
        } catch (err) {
          close();
          await discard(`unreadable (${(err as Error).message})`);
          throw err;
        }
      }
      return { seq: header.seq, pages: pages() };
    },
  };
}
