import path from 'node:path';
import os from 'node:os';
import { dumpTable, rawTable, startService, USERS, type ServiceUnderTest } from '../../support/service';

// A folder of the file connector must be inside its roots (the test service's are the temporary folder).
const HR_FOLDER = path.join(os.tmpdir(), 'hr-exports');

/** Health, license, audit, OpenAPI, and the resumable connector delete, over HTTP. */
let svc: ServiceUnderTest;

beforeAll(async () => {
  svc = await startService({
    env: {
      License__LicensedTo: 'Contoso Ltd',
      License__Edition: 'Enterprise',
      License__ExpiresOn: '2027-12-31',
      License__MaxConnectors: '50',
      License__MaxMeshObjects: '100000',
      Engine__InstanceName: 'health-node',
    },
  });
});

afterAll(async () => {
  await svc?.dispose();
});

describe('health (anonymous)', () => {
  it('200 { status, instance, storage: ok }', async () => {
    const res = await svc.call('GET', 'health', { role: null });
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ status: 'healthy', instance: 'health-node', storage: 'ok' });
  });
});

describe('license', () => {
  it('Admin gets the configured license', async () => {
    const res = await svc.call('GET', 'license');
    expect(res.status).toBe(200);
    expect(res.body).toEqual({
      licensedTo: 'Contoso Ltd',
      edition: 'Enterprise',
      expiresOn: '2027-12-31T00:00:00.000Z',
      limits: { connectors: 50, meshObjects: 100000 },
    });
  });

  it('Operator and Viewer: 403; anonymous: 401', async () => {
    expect((await svc.call('GET', 'license', { role: 'Operator' })).status).toBe(403);
    expect((await svc.call('GET', 'license', { role: 'Viewer' })).status).toBe(403);
    expect((await svc.call('GET', 'license', { role: null })).status).toBe(401);
  });
});

describe('audit', () => {
  it('is Admin only, newest first, filterable by actor and target type, paged', async () => {
    const a = await svc.call('POST', 'connectors', {
      body: { name: 'Audit One', type: 'custom', config: { implementation: 'file', settings: { path: HR_FOLDER, anchorColumn: 'id' } } },
    });
    const b = await svc.call('POST', 'connectors', {
      body: { name: 'Audit Two', type: 'custom', config: { implementation: 'file', settings: { path: HR_FOLDER, anchorColumn: 'id' } } },
    });
    expect((await svc.call('GET', 'audit', { role: 'Operator' })).status).toBe(403);
    const all = await svc.call('GET', 'audit?targetType=connector');
    expect(all.status).toBe(200);
    expect(all.body.items[0].targetId).toBe(b.body.id);
    expect(all.body.items[1].targetId).toBe(a.body.id);
    const byActor = await svc.call('GET', `audit?actor=${encodeURIComponent(USERS.Admin.upn)}&take=1`);
    expect(byActor.body.items).toHaveLength(1);
    expect(byActor.body.totalCount).toBeGreaterThanOrEqual(2);
    const bySid = await svc.call('GET', `audit?actor=${USERS.Admin.oid}`);
    expect(bySid.body.totalCount).toBe(byActor.body.totalCount);
    const nobody = await svc.call('GET', 'audit?actor=nobody@example.test');
    expect(nobody.body).toEqual({ items: [], totalCount: 0 });
    expect((await svc.call('GET', 'audit?take=500')).status).toBe(400);
  });
});

describe('OpenAPI (anonymous)', () => {
  it('is OpenAPI 3.1 with every catalog route, its permission and its error responses', async () => {
    const res = await svc.call('GET', 'openapi.json', { role: null });
    expect(res.status).toBe(200);
    const doc = res.body;
    expect(doc.openapi).toBe('3.1.0');
    const { ROUTES } = await import('../../../lib/api/routes');
    for (const r of ROUTES) {
      const op = doc.paths['/' + r.route]?.[r.method.toLowerCase()];
      expect(op).toBeDefined();
      expect(op['x-permission']).toBe(r.permission);
    }
    const create = doc.paths['/connectors'].post;
    expect(create['x-rate-limit']).toBe('sensitive');
    expect(create.requestBody.content['application/json'].schema.$ref).toBe('#/components/schemas/CreateConnectorRequest');
    expect(Object.keys(create.responses)).toEqual(expect.arrayContaining(['201', '400', '401', '403', '409', '413', '415', '429', '500']));
    expect(doc.components.responses.Problem400.content['application/problem+json'].schema.$ref).toBe('#/components/schemas/ProblemDetails');
    expect(doc.components.schemas.LdapConnectorConfig.properties.bindPassword['x-secret']).toBe(true);
    expect(doc.components.schemas.RuleList.properties.items.items.$ref).toBe('#/components/schemas/Rule');
    expect(doc.components.schemas.Run).toBeDefined();
    expect(doc.components.schemas.EngineInstance).toBeDefined();
  });
});

