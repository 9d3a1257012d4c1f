import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Client } from 'ldapts';
import { freePort } from '../../../lib/runtime/azurite';
import { startKdc, type Kdc } from '../../support/kdc';
import { trackPid } from '../../support/processes';
import { serverAvailable } from '../../support/servers';
import { startSlapd, type Slapd } from '../../support/slapd';
import { curl, run } from './curl';

/**
 * End to end over HTTP: the local runtime (dist/lib/runtime/cli.js) hosts test/fixtures/auth-app, whose routes
 * are guarded by authorize(). A private KDC realm, a real slapd for groups, the embedded development issuer
 * for tokens (scripts/token.js), curl --negotiate for SPNEGO. Needs `npm run build` (npm test runs it first).
 */
const ROOT = path.resolve(__dirname, '../../..');
const CLI = path.join(ROOT, 'dist/lib/runtime/cli.js');
const APP = path.join(ROOT, 'test/fixtures/auth-app');
const haveServers = serverAvailable('kdc') && serverAvailable('slapd');
if (!existsSync(CLI)) throw new Error(`${CLI} is missing: run npm run build first (npm test does).`);

class Runtime {
  child?: ChildProcess;
  output = '';
  constructor(
    readonly port: number,
    readonly dataDir: string,
    readonly env: Record<string, string>,
  ) {}

  get base(): string {
    return `http://localhost:${this.port}`;
  }

