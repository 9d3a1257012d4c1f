import { spawn } from 'node:child_process';
import { chmodSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { randomBytes } from 'node:crypto';
import os from 'node:os';
import path from 'node:path';
import { trackPid } from '../../support/processes';
import { CLI, ROOT, startRuntime, type RuntimeProcess } from '../runtime/runtimeProcess';

/**
 * The development issuer runs only when Development is asked for, and signs in only callers that can read the
 * data folder. The built service as a real process on the repository's app folder (no local.settings.json, so
 * the runtime reads local.settings.sample.json, which names Development): with AZURE_FUNCTIONS_ENVIRONMENT set
 * it starts the issuer, whose token endpoint refuses a caller without the sign-in secret (401 problem+json) and
 * serves `npm run token` (a real process reading .data/dev-issuer.secret); without the variable the same data
 * folder gets no issuer at all (its port no longer answers, no discovery, no JWKS, no token). The data folder,
 * created with a wider mode, is tightened to 0700 and its secrets are 0600. And the README's quick start:
 * scripts/start.js (what `npm start` runs; dist/ is current after the build, so it builds nothing) asks for
 * Development itself, and `npm run token` and `meshsync login --dev` work against it.
 */
jest.setTimeout(180_000);

const mode = (p: string) => statSync(p).mode & 0o777;

/** Poll both output streams of the process until `re` shows (a warn line goes to stderr). */
async function logged(rt: RuntimeProcess, re: RegExp): Promise<void> {
  const deadline = Date.now() + 10_000;
  while (!re.test(rt.stdout() + rt.stderr())) {
    if (Date.now() > deadline) throw new Error(`not logged: ${re}\n${rt.stdout()}\n${rt.stderr()}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

function runNode(args: string[], env: NodeJS.ProcessEnv = {}): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, args, { cwd: ROOT, env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
    trackPid(child.pid);
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    child.on('exit', (code) => resolve({ code, stdout, stderr }));
  });
}

describe('the development issuer only when asked, and only for the data folder owner', () => {
  const dataDir = path.join(mkdtempSync(path.join(os.tmpdir(), 'dev-asked-')), 'data');
  const prefix = 'a' + randomBytes(5).toString('hex');
  const baseEnv = (extra: Record<string, string | undefined>) => ({
    Storage__TablePrefix: prefix,
    Service__DataDir: dataDir,
    Authentication__Negotiate__Enabled: 'false',
    Authentication__Jwt__Enabled: undefined,
    Authentication__Jwt__Authority: undefined,
    Authentication__Jwt__Audience: undefined,
    Connectors__File__Roots: os.tmpdir(),
    Engine__InstanceName: `dev-asked-${prefix}`,
    ...extra,
  });
  const start = (extra: Record<string, string | undefined>) =>
    startRuntime({ dataDir, env: baseEnv(extra), args: (port, dir) => [CLI, 'start', '--app', ROOT, '--port', String(port), '--data-dir', dir] });
  let rt: RuntimeProcess | undefined;
  let issuerInfo: { issuer: string; tokenEndpoint: string };

  beforeAll(() => {
    // A data folder made by hand, open to everyone, holding a runtime folder open to everyone too.
    mkdirSync(path.join(dataDir, 'runtime'), { recursive: true });
    chmodSync(dataDir, 0o755);
    chmodSync(path.join(dataDir, 'runtime'), 0o777);
  });
  afterEach(async () => {
    await rt?.stop();
    rt = undefined;
  });
  afterAll(async () => {
    rmSync(path.dirname(dataDir), { recursive: true, force: true });
  });

  test('asked for (AZURE_FUNCTIONS_ENVIRONMENT=Development): the issuer refuses a caller without the secret, npm run token gets a token', async () => {
    expect(existsSync(path.join(ROOT, 'local.settings.json'))).toBe(false);
    rt = await start({ AZURE_FUNCTIONS_ENVIRONMENT: 'Development' });
    const out = rt.stdout() + rt.stderr();
    expect(out).toContain(`The folder ${dataDir} was open to other local users (mode 0755): tightened to 0700.`);
    expect(out).toMatch(/Development issuer: http:\/\/127\.0\.0\.1:\d+ .*it signs in only callers holding the secret in .*dev-issuer\.secret/);
    // The data folder and every secret in it: the owner's alone.
    expect(mode(dataDir)).toBe(0o700);
    expect(mode(path.join(dataDir, 'runtime'))).toBe(0o700);
    for (const f of ['dev-issuer.secret', 'dev-issuer.json', 'dev-issuer-key.pem', 'secrets.key'])
      expect({ f, mode: mode(path.join(dataDir, f)) }).toEqual({ f, mode: 0o600 });
    issuerInfo = JSON.parse(readFileSync(path.join(dataDir, 'dev-issuer.json'), 'utf8'));
    const secret = readFileSync(path.join(dataDir, 'dev-issuer.secret'), 'utf8').trim();

    // curl-style: no secret, a guessed one: 401 problem+json, no token; logged without the secret.
    for (const form of [
      { grant_type: 'client_credentials', client_id: 'dev-cli', role: 'Admin' } as Record<string, string>,
      { grant_type: 'client_credentials', client_id: 'dev-cli', client_secret: 'guess-guess-guess', role: 'Admin' },
    ]) {
      const res = await fetch(issuerInfo.tokenEndpoint, {
        method: 'POST',
        headers: { 'content-type': 'application/x-www-form-urlencoded' },
        body: new URLSearchParams(form).toString(),
      });
      expect(res.status).toBe(401);
      expect(res.headers.get('content-type')).toBe('application/problem+json');
      const body = (await res.json()) as { detail: string; access_token?: string };
      expect(body.detail).toMatch(/sign-in secret of dev-issuer\.secret/);
      expect(body.access_token).toBeUndefined();
    }
    await logged(rt, /refused a token request from .*: the client secret is not the sign-in secret/);
    expect(rt.stdout() + rt.stderr()).not.toContain('guess-guess-guess');
    expect(rt.stdout() + rt.stderr()).not.toContain(secret);

    // npm run token: a real process that reads the secret file.
    const token = await runNode([path.join(ROOT, 'scripts/token.js'), '--role', 'Admin', '--data-dir', dataDir]);
    expect(token.stderr).toBe('');
    expect(token.code).toBe(0);
    const api = await fetch(`${rt.baseUrl}/api/connectors`, { headers: { authorization: `Bearer ${token.stdout.trim()}` } });
    expect(api.status).toBe(200);
    const printed = await runNode([path.join(ROOT, 'scripts/token.js'), '--secret', '--data-dir', dataDir]);
    expect(printed.stdout.trim()).toBe(secret);

    // A secret file that no longer matches (someone without it, guessing): npm run token is refused clearly.
    writeFileSync(path.join(dataDir, 'dev-issuer.secret'), 'not-it\n');
    const refused = await runNode([path.join(ROOT, 'scripts/token.js'), '--role', 'Admin', '--data-dir', dataDir]);
    expect(refused.code).toBe(1);
    expect(refused.stderr).toContain('the development issuer answered 401 invalid_client: the client secret is not the sign-in secret of dev-issuer.secret');
    writeFileSync(path.join(dataDir, 'dev-issuer.secret'), `${secret}\n`);
  });

  test('not asked for (variable unset, no local.settings.json): the same data folder gets no issuer, its port answers nothing', async () => {
    const secretsKey = readFileSync(path.join(dataDir, 'secrets.key'), 'utf8').trim();
    const secret = readFileSync(path.join(dataDir, 'dev-issuer.secret'), 'utf8').trim();
    rt = await start({ AZURE_FUNCTIONS_ENVIRONMENT: undefined, Secrets__Key: secretsKey });
    const out = rt.stdout() + rt.stderr();
    expect(out).toContain('Not taken from local.settings.sample.json: AZURE_FUNCTIONS_ENVIRONMENT');
    expect(out).not.toContain('Development issuer:');
    // The port the issuer had: nothing listens there (no discovery, no JWKS, no token endpoint).
    for (const url of [`${issuerInfo.issuer}/.well-known/openid-configuration`, `${issuerInfo.issuer}/jwks`, issuerInfo.tokenEndpoint]) {
      await expect(
        fetch(url, {
          method: url.endsWith('/token') ? 'POST' : 'GET',
          body: url.endsWith('/token') ? `grant_type=client_credentials&client_id=dev-cli&client_secret=${secret}` : undefined,
        }),
      ).rejects.toThrow();
    }
    // npm run token finds the old address and gets nothing.
    const token = await runNode([path.join(ROOT, 'scripts/token.js'), '--role', 'Admin', '--data-dir', dataDir]);
    expect(token.code).toBe(1);
    expect(token.stderr).toMatch(/does not answer/);
    // And the service trusts no development issuer: the API refuses everyone.
    const res = await fetch(`${rt.baseUrl}/api/connectors`);
    expect([401, 503]).toContain(res.status);
    expect(res.headers.get('content-type')).toMatch(/^application\/problem\+json/);
  });

  test('npm start (scripts/start.js) with neither the variable nor local.settings.json asks for Development: npm run token and meshsync login --dev work', async () => {
    const startData = path.join(path.dirname(dataDir), 'npm-start-data');
    const home = path.join(path.dirname(dataDir), 'meshsync-home');
    rt = await startRuntime({
      dataDir: startData,
      env: { ...baseEnv({ AZURE_FUNCTIONS_ENVIRONMENT: undefined }), Service__DataDir: startData, Storage__TablePrefix: `${prefix}s` },
      args: (port, dir) => [path.join(ROOT, 'scripts/start.js'), '--port', String(port), '--data-dir', dir],
    });
    expect(rt.stdout()).toContain('npm start: no local.settings.json and no AZURE_FUNCTIONS_ENVIRONMENT: starting in Development.');
    expect(rt.stdout()).not.toContain('Not taken from local.settings.sample.json');
    // dist/ and the console bundle are current after the build: npm start builds nothing (and writes nothing).
    expect(rt.stdout()).not.toContain('Building');
    expect(mode(startData)).toBe(0o700);
    const token = await runNode([path.join(ROOT, 'scripts/token.js'), '--role', 'Admin', '--data-dir', startData]);
    expect(token.code).toBe(0);
    expect((await fetch(`${rt.baseUrl}/api/connectors`, { headers: { authorization: `Bearer ${token.stdout.trim()}` } })).status).toBe(200);
    const login = await runNode([path.join(ROOT, 'dist/lib/cli/main.js'), 'login', '--dev', '--data-dir', startData, '--url', `${rt.baseUrl}/api`], {
      MESHSYNC_HOME: home,
    });
    expect(login.stderr).toBe('');
    expect(login.code).toBe(0);
    const ls = await runNode([path.join(ROOT, 'dist/lib/cli/main.js'), 'connectors', 'ls', '-o', 'json'], { MESHSYNC_HOME: home });
    expect(ls.code).toBe(0);
  });
});
