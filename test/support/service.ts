import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { TableClient } from '@azure/data-tables';
import { freePort } from '../../lib/runtime/azurite';
import { resetTableClients, table } from '../../lib/storage/tables';
import { startMintingIssuer, type MintingIssuer } from './oidcIssuer';
import { trackPid } from './processes';

/**
 * The running service for HTTP tests: `node dist/lib/runtime/cli.js start --app <repo root>` on a free port,
 * on the test Azurite (TEST_STORAGE_CONNECTION_STRING) with a table prefix of its own, in Development, with
 * Bearer authentication against a test OIDC issuer (test/support/oidcIssuer.ts, jose) and Negotiate off.
 *
 * `startService()` also points this test process's repositories (lib/storage) at the same tables, so a test
 * can read what the service wrote (`rawTable`) or seed state. Build first (`npx tsc -p tsconfig.json`).
 */
export const ROOT = path.resolve(__dirname, '../..');
export const AUDIENCE = 'api://test-api';
export type Role = 'Admin' | 'Operator' | 'Viewer';

export interface Answer {
  status: number;
  headers: Headers;
  text: string;
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  body: any;
}

export interface CallOptions {
  /** Who calls (default Admin); null: no Authorization header. */
  role?: Role | null;
  /** Another person of `role` than its test user: these claims (`oid`, `upn`, `preferred_username`) in the token. */
  as?: { oid: string; upn?: string; preferred_username?: string };
  /** An object is sent as JSON (content-type application/json unless `headers` set one); a string or Buffer as is. */
  body?: unknown;
  headers?: Record<string, string>;
}

export interface ServiceOptions {
  /** Extra settings (environment variables) for the service process. */
  env?: Record<string, string>;
  /** Share tables with another suite's service (default: a fresh prefix). */
  prefix?: string;
}

/** The identity of the test user of each role, as the audit log should show it. */
/** Another Admin than `USERS.Admin`: another person by every alias (oid, UPN, preferred_username), for four-eyes approvals. */
export const SECOND_ADMIN = { oid: 'b0000000-0000-4000-8000-0000000000b2', upn: 'second.admin@example.test', preferred_username: 'second.admin@example.test' };

export const USERS: Record<Role, { preferred_username: string; upn: string; oid: string }> = {
  Admin: { preferred_username: 'admin@example.test', upn: 'admin.upn@example.test', oid: 'a0000000-0000-4000-8000-000000000001' },
  Operator: { preferred_username: 'operator@example.test', upn: 'operator.upn@example.test', oid: 'a0000000-0000-4000-8000-000000000002' },
  Viewer: { preferred_username: 'viewer@example.test', upn: 'viewer.upn@example.test', oid: 'a0000000-0000-4000-8000-000000000003' },
};

export class ServiceUnderTest {
  port = 0;
  readonly dataDir = mkdtempSync(path.join(os.tmpdir(), 'ims-admin-'));
  private child: ChildProcess | undefined;
  private output = '';
  /** Characters of output ever received (the kept `output` is the last 200,000 of them). */
  private written = 0;
  private readonly tokens = new Map<Role, string>();

  constructor(
    readonly prefix: string,
    private readonly issuer: MintingIssuer,
    private readonly env: Record<string, string>,
  ) {}

  get baseUrl(): string {
    return `http://127.0.0.1:${this.port}/api`;
  }

  /**
   * Start (or restart after stop/kill) the process and wait until /api/health answers. A port taken between
   * picking it and binding it (other suites pick ports too) is retried on a fresh port.
   */
  async start(extraEnv: Record<string, string> = {}): Promise<void> {
    for (let attempt = 1; ; attempt++) {
      try {
        return await this.startOnce(extraEnv);
      } catch (err) {
        if (attempt >= 4 || !/EADDRINUSE/.test(this.output)) throw err;
        this.port = 0;
      }
    }
  }

