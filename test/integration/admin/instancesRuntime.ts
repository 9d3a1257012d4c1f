import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { freePort } from '../../../lib/runtime/azurite';
import { resetTableClients } from '../../../lib/storage/tables';
import { trackPid } from '../../support/processes';

/**
 * A local runtime process (`node dist/lib/runtime/cli.js start --app <repo root>`) on the test Azurite, for
 * the engine-instance and runs suites. Each runtime has its own data dir (so its own instance id and
 * development issuer); runtimes of one suite share a table prefix, and `useSuiteStorage` points this test
 * process's repositories at the same tables, to seed runs and inspect what the service wrote.
 */
const ROOT = path.resolve(__dirname, '../../..');

export type Role = 'Admin' | 'Operator' | 'Viewer';

export function useSuiteStorage(): string {
  const cs = process.env.TEST_STORAGE_CONNECTION_STRING;
  if (!cs) throw new Error('TEST_STORAGE_CONNECTION_STRING is not set (jest globalSetup starts Azurite).');
  const prefix = 'i' + randomBytes(5).toString('hex');
  process.env.AzureWebJobsStorage = cs;
  process.env.Storage__TablePrefix = prefix;
  resetTableClients();
  return prefix;
}

export class Runtime {
  readonly dataDir: string;
  port = 0;
  private child: ChildProcess | undefined;
  private output = '';
  private tokens = new Map<string, string>();

  constructor(
    private readonly prefix: string,
    private readonly settings: Record<string, string> = {},
  ) {
    this.dataDir = mkdtempSync(path.join(os.tmpdir(), 'ims-instances-'));
  }

  get baseUrl(): string {
    return `http://127.0.0.1:${this.port}/api`;
  }

  get instanceId(): string {
    return readFileSync(path.join(this.dataDir, 'runtime', 'instance-id'), 'utf8').trim();
  }

  async start(): Promise<void> {
    this.port = this.port || (await freePort());
    const env: NodeJS.ProcessEnv = {
      ...process.env,
      AzureWebJobsStorage: process.env.TEST_STORAGE_CONNECTION_STRING,
      Storage__TablePrefix: this.prefix,
      AZURE_FUNCTIONS_ENVIRONMENT: 'Development',
      Service__DataDir: this.dataDir,
      RateLimiting__Sensitive__PermitLimit: '10000',
      ...this.settings,
    };
    delete env.WEBSITE_INSTANCE_ID;
    delete env.Authentication__Jwt__Authority;
    this.output = '';
    this.tokens.clear();
    const child = spawn(process.execPath, [path.join(ROOT, 'dist/lib/runtime/cli.js'), 'start', '--app', ROOT, '--port', String(this.port), '--data-dir', this.dataDir], {
      env,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    trackPid(child.pid);
    this.child = child;
    child.stdout!.on('data', (d: Buffer) => (this.output += d.toString()));
    child.stderr!.on('data', (d: Buffer) => (this.output += d.toString()));
    const deadline = Date.now() + 60_000;
    for (;;) {
      if (child.exitCode !== null) throw new Error(`The runtime exited (${child.exitCode}):\n${this.output.slice(-4000)}`);
      if (Date.now() > deadline) throw new Error(`The runtime did not answer:\n${this.output.slice(-4000)}`);
      try {
        const res = await fetch(`${this.baseUrl}/instances`);
        if (res.status === 401) return;
      } catch {
        // not listening yet
      }
      await new Promise((r) => setTimeout(r, 200));
    }
  }

  /** Graceful stop (SIGTERM: appTerminate hooks run, the heartbeat stops). */
  async stop(): Promise<void> {
    await this.signal('SIGTERM');
  }

  /** Crash (SIGKILL: nothing runs). */
  async kill(): Promise<void> {
    await this.signal('SIGKILL');
  }

  private async signal(sig: NodeJS.Signals): Promise<void> {
    const child = this.child;
    if (!child || child.exitCode !== null || child.signalCode !== null) return;
    const exited = new Promise((r) => child.once('exit', r));
    child.kill(sig);
    await exited;
  }

  async dispose(): Promise<void> {
    await this.kill();
    rmSync(this.dataDir, { recursive: true, force: true });
  }

  logs(): string {
    return this.output;
  }

  /** A Bearer token from this runtime's development issuer. */
  async token(role: Role, user = `${role.toLowerCase()}@example.test`): Promise<string> {
    const key = `${role}|${user}`;
    const cached = this.tokens.get(key);
    if (cached) return cached;
    const info = JSON.parse(readFileSync(path.join(this.dataDir, 'dev-issuer.json'), 'utf8')) as { tokenEndpoint: string; clientId: string; clientSecret: string };
    const basic = Buffer.from(`${encodeURIComponent(info.clientId)}:${encodeURIComponent(info.clientSecret)}`).toString('base64');
    const res = await fetch(info.tokenEndpoint, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded', authorization: `Basic ${basic}` },
      body: new URLSearchParams({ grant_type: 'client_credentials', role, username: user }).toString(),
    });
    const body = (await res.json()) as { access_token?: string };
    if (!body.access_token) throw new Error(`No token from the development issuer (${res.status}).`);
    this.tokens.set(key, body.access_token);
    return body.access_token;
  }

  /** Call the API as `role` (null: anonymous). A `body` object is sent as JSON; a string as is. */
  async call(method: string, route: string, options: { role?: Role | null; body?: unknown; headers?: Record<string, string> } = {}): Promise<Answer> {
    const headers: Record<string, string> = { ...(options.headers ?? {}) };
    const role = options.role === undefined ? 'Admin' : options.role;
    if (role) headers.authorization = `Bearer ${await this.token(role)}`;
    let body: string | undefined;
    if (options.body !== undefined) {
      body = typeof options.body === 'string' ? options.body : JSON.stringify(options.body);
      if (!Object.keys(headers).some((h) => h.toLowerCase() === 'content-type')) headers['content-type'] = 'application/json';
    }
    const res = await fetch(`${this.baseUrl}/${route.replace(/^\//, '')}`, { method, headers, body });
    const text = await res.text();
    let json: unknown = undefined;
    try {
      json = text ? JSON.parse(text) : undefined;
    } catch {
      json = text;
    }
    return { status: res.status, headers: res.headers, body: json as Answer['body'] };
  }
}

export interface Answer {
  status: number;
  headers: Headers;
  // Response bodies are read loosely in assertions.
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  body: Record<string, any>;
}

/** Poll `probe` until it returns a value (not undefined) or `timeoutMs` passes. */
export async function eventually<T>(probe: () => Promise<T | undefined>, timeoutMs = 30_000, what = 'condition'): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const v = await probe();
    if (v !== undefined) return v;
    if (Date.now() > deadline) throw new Error(`Timed out waiting for ${what}.`);
    await new Promise((r) => setTimeout(r, 200));
  }
}
