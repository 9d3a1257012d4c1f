import { chmodSync, mkdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';

/**
 * The data folder and the secrets in it are the local user's alone: folders 0700, files 0600. A folder found
 * with wider permissions (made before, or by hand) is tightened, and `warn` is told so in one line. On
 * Windows, modes mean little and the checks are skipped (its ACLs come from the parent folder).
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

/** Write `content` to `file` readable by the owner only (an existing file is narrowed to 0600 too). */
export function writePrivateFile(file: string, content: string): void {
  writeFileSync(file, content, { mode: 0o600 });
  if (POSIX) chmodSync(file, 0o600);
}

/**
 * The trimmed content of a secret file, narrowed to 0600; when it does not exist, `make()` is written to it
 * first (exclusively: two processes starting at once keep the first one's secret).
 */
export function readOrCreateSecretFile(file: string, make: () => string): string {
  try {
    const text = readFileSync(file, 'utf8').trim();
    if (text) {
      if (POSIX) chmodSync(file, 0o600);
      return text;
    }
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
  }
  const fresh = make();
  try {
    writeFileSync(file, `${fresh}\n`, { flag: 'wx', mode: 0o600 });
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
    // An empty file (a crash between create and write) or another process's: read again; empty is replaced.
    const again = readFileSync(file, 'utf8').trim();
    if (again) return again;
    writeFileSync(file, `${fresh}\n`, { mode: 0o600 });
  }
  if (POSIX) chmodSync(file, 0o600);
  return fresh;
}