  private async startOnce(extraEnv: Record<string, string>): Promise<void> {
    this.port = this.port || (await freePort());
    const env: NodeJS.ProcessEnv = {
      ...process.env,
      AzureWebJobsStorage: process.env.TEST_STORAGE_CONNECTION_STRING,
      Storage__TablePrefix: this.prefix,
      AZURE_FUNCTIONS_ENVIRONMENT: 'Development',
      Service__DataDir: this.dataDir,
      Authentication__Jwt__Enabled: 'true',
      Authentication__Jwt__Authority: this.issuer.issuer,
      Authentication__Jwt__Audience: AUDIENCE,
      Authentication__Negotiate__Enabled: 'false',
      RateLimiting__Sensitive__PermitLimit: '100000',
      Engine__InstanceName: `admin-test-${this.prefix}`,
      // The suites point file connectors at temporary folders; the product default (a folder under the data
      // folder) stays strict. A suite can narrow it with its own env.
      Connectors__File__Roots: os.tmpdir(),
      // Development test hook: request schemas compile when first used, not all ~140 at load (about 1 s of a
      // start; docs/admin-api.md). The unit tests still compile every schema at load.
      Validation__TestHooks__CompileOnFirstUse: 'true',
      ...this.env,
      ...extraEnv,
    };
    delete env.WEBSITE_INSTANCE_ID;
    this.output = '';
    const child = spawn(
      process.execPath,
      [path.join(ROOT, 'dist/lib/runtime/cli.js'), 'start', '--app', ROOT, '--port', String(this.port), '--data-dir', this.dataDir],
      {
        env,
        stdio: ['ignore', 'pipe', 'pipe'],
      },
    );
    trackPid(child.pid);
    this.child = child;
    const append = (d: Buffer) => {
      const text = d.toString();
      this.written += text.length;
      this.output = (this.output + text).slice(-200_000);
    };
    child.stdout!.on('data', append);
    child.stderr!.on('data', append);
    const deadline = Date.now() + 90_000;
    for (;;) {
      if (child.exitCode !== null) throw new Error(`The service exited (${child.exitCode}):\n${this.output.slice(-4000)}`);
      if (Date.now() > deadline) throw new Error(`The service did not answer:\n${this.output.slice(-4000)}`);
      try {
        const res = await fetch(`${this.baseUrl}/health`);
        if (res.status === 200) return;
      } catch {
        // not listening yet
      }
      await new Promise((r) => setTimeout(r, 50));
    }
  }

  /** True while the process runs. */
  get running(): boolean {
    return !!this.child && this.child.exitCode === null && this.child.signalCode === null;
  }

  /** Graceful stop (SIGTERM). */
  stop(): Promise<void> {
    return this.signal('SIGTERM');
  }

  /** Crash (SIGKILL): nothing runs on the way out. */
  kill(): Promise<void> {
    return this.signal('SIGKILL');
  }

  private async signal(sig: NodeJS.Signals): Promise<void> {
    const child = this.child;
    if (!child || child.exitCode !== null || child.signalCode !== null) return;
    const exited = new Promise((r) => child.once('exit', r));
    child.kill(sig);
    await exited;
  }

  /** Stop the process and the issuer, remove the data dir. */
  async dispose(): Promise<void> {
    await this.kill();
    await this.issuer.stop();
    rmSync(this.dataDir, { recursive: true, force: true });
  }

  logs(): string {
    return this.output;
  }

  /** A mark in the output, for `logsSince`. */
  logMark(): number {
    return this.written;
  }

  /** The output received after `mark` (as far as it is still kept). */
  logsSince(mark: number): string {
    const n = this.written - mark;
    return n <= 0 ? '' : this.output.slice(-n);
  }

  /**
   * The output after `mark` once it matches `pattern`, waiting up to `deadlineMs`: a line the service logs while
   * answering a request can reach this process after the response does (two pipes).
   */
  async untilLogged(pattern: RegExp | string, mark = 0, deadlineMs = 10_000): Promise<string> {
    const deadline = Date.now() + deadlineMs;
    for (;;) {
      const text = this.logsSince(mark);
      if (typeof pattern === 'string' ? text.includes(pattern) : pattern.test(text)) return text;
      if (Date.now() > deadline) throw new Error(`the service did not log ${String(pattern)} within ${deadlineMs} ms:\n${text.slice(-3000)}`);
      await new Promise((r) => setTimeout(r, 50));
    }
  }

