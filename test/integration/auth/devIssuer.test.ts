import { mkdtempSync, readFileSync, rmSync, statSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { DevIssuer, type DevIssuerInfo } from '../../../lib/auth/devIssuer';
import { memoryLog } from './helpers';

describe('embedded development issuer', () => {
  let dataDir: string;
  let issuer: DevIssuer;
  let info: DevIssuerInfo;
  const roles = { Admin: ['Service.Admin'], Operator: ['Service.Operator'], Viewer: ['Service.Viewer'] };

  beforeAll(async () => {
    dataDir = mkdtempSync(path.join(os.tmpdir(), 'dev-issuer-'));
    issuer = new DevIssuer({ environment: 'Development', dataDir, audience: 'api://identity-mesh-sync', port: 0, roles, log: memoryLog() });
    info = await issuer.start();
  });

  afterAll(async () => {
    await issuer?.stop();
    rmSync(dataDir, { recursive: true, force: true });
  });

  const tokenRequest = (form: Record<string, string>, auth = `Basic ${Buffer.from(`${info.clientId}:${info.clientSecret}`).toString('base64')}`) =>
    fetch(info.tokenEndpoint, { method: 'POST', headers: { 'content-type': 'application/x-www-form-urlencoded', authorization: auth }, body: new URLSearchParams(form).toString() });

  it('publishes discovery and JWKS on loopback and keeps its key and secret private on disk', async () => {
    const meta = (await (await fetch(`${info.issuer}/.well-known/openid-configuration`)).json()) as Record<string, unknown>;
    expect(meta).toMatchObject({ issuer: info.issuer, jwks_uri: `${info.issuer}/jwks`, token_endpoint: info.tokenEndpoint });
    const jwks = (await (await fetch(`${info.issuer}/jwks`)).json()) as { keys: Record<string, unknown>[] };
    expect(jwks.keys).toHaveLength(1);
    expect(jwks.keys[0]).not.toHaveProperty('d');
    expect(statSync(path.join(dataDir, 'dev-issuer-key.pem')).mode & 0o077).toBe(0);
    expect(statSync(path.join(dataDir, 'dev-issuer.json')).mode & 0o077).toBe(0);
    expect(JSON.parse(readFileSync(path.join(dataDir, 'dev-issuer.json'), 'utf8')).issuer).toBe(info.issuer);
  });

  it('issues a client_credentials token carrying the configured value of the requested role', async () => {
    const res = await tokenRequest({ grant_type: 'client_credentials', role: 'operator', username: 'olga@example.test' });
    expect(res.status).toBe(200);
    const body = (await res.json()) as { access_token: string; token_type: string };
    expect(body.token_type).toBe('Bearer');
    const claims = JSON.parse(Buffer.from(body.access_token.split('.')[1], 'base64url').toString());
    expect(claims).toMatchObject({ iss: info.issuer, aud: 'api://identity-mesh-sync', roles: ['Service.Operator'], preferred_username: 'olga@example.test', upn: 'olga@example.test' });
    expect(typeof claims.exp).toBe('number');
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
