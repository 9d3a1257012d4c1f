import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { startService, type ServiceUnderTest } from '../../support/service';
import { inTmux, meshsync, newHome } from './cliSupport';

/**
 * The CLI as a real process. Identity data with terminal control sequences (a real file connector import on a
 * real service) prints as plain text in tables, on a pipe and on a real terminal (tmux), and exactly in JSON.
 * A redirect to another origin (real HTTP servers in the test: one answers 307 to the other's port) is refused
 * with a clear error, and nothing (no body with a connector secret, no token, no client secret) arrives there;
 * a redirect within the origin is followed.
 */
jest.setTimeout(240_000);

const ESC_CLEAR = '\x1b[2J\x1b[H';
const OSC_TITLE = '\x1b]0;pwned\x07';
const C1_CSI = '\u009b31m';
const anchor = `E1${ESC_CLEAR}X`;
const given = `Ann${OSC_TITLE}${C1_CSI}e\rEvil`;

interface Recorder {
  server: http.Server;
  url: string;
  requests: { method: string; url: string; headers: http.IncomingHttpHeaders; body: string }[];
}

async function recorder(handle: (req: http.IncomingMessage, res: http.ServerResponse, body: string) => void): Promise<Recorder> {
  const requests: Recorder['requests'] = [];
  const server = http.createServer((req, res) => {
    let body = '';
    req.on('data', (d) => (body += d));
    req.on('end', () => {
      requests.push({ method: req.method ?? '', url: req.url ?? '', headers: req.headers, body });
      handle(req, res, body);
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
  return { server, url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, requests };
}
const close = (r: Recorder | undefined) => new Promise<void>((done) => (r ? r.server.close(() => done()) : done()));

describe('meshsync prints identity data without control sequences', () => {
  let rt: ServiceUnderTest;
  const home = newHome();
  const root = mkdtempSync(path.join(os.tmpdir(), 'cli-escapes-'));
  const folder = path.join(root, 'hr');
  let connectorId: string;
  const as = async (args: string[]) => meshsync(args, { MESHSYNC_HOME: home, MESHSYNC_URL: rt.baseUrl, MESHSYNC_TOKEN: await rt.token('Admin') });

  beforeAll(async () => {
    mkdirSync(folder);
    writeFileSync(path.join(folder, 'people.csv'), `id,givenName\n"${anchor}","${given}"\nE2,Bob\n`);
    rt = await startService({ env: { Connectors__File__Roots: root } });
    const created = await rt.call('POST', 'connectors', {
      body: { name: 'HR escapes', type: 'custom', config: { implementation: 'file', objectType: 'User', settings: { path: folder, anchorColumn: 'id' } } },
    });
    expect(created.status).toBe(201);
    connectorId = created.body.id;
    const run = await as(['runs', 'import', connectorId, '--full', '--wait']);
    expect(run.stderr).not.toContain('\x1b');
    expect(run.code).toBe(0);
  });
  afterAll(async () => {
    await rt?.dispose();
    rmSync(root, { recursive: true, force: true });
  });

  test('table and plain output carry no control character; JSON carries the value exactly', async () => {
    const table = await as(['space', 'ls', connectorId]);
    expect(table.code).toBe(0);
    expect(table.stdout).toContain('E1X');
    expect(table.stdout).not.toMatch(/[\x00-\x08\x0b-\x1f\x7f-\x9f]/);
    const json = await as(['space', 'ls', connectorId, '-o', 'json']);
    const items = JSON.parse(json.stdout).items as { anchor: string; csObjectId: string }[];
    const evil = items.find((i) => i.anchor === anchor)!;
    expect(evil).toBeDefined();
    const shown = await as(['space', 'show', connectorId, evil.csObjectId]);
    expect(shown.code).toBe(0);
    expect(shown.stdout).toMatch(/^anchor\s+E1X$/m);
    // Nested values print as compact JSON, where C0 controls are visible escapes; the C1 CSI and its parameters are gone.
    expect(shown.stdout).toContain('"givenName":"Ann\\u001b]0;pwned\\u0007e\\rEvil"');
    expect(shown.stdout).not.toMatch(/[\x00-\x08\x0b-\x1f\x7f-\x9f]/);
    const exact = await as(['space', 'show', connectorId, evil.csObjectId, '-o', 'json']);
    expect(JSON.stringify(JSON.parse(exact.stdout))).toContain(JSON.stringify(given).slice(1, -1));
    // A problem detail quoting the identifier as given: stderr is clean too.
    const missing = await as(['space', 'show', connectorId, `nope${ESC_CLEAR}`]);
    expect(missing.code).not.toBe(0);
    expect(missing.stderr).not.toMatch(/[\x00-\x08\x0b-\x1f\x7f-\x9f]/);
  });

  test('on a real terminal (tmux) the screen is not cleared and the table shows the cleaned values', async () => {
    const frames = await inTmux(['space', 'ls', connectorId], { MESHSYNC_HOME: home, MESHSYNC_URL: rt.baseUrl, MESHSYNC_TOKEN: await rt.token('Admin') });
    const last = frames[frames.length - 1];
    expect(last).toContain('EXIT=0');
    // `\x1b[2J\x1b[H` printed as is would have cleared the screen and put the rest of the table at its top.
    expect(last).toMatch(/CS OBJECT ID\s+ANCHOR/);
    expect(last).toContain('E1X');
  });
});

describe('meshsync never follows a redirect to another origin', () => {
  let elsewhere: Recorder;
  let redirector: Recorder;
  const home = newHome();

  beforeAll(async () => {
    elsewhere = await recorder((_req, res) => res.writeHead(201, { 'content-type': 'application/json' }).end('{"id":"stolen"}'));
    redirector = await recorder((req, res) => {
      if (req.url?.startsWith('/same/')) return res.writeHead(200, { 'content-type': 'application/json' }).end('{"items":[],"totalCount":0}');
      if (req.url?.startsWith('/api/instances')) return res.writeHead(308, { location: '/same/instances' }).end();
      res.writeHead(307, { location: `${elsewhere.url}${req.url}` }).end();
    });
  });
  afterAll(async () => {
    await close(redirector);
    await close(elsewhere);
  });

  test('a create whose body holds a connector secret: refused on the 307, nothing reaches the other port', async () => {
    const file = path.join(home, 'connector.json');
    writeFileSync(file, JSON.stringify({ name: 'LDAP', type: 'ldap', config: { url: 'ldap://x', bindPassword: 'S3cret-bind-password' } }));
    const r = await meshsync(['connectors', 'create', '-f', file], {
      MESHSYNC_HOME: home,
      MESHSYNC_URL: `${redirector.url}/api`,
      MESHSYNC_TOKEN: 'token-not-for-elsewhere',
    });
    expect(r.code).toBe(7);
    expect(r.stderr).toContain(`answered 307 redirecting to another origin (${elsewhere.url}): not followed`);
    expect(redirector.requests).toHaveLength(1);
    expect(redirector.requests[0].body).toContain('S3cret-bind-password');
    expect(elsewhere.requests).toEqual([]);
  });

  test('login --dev whose token endpoint redirects elsewhere: the client secret is not sent there', async () => {
    const dataDir = mkdtempSync(path.join(os.tmpdir(), 'cli-redirect-dev-'));
    writeFileSync(
      path.join(dataDir, 'dev-issuer.json'),
      JSON.stringify({ issuer: redirector.url, tokenEndpoint: `${redirector.url}/token`, clientId: 'dev-cli' }),
    );
    writeFileSync(path.join(dataDir, 'dev-issuer.secret'), 'dev-sign-in-secret\n');
    const before = redirector.requests.length;
    const r = await meshsync(['login', '--dev', '--data-dir', dataDir, '--url', `${redirector.url}/api`], { MESHSYNC_HOME: home });
    expect(r.code).toBe(7);
    expect(r.stderr).toContain('The token endpoint at');
    expect(r.stderr).toContain('redirecting to another origin');
    expect(redirector.requests.length).toBe(before + 1);
    expect(elsewhere.requests).toEqual([]);
    rmSync(dataDir, { recursive: true, force: true });
  });

  test('a redirect within the origin is followed', async () => {
    const r = await meshsync(['instances', 'ls', '-o', 'json'], { MESHSYNC_HOME: home, MESHSYNC_URL: `${redirector.url}/api`, MESHSYNC_TOKEN: 't' });
    expect(r.stderr).toBe('');
    expect(r.code).toBe(0);
    expect(JSON.parse(r.stdout)).toEqual({ items: [], totalCount: 0 });
    expect(redirector.requests.map((q) => q.url).slice(-2)).toEqual(['/api/instances', '/same/instances']);
    expect(elsewhere.requests).toEqual([]);
  });
});
