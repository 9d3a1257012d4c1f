import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { startService, type ServiceUnderTest } from '../../support/service';

/**
 * Two engine processes on one storage account in Development: each data folder has its own development issuer,
 * so a token of A's issuer is good on A only, until B is told to trust A's issuer
 * (`Authentication__Jwt__Authority` = A's issuer, audience `api://identity-mesh-sync`): then one token serves
 * both, as behind one address. Real processes, real tokens from A's issuer (docs/scaling.md).
 */
jest.setTimeout(120_000);

// The test support points services at its own issuer: emptied settings give A the embedded development issuer.
const DEV_ISSUER = { Authentication__Jwt__Enabled: '', Authentication__Jwt__Authority: '', Authentication__Jwt__Audience: '' };

let a: ServiceUnderTest;
let b: ServiceUnderTest;
let c: ServiceUnderTest;
let issuer: { issuer: string; tokenEndpoint: string; clientId: string; clientSecret: string };
beforeAll(async () => {
  a = await startService({ env: { ...DEV_ISSUER, Engine__InstanceName: 'issuer-a' } });
  issuer = JSON.parse(readFileSync(path.join(a.dataDir, 'dev-issuer.json'), 'utf8'));
  const trustA = {
    Authentication__Jwt__Enabled: 'true',
    Authentication__Jwt__Authority: issuer.issuer,
    Authentication__Jwt__Audience: 'api://identity-mesh-sync',
  };
  b = await startService({ prefix: a.prefix, env: { ...trustA, Engine__InstanceName: 'issuer-b' } });
  // C keeps the support's own issuer: it trusts neither A's issuer nor anything but its own.
  c = await startService({ prefix: a.prefix, env: { Engine__InstanceName: 'issuer-c' } });
});
afterAll(async () => {
  await c?.dispose();
  await b?.dispose();
  await a?.dispose();
});

async function tokenOfA(role: string): Promise<string> {
  const basic = Buffer.from(`${encodeURIComponent(issuer.clientId)}:${encodeURIComponent(issuer.clientSecret)}`).toString('base64');
  const res = await fetch(issuer.tokenEndpoint, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded', authorization: `Basic ${basic}` },
    body: `grant_type=client_credentials&role=${role}`,
  });
  expect(res.status).toBe(200);
  return ((await res.json()) as { access_token: string }).access_token;
}

const get = (rt: ServiceUnderTest, route: string, token: string) => fetch(`${rt.baseUrl}/${route}`, { headers: { authorization: `Bearer ${token}` } });

test("a token of A's development issuer: good on A and on B that trusts A's issuer, 401 on C that does not", async () => {
  const token = await tokenOfA('Admin');
  const onA = await get(a, 'instances', token);
  expect(onA.status).toBe(200);
  const onB = await get(b, 'instances', token);
  expect(onB.status).toBe(200);
  // Both answer from the one storage account: the same three instances.
  const names = async (res: Response) => ((await res.json()) as { items: { name: string }[] }).items.map((i) => i.name).sort();
  expect(await names(onB)).toEqual(['issuer-a', 'issuer-b', 'issuer-c']);
  const onC = await get(c, 'instances', token);
  expect(onC.status).toBe(401);
  expect(onC.headers.get('content-type')).toMatch(/^application\/problem\+json/);
  // B runs no issuer of its own; roles come from A's token as on A (a Viewer may not write).
  expect(existsSync(path.join(b.dataDir, 'dev-issuer.json'))).toBe(false);
  const viewer = await tokenOfA('Viewer');
  const write = await fetch(`${b.baseUrl}/connectors`, {
    method: 'POST',
    headers: { authorization: `Bearer ${viewer}`, 'content-type': 'application/json' },
    body: '{}',
  });
  expect(write.status).toBe(403);
});
