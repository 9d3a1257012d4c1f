import { dumpTable, startService, type ServiceUnderTest } from '../../support/service';
import { fileConnector, folder } from '../sync/syncSupport';

/**
 * What a rule's create and update refuse, over HTTP against the running service and Azurite: scripts that
 * read a name their scope does not give (with line and column), values outside a choice (the allowed values
 * listed), errors at several levels (all listed), and what they accept: every name each rule type's scripts
 * can read, an outbound FlowRule without confidence.
 */
let svc: ServiceUnderTest;
let connectorId: string;

beforeAll(async () => {
  svc = await startService();
  connectorId = await fileConnector(svc, 'Rule validation source', folder());
});

afterAll(async () => {
  await svc?.dispose();
});

const flow = (extra: Record<string, unknown> = {}) => ({
  ruleName: 'Mail to email',
  ruleType: 'FlowRule',
  connectorId,
  sourceAttribute: 'mail',
  targetAttribute: 'email',
  confidence: 80,
  transformScript: 'source.toLowerCase()',
  ...extra,
});

describe('unknown names in a script', () => {
  it('create: 400 naming the name, its line and column, and the names a rule can read; nothing written', async () => {
    const before = await dumpTable('Rules');
    const res = await svc.call('POST', 'rules', { body: flow({ transformScript: 'sourc.toUpperCase()' }) });
    expect(res.status).toBe(400);
    expect(res.headers.get('content-type')).toBe('application/problem+json');
    expect(res.body).toMatchObject({ status: 400, code: 'validation_failed' });
    expect(res.body.errors).toEqual([
      {
        path: '/transformScript',
        message: "'sourc' is not defined at line 1, column 1 (offset 0) (did you mean 'source'?); the names this script can read are source, object",
      },
    ]);
    const composer = await svc.call('POST', 'rules', {
      body: { ruleName: 'Display name', ruleType: 'MeshComposerRule', targetAttribute: 'displayName', transformScript: 'source.givenName +\n  " " + surname' },
    });
    expect(composer.status).toBe(400);
    expect(composer.body.errors).toEqual([
      { path: '/transformScript', message: expect.stringMatching(/^'surname' is not defined at line 2, column 9 \(offset 27\);/) },
    ]);
    expect(await dumpTable('Rules')).toEqual(before);
  });

  it('related is a name of outbound flows only', async () => {
    const res = await svc.call('POST', 'rules', { body: flow({ transformScript: 'related.manager.mail' }) });
    expect(res.status).toBe(400);
    expect(res.body.errors).toEqual([
      { path: '/transformScript', message: "'related' is not defined at line 1, column 1 (offset 0); the names this script can read are source, object" },
    ]);
    const composer = await svc.call('POST', 'rules', {
      body: { ruleName: 'c', ruleType: 'MeshComposerRule', targetAttribute: 'x', transformScript: 'related.manager.mail' },
    });
    expect(composer.status).toBe(400);
    const outbound = await svc.call('POST', 'rules', { body: flow({ direction: 'outbound', transformScript: 'relatd.manager.mail' }) });
    expect(outbound.status).toBe(400);
    expect(outbound.body.errors).toEqual([
      {
        path: '/transformScript',
        message: "'relatd' is not defined at line 1, column 1 (offset 0) (did you mean 'related'?); the names this script can read are source, object, related",
      },
    ]);
  });

  it('update: 400, and the stored rule is unchanged', async () => {
    const created = await svc.call('POST', 'rules', { body: flow({ ruleName: 'valid, then a typo' }) });
    expect(created.status).toBe(201);
    const put = await svc.call('PUT', `rules/${created.body.ruleId}`, { body: flow({ ruleName: 'valid, then a typo', transformScript: 'lower(objct.mail)' }) });
    expect(put.status).toBe(400);
    expect(put.body.errors).toEqual([
      { path: '/transformScript', message: expect.stringContaining("'objct' is not defined at line 1, column 7 (offset 6) (did you mean 'object'?)") },
    ]);
    expect((await svc.call('GET', `rules/${created.body.ruleId}`)).body).toEqual(created.body);
  });

  it('every name a rule script can read is accepted, in every rule type (no false 400)', async () => {
    const scripts: Record<string, unknown>[] = [
      { ruleType: 'JoinRule', connectorId, sourceAttribute: 'employeeId', targetAttribute: 'employeeId', transformScript: 'source.toUpperCase()' },
      { ruleType: 'JoinRule', connectorId, sourceAttribute: 'uid', targetAttribute: 'uid', transformScript: 'lower(coalesce(source, object.mail))' },
      { ruleType: 'ProjectionRule', connectorId, sourceAttribute: 'cn', objectType: 'Group', transformScript: 'object.objectClass.includes("groupOfNames")' },
      { ruleType: 'ProjectionRule', connectorId, sourceAttribute: 'uid', transformScript: "object.kind == 'Contact'" },
      {
        ruleType: 'FlowRule',
        connectorId,
        sourceAttribute: 'mail',
        targetAttribute: 'email',
        confidence: 50,
        transformScript: '`${source ?? ""}`.trim() || object.uid',
      },
      {
        ruleType: 'FlowRule',
        connectorId,
        direction: 'outbound',
        sourceAttribute: 'displayName',
        targetAttribute: 'cn',
        confidence: 50,
        transformScript: 'source ?? object.givenName + " " + object.sn',
      },
      {
        ruleType: 'FlowRule',
        connectorId,
        direction: 'outbound',
        sourceAttribute: 'mail',
        targetAttribute: 'managerMail',
        transformScript: 'related.manager?.mail ?? object.mail',
      },
      { ruleType: 'MeshComposerRule', targetAttribute: 'displayName', transformScript: 'source.givenName + " " + source.sn' },
      { ruleType: 'MeshComposerRule', targetAttribute: 'upn', transformScript: 'typeof baseDN === "undefined" ? lower(object.mail) : ""' },
    ];
    for (const body of scripts) {
      const res = await svc.call('POST', 'rules', { body: { ruleName: `scope of ${body.ruleType as string}`, ...body } });
      expect({ script: body.transformScript, status: res.status, errors: res.body.errors }).toEqual({
        script: body.transformScript,
        status: 201,
        errors: undefined,
      });
    }
  });
});

