import { randomUUID } from 'node:crypto';
import { startService, type Answer, type ServiceUnderTest } from '../../support/service';

/**
 * Every answer of the API carries `X-Content-Type-Options: nosniff` and `Cache-Control: no-store`: successes,
 * problem+json errors of every kind (401, 403, 400, 404) and the anonymous routes, over HTTP against the service.
 */
let svc: ServiceUnderTest;

beforeAll(async () => {
  svc = await startService();
});

afterAll(async () => {
  await svc?.dispose();
});

function expectApiHeaders(res: Answer): void {
  expect(res.headers.get('x-content-type-options')).toBe('nosniff');
  expect(res.headers.get('cache-control')).toBe('no-store');
}

describe('API answers: X-Content-Type-Options: nosniff and Cache-Control: no-store', () => {
  it('on authenticated successes (200 lists, 204)', async () => {
    const list = await svc.call('GET', 'connectors', { role: 'Viewer' });
    expect(list.status).toBe(200);
    expect(list.headers.get('content-type')).toMatch(/^application\/json/);
    expectApiHeaders(list);
    const audit = await svc.call('GET', 'audit');
    expect(audit.status).toBe(200);
    expectApiHeaders(audit);
    const authorized = await svc.call('GET', 'system/authorize-admin');
    expect(authorized.status).toBe(204);
    expectApiHeaders(authorized);
  });

  it('on problem+json errors: 401 anonymous, 401 bad token, 403, 400, 404', async () => {
    const answers = [
      [401, await svc.call('GET', 'connectors', { role: null })],
      [401, await svc.call('GET', 'connectors', { role: null, headers: { authorization: 'Bearer not-a-token' } })],
      [403, await svc.call('GET', 'audit', { role: 'Viewer' })],
      [400, await svc.call('POST', 'connectors', { body: { name: 42 } })],
      [404, await svc.call('GET', `connectors/${randomUUID()}`)],
    ] as const;
    for (const [status, res] of answers) {
      expect(res.status).toBe(status);
      expect(res.headers.get('content-type')).toBe('application/problem+json');
      expectApiHeaders(res);
    }
  });

  it('on the anonymous routes (health, openapi.json)', async () => {
    const health = await svc.call('GET', 'health', { role: null });
    expect(health.status).toBe(200);
    expectApiHeaders(health);
    const openapi = await svc.call('GET', 'openapi.json', { role: null });
    expect(openapi.status).toBe(200);
    expectApiHeaders(openapi);
  });
});
