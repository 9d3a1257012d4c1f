import { mkdtempSync, readFileSync, rmSync, statSync } from 'node:fs';
import { createHash } from 'node:crypto';
import os from 'node:os';
import path from 'node:path';
import { DevIssuer, type DevIssuerInfo } from '../../../lib/auth/devIssuer';
import { memoryLog } from './helpers';

describe('embedded development issuer', () => {
  let dataDir: string;
  let issuer: DevIssuer;
  let info: DevIssuerInfo;
  const roles = { Admin: ['Service.Admin'], Operator: ['Service.Operator'], Viewer: ['Service.Viewer'] };

  const log = memoryLog();

  beforeAll(async () => {
    dataDir = mkdtempSync(path.join(os.tmpdir(), 'dev-issuer-'));
    issuer = new DevIssuer({ environment: 'Development', dataDir, audience: 'api://identity-mesh-sync', port: 0, roles, log });
    info = await issuer.start();
  });

  afterAll(async () => {
    await issuer?.stop();
    rmSync(dataDir, { recursive: true, force: true });
  });

  const tokenRequest = (form: Record<string, string>, auth = `Basic ${Buffer.from(`${info.clientId}:${info.clientSecret}`).toString('base64')}`) =>
    fetch(info.tokenEndpoint, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded', authorization: auth },
      body: new URLSearchParams(form).toString(),
    });

  it('publishes discovery and JWKS on loopback and keeps its key and secret private on disk', async () => {
    const meta = (await (await fetch(`${info.issuer}/.well-known/openid-configuration`)).json()) as Record<string, unknown>;
    expect(meta).toMatchObject({ issuer: info.issuer, jwks_uri: `${info.issuer}/jwks`, token_endpoint: info.tokenEndpoint });
    const jwks = (await (await fetch(`${info.issuer}/jwks`)).json()) as { keys: Record<string, unknown>[] };
    expect(jwks.keys).toHaveLength(1);
    expect(jwks.keys[0]).not.toHaveProperty('d');
    expect(statSync(path.join(dataDir, 'dev-issuer-key.pem')).mode & 0o777).toBe(0o600);
    expect(statSync(path.join(dataDir, 'dev-issuer.json')).mode & 0o777).toBe(0o600);
    expect(statSync(path.join(dataDir, 'dev-issuer.secret')).mode & 0o777).toBe(0o600);
    expect(statSync(dataDir).mode & 0o777).toBe(0o700);
    expect(readFileSync(path.join(dataDir, 'dev-issuer.secret'), 'utf8').trim()).toBe(info.clientSecret);
    expect(JSON.parse(readFileSync(path.join(dataDir, 'dev-issuer.json'), 'utf8')).issuer).toBe(info.issuer);
  });

  it('issues a client_credentials token carrying the configured value of the requested role', async () => {
    const res = await tokenRequest({ grant_type: 'client_credentials', role: 'operator', username: 'olga@example.test' });
    expect(res.status).toBe(200);
    const body = (await res.json()) as { access_token: string; token_type: string };
    expect(body.token_type).toBe('Bearer');
    const claims = JSON.parse(Buffer.from(body.access_token.split('.')[1], 'base64url').toString());
    expect(claims).toMatchObject({
      iss: info.issuer,
      aud: 'api://identity-mesh-sync',
      roles: ['Service.Operator'],
      preferred_username: 'olga@example.test',
      upn: 'olga@example.test',
    });
    expect(typeof claims.exp).toBe('number');
  });

  it('refuses a token request without or with a wrong sign-in secret: 401 problem+json, logged without the secret', async () => {
    const noSecret = await fetch(info.tokenEndpoint, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({ grant_type: 'client_credentials', client_id: 'dev-cli', role: 'Admin' }).toString(),
    });
    expect(noSecret.status).toBe(401);
    expect(noSecret.headers.get('content-type')).toBe('application/problem+json');
    expect(await noSecret.json()).toMatchObject({
      status: 401,
      error: 'invalid_client',
      detail: "no client secret: send the sign-in secret of dev-issuer.secret in the data folder as the 'dev-cli' client secret.",
    });
    const wrongSecret = 'not-the-secret-' + 'x'.repeat(20);
    const wrong = await tokenRequest({ grant_type: 'client_credentials', role: 'Admin' }, `Basic ${Buffer.from(`dev-cli:${wrongSecret}`).toString('base64')}`);
    expect(wrong.status).toBe(401);
    expect(wrong.headers.get('content-type')).toBe('application/problem+json');
    const body = (await wrong.json()) as { detail: string; access_token?: string };
    expect(body.detail).toBe('the client secret is not the sign-in secret of dev-issuer.secret in the data folder.');
    expect(body.access_token).toBeUndefined();
    const refusals = log.lines.filter((l) => l.includes('refused a token request'));
    expect(refusals).toHaveLength(2);
    expect(log.lines.join('\n')).not.toContain(wrongSecret);
    expect(log.lines.join('\n')).not.toContain(info.clientSecret);
  });

  it('refuses a wrong client secret, another grant and an unknown role', async () => {
    expect((await tokenRequest({ grant_type: 'client_credentials' }, `Basic ${Buffer.from('dev-cli:wrong').toString('base64')}`)).status).toBe(401);
    expect((await tokenRequest({ grant_type: 'password' })).status).toBe(400);
    const bad = await tokenRequest({ grant_type: 'client_credentials', role: 'Root' });
    expect(bad.status).toBe(400);
    expect(((await bad.json()) as { error: string }).error).toBe('invalid_scope');
  });

  it('comes back on the same port with the same key after a restart', async () => {
    const before = await issuer.mint('Admin');
    await issuer.stop();
    issuer = new DevIssuer({ environment: 'Development', dataDir, audience: 'api://identity-mesh-sync', port: 0, roles, log: memoryLog() });
    const again = await issuer.start();
    expect(again.issuer).toBe(info.issuer);
    expect(again.clientSecret).toBe(info.clientSecret);
    const jwks = (await (await fetch(`${again.issuer}/jwks`)).json()) as { keys: { kid: string }[] };
    expect(jwks.keys[0].kid).toBe(JSON.parse(Buffer.from(before.split('.')[0], 'base64url').toString()).kid);
  });
});

