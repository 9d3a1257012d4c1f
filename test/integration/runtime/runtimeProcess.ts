import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { freePort } from '../../../lib/runtime/azurite';
import { trackPid } from '../../support/processes';

export const ROOT = path.resolve(__dirname, '../../..');
export const CLI = path.join(ROOT, 'dist/lib/runtime/cli.js');
export const SAMPLE_APP = path.join(ROOT, 'test/fixtures/sample-app');

export interface RuntimeProcess {
  proc: ChildProcess;
  port: number;
  baseUrl: string;
  dataDir: string;
  stdout(): string;
  stderr(): string;
  /** Resolves with the output once it matches (rejects when the process exits first, or after 30 s). */
  waitFor(re: RegExp, stream?: 'stdout' | 'stderr'): Promise<RegExpMatchArray>;
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  stop(signal?: NodeJS.Signals): Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
}

export interface StartOptions {
  env?: Record<string, string | undefined>;
  dataDir?: string;
  /** Command line after `node`; default: the CLI `start` for the sample app. */
  args?: (port: number, dataDir: string) => string[];
  /** Wait for "Host started" (default true). */
  waitForStart?: boolean;
}

/** Spawn the built runtime CLI on a free loopback port, as a tracked child process. */
export async function startRuntime(options: StartOptions = {}): Promise<RuntimeProcess> {
  if (!existsSync(CLI)) throw new Error(`${CLI} is missing: run \`npm run build\` first.`);
  const port = await freePort();
  const dataDir = options.dataDir ?? mkdtempSync(path.join(os.tmpdir(), 'fnhost-data-'));
  const env: NodeJS.ProcessEnv = { ...process.env, AzureWebJobsStorage: process.env.TEST_STORAGE_CONNECTION_STRING };
  delete env.WEBSITE_INSTANCE_ID;
  delete env.LOG_FORMAT;
  delete env.PORT;
  for (const [k, v] of Object.entries(options.env ?? {})) {
    if (v === undefined) delete env[k];
    else env[k] = v;
  }
  const args = options.args ? options.args(port, dataDir) : [CLI, 'start', '--app', SAMPLE_APP, '--port', String(port), '--data-dir', dataDir];
  const proc = spawn(process.execPath, args, { env, stdio: ['ignore', 'pipe', 'pipe'] });
  trackPid(proc.pid);
  let out = '';
  let err = '';
  const listeners = new Set<() => void>();
  proc.stdout!.on('data', (d: Buffer) => {
    out += d.toString();
    listeners.forEach((l) => l());
  });
  proc.stderr!.on('data', (d: Buffer) => {
    err += d.toString();
    listeners.forEach((l) => l());
  });
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) =>
    proc.once('exit', (code, signal) => resolve({ code, signal })),
  );
  let hasExited = false;
  void exited.then(() => {
    hasExited = true;
    listeners.forEach((l) => l());
  });
  const waitFor = (re: RegExp, stream: 'stdout' | 'stderr' = 'stdout') =>
    new Promise<RegExpMatchArray>((resolve, reject) => {
      const timer = setTimeout(() => done(new Error(`Timed out waiting for ${re} in ${stream}.\nstdout:\n${out}\nstderr:\n${err}`)), 30_000);
      const check = () => {
        const m = (stream === 'stdout' ? out : err).match(re);
        if (m) done(undefined, m);
        else if (hasExited) done(new Error(`Runtime exited before ${re} appeared.\nstdout:\n${out}\nstderr:\n${err}`));
      };
      function done(e?: Error, m?: RegExpMatchArray) {
        clearTimeout(timer);
        listeners.delete(check);
        if (e) reject(e);
        else resolve(m!);
      }
      listeners.add(check);
      check();
    });
  const rt: RuntimeProcess = {
    proc,
    port,
    baseUrl: `http://127.0.0.1:${port}`,
    dataDir,
    stdout: () => out,
    stderr: () => err,
    waitFor,
    exited,
    async stop(signal: NodeJS.Signals = 'SIGTERM') {
      if (!hasExited) proc.kill(signal);
      return exited;
    },
  };
  if (options.waitForStart !== false) await waitFor(/Host started/);
  return rt;
}
