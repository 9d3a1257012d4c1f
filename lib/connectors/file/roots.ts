import { constants, lstatSync, mkdirSync, promises as fs, readlinkSync, realpathSync, type Stats } from 'node:fs';
import type { FileHandle } from 'node:fs/promises';
import * as path from 'node:path';
import { ConfigError, SettingsReader } from '../../core/config';

/**
 * The folders the file connector may read and write (`Connectors:File:Roots`). Every path a file connector uses
 * (its folder, each file it reads, its export file, a `stateDirectory` from its settings) must be inside one
 * of them once symbolic links are resolved: a link that leads out of every root is refused, wherever it is
 * in the path, and so is a path with `.` or `..` segments. Checked when a connector is saved and again each
 * time a run uses the path, since a link can be swapped in after the save.
 *
 * The setting is a list of folders separated by `;` (as a Functions app setting is one string), or a JSON
 * array of strings. Relative folders are resolved against the working directory. Unset, the one root is
 * `<Service:DataDir>/files` (`.data/files` under the working directory by default), created when first needed.
 */
export const FILE_ROOTS_SETTING = 'Connectors:File:Roots';

export interface FileRoots {
  /** Absolute folders, as configured (links not resolved: a root may itself be reached through a link). */
  folders: string[];
  /** False when the setting is unset and the default folder under the data folder applies. */
  configured: boolean;
}

/** Read `Connectors:File:Roots`; a malformed value is a ConfigError naming the setting. */
export function readFileRoots(settings = new SettingsReader()): FileRoots {
  const raw = settings.raw(FILE_ROOTS_SETTING);
  if (raw === undefined) return { folders: [defaultRoot(settings)], configured: false };
  let entries: unknown[];
  const text = raw.trim();
  if (text.startsWith('[')) {
    try {
      entries = JSON.parse(text) as unknown[];
    } catch {
      throw new ConfigError(FILE_ROOTS_SETTING, 'starts with [ but is not a JSON array of folder paths.');
    }
    if (!Array.isArray(entries) || !entries.every((e) => typeof e === 'string')) {
      throw new ConfigError(FILE_ROOTS_SETTING, 'must be a JSON array of strings (folder paths), or folders separated by ;.');
    }
  } else {
    entries = text.split(';');
  }
  const folders = (entries as string[]).map((e) => e.trim()).filter((e) => e !== '');
  if (folders.length === 0) throw new ConfigError(FILE_ROOTS_SETTING, 'names no folder.');
  for (const f of folders) {
    if (f.includes('\0')) throw new ConfigError(FILE_ROOTS_SETTING, 'holds a path with a NUL character.');
  }
  return { folders: folders.map((f) => path.resolve(f)), configured: true };
}

function defaultRoot(settings: SettingsReader): string {
  return path.resolve(settings.string('Service:DataDir', '.data'), 'files');
}

/**
 * The start-up check of the setting: malformed, or naming a folder that does not exist, stops the start with a
 * message naming the setting. The default root is created (owner-only) when missing; failing that is not
 * fatal here (on a read-only app folder the service runs without file connectors until a root is configured).
 */
export function checkFileRootsSetting(settings = new SettingsReader()): FileRoots {
  const roots = readFileRoots(settings);
  if (!roots.configured) {
    ensureDefaultRoot(roots.folders[0]);
    return roots;
  }
  for (const folder of roots.folders) {
    let st: Stats;
    try {
      st = lstatSync(realpathSync(folder));
    } catch {
      throw new ConfigError(FILE_ROOTS_SETTING, `names '${folder}', which does not exist or cannot be read.`);
    }
    if (!st.isDirectory()) throw new ConfigError(FILE_ROOTS_SETTING, `names '${folder}', which is not a folder.`);
  }
  return roots;
}

function ensureDefaultRoot(folder: string): void {
  try {
    mkdirSync(folder, { recursive: true, mode: 0o700 });
  } catch {
    // Reported where it matters: no path can be inside a root that does not exist.
  }
}

/** Why a path is refused. */
export type PathProblem = 'not_absolute' | 'dot_segments' | 'outside' | 'unresolvable';