describe('connector delete resumes after a crash', () => {
  it('a delete left half-way (operation recorded, connector marked, then kill -9) is finished at the next start', async () => {
    const c = await svc.call('POST', 'connectors', {
      body: {
        name: 'Crashy',
        type: 'custom',
        config: { implementation: 'file', settings: { path: HR_FOLDER, anchorColumn: 'id' }, secrets: { k: 'secret-crashy' } },
      },
    });
    const rule = await svc.call('POST', 'rules', {
      body: { ruleName: 'r', ruleType: 'JoinRule', connectorId: c.body.id, sourceAttribute: 'a', targetAttribute: 'b' },
    });
    expect(rule.status).toBe(201);
    await svc.kill();
    // The state a crash right after the first two steps of DELETE leaves: the pending operation and the mark.
    const ops = await rawTable('Operations');
    await ops.upsertEntity({
      partitionKey: 'pending',
      rowKey: `deleteConnector|${c.body.id}`,
      kind: 'deleteConnector',
      targetId: c.body.id,
      createdOn: new Date().toISOString(),
      completedSteps: '[]',
    });
    const connectors = await rawTable('Connectors');
    await connectors.updateEntity({ partitionKey: 'connector', rowKey: c.body.id, state: 'deleting' }, 'Merge');
    await svc.start();
    expect((await svc.call('GET', `connectors/${c.body.id}`)).status).toBe(404);
    expect((await svc.call('GET', `rules/${rule.body.ruleId}`)).status).toBe(404);
    expect(await dumpTable('Operations')).toEqual([]);
    expect((await dumpTable('Connectors')).some((e) => e.rowKey === c.body.id)).toBe(false);
    expect((await dumpTable('ConnectorNames')).some((e) => e.connectorId === c.body.id)).toBe(false);
    expect(
      (
        await svc.call('POST', 'connectors', {
          body: { name: 'crashy', type: 'custom', config: { implementation: 'file', settings: { path: HR_FOLDER, anchorColumn: 'id' } } },
        })
      ).status,
    ).toBe(201);
  });

  it('a deleting connector is a 404 to readers and absent from the list', async () => {
    const c = await svc.call('POST', 'connectors', {
      body: { name: 'Half Gone', type: 'custom', config: { implementation: 'file', settings: { path: HR_FOLDER, anchorColumn: 'id' } } },
    });
    const connectors = await rawTable('Connectors');
    await connectors.updateEntity({ partitionKey: 'connector', rowKey: c.body.id, state: 'deleting' }, 'Merge');
    expect((await svc.call('GET', `connectors/${c.body.id}`)).status).toBe(404);
    const list = await svc.call('GET', 'connectors');
    expect(list.body.connectors.some((x: { id: string }) => x.id === c.body.id)).toBe(false);
  });
});

describe('sensitive rate limit', () => {
  it('answers 429 problem+json with Retry-After past the configured limit', async () => {
    const limited = await startService({
      env: { RateLimiting__Sensitive__PermitLimit: '2', RateLimiting__Sensitive__WindowSeconds: '600' },
      prefix: svc.prefix,
    });
    try {
      expect((await limited.call('GET', 'license')).status).toBe(200);
      expect((await limited.call('GET', 'license')).status).toBe(200);
      const res = await limited.call('GET', 'license');
      expect(res.status).toBe(429);
      expect(res.headers.get('content-type')).toBe('application/problem+json');
      expect(Number(res.headers.get('retry-after'))).toBeGreaterThan(0);
      expect(res.body.code).toBe('rate_limited');
      expect((await limited.call('GET', 'connectors')).status).toBe(200);
    } finally {
      await limited.dispose();
    }
  });
});
