import { spawn } from 'node:child_process';
import { mkdtempSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { ROOT } from '../../support/service';

/** The built CLI, run as a real process (npm test builds first). */
export const CLI = path.join(ROOT, 'dist/lib/cli/main.js');

export interface CliResult {
  code: number;
  stdout: string;
  stderr: string;
}

/** A fresh MESHSYNC_HOME (profiles and credentials) for one suite. */
export const newHome = () => mkdtempSync(path.join(os.tmpdir(), 'meshsync-home-'));

/** Run `meshsync args...` with `env` on top of the test's environment (no inherited MESHSYNC_*); its exit code and output. */
export function meshsync(args: string[], env: Record<string, string | undefined>, input?: string): Promise<CliResult> {
  return new Promise((resolve, reject) => {
    const base = Object.fromEntries(Object.entries(process.env).filter(([k]) => !k.startsWith('MESHSYNC_')));
    const child = spawn(process.execPath, [CLI, ...args], { env: { ...base, MESHSYNC_POLL_MS: '300', ...env }, stdio: ['pipe', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d) => (stdout += d));
    child.stderr.on('data', (d) => (stderr += d));
    child.on('error', reject);
    child.on('close', (code) => resolve({ code: code ?? -1, stdout, stderr }));
    child.stdin.end(input ?? '');
  });
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/**
 * Run `meshsync args...` on a real terminal: a detached tmux session of its own (own socket, 120x30), the
 * screen captured every 100 ms until the command has ended (it prints EXIT=<code>). Every distinct screen,
 * in order.
 */
export async function inTmux(args: string[], env: Record<string, string>, timeoutMs = 120_000): Promise<string[]> {
  const { execFileSync } = await import('node:child_process');
  const socket = `meshsync-test-${process.pid}-${Date.now()}`;
  const quote = (s: string) => `'${s.replace(/'/g, `'\\''`)}'`;
  const envText = Object.entries(env)
    .map(([k, v]) => `${k}=${quote(v)}`)
    .join(' ');
  const command = `env ${envText} ${quote(process.execPath)} ${quote(CLI)} ${args.map(quote).join(' ')}; echo EXIT=$?; sleep 600`;
  const tmux = (...a: string[]) => execFileSync('tmux', ['-L', socket, ...a], { encoding: 'utf8' });
  tmux('new-session', '-d', '-s', 'cli', '-x', '120', '-y', '30', command);
  const frames: string[] = [];
  try {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const screen = tmux('capture-pane', '-p', '-t', 'cli');
      if (screen !== frames[frames.length - 1]) frames.push(screen);
      if (/EXIT=\d+/.test(screen)) return frames;
      if (Date.now() > deadline) throw new Error(`meshsync ${args.join(' ')} did not end in tmux:\n${screen}`);
      await sleep(100);
    }
  } finally {
    try {
      tmux('kill-server');
    } catch {
      // already gone
    }
  }
}
