import { appendFileSync, readFileSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';

/**
 * Every server process a test starts (slapd, krb5kdc, a runtime child...) is recorded here, so that
 * globalTeardown can stop whatever a crashed or timed-out suite left behind. `.ci/run` has a trap too.
 */
export function pidFile(): string {
  return process.env.TEST_PID_FILE ?? path.join(os.tmpdir(), `ims-test-pids-${process.ppid}`);
}

export function trackPid(pid: number | undefined): void {
  if (pid) appendFileSync(pidFile(), `${pid}\n`);
}

export function killTracked(): void {
  let text = '';
  try {
    text = readFileSync(pidFile(), 'utf8');
  } catch {
    return;
  }
  for (const line of text.split('\n')) {
    const pid = Number(line.trim());
    if (!pid) continue;
    try {
      process.kill(pid, 'SIGKILL');
    } catch {
      // already gone
    }
  }
  rmSync(pidFile(), { force: true });
}
