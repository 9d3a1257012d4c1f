import { promises as fsp } from 'node:fs';
import * as path from 'node:path';
import { areaLog } from '../core/log';
import { compactObject, type CompactPage } from './readModelCompact';
import type { MeshRecord } from './readModelIndexes';
import type { MeshSnapshotPage, MeshSnapshotSource } from './feed';
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

/** What a write needs of the read model (lib/mesh/readModel.ts `MeshReadModel`, which imports this module). */
export interface SnapshotModel {
  /** Bumped by every change: a write gives up when it moves. */
  readonly changes: number;
  records(): Iterable<MeshRecord>;
  compactPage(records: readonly MeshRecord[], from: number, to: number): CompactPage;
}

/** The file of the process's snapshot under the service's data folder. */
export function snapshotFile(dataDir: string): string {
  return path.resolve(dataDir, 'mesh', 'read-model.snapshot');
}

/**
 * Write the model as it is at feed position `seq` (whose row has `feedTag`) to `file`. The pages are written
 * one at a time, letting the process serve between them; the write gives up (false, nothing replaced) if
 * the model changes meanwhile, since the file would mix two positions.
 */
export async function writeSnapshot(file: string, model: SnapshotModel, seq: number, feedTag: string): Promise<boolean> {
  const changes = model.changes;
  await fsp.mkdir(path.dirname(file), { recursive: true, mode: 0o700 });
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
      await fh.write(JSON.stringify(model.compactPage(records, i, Math.min(records.length, i + PAGE))) + '\n');
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
      async function* pages(): AsyncGenerator<MeshSnapshotPage> {
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
            const compact = JSON.parse(next.value) as CompactPage;
            objects += compact[1].length;
            yield { compact, objects: (attributes) => compact[1].map((row) => compactObject(compact[0], row, attributes)) };
          }
        } catch (err) {
          await lines.return(undefined);
          await discard(`unreadable (${(err as Error).message})`);
          throw err;
        } finally {
          // Read to its end, failed, or given up on by the load: the file is closed.
          await lines.return(undefined);
        }
      }
      return { seq: header.seq, pages: pages() };
    },
  };
}
