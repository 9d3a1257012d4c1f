import { wildcardMatch } from '../../core/wildcard';
import { promises as fs } from 'node:fs';
import type { FileHandle } from 'node:fs/promises';
import * as path from 'node:path';
import { ConnectorError } from '../sdk';

/** A file of the folder as seen when a run started: a change of size or modification time means "re-read it". */
export interface FileStat {
  name: string;
  size: number;
  mtimeMs: number;
}

/** A compiled `filePattern`: whether a file name matches it. */
export interface NameMatcher {
  test(name: string): boolean;
}

/** Most `*` wildcards a `filePattern` may hold (more is refused when the connector is saved). */
export const MAX_PATTERN_STARS = 8;

/** Why a `filePattern` is refused at save (too many `*`), or undefined when it is fine. */
export function filePatternProblem(pattern: string): string | undefined {
  const stars = [...pattern].filter((c) => c === '*').length;
  if (stars > MAX_PATTERN_STARS) return `has ${stars} '*' wildcards; at most ${MAX_PATTERN_STARS} are allowed.`;
  return undefined;
}

/**
 * `*` (any run of characters) and `?` (one character) wildcards, matched against the whole file name, case
 * sensitive. Not a regular expression (this connector's before, and picomatch's too, backtracked for seconds on
 * `*?*?*?*?*?*?*?*?#`): lib/core/wildcard.ts, at most name length x pattern length steps whatever the pattern.
 */
export function compileFilePattern(pattern: string): NameMatcher {
  // Runs of `*` are one `*`; code points, so `?` is one character of a name.
  const p = [...pattern.replace(/\*+/g, '*')];
  return { test: (name: string) => wildcardMatch(p, [...name]) };
}

/**
 * The regular files of `folder` whose name matches, sorted by name (so pages and cursors are stable). Hidden
 * files (a leading dot) are never read: the connector's own temporary files are hidden.
 */
export async function listFiles(folder: string, pattern: NameMatcher): Promise<FileStat[]> {
  let entries: import('node:fs').Dirent[];
  try {
    entries = await fs.readdir(folder, { withFileTypes: true });
  } catch (err) {
    throw folderError(err, folder);
  }
  const names = entries
    .filter((e) => (e.isFile() || e.isSymbolicLink()) && !e.name.startsWith('.') && pattern.test(e.name))
    .map((e) => e.name)
    .sort();
  const out: FileStat[] = [];
  for (const name of names) {
    try {
      const st = await fs.stat(path.join(folder, name));
      if (st.isFile()) out.push({ name, size: st.size, mtimeMs: st.mtimeMs });
    } catch (err) {
      // A file deleted between readdir and stat is simply not there any more.
      if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw folderError(err, folder, name);
    }
  }
  return out;
}

/**
 * A file-system error as a ConnectorError with a message an operator can act on: the settings field at fault
 * (`path`, or `exportFile` for the export file), the folder as configured and the file's name. The system's
 * own message (which can name other paths) stays in `cause`, for the log.
 */
export function folderError(err: unknown, folder: string, file?: string, field = 'path'): ConnectorError {
  const code = (err as NodeJS.ErrnoException).code;
  const what = file ? `${field}: cannot use the file '${file}' of the folder '${folder}'` : `${field}: cannot read the folder '${folder}'`;
  if (code === 'ENOENT') return new ConnectorError('configuration_invalid', `${what}: it does not exist.`, { cause: err });
  if (code === 'ENOTDIR') return new ConnectorError('configuration_invalid', `${what}: it is not a folder.`, { cause: err });
  if (code === 'EACCES' || code === 'EPERM') return new ConnectorError('connection_failed', `${what}: permission denied.`, { cause: err, retriable: false });
  if (code === 'EMFILE' || code === 'ENFILE' || code === 'EBUSY' || code === 'EIO') {
    return new ConnectorError('connection_failed', `${what} (${code}).`, { cause: err, retriable: true });
  }
  return new ConnectorError('connection_failed', `${what}${code ? ` (${code})` : ''}.`, { cause: err });
}

/**
 * The bytes of a file from `start`, in chunks. Each chunk is a fresh buffer (readers keep slices of them).
 * `file` is a path, or a function that opens the file (the connector's opens check where the file really is).
 */
export async function* readChunks(file: string | (() => Promise<FileHandle>), start = 0, chunkSize = 1024 * 1024): AsyncGenerator<Buffer> {
  const fh = typeof file === 'string' ? await fs.open(file, 'r') : await file();
  try {
    let pos = start;
    for (;;) {
      const buf = Buffer.allocUnsafe(chunkSize);
      const { bytesRead } = await fh.read(buf, 0, chunkSize, pos);
      if (bytesRead === 0) return;
      pos += bytesRead;
      yield bytesRead === chunkSize ? buf : buf.subarray(0, bytesRead);
    }
  } finally {
    await fh.close();
  }
}

/**
 * Replace `target` atomically: write a hidden temporary file beside it, flush it to disk, rename it over the
 * target. A reader sees the old file or the new one, never half of one.
 */
export async function writeAtomically(target: string, write: (fh: FileHandle) => Promise<void>): Promise<void> {
  const tmp = path.join(path.dirname(target), `.${path.basename(target)}.${process.pid}.${Date.now()}.tmp`);
  // Exclusive create: a file or link already at that name is never written through.
  const fh = await fs.open(tmp, 'wx');
  try {
    await write(fh);
    await fh.sync();
  } catch (err) {
    await fh.close().catch(() => undefined);
    await fs.rm(tmp, { force: true });
    throw err;
  }
  await fh.close();
  try {
    await fs.rename(tmp, target);
  } catch (err) {
    await fs.rm(tmp, { force: true });
    throw err;
  }
}

/** Buffered writes to a file handle (one write call per ~1 MiB instead of one per row). */
export class BufferedWriter {
  private parts: Buffer[] = [];
  private size = 0;
  constructor(private readonly fh: FileHandle) {}

  async write(data: Buffer): Promise<void> {
    this.parts.push(data);
    this.size += data.length;
    if (this.size >= 1024 * 1024) await this.flush();
  }

  async flush(): Promise<void> {
    if (this.size === 0) return;
    const all = Buffer.concat(this.parts, this.size);
    this.parts = [];
    this.size = 0;
    await this.fh.write(all);
  }
}
