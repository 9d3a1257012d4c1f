import { closeSync, mkdirSync, openSync, readFileSync, statSync, unlinkSync, writeSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { RuntimeConfigError } from './settings';

/**
 * One runtime process per data folder. The folder holds the persisted instance id, the Azurite files and the
 * service's keys: two processes on it would share one instance id and act as one engine instance. The lock is
 * a file created with O_EXCL (`<dataDir>/runtime/host.lock`) naming the holder; a lock whose holder is no
 * longer running (kill -9, power loss) is taken over.
 */
export interface LockHolder {
  pid: number;
  hostname: string;
  /** Linux: the process's start time in clock ticks since boot (/proc/<pid>/stat), to tell a reused pid. */
  startTicks?: number;
  startedAt: string;
}

export class DataFolderInUseError extends RuntimeConfigError {
  constructor(
    readonly dataDir: string,
    readonly holder: LockHolder,
    lockFile: string,
  ) {
    super(
      '--data-dir',
      `The data folder ${dataDir} is in use by another runtime process (pid ${holder.pid} on ${holder.hostname}, started ${holder.startedAt}). ` +
        `Stop that process, or start this one with another --data-dir. If no such process runs, delete ${lockFile}.`,
    );
    this.name = 'DataFolderInUseError';
  }
}

/** Field 22 of /proc/<pid>/stat (starttime), with the process state; undefined where /proc is not there. */
function procStat(pid: number): { state: string; startTicks: number } | undefined {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    // The command name (field 2) is in parentheses and may hold spaces: count fields after its closing one.
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return { state: fields[0], startTicks: Number(fields[19]) };
  } catch {
    return undefined;
  }
}

/** True while the process that wrote `holder` still runs (on this machine). */
function isRunning(holder: LockHolder): boolean {
  if (holder.pid === process.pid) return false; // a pid reused by this very process (a container restart)
  try {
    process.kill(holder.pid, 0);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'EPERM') return false; // ESRCH: gone
  }
  const stat = procStat(holder.pid);
  if (!stat) return true;
  if (stat.state === 'Z') return false; // exited, not yet reaped by its parent
  return holder.startTicks === undefined || holder.startTicks === stat.startTicks;
}

function readHolder(file: string): LockHolder | undefined {
  try {
    const parsed = JSON.parse(readFileSync(file, 'utf8')) as Partial<LockHolder>;
    if (typeof parsed.pid === 'number' && typeof parsed.hostname === 'string') {
      return { pid: parsed.pid, hostname: parsed.hostname, startTicks: parsed.startTicks, startedAt: String(parsed.startedAt ?? 'at an unknown time') };
    }
  } catch {
    // unreadable or half-written: handled by the caller
  }
  return undefined;
}

function tryCreate(file: string, content: string): boolean {
  let fd: number;
  try {
    fd = openSync(file, 'wx', 0o644);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'EEXIST') return false;
    throw err;
  }
  try {
    writeSync(fd, content);
  } finally {
    closeSync(fd);
  }
  return true;
}

export interface DataFolderLock {
  file: string;
  /** The holder of a stale lock this one replaced, if any. */
  tookOverFrom?: LockHolder;
  /** Remove the lock file if it is still ours. */
  release(): void;
}

/** How old a lock file with no readable holder must be before it counts as abandoned (a writer dies between create and write). */
const UNREADABLE_GRACE_MS = 5_000;

/**
 * Take the data folder's lock, or throw DataFolderInUseError naming the running holder. Breaking a stale lock
 * goes through a second O_EXCL file, so two processes that find the same stale lock cannot both take it.
 */
export function lockDataFolder(dataDir: string): DataFolderLock {
  const dir = path.join(dataDir, 'runtime');
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  const file = path.join(dir, 'host.lock');
  const me: LockHolder = { pid: process.pid, hostname: os.hostname(), startTicks: procStat(process.pid)?.startTicks, startedAt: new Date().toISOString() };
  const content = `${JSON.stringify(me)}\n`;
  let tookOverFrom: LockHolder | undefined;
  for (let attempt = 0; attempt < 20; attempt++) {
    if (tryCreate(file, content)) {
      return {
        file,
        tookOverFrom,
        release() {
          try {
            if (readFileSync(file, 'utf8') === content) unlinkSync(file);
          } catch {
            // already gone
          }
        },
      };
    }
    const holder = readHolder(file);
    if (holder) {
      if (holder.hostname !== me.hostname || isRunning(holder)) throw new DataFolderInUseError(dataDir, holder, file);
    } else {
      let age: number;
      try {
        age = Date.now() - statSync(file).mtimeMs;
      } catch {
        continue; // removed meanwhile: try again
      }
      if (age < UNREADABLE_GRACE_MS) {
        sleepSync(100);
        continue;
      }
    }
    breakStaleLock(file, holder);
    tookOverFrom = holder;
  }
  throw new RuntimeConfigError('--data-dir', `Could not take the lock ${file} of the data folder ${dataDir}: other processes keep taking it.`);
}

/** Remove `file` if it still names `stale`, under a breaker file only one process can create. */
function breakStaleLock(file: string, stale: LockHolder | undefined): void {
  const breaker = `${file}.break`;
  if (!tryCreate(breaker, String(process.pid))) {
    // Another process is breaking it; a breaker left by a process that died mid-break goes after a while.
    try {
      if (Date.now() - statSync(breaker).mtimeMs > UNREADABLE_GRACE_MS) unlinkSync(breaker);
    } catch {
      // gone meanwhile
    }
    sleepSync(50);
    return;
  }
  try {
    const now = readHolder(file);
    const same = stale ? now?.pid === stale.pid && now.startedAt === stale.startedAt : now === undefined;
    if (same) unlinkSync(file);
  } catch {
    // removed meanwhile
  } finally {
    unlinkSync(breaker);
  }
}

function sleepSync(ms: number): void {
  Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, ms);
}
