import { dumpTable, startService, type ServiceUnderTest } from '../../support/service';
import { startSlapd, type Slapd } from '../../support/slapd';

/** Rules over HTTP against the running service and Azurite; their connectors are directories on a real slapd (saving one tests it). */
let svc: ServiceUnderTest;
let slapd: Slapd;
let connectorId: string;
let otherConnectorId: string;

const connector = (name: string) => ({
  name,
  type: 'ldap',
  config: {
    host: 'localhost',
    port: slapd.ldapsPort,
    caCertificate: slapd.caCertificate,
    baseDN: slapd.suffix,
    bindDN: slapd.rootDN,
    bindPassword: slapd.rootPassword,
  },
});

beforeAll(async () => {
  svc = await startService();
  slapd = await startSlapd();
  connectorId = (await svc.call('POST', 'connectors', { body: connector('Rules A') })).body.id;
  otherConnectorId = (await svc.call('POST', 'connectors', { body: connector('Rules B') })).body.id;
});

afterAll(async () => {
  await svc?.dispose();
  await slapd?.stop();
});

const flow = (extra: Record<string, unknown> = {}) => ({
  ruleName: 'mail flow',
  ruleType: 'FlowRule',
  connectorId,
  sourceAttribute: 'mail',
  targetAttribute: 'email',
  confidence: 80,
  transformScript: 'source.toLowerCase()',
  ...extra,
});

describe('create and read', () => {
  it('creates each rule type with its defaults: 201 + Location', async () => {
    const res = await svc.call('POST', 'rules', { body: flow() });
    expect(res.status).toBe(201);
    expect(res.headers.get('location')).toBe(`/api/rules/${res.body.ruleId}`);
    expect(res.body).toMatchObject({
      ruleName: 'mail flow',
      ruleType: 'FlowRule',
      connectorId,
      priority: 100,
      isEnabled: true,
      direction: 'inbound',
      confidence: 80,
    });
    const join = await svc.call('POST', 'rules', {
      body: { ruleName: 'join', ruleType: 'JoinRule', connectorId, sourceAttribute: 'uid', targetAttribute: 'employeeId', priority: 10 },
    });
    expect(join.status).toBe(201);
    expect(join.body).toMatchObject({ confidence: null, transformScript: null });
    expect(join.body.direction).toBeUndefined();
    const proj = await svc.call('POST', 'rules', {
      body: { ruleName: 'project', ruleType: 'ProjectionRule', connectorId, sourceAttribute: 'uid', transformScript: 'source.uid != ""' },
    });
    expect(proj.status).toBe(201);
    expect(proj.body.objectType).toBe('User');
    const composer = await svc.call('POST', 'rules', {
      body: { ruleName: 'manager', ruleType: 'MeshComposerRule', relationshipType: 'manager', sourceAttribute: 'managerDn' },
    });
    expect(composer.status).toBe(201);
    expect(composer.body).toMatchObject({ connectorId: null, relationshipType: 'manager' });
    const computed = await svc.call('POST', 'rules', {
      body: { ruleName: 'display', ruleType: 'MeshComposerRule', targetAttribute: 'displayName', transformScript: 'source.givenName + " " + source.sn' },
    });
    expect(computed.status).toBe(201);
    const got = await svc.call('GET', `rules/${res.body.ruleId}`, { role: 'Viewer' });
    expect(got.status).toBe(200);
    expect(got.body).toEqual(res.body);
  });

  it('lists with filters, ordered by priority then name, paged with skip/take', async () => {
    for (const [name, priority] of [
      ['b', 5],
      ['a', 5],
      ['c', 1],
    ] as const) {
      expect(
        (
          await svc.call('POST', 'rules', {
            body: { ruleName: name, ruleType: 'JoinRule', connectorId: otherConnectorId, sourceAttribute: 'sn', targetAttribute: 't', priority },
          })
        ).status,
      ).toBe(201);
    }
    const all = await svc.call('GET', `rules?connectorId=${otherConnectorId}`, { role: 'Viewer' });
    expect(all.status).toBe(200);
    expect(all.body.totalCount).toBe(3);
    expect(all.body.items.map((r: { ruleName: string }) => r.ruleName)).toEqual(['c', 'a', 'b']);
    const paged = await svc.call('GET', `rules?connectorId=${otherConnectorId}&skip=1&take=1`);
    expect(paged.body).toMatchObject({ totalCount: 3, items: [expect.objectContaining({ ruleName: 'a' })] });
    const flows = await svc.call('GET', 'rules?ruleType=FlowRule');
    expect(flows.body.items.every((r: { ruleType: string }) => r.ruleType === 'FlowRule')).toBe(true);
    expect(flows.body.totalCount).toBeGreaterThanOrEqual(1);
  });
});