export type PathCheck = { real: string } | { problem: PathProblem };

/** The reason, phrased to follow the name of the settings field that holds the path. */
export function describePathProblem(problem: PathProblem): string {
  switch (problem) {
    case 'not_absolute':
      return 'must be an absolute path';
    case 'dot_segments':
      return "must not contain '.' or '..' segments";
    case 'outside':
      return `is outside the folders the file connector may use (the setting ${FILE_ROOTS_SETTING.replace(/:/g, '__')}), once symbolic links are resolved`;
    case 'unresolvable':
      return 'cannot be resolved (a loop of symbolic links, or a folder on the way that cannot be read)';
  }
}

/** True when `real` is `root` or below it (both already resolved). */
export function isInside(real: string, root: string): boolean {
  const rel = path.relative(root, real);
  return rel === '' || (rel !== '..' && !rel.startsWith('..' + path.sep) && !path.isAbsolute(rel));
}

function lexicalProblem(p: string): PathProblem | undefined {
  if (!path.isAbsolute(p)) return 'not_absolute';
  if (p.split(/[\\/]+/).some((s) => s === '.' || s === '..')) return 'dot_segments';
  return undefined;
}

// ---------------------------------------------------------------------------------------------------------
// Resolution. One algorithm, written as steps that name the file-system call they need, run by a synchronous
// driver (the save-time check: the Admin API's validation is synchronous) and an asynchronous one (runs).

type Step = { op: 'realpath' | 'lstat' | 'readlink'; path: string };
type StepResult = { value: string | boolean } | { error: NodeJS.ErrnoException };

const MAX_LINKS = 40;
const MISSING = new Set(['ENOENT', 'ENOTDIR']);

/**
 * The real path of an absolute path without `.`/`..` segments: every existing component resolved (links
 * followed, chains too), and a missing tail (a file or folder about to be created) appended to the real path
 * of its nearest existing parent. A dangling link is followed to where it points, so a link to a file that
 * does not exist yet outside a root is still outside. Loops end as `ELOOP`.
 */
function* resolveSteps(p: string): Generator<Step, string, StepResult> {
  let pending = p;
  const tail: string[] = [];
  for (let links = 0; ;) {
    const r = yield { op: 'realpath', path: pending };
    if ('value' in r) return path.join(r.value as string, ...tail);
    if (!MISSING.has(r.error.code ?? '')) throw r.error;
    const isLink = yield { op: 'lstat', path: pending };
    if ('error' in isLink && !MISSING.has(isLink.error.code ?? '')) throw isLink.error;
    const parent = path.dirname(pending);
    if ('value' in isLink && isLink.value === true) {
      if (++links > MAX_LINKS) throw Object.assign(new Error('Too many symbolic links.'), { code: 'ELOOP' });
      const target = yield { op: 'readlink', path: pending };
      if ('error' in target) throw target.error;
      // A relative target is relative to the link's real folder (not to the path spelled so far).
      const dir = yield { op: 'realpath', path: parent };
      if ('error' in dir) throw dir.error;
      pending = yield* followTarget(dir.value as string, target.value as string);
      continue;
    }
    if (parent === pending) return path.join(pending, ...tail);
    tail.unshift(path.basename(pending));
    pending = parent;
  }
}

/**
 * Where a link's target leads, resolved one component at a time from the link's real folder as the kernel
 * does: a `..` after a linked folder goes up from where that link leads, not from the link. Components that
 * do not exist are kept as spelled (the caller goes on resolving from there).
 */
function* followTarget(from: string, target: string): Generator<Step, string, StepResult> {
  let cur = path.isAbsolute(target) ? path.parse(target).root : from;
  for (const seg of target.split(/[\\/]+/)) {
    if (seg === '' || seg === '.') continue;
    if (seg === '..') {
      cur = path.dirname(cur);
      continue;
    }
    const r = yield { op: 'realpath', path: path.join(cur, seg) };
    if ('error' in r) {
      if (!MISSING.has(r.error.code ?? '')) throw r.error;
      cur = path.join(cur, seg);
    } else cur = r.value as string;
  }
  return cur;
}

