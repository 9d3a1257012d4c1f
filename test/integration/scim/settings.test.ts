import { startService, type ServiceUnderTest } from '../../support/service';

/** Scim:Enabled and Scim:Role, on the built service. */
let svc: ServiceUnderTest;

beforeAll(async () => {
  svc = await startService();
});

afterAll(async () => {
  await svc?.dispose();
});

async function get(path: string, token: string | null): Promise<{ status: number; body: { status?: string; detail?: string } }> {
  const res = await fetch(`${svc.baseUrl}/scim/v2${path}`, { headers: token ? { authorization: `Bearer ${token}` } : {} });
  return { status: res.status, body: (await res.json()) as { status?: string; detail?: string } };
}

it('off by default: every SCIM path answers 404, whoever asks', async () => {
  for (const p of ['/Users', '/ServiceProviderConfig', '/Groups/x', '/nothing']) {
    const res = await get(p, await svc.token('Admin'));
    expect(res.status).toBe(404);
    expect(res.body.detail).toMatch(/not enabled/);
  }
  expect((await get('/Users', null)).status).toBe(404);
});

it('Scim:Role names the role value that opens it; the Admin API roles alone do not', async () => {
  await svc.stop();
  await svc.start({ Scim__Enabled: 'true', Scim__Role: 'Service.Scim' });
  const scimApp = await svc.mint({ sub: 'prov-app', azp: 'prov-app', appid: 'prov-app', roles: ['Service.Scim'] });
  expect((await get('/Users', scimApp)).status).toBe(200);
  for (const role of ['Admin', 'Operator'] as const) {
    const res = await get('/Users', await svc.token(role));
    expect(res.status).toBe(403);
    expect(res.body.status).toBe('403');
  }
});

it('issues no tokens: GET /Token (any case, with or without a token) is a plain-text 404, so a test collection keeps the token it was given', async () => {
  for (const path of ['/Token', '/token']) {
    for (const token of [null, await svc.token('Operator')]) {
      const res = await fetch(`${svc.baseUrl}/scim/v2${path}`, { headers: token ? { authorization: `Bearer ${token}` } : {} });
      expect(res.status).toBe(404);
      expect(res.headers.get('content-type')).toMatch(/^text\/plain/);
      const text = await res.text();
      expect(text).toContain('issues no tokens');
      // Not JSON: a script that reads `JSON.parse(body).token` stops before it can replace its token.
      expect(() => JSON.parse(text)).toThrow();
    }
  }
});