describe('errors', () => {
  const bad: [string, Record<string, unknown>, string][] = [
    ['confidence over 100', flow({ confidence: 101 }), '/confidence'],
    ['negative confidence', flow({ confidence: -1 }), '/confidence'],
    ['FlowRule without confidence', flow({ confidence: undefined }), '/confidence'],
    ['JoinRule without targetAttribute', { ruleName: 'j', ruleType: 'JoinRule', connectorId: '', sourceAttribute: 'a' }, '/targetAttribute'],
    ['ProjectionRule without sourceAttribute', { ruleName: 'p', ruleType: 'ProjectionRule' }, '/sourceAttribute'],
    ['direction on a JoinRule', { ruleName: 'j', ruleType: 'JoinRule', sourceAttribute: 'a', targetAttribute: 'b', direction: 'inbound' }, '/direction'],
    ['unknown ruleType', flow({ ruleType: 'MagicRule' }), '/ruleType'],
    ['unknown field', flow({ colour: 'red' }), '/colour'],
    ['transformScript that does not parse', flow({ transformScript: 'source.toLowerCase(' }), '/transformScript'],
    ['priority not an integer', flow({ priority: 1.5 }), '/priority'],
    ['connectorId not a GUID', flow({ connectorId: 'nope' }), '/connectorId'],
  ];
  it.each(bad)('%s: 400 naming the field, nothing written', async (_name, body, path) => {
    if (body.connectorId === '') body.connectorId = connectorId;
    const before = await dumpTable('Rules');
    const res = await svc.call('POST', 'rules', { body: JSON.parse(JSON.stringify(body)) });
    expect(res.status).toBe(400);
    expect(res.headers.get('content-type')).toBe('application/problem+json');
    expect(res.body.code).toBe('validation_failed');
    expect(res.body.errors.map((e: { path: string }) => e.path)).toContain(path);
    expect(await dumpTable('Rules')).toEqual(before);
  });

  it('a parse error names the position', async () => {
    const res = await svc.call('POST', 'rules', { body: flow({ transformScript: 'source +' }) });
    expect(res.status).toBe(400);
    expect(res.body.errors).toContainEqual({ path: '/transformScript', message: expect.stringMatching(/line 1, column \d+ \(offset \d+\)/) });
  });

  it('a rule for a connector that does not exist: 400', async () => {
    const res = await svc.call('POST', 'rules', { body: flow({ connectorId: '00000000-0000-4000-8000-0000000000aa' }) });
    expect(res.status).toBe(400);
    expect(res.body.errors).toEqual([{ path: '/connectorId', message: 'is not an existing connector' }]);
  });

  it('query errors: take over 200, negative skip, non-integer take, bad ruleType, bad connectorId', async () => {
    for (const q of ['take=201', 'skip=-1', 'take=1.5', 'take=abc', 'ruleType=Nope', 'connectorId=123', 'take=1&take=2']) {
      const res = await svc.call('GET', `rules?${q}`);
      expect(res.status).toBe(400);
      expect(res.body.code).toBe('validation_failed');
    }
    expect((await svc.call('GET', 'rules?take=200&skip=0')).status).toBe(200);
  });

  it('unknown or malformed ids: 404', async () => {
    expect((await svc.call('GET', 'rules/xyz')).status).toBe(404);
    expect((await svc.call('GET', 'rules/00000000-0000-4000-8000-0000000000bb')).status).toBe(404);
    expect((await svc.call('DELETE', 'rules/00000000-0000-4000-8000-0000000000bb')).status).toBe(404);
  });

  it('Viewer and Operator cannot write rules: 403', async () => {
    for (const role of ['Viewer', 'Operator'] as const) expect((await svc.call('POST', 'rules', { role, body: flow() })).status).toBe(403);
  });
});

describe('update and delete', () => {
  it('PUT replaces the rule; ruleType cannot change; DELETE 204 then 404; all audited', async () => {
    const { body: r } = await svc.call('POST', 'rules', { body: flow({ ruleName: 'to change' }) });
    const put = await svc.call('PUT', `rules/${r.ruleId}`, { body: flow({ ruleName: 'changed', confidence: 90, direction: 'outbound', isEnabled: false }) });
    expect(put.status).toBe(200);
    expect(put.body).toMatchObject({ ruleId: r.ruleId, ruleName: 'changed', confidence: 90, direction: 'outbound', isEnabled: false, createdOn: r.createdOn });
    const retype = await svc.call('PUT', `rules/${r.ruleId}`, {
      body: { ruleName: 'j', ruleType: 'JoinRule', connectorId, sourceAttribute: 'a', targetAttribute: 'b' },
    });
    expect(retype.status).toBe(400);
    expect(retype.body.errors).toContainEqual(expect.objectContaining({ path: '/ruleType' }));
    expect((await svc.call('DELETE', `rules/${r.ruleId}`)).status).toBe(204);
    expect((await svc.call('GET', `rules/${r.ruleId}`)).status).toBe(404);
    const audit = await svc.call('GET', `audit?targetType=rule&targetId=${r.ruleId}`);
    expect(audit.body.items.map((i: { action: string }) => i.action)).toEqual(['delete', 'update', 'create']);
  });
});