describe('development issuer: authorization code with PKCE for the console', () => {
  let dataDir: string;
  let issuer: DevIssuer;
  let info: DevIssuerInfo;
  const roles = { Admin: ['Service.Admin'], Operator: ['Service.Operator'], Viewer: ['Service.Viewer'] };
  const redirectUri = 'http://127.0.0.1:7071/console/callback';
  const verifier = 'v'.repeat(20) + '-._~' + 'A1'.repeat(12);
  const challenge = createHash('sha256').update(verifier).digest('base64url');
  const authParams = (over: Record<string, string> = {}) => ({
    response_type: 'code',
    client_id: 'meshsync-console',
    redirect_uri: redirectUri,
    code_challenge: challenge,
    code_challenge_method: 'S256',
    state: 'st-123',
    scope: 'openid',
    ...over,
  });

  const log = memoryLog();

  beforeAll(async () => {
    dataDir = mkdtempSync(path.join(os.tmpdir(), 'dev-issuer-pkce-'));
    issuer = new DevIssuer({ environment: 'Development', dataDir, audience: 'api://identity-mesh-sync', port: 0, roles, log });
    info = await issuer.start();
  });
  afterAll(async () => {
    await issuer?.stop();
    rmSync(dataDir, { recursive: true, force: true });
  });

  /** POST the sign-in form (with the sign-in secret unless the form says otherwise); the answer is the redirect to the console with the code. */
  const signIn = async (form: Record<string, string>) =>
    fetch(`${info.issuer}/authorize`, {
      method: 'POST',
      redirect: 'manual',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({ secret: info.clientSecret, ...form }).toString(),
    });
  const redeem = (form: Record<string, string>, origin?: string) =>
    fetch(info.tokenEndpoint, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded', ...(origin ? { origin } : {}) },
      body: new URLSearchParams(form).toString(),
    });
  const codeOf = (res: Response) => new URL(res.headers.get('location')!).searchParams.get('code')!;

  it('announces the authorization endpoint, the code grant and S256 in discovery, to loopback origins (CORS)', async () => {
    const res = await fetch(`${info.issuer}/.well-known/openid-configuration`, { headers: { origin: 'http://127.0.0.1:7071' } });
    expect(res.headers.get('access-control-allow-origin')).toBe('http://127.0.0.1:7071');
    expect(await res.json()).toMatchObject({
      authorization_endpoint: `${info.issuer}/authorize`,
      grant_types_supported: expect.arrayContaining(['authorization_code', 'client_credentials']),
      code_challenge_methods_supported: ['S256'],
      response_types_supported: expect.arrayContaining(['code']),
    });
    const other = await fetch(`${info.issuer}/.well-known/openid-configuration`, { headers: { origin: 'https://evil.example' } });
    expect(other.headers.get('access-control-allow-origin')).toBeNull();
  });

  it('shows a labelled sign-in form carrying the request, and refuses a bad request with a page, not a redirect', async () => {
    const page = await fetch(`${info.issuer}/authorize?${new URLSearchParams(authParams())}`);
    expect(page.status).toBe(200);
    expect(page.headers.get('content-type')).toContain('text/html');
    expect(page.headers.get('x-frame-options')).toBe('DENY');
    const html = await page.text();
    expect(html).toContain('<label for="username">User name</label>');
    expect(html).toContain('<label for="role">Role</label>');
    expect(html).toContain('<label for="secret">Sign-in secret</label>');
    expect(html).toContain(path.join(dataDir, 'dev-issuer.secret'));
    expect(html).not.toContain(info.clientSecret);
    expect(html).toContain(`name="code_challenge" value="${challenge}"`);
    for (const [bad, error] of [
      [{ redirect_uri: 'https://evil.example/cb' }, 'invalid_request'],
      [{ client_id: 'someone-else' }, 'unauthorized_client'],
      [{ code_challenge_method: 'plain' }, 'invalid_request'],
      [{ code_challenge: 'short' }, 'invalid_request'],
      [{ response_type: 'token' }, 'unsupported_response_type'],
    ] as const) {
      const res = await fetch(`${info.issuer}/authorize?${new URLSearchParams(authParams(bad))}`, { redirect: 'manual' });
      expect({ bad, status: res.status, location: res.headers.get('location') }).toEqual({ bad, status: 400, location: null });
      expect(await res.text()).toContain(error);
    }
    // A hostile state is escaped in the form.
    const xss = await (await fetch(`${info.issuer}/authorize?${new URLSearchParams(authParams({ state: '"><script>alert(1)</script>' }))}`)).text();
    expect(xss).not.toContain('<script>alert(1)');
  });

  it('redirects with a one-time code and the state; the verifier redeems it for a token of the chosen user and role', async () => {
    const res = await signIn({ ...authParams(), username: 'alice@example.test', role: 'Operator' });
    expect(res.status).toBe(302);
    const location = new URL(res.headers.get('location')!);
    expect(`${location.origin}${location.pathname}`).toBe(redirectUri);
    expect(location.searchParams.get('state')).toBe('st-123');
    expect(location.searchParams.get('iss')).toBe(info.issuer);
    const code = location.searchParams.get('code')!;
    const token = await redeem(
      { grant_type: 'authorization_code', client_id: 'meshsync-console', code, redirect_uri: redirectUri, code_verifier: verifier },
      'http://127.0.0.1:7071',
    );
    expect(token.status).toBe(200);
    expect(token.headers.get('access-control-allow-origin')).toBe('http://127.0.0.1:7071');
    const body = (await token.json()) as { access_token: string; token_type: string };
    expect(body.token_type).toBe('Bearer');
    const claims = JSON.parse(Buffer.from(body.access_token.split('.')[1], 'base64url').toString());
    expect(claims).toMatchObject({ iss: info.issuer, aud: 'api://identity-mesh-sync', roles: ['Service.Operator'], preferred_username: 'alice@example.test' });
    // Single use.
    const again = await redeem({ grant_type: 'authorization_code', client_id: 'meshsync-console', code, redirect_uri: redirectUri, code_verifier: verifier });
    expect(again.status).toBe(400);
    expect(await again.json()).toMatchObject({ error: 'invalid_grant' });
  });

  it('refuses a sign-in without or with a wrong sign-in secret: the form again with the reason (401), no code, logged without the secret', async () => {
    const wrongSecret = 'guessed-' + 'y'.repeat(30);
    for (const [secret, why] of [
      ['', 'no sign-in secret was given'],
      [wrongSecret, 'the sign-in secret is wrong'],
    ] as const) {
      const res = await signIn({ ...authParams(), username: 'mallory@example.test', role: 'Admin', secret });
      expect({ status: res.status, location: res.headers.get('location') }).toEqual({ status: 401, location: null });
      const html = await res.text();
      expect(html).toContain(`Sign-in refused: ${why}.`);
      expect(html).toContain('<label for="secret">Sign-in secret</label>');
      expect(html).not.toContain(info.clientSecret);
    }
    const refusals = log.lines.filter((l) => l.includes('refused the console sign-in of mallory@example.test as Admin'));
    expect(refusals).toHaveLength(2);
    expect(log.lines.join('\n')).not.toContain(wrongSecret);
    expect(log.lines.join('\n')).not.toContain(info.clientSecret);
  });

  it('refuses a wrong verifier, another redirect URI or client; a refused attempt spends the code', async () => {
    const form = { ...authParams(), username: 'bob@example.test', role: 'Admin' };
    const wrongVerifier = codeOf(await signIn(form));
    const r1 = await redeem({
      grant_type: 'authorization_code',
      client_id: 'meshsync-console',
      code: wrongVerifier,
      redirect_uri: redirectUri,
      code_verifier: 'x'.repeat(43),
    });
    expect(r1.status).toBe(400);
    expect(((await r1.json()) as { error_description: string }).error_description).toContain('code_verifier');
    const r1again = await redeem({
      grant_type: 'authorization_code',
      client_id: 'meshsync-console',
      code: wrongVerifier,
      redirect_uri: redirectUri,
      code_verifier: verifier,
    });
    expect(r1again.status).toBe(400);

    const wrongRedirect = codeOf(await signIn(form));
    const r2 = await redeem({
      grant_type: 'authorization_code',
      client_id: 'meshsync-console',
      code: wrongRedirect,
      redirect_uri: 'http://127.0.0.1:7071/other',
      code_verifier: verifier,
    });
    expect(r2.status).toBe(400);
    expect(((await r2.json()) as { error_description: string }).error_description).toContain('redirect_uri');

    const wrongClient = codeOf(await signIn(form));
    expect(
      (await redeem({ grant_type: 'authorization_code', client_id: 'dev-cli', code: wrongClient, redirect_uri: redirectUri, code_verifier: verifier })).status,
    ).toBe(401);

    const badRole = await signIn({ ...authParams(), role: 'Root' });
    expect(badRole.status).toBe(400);
    expect(badRole.headers.get('location')).toBeNull();
  });
});