function runSync(step: Step): StepResult {
  try {
    if (step.op === 'realpath') return { value: realpathSync(step.path) };
    if (step.op === 'lstat') return { value: lstatSync(step.path).isSymbolicLink() };
    return { value: readlinkSync(step.path) };
  } catch (error) {
    return { error: error as NodeJS.ErrnoException };
  }
}

async function runAsync(step: Step): Promise<StepResult> {
  try {
    if (step.op === 'realpath') return { value: await fs.realpath(step.path) };
    if (step.op === 'lstat') return { value: (await fs.lstat(step.path)).isSymbolicLink() };
    return { value: await fs.readlink(step.path) };
  } catch (error) {
    return { error: error as NodeJS.ErrnoException };
  }
}

function driveSync(gen: Generator<Step, string, StepResult>): string {
  let r = gen.next();
  while (!r.done) r = gen.next(runSync(r.value));
  return r.value;
}

async function driveAsync(gen: Generator<Step, string, StepResult>): Promise<string> {
  let r = gen.next();
  while (!r.done) r = gen.next(await runAsync(r.value));
  return r.value;
}

/** The roots that exist, resolved (a root that does not exist holds nothing). */
function realRootsSync(roots: readonly string[]): string[] {
  const out: string[] = [];
  for (const root of roots) {
    try {
      out.push(realpathSync(root));
    } catch {
      // Not there: nothing is inside it.
    }
  }
  return out;
}

async function realRoots(roots: readonly string[]): Promise<string[]> {
  const out: string[] = [];
  for (const root of roots) {
    try {
      out.push(await fs.realpath(root));
    } catch {
      // Not there: nothing is inside it.
    }
  }
  return out;
}

function verdict(real: string, rootsReal: string[]): PathCheck {
  return rootsReal.some((root) => isInside(real, root)) ? { real } : { problem: 'outside' };
}

/** Check a path against the roots (synchronously: for the Admin API's validation of settings). */
export function checkPathSync(p: string, roots: readonly string[]): PathCheck {
  const lexical = lexicalProblem(p);
  if (lexical) return { problem: lexical };
  let real: string;
  try {
    real = driveSync(resolveSteps(path.normalize(p)));
  } catch {
    return { problem: 'unresolvable' };
  }
  return verdict(real, realRootsSync(roots));
}

/** Check a path against the roots. */
export async function checkPath(p: string, roots: readonly string[]): Promise<PathCheck> {
  const lexical = lexicalProblem(p);
  if (lexical) return { problem: lexical };
  let real: string;
  try {
    real = await driveAsync(resolveSteps(path.normalize(p)));
  } catch {
    return { problem: 'unresolvable' };
  }
  return verdict(real, await realRoots(roots));
}

const NOFOLLOW = constants.O_NOFOLLOW ?? 0;

/**
 * Open an existing file for reading, only if it is inside a root: the path is resolved and checked, its real
 * path opened without following a link in the last component, then resolved and checked again and compared
 * with what was opened (same device and inode). A link swapped in between the check and the open is refused,
 * whichever way it was swapped. Answers the problem instead of a handle when refused; file-system errors
 * (a missing file) are thrown as they are.
 */
export async function openInside(file: string, roots: readonly string[]): Promise<FileHandle | PathProblem> {
  const first = await checkPath(file, roots);
  if ('problem' in first) return first.problem;
  let fh: FileHandle;
  try {
    fh = await fs.open(first.real, constants.O_RDONLY | NOFOLLOW);
  } catch (err) {
    // The last component became a link after it was resolved.
    if ((err as NodeJS.ErrnoException).code === 'ELOOP') return 'outside';
    throw err;
  }
  try {
    const again = await checkPath(file, roots);
    if ('problem' in again) {
      await fh.close();
      return again.problem;
    }
    const [opened, named] = await Promise.all([fh.stat(), fs.stat(again.real)]);
    if (opened.dev !== named.dev || opened.ino !== named.ino) {
      await fh.close();
      return 'outside';
    }
    return fh;
  } catch (err) {
    await fh.close().catch(() => undefined);
    throw err;
  }
}
