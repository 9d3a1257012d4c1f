import { startService, type ServiceUnderTest } from '../../support/service';
import { meshByAnchor, sourceRules, valueOf } from '../sync/syncSupport';

/**
 * The `scim_inbound` connector behind the SCIM endpoint: a push lands in the connector's space and the mesh
 * through its rules, as DeltaImport runs with history; a push over a threshold is refused and lands nowhere.
 */
let svc: ServiceUnderTest;
let token: string;
let connectorId: string;
const CORE = 'urn:ietf:params:scim:schemas:core:2.0:User';
const ENT = 'urn:ietf:params:scim:schemas:extension:enterprise:2.0:User';
const PATCH = 'urn:ietf:params:scim:api:messages:2.0:PatchOp';

// eslint-disable-next-line @typescript-eslint/no-explicit-any
async function scim(method: string, path: string, body?: unknown): Promise<{ status: number; body: any }> {
  const res = await fetch(`${svc.baseUrl}/scim/v2${path}`, {
    method,
    headers: { authorization: `Bearer ${token}`, ...(body ? { 'content-type': 'application/scim+json' } : {}) },
    body: body ? JSON.stringify(body) : undefined,
  });
  const text = await res.text();
  return { status: res.status, body: text ? JSON.parse(text) : undefined };
}

const person = (userName: string, department: string) => ({
  schemas: [CORE, ENT],
  userName,
  displayName: `Display ${userName}`,
  active: true,
  emails: [{ value: `${userName}@contoso.example`, type: 'work', primary: true }],
  [ENT]: { department },
});

async function runsOf(): Promise<{ runType: string; status: string; stats: Record<string, number> }[]> {
  const res = await svc.call('GET', `runs?connectorId=${connectorId}&take=100`);
  return res.body.items;
}

beforeAll(async () => {
  svc = await startService({ env: { Scim__Enabled: 'true' } });
  token = await svc.token('Operator');
  const created = await svc.call('POST', 'connectors', {
    body: { name: 'Entra push', type: 'scim_inbound', config: { thresholds: { adds: { count: 5 }, deletes: { count: 10 } } } },
  });
  expect({ status: created.status, text: created.text }).toMatchObject({ status: 201 });
  connectorId = created.body.id;
  await sourceRules(svc, connectorId, 'userName', ['displayName', 'department', 'email']);
}, 120_000);

afterAll(async () => {
  await svc?.dispose();
});

it('a push lands in the mesh through the rules before the answer, as runs with history', async () => {
  const a = await scim('POST', '/Users', person('ada', 'Research'));
  expect(a.status).toBe(201);
  const b = await scim('POST', '/Users', person('bob', 'Sales'));
  expect(b.status).toBe(201);
  let mesh = await meshByAnchor();
  const ada = [...mesh.values()].find((o) => valueOf(o, 'displayName') === 'Display ada');
  expect(valueOf(ada, 'department')).toBe('Research');
  expect(valueOf(ada, 'email')).toBe('ada@contoso.example');

  expect(
    (await scim('PATCH', `/Users/${a.body.id}`, { schemas: [PATCH], Operations: [{ op: 'Replace', path: `${ENT}:department`, value: 'Engineering' }] })).status,
  ).toBe(204);
  mesh = await meshByAnchor();
  expect(
    valueOf(
      [...mesh.values()].find((o) => valueOf(o, 'displayName') === 'Display ada'),
      'department',
    ),
  ).toBe('Engineering');

  const runs = await runsOf();
  expect(runs.length).toBeGreaterThanOrEqual(3);
  expect(runs.every((r) => r.status === 'Completed')).toBe(true);
  expect(runs.some((r) => r.runType === 'DeltaImport')).toBe(true);

  const space = await svc.call('GET', `connectors/${connectorId}/space?take=50`);
  expect(space.status).toBe(200);
  expect(space.text).toContain(a.body.id);
});

it('a push over a threshold is refused with a SCIM error that says so, and nothing lands', async () => {
  const before = (await scim('GET', '/Users')).body.totalResults;
  const ops = Array.from({ length: 7 }, (_, i) => ({ method: 'POST', bulkId: `n${i}`, path: '/Users', data: person(`new${i}`, 'Ops') }));
  const res = await scim('POST', '/Bulk', { schemas: ['urn:ietf:params:scim:api:messages:2.0:BulkRequest'], Operations: ops });
  expect(res.status).toBe(409);
  expect(res.body.detail).toMatch(/exceed the thresholds/);
  expect(res.body.detail).toMatch(/adds 7 > 5/);
  expect((await scim('GET', '/Users')).body.totalResults).toBe(before);
  const mesh = await meshByAnchor();
  expect([...mesh.values()].some((o) => String(valueOf(o, 'displayName')).startsWith('Display new'))).toBe(false);
  const runs = await runsOf();
  expect(runs.some((r) => r.status === 'Cancelled')).toBe(true);
  // The store is as it was: the same names can be pushed in smaller steps.
  expect((await scim('POST', '/Users', person('new0', 'Ops'))).status).toBe(201);
});

it('a delete reaches the connector space', async () => {
  const list = await scim('GET', `/Users?filter=${encodeURIComponent('userName eq "bob"')}`);
  const id = list.body.Resources[0].id;
  expect((await scim('DELETE', `/Users/${id}`)).status).toBe(204);
  const space = await svc.call('GET', `connectors/${connectorId}/space?take=50`);
  expect(space.text).not.toContain(id);
});

it('with two scim_inbound connectors and no Scim:ConnectorName a push is 503 and nothing is stored', async () => {
  const second = await svc.call('POST', 'connectors', { body: { name: 'Second push', type: 'scim_inbound', config: {} } });
  expect(second.status).toBe(201);
  const res = await scim('POST', '/Users', person('carol', 'Legal'));
  expect(res.status).toBe(503);
  expect(res.body.detail).toMatch(/Scim:ConnectorName/);
  expect((await scim('GET', `/Users?filter=${encodeURIComponent('userName eq "carol"')}`)).body.totalResults).toBe(0);
  expect((await svc.call('DELETE', `connectors/${second.body.id}`)).status).toBe(204);
  expect((await scim('POST', '/Users', person('carol', 'Legal'))).status).toBe(201);
});