  /** Start and wait until it serves; resolves with the exit code instead when it refuses to start. */
  async start(): Promise<number | undefined> {
    this.output = '';
    const child = spawn(process.execPath, [CLI, 'start', '--app', APP, '--port', String(this.port), '--data-dir', this.dataDir], {
      env: { ...process.env, ...this.env },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    trackPid(child.pid);
    this.child = child;
    child.stdout!.on('data', (d: Buffer) => (this.output += d.toString()));
    child.stderr!.on('data', (d: Buffer) => (this.output += d.toString()));
    const deadline = Date.now() + 40_000;
    while (Date.now() < deadline) {
      if (child.exitCode !== null) return child.exitCode;
      if (this.output.includes('Host started')) return undefined;
      await new Promise((r) => setTimeout(r, 100));
    }
    throw new Error(`the runtime did not start within 40 s:\n${this.output}`);
  }

  async stop(): Promise<void> {
    const child = this.child;
    if (!child || child.exitCode !== null || child.signalCode !== null) return;
    await new Promise<void>((resolve) => {
      const timer = setTimeout(() => child.kill('SIGKILL'), 15_000);
      child.once('exit', () => {
        clearTimeout(timer);
        resolve();
      });
      child.kill('SIGTERM');
    });
  }
}

async function token(dataDir: string, role: string, user?: string): Promise<string> {
  const args = [path.join(ROOT, 'scripts/token.js'), '--role', role, '--data-dir', dataDir, ...(user ? ['--user', user] : [])];
  const { code, stdout, stderr } = await run(process.execPath, args);
  if (code !== 0) throw new Error(`npm run token failed: ${stderr}`);
  return stdout.trim();
}

(haveServers ? describe : describe.skip)('authentication end to end over HTTP (local runtime, KDC, slapd, development issuer)', () => {
  let kdc: Kdc;
  let slapd: Slapd;
  let runtime: Runtime;
  let dataDir: string;
  let alice: Record<string, string>;
  let carol: Record<string, string>;
  let erin: Record<string, string>;

  beforeAll(async () => {
    [kdc, slapd] = await Promise.all([startKdc(), startSlapd()]);
    await kdc.addUser('alice', 'alice-pw');
    await kdc.addUser('carol', 'carol-pw');
    await kdc.addUser('erin', 'erin-pw');
    [alice, carol, erin] = await Promise.all([kdc.kinit('alice', 'alice-pw'), kdc.kinit('carol', 'carol-pw'), kdc.kinit('erin', 'erin-pw')]);

    const client = new Client({ url: slapd.url });
    await client.bind(slapd.rootDN, slapd.rootPassword);
    for (const uid of ['alice', 'carol', 'erin']) {
      await client.add(`uid=${uid},ou=people,${slapd.suffix}`, { objectClass: ['inetOrgPerson'], uid, cn: uid, sn: uid });
    }
    await client.add(`cn=Sync Admins,ou=groups,${slapd.suffix}`, {
      objectClass: ['groupOfNames'],
      cn: 'Sync Admins',
      member: [`uid=alice,ou=people,${slapd.suffix}`],
    });
    // erin holds Operator only through nesting: Helpdesk Leads is a member of Sync Operators.
    await client.add(`cn=Helpdesk Leads,ou=groups,${slapd.suffix}`, {
      objectClass: ['groupOfNames'],
      cn: 'Helpdesk Leads',
      member: [`uid=erin,ou=people,${slapd.suffix}`],
    });
    await client.add(`cn=Sync Operators,ou=groups,${slapd.suffix}`, {
      objectClass: ['groupOfNames'],
      cn: 'Sync Operators',
      member: [`cn=Helpdesk Leads,ou=groups,${slapd.suffix}`],
    });
    await client.unbind();

    dataDir = mkdtempSync(path.join(os.tmpdir(), 'auth-e2e-'));
    runtime = new Runtime(await freePort(), dataDir, {
      AZURE_FUNCTIONS_ENVIRONMENT: 'Development',
      AzureWebJobsStorage: process.env.TEST_STORAGE_CONNECTION_STRING ?? '',
      Service__DataDir: dataDir,
      // The GSSAPI environment of the realm, in the server process.
      ...kdc.env,
      Authentication__Negotiate__ServicePrincipal: 'HTTP@localhost',
      Authentication__Negotiate__Ldap__Url: slapd.url,
      Authentication__Negotiate__Ldap__BindDN: slapd.rootDN,
      Authentication__Negotiate__Ldap__BindPassword: slapd.rootPassword,
      Authentication__Negotiate__Ldap__BaseDN: slapd.suffix,
      // One configured value serves both populations: a directory group name and a token role value.
      Service__Roles__Admin: 'Sync Admins',
      Service__Roles__Operator: 'Sync Operators',
      RateLimiting__Sensitive__PermitLimit: '3',
      RateLimiting__Sensitive__WindowSeconds: '600',
    });
    const code = await runtime.start();
    if (code !== undefined) throw new Error(`the runtime exited with ${code}:\n${runtime.output}`);
  }, 120_000);

  afterAll(async () => {
    await runtime?.stop();
    await Promise.all([kdc?.stop(), slapd?.stop()]);
    if (dataDir) rmSync(dataDir, { recursive: true, force: true });
  });

  it('challenges an anonymous caller with every enabled scheme (401, problem+json)', async () => {
    const res = await curl(`${runtime.base}/api/probe/read`);
    expect(res.status).toBe(401);
    expect(res.headers['www-authenticate']).toBe('Negotiate, Bearer');
    expect(res.headers['content-type']).toBe('application/problem+json');
    expect(res.body).toMatchObject({ status: 401, code: 'unauthenticated', instance: '/api/probe/read' });
    expect(runtime.output).toContain('Negotiate: available');
  });

  it('authenticates a Kerberos user through a real SPNEGO exchange and maps its directory group to Admin', async () => {
    const res = await curl(`${runtime.base}/api/probe/read`, { negotiateEnv: alice });
    expect(res.status).toBe(200);
    expect(res.body).toEqual({
      scheme: 'Negotiate',
      name: 'alice@EXAMPLE.TEST',
      upn: 'alice@EXAMPLE.TEST',
      sid: null,
      roles: ['Admin'],
      // Her directory groups, as names and DNs (what Scim__Role is matched against for a Windows caller).
      roleClaims: ['Sync Admins', 'cn=Sync Admins,ou=groups,dc=example,dc=com'],
      // The directory has no UPN for her and no realm is mapped: her Kerberos principal is not taken for a UPN.
      principal: { key: 'krb:alice@EXAMPLE.TEST', kind: 'person', scheme: 'Negotiate', aliases: ['krb:alice@EXAMPLE.TEST'], display: 'alice@EXAMPLE.TEST' },
    });
    expect(res.headers['www-authenticate']).toMatch(/^Negotiate \S+$/);
  });

  it('makes a Kerberos user with no mapped group a Viewer (403 on an Admin route)', async () => {
    const read = await curl(`${runtime.base}/api/probe/read`, { negotiateEnv: carol });
    expect(read.status).toBe(200);
    expect(read.body).toMatchObject({ name: 'carol@EXAMPLE.TEST', roles: ['Viewer'] });
    const write = await curl(`${runtime.base}/api/probe/write`, { method: 'POST', negotiateEnv: carol });
    expect(write.status).toBe(403);
    expect(write.body).toMatchObject({ code: 'forbidden' });
  });

  it('maps a group held through nesting (Helpdesk Leads inside Sync Operators) to its role', async () => {
    const res = await curl(`${runtime.base}/api/probe/read`, { negotiateEnv: erin });
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ name: 'erin@EXAMPLE.TEST', roles: ['Operator'] });
  });

  it('refuses a forged Negotiate token with 401 and the challenges', async () => {
    const forged = Buffer.from('definitely not a GSSAPI token').toString('base64');
    const res = await curl(`${runtime.base}/api/probe/read`, { headers: { authorization: `Negotiate ${forged}` } });
    expect(res.status).toBe(401);
    expect(res.headers['www-authenticate']).toBe('Negotiate, Bearer');
  });

  it('issues working development tokens with npm run token, role by role', async () => {
    const info = JSON.parse(readFileSync(path.join(dataDir, 'dev-issuer.json'), 'utf8'));
    expect(info.issuer).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
    expect(info.audience).toBe('api://identity-mesh-sync');
    const admin = await curl(`${runtime.base}/api/probe/read`, { headers: { authorization: `Bearer ${await token(dataDir, 'Admin')}` } });
    expect(admin.status).toBe(200);
    expect(admin.body).toMatchObject({ scheme: 'Bearer', name: 'developer@localhost', roles: ['Admin'] });
    const viewer = await token(dataDir, 'Viewer', 'victor@example.test');
    const write = await curl(`${runtime.base}/api/probe/write`, { method: 'POST', headers: { authorization: `Bearer ${viewer}` } });
    expect(write.status).toBe(403);
  });

  it('counts the sensitive policy per identity across schemes: Negotiate then Bearer as the same person', async () => {
    for (let i = 0; i < 2; i++) expect((await curl(`${runtime.base}/api/probe/write`, { method: 'POST', negotiateEnv: alice })).status).toBe(200);
    const aliceToken = await token(dataDir, 'Admin', 'alice@example.test');
    const bearer = { authorization: `Bearer ${aliceToken}` };
    expect((await curl(`${runtime.base}/api/probe/write`, { method: 'POST', headers: bearer })).status).toBe(200);
    const limited = await curl(`${runtime.base}/api/probe/write`, { method: 'POST', headers: bearer });
    expect(limited.status).toBe(429);
    expect(limited.headers['retry-after']).toMatch(/^\d+$/);
    expect(limited.body).toMatchObject({ code: 'rate_limited', status: 429 });
    expect((await curl(`${runtime.base}/api/probe/write`, { method: 'POST', negotiateEnv: alice })).status).toBe(429);
  });

  it('guards the runtime admin surface (Durable Functions HTTP API) with the same authentication: Admin only', async () => {
    const url = `${runtime.base}/runtime/webhooks/durabletask/instances`;
    const anon = await curl(url);
    expect(anon.status).toBe(401);
    expect(anon.headers['www-authenticate']).toBe('Negotiate, Bearer');
    const viewer = await curl(url, { headers: { authorization: `Bearer ${await token(dataDir, 'Viewer')}` } });
    expect(viewer.status).toBe(403);
    const admin = await curl(`${runtime.base}/api/system/authorize-admin`, { headers: { authorization: `Bearer ${await token(dataDir, 'Admin')}` } });
    expect(admin.status).toBe(204);
    const adminApi = await curl(url, { headers: { authorization: `Bearer ${await token(dataDir, 'Admin')}` } });
    expect([401, 403]).not.toContain(adminApi.status);
  });

  it('keeps development tokens valid across a restart (key and issuer URL persisted under the data dir)', async () => {
    const before = await token(dataDir, 'Admin', 'restart@example.test');
    await runtime.stop();
    expect(await runtime.start()).toBeUndefined();
    const res = await curl(`${runtime.base}/api/probe/read`, { headers: { authorization: `Bearer ${before}` } });
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ name: 'restart@example.test', roles: ['Admin'] });
  });

  it('refuses to start with Bearer enabled and no Authority, naming the setting', async () => {
    const refused = new Runtime(await freePort(), mkdtempSync(path.join(os.tmpdir(), 'auth-e2e-refused-')), {
      AZURE_FUNCTIONS_ENVIRONMENT: 'Production',
      AzureWebJobsStorage: process.env.TEST_STORAGE_CONNECTION_STRING ?? '',
      Authentication__Jwt__Enabled: 'true',
      Authentication__Jwt__Audience: 'api://x',
    });
    try {
      const code = await refused.start();
      expect(code).toBe(1);
      expect(refused.output).toContain("Configuration error in setting 'Authentication:Jwt:Authority'");
    } finally {
      await refused.stop();
      rmSync(refused.dataDir, { recursive: true, force: true });
    }
  });
});