describe('validation answers', () => {
  it('a value outside a choice lists the allowed values', async () => {
    const res = await svc.call('POST', 'rules', { body: flow({ direction: 'both' }) });
    expect(res.status).toBe(400);
    expect(res.body.errors).toEqual([{ path: '/direction', message: 'must be one of: inbound, outbound' }]);
    const type = await svc.call('POST', 'rules', { body: flow({ ruleType: 'Flow' }) });
    expect(type.status).toBe(400);
    expect(type.body.errors).toEqual([{ path: '/ruleType', message: 'must be one of: JoinRule, FlowRule, ProjectionRule, MeshComposerRule' }]);
  });

  it('schema errors do not hide the errors of the rule type and the script: all are listed', async () => {
    const before = await dumpTable('Rules');
    const res = await svc.call('POST', 'rules', { body: flow({ priority: 1.5, targetAttribute: undefined, transformScript: 'sourc.trim()', colour: 'red' }) });
    expect(res.status).toBe(400);
    expect(res.body.errors).toEqual(
      expect.arrayContaining([
        { path: '/priority', message: 'must be integer' },
        { path: '/colour', message: 'is not a known property' },
        { path: '/targetAttribute', message: 'is required for a FlowRule' },
        { path: '/transformScript', message: expect.stringContaining("'sourc' is not defined at line 1, column 1") },
      ]),
    );
    expect(res.body.errors).toHaveLength(4);
    expect(await dumpTable('Rules')).toEqual(before);
  });

  it('an outbound FlowRule needs no confidence: 201, stored and returned as null; an inbound one does', async () => {
    const res = await svc.call('POST', 'rules', { body: flow({ ruleName: 'Mail out', direction: 'outbound', confidence: undefined }) });
    expect(res.status).toBe(201);
    expect(res.body).toMatchObject({ ruleType: 'FlowRule', direction: 'outbound', confidence: null });
    expect((await svc.call('GET', `rules/${res.body.ruleId}`)).body.confidence).toBeNull();
    expect((await svc.call('PUT', `rules/${res.body.ruleId}`, { body: flow({ ruleName: 'Mail out', direction: 'outbound', confidence: null }) })).status).toBe(
      200,
    );
    const inbound = await svc.call('PUT', `rules/${res.body.ruleId}`, { body: flow({ ruleName: 'Mail out', direction: 'inbound', confidence: undefined }) });
    expect(inbound.status).toBe(400);
    expect(inbound.body.errors).toEqual([{ path: '/confidence', message: 'is required for an inbound FlowRule' }]);
    const defaultInbound = await svc.call('POST', 'rules', { body: flow({ confidence: undefined }) });
    expect(defaultInbound.status).toBe(400);
    expect(defaultInbound.body.errors).toEqual([{ path: '/confidence', message: 'is required for an inbound FlowRule' }]);
  });

  it('a misspelt direction is the only error: no confidence asked of an "inbound" rule the caller did not mean', async () => {
    const before = await dumpTable('Rules');
    const res = await svc.call('POST', 'rules', { body: flow({ direction: 'outbond', confidence: undefined }) });
    expect(res.status).toBe(400);
    expect(res.body.errors).toEqual([{ path: '/direction', message: 'must be one of: inbound, outbound' }]);
    expect(await dumpTable('Rules')).toEqual(before);
  });
});