  /** A Bearer token for the test user of `role` (roles claim `Service.<Role>`). */
  async token(role: Role): Promise<string> {
    let t = this.tokens.get(role);
    if (!t) {
      t = await this.issuer.mint({ ...USERS[role], roles: [`Service.${role}`] }, { aud: AUDIENCE, exp: 3600 });
      this.tokens.set(role, t);
    }
    return t;
  }

  /** A token with exactly these claims (and the test audience): an app-only token, a person of no test role. */
  mint(claims: Record<string, unknown>): Promise<string> {
    return this.issuer.mint(claims, { aud: AUDIENCE, exp: 3600 });
  }

  /** Call `route` (relative to /api) as `role`. */
  async call(method: string, route: string, options: CallOptions = {}): Promise<Answer> {
    const headers: Record<string, string> = { ...(options.headers ?? {}) };
    const role = options.role === undefined ? 'Admin' : options.role;
    if (role && options.as)
      headers.authorization = `Bearer ${await this.issuer.mint({ ...USERS[role], ...options.as, roles: [`Service.${role}`] }, { aud: AUDIENCE, exp: 3600 })}`;
    else if (role) headers.authorization = `Bearer ${await this.token(role)}`;
    let body: string | Buffer | undefined;
    if (options.body !== undefined) {
      body = typeof options.body === 'string' || Buffer.isBuffer(options.body) ? options.body : JSON.stringify(options.body);
      if (typeof options.body !== 'string' && !Buffer.isBuffer(options.body) && !Object.keys(headers).some((h) => h.toLowerCase() === 'content-type')) {
        headers['content-type'] = 'application/json';
      }
    }
    const res = await fetch(`${this.baseUrl}/${route.replace(/^\//, '')}`, { method, headers, body });
    const text = await res.text();
    let parsed: unknown = undefined;
    try {
      parsed = text ? JSON.parse(text) : undefined;
    } catch {
      parsed = text;
    }
    return { status: res.status, headers: res.headers, text, body: parsed };
  }
}

/**
 * The secrets key of the first service started on each table prefix (its own `Secrets__Key`, else the one it
 * generated in its data folder): every engine instance on one storage account must have the same key (a
 * process with another refuses to start), so a later service on the prefix gets it unless its suite sets one.
 */
const prefixKeys = new Map<string, string>();

/** Start a service for a suite (stop it with `dispose()` in afterAll). */
export async function startService(options: ServiceOptions = {}): Promise<ServiceUnderTest> {
  const cs = process.env.TEST_STORAGE_CONNECTION_STRING;
  if (!cs) throw new Error('TEST_STORAGE_CONNECTION_STRING is not set (jest globalSetup starts Azurite).');
  const prefix = options.prefix ?? 'a' + randomBytes(5).toString('hex');
  process.env.AzureWebJobsStorage = cs;
  process.env.Storage__TablePrefix = prefix;
  resetTableClients();
  const issuer = await startMintingIssuer();
  const env = { ...(options.env ?? {}) };
  const sharedKey = prefixKeys.get(prefix);
  if (env.Secrets__Key === undefined && sharedKey !== undefined) env.Secrets__Key = sharedKey;
  const service = new ServiceUnderTest(prefix, issuer, env);
  try {
    await service.start();
  } catch (err) {
    await service.dispose();
    throw err;
  }
  if (!prefixKeys.has(prefix)) {
    const keyFile = path.join(service.dataDir, 'secrets.key');
    const key = env.Secrets__Key ?? (existsSync(keyFile) ? readFileSync(keyFile, 'utf8').trim() : undefined);
    if (key !== undefined) prefixKeys.set(prefix, key);
  }
  return service;
}

/** The service's table `name` (prefix applied), for tests that inspect raw storage. */
export function rawTable(name: string): Promise<TableClient> {
  return table(name);
}

/** Every entity of a table, as plain objects sorted by keys (to compare storage before and after). */
export async function dumpTable(name: string): Promise<Record<string, unknown>[]> {
  const client = await rawTable(name);
  const out: Record<string, unknown>[] = [];
  for await (const e of client.listEntities()) out.push({ ...e });
  return out.sort((a, b) => `${a.partitionKey}|${a.rowKey}`.localeCompare(`${b.partitionKey}|${b.rowKey}`));
}
