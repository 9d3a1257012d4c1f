import { chmodSync, lstatSync, mkdirSync, readdirSync, statSync } from 'node:fs';
import path from 'node:path';

/**
 * The data folder is the local user's alone: folders 0700, files 0600 (the lock, the instance id, the storage
 * emulator's files and the app's secrets live there). Modes mean little on Windows: skipped there.
 */
const POSIX = process.platform !== 'win32';

/** Create `dir` (and its parents) 0700, or tighten it to 0700 when it exists with group/other bits. */
export function ensurePrivateDir(dir: string, warn?: (line: string) => void): void {
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  if (!POSIX) return;
  const mode = statSync(dir).mode & 0o777;
  if (mode & 0o077) {
    chmodSync(dir, 0o700);
    warn?.(`The folder ${dir} was open to other local users (mode ${mode.toString(8).padStart(4, '0')}): tightened to 0700.`);
  }
}

/**
 * Tighten every folder under `dir` to 0700 and every file to 0600 where they allow group or others anything
 * (files written before, with the default umask). Links are not followed. Returns how many were tightened.
 */
export function tightenTree(dir: string): number {
  if (!POSIX) return 0;
  let count = 0;
  const visit = (p: string) => {
    let st;
    try {
      st = lstatSync(p);
    } catch {
      return;
    }
    if (st.isSymbolicLink()) return;
    if (st.mode & 0o077) {
      chmodSync(p, st.isDirectory() ? 0o700 : 0o600);
      count++;
    }
    if (st.isDirectory()) for (const name of readdirSync(p)) visit(path.join(p, name));
  };
  visit(dir);
  return count;
}

/**
 * Run `fn` (which spawns child processes) with the umask 077, so what those children create is the owner's
 * alone; the process's own umask is restored at once (spawn forks synchronously).
 */
export function withPrivateUmask<T>(fn: () => T): T {
  if (!POSIX) return fn();
  let previous: number | undefined;
  try {
    previous = process.umask(0o077);
  } catch {
    // worker threads cannot change the umask: the folder's 0700 still keeps others out
  }
  try {
    return fn();
  } finally {
    if (previous !== undefined) process.umask(previous);
  }
}
