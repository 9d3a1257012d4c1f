import { startService, type ServiceUnderTest } from '../../support/service';
import { startScimReference, type ReferenceServer } from '../../support/scimReference';
import { folder, outboundRule, rule, runExport, runImport, sourceRules, writeCsv } from '../sync/syncSupport';

/**
 * The SCIM client connector between two service instances: instance B has its SCIM endpoint on
 * (`Scim__Enabled=true`) and a `scim_inbound` connector; instance A imports an HR file and provisions B through a
 * `scim` target with a Bearer token of B's OIDC issuer. What A exports lands in B's connector space and mesh; A's
 * full import of its target reads back the same users (anchors are B's SCIM ids), then updates, disables
 * (deprovisioning `disable`: `active=false`) and deletes travel the same way, through Bulk requests. Also: the test on save of a `scim`
 * connector with a wrong token is a 400 that does not echo the token.
 */
jest.setTimeout(300_000);

let a: ServiceUnderTest;
let b: ServiceUnderTest;
let ref: ReferenceServer;
let bToken: string;
let inbound: string;

const COLS = ['id', 'userName', 'givenName', 'familyName', 'dept', 'employeeNumber'];
const people = (n: number, changes: Record<number, Record<string, string>> = {}) =>
  Array.from({ length: n }, (_, i) => ({
    id: `p${i}`,
    userName: `person${i}@contoso.example`,
    givenName: `Given${i}`,
    familyName: `Family${i}`,
    dept: i % 2 ? 'Sales' : 'Research',
    employeeNumber: String(5000 + i),
    ...(changes[i] ?? {}),
  }));

// eslint-disable-next-line @typescript-eslint/no-explicit-any
async function scimOnB(path: string): Promise<any> {
  const res = await fetch(`${b.baseUrl}/scim/v2${path}`, { headers: { authorization: `Bearer ${bToken}` } });
  expect(res.status).toBe(200);
  return res.json();
}

// eslint-disable-next-line @typescript-eslint/no-explicit-any
async function spaceOf(svc: ServiceUnderTest, connectorId: string): Promise<any[]> {
  const res = await svc.call('GET', `connectors/${connectorId}/space?take=200`);
  expect(res.status).toBe(200);
  return res.body.items;
}

const PICK = ['userName', 'displayName', 'givenName', 'familyName', 'department', 'employeeNumber', 'email', 'active'];

/** What a connector space holds of each object (as last imported), by anchor, limited to the mapped attributes. */
async function spaceAttributes(svc: ServiceUnderTest, connectorId: string): Promise<Map<string, Record<string, unknown>>> {
  const out = new Map<string, Record<string, unknown>>();
  for (const item of await spaceOf(svc, connectorId)) {
    const detail = await svc.call('GET', `connectors/${connectorId}/space/${item.csObjectId}`);
    expect(detail.status).toBe(200);
    out.set(item.anchor, Object.fromEntries(PICK.map((k) => [k, detail.body.attributes?.[k] ?? null])));
  }
  return out;
}

/** Wait (on a condition, not a time) until `check` passes: B's mesh read model follows its change feed. */
async function eventually<T>(check: () => Promise<T>, deadlineMs = 60_000): Promise<T> {
  const deadline = Date.now() + deadlineMs;
  for (;;) {
    try {
      return await check();
    } catch (err) {
      if (Date.now() > deadline) throw err;
      await new Promise((r) => setTimeout(r, 250));
    }
  }
}

beforeAll(async () => {
  ref = await startScimReference();
  b = await startService({ env: { Scim__Enabled: 'true' } });
  bToken = await b.token('Operator');
  const created = await b.call('POST', 'connectors', { body: { name: 'From A', type: 'scim_inbound', config: {} } });
  expect({ status: created.status, text: created.text }).toMatchObject({ status: 201 });
  inbound = created.body.id;
  await sourceRules(b, inbound, 'userName', ['userName', 'displayName', 'department', 'email', 'employeeNumber', 'active']);
  a = await startService();
}, 240_000);

afterAll(async () => {
  await a?.dispose();
  await b?.dispose();
  await ref?.stop();
});

test('test on save: a wrong token is a 400 naming the refusal, without the token; nothing is stored', async () => {
  const wrong = 'wrong-token-' + 'z'.repeat(24);
  const res = await a.call('POST', 'connectors', {
    body: { name: 'Bad SCIM', type: 'scim', config: { baseUrl: ref.baseUrl, allowHttp: true, auth: { type: 'bearer', token: wrong } } },
  });
  expect(res.status).toBe(400);
  expect(res.headers.get('content-type')).toMatch(/application\/problem\+json/);
  expect(res.text).toMatch(/refused the credentials/);
  expect(res.text).not.toContain(wrong);
  expect((await a.call('GET', 'connectors')).text).not.toContain('Bad SCIM');

  const http = await a.call('POST', 'connectors', {
    body: { name: 'Clear SCIM', type: 'scim', config: { baseUrl: ref.baseUrl, auth: { type: 'bearer', token: ref.token } } },
  });
  expect(http.status).toBe(400);
  expect(http.body.errors).toEqual([expect.objectContaining({ path: '/config/baseUrl', message: expect.stringContaining('allowHttp') })]);
});

test('A provisions B over SCIM: adds, updates, disable and delete land in B; A reads back what it wrote', async () => {
  const src = folder('ims-scim-rt-');
  writeCsv(src, 'hr.csv', COLS, people(12));
  const hr = (
    await a.call('POST', 'connectors', {
      body: { name: 'HR', type: 'custom', config: { implementation: 'file', objectType: 'User', settings: { path: src, anchorColumn: 'id' } } },
    })
  ).body.id as string;
  await rule(a, { ruleType: 'ProjectionRule', connectorId: hr, sourceAttribute: 'id' });
  for (const attr of COLS.slice(1)) await rule(a, { ruleType: 'FlowRule', connectorId: hr, sourceAttribute: attr, targetAttribute: attr, confidence: 50 });

  const created = await a.call('POST', 'connectors', {
    body: {
      name: 'B over SCIM',
      type: 'scim',
      config: {
        baseUrl: `${b.baseUrl}/scim/v2`,
        allowHttp: true,
        auth: { type: 'bearer', token: bToken },
        resourceTypes: ['User'],
        pageSize: 5,
        useBulk: true,
      },
    },
  });
  expect({ status: created.status, text: created.text }).toMatchObject({ status: 201 });
  expect(created.text).not.toContain(bToken);
  const target = created.body.id as string;
  const out = outboundRule(a, target);
  await out('userName', 'userName');
  await out('givenName', 'givenName');
  await out('familyName', 'familyName');
  await out('dept', 'department');
  await out('employeeNumber', 'employeeNumber');
  await out('userName', 'email');
  await out('givenName', 'displayName', 'object.givenName + " " + object.familyName');
  await out('userName', 'active', 'true');

  expect(await runImport(a, hr)).toMatchObject({ status: 'Completed', stats: { objectsCreated: 12 } });
  expect(await runExport(a, target)).toMatchObject({ status: 'Completed', stats: { objectsCreated: 12, errors: 0 } });
  // Through Bulk (useBulk; B supports it): the 12 adds were one request, imported by B's connector in one run
  // (12 single POSTs would have been 12 runs).
  const bRuns = await b.call('GET', `runs?connectorId=${inbound}&take=100`);
  expect(bRuns.body.items.length).toBeGreaterThanOrEqual(1);
  expect(bRuns.body.items.length).toBeLessThanOrEqual(2);

  // B: every user pushed, in its connector space and behind its SCIM endpoint, with the values A gave.
  const listed = await scimOnB('/Users?count=100');
  expect(listed.totalResults).toBe(12);
  const onB = new Map<string, Record<string, unknown>>(listed.Resources.map((u: Record<string, unknown>) => [u.userName as string, u]));
  expect(onB.get('person3@contoso.example')).toMatchObject({
    displayName: 'Given3 Family3',
    name: { givenName: 'Given3', familyName: 'Family3' },
    active: true,
    emails: [expect.objectContaining({ value: 'person3@contoso.example', type: 'work' })],
    'urn:ietf:params:scim:schemas:extension:enterprise:2.0:User': { department: 'Sales', employeeNumber: '5003' },
  });
  const bSpace = await spaceAttributes(b, inbound);
  expect(bSpace.size).toBe(12);
  expect(bSpace.get(onB.get('person3@contoso.example')!.id as string)).toEqual({
    userName: 'person3@contoso.example',
    displayName: 'Given3 Family3',
    givenName: 'Given3',
    familyName: 'Family3',
    department: 'Sales',
    employeeNumber: '5003',
    email: 'person3@contoso.example',
    active: true,
  });
  // B's mesh: one person per pushed user, projected by its scim_inbound connector's rules.
  await eventually(async () => {
    const mesh = await b.call('GET', 'mesh/objects?objectType=User&take=100');
    expect(mesh.body.totalCount).toBe(12);
  });

  // A reads its target back (full import through B's paging, 5 a page): the same users, anchored by B's ids.
  expect(await runImport(a, target)).toMatchObject({ status: 'Completed', stats: { errors: 0 } });
  // The same users, with the same values, on both sides.
  expect(await spaceAttributes(a, target)).toEqual(bSpace);
  // Nothing differs between what A wrote and what it read: the next export has nothing to do.
  expect(await runExport(a, target)).toMatchObject({ status: 'Completed', stats: { objectsCreated: 0, objectsUpdated: 0, errors: 0 } });

  // A leaver with the default deprovisioning (delete): gone from B's endpoint and connector space.
  const p9 = (await scimOnB(`/Users?filter=${encodeURIComponent('userName eq "person9@contoso.example"')}`)).Resources[0];
  writeCsv(
    src,
    'hr.csv',
    COLS,
    people(12).filter((p) => p.id !== 'p9'),
  );
  expect(await runImport(a, hr, { runType: 'FullImport' })).toMatchObject({ status: 'Completed' });
  expect(await runExport(a, target)).toMatchObject({ status: 'Completed', stats: { errors: 0 } });
  expect((await scimOnB(`/Users?filter=${encodeURIComponent('userName eq "person9@contoso.example"')}`)).totalResults).toBe(0);
  expect((await spaceOf(b, inbound)).some((o: { anchor: string }) => o.anchor === p9.id)).toBe(false);

  // Deprovisioning switched to disable: the SCIM connector's default writes active=false.
  const current = (await a.call('GET', `connectors/${target}`)).body;
  const put = await a.call('PUT', `connectors/${target}`, {
    body: { name: current.name, config: { ...current.config, deprovisioning: { action: 'disable' } } },
  });
  expect({ status: put.status, text: put.text }).toMatchObject({ status: 200 });
  expect(put.text).not.toContain(bToken);

  // An update (PATCH) and a leaver (disabled: active=false, not deleted).
  writeCsv(
    src,
    'hr.csv',
    COLS,
    people(12, { 4: { dept: 'Legal' } }).filter((p) => p.id !== 'p7' && p.id !== 'p9'),
  );
  expect(await runImport(a, hr, { runType: 'FullImport' })).toMatchObject({ status: 'Completed' });
  expect(await runExport(a, target)).toMatchObject({ status: 'Completed', stats: { errors: 0 } });
  const p4 = (await scimOnB(`/Users?filter=${encodeURIComponent('userName eq "person4@contoso.example"')}`)).Resources[0];
  expect(p4['urn:ietf:params:scim:schemas:extension:enterprise:2.0:User'].department).toBe('Legal');
  const p7 = (await scimOnB(`/Users?filter=${encodeURIComponent('userName eq "person7@contoso.example"')}`)).Resources[0];
  expect(p7.active).toBe(false);
  const bP7 = (await spaceOf(b, inbound)).find((o: { anchor: string }) => o.anchor === p7.id);
  expect(bP7).toBeDefined();

  // A delta import of the target by meta.lastModified sees B's changes and finds nothing to redo.
  expect(await runImport(a, target, { runType: 'DeltaImport' })).toMatchObject({ status: 'Completed', stats: { errors: 0 } });
  expect(await runExport(a, target)).toMatchObject({ status: 'Completed', stats: { objectsCreated: 0, objectsUpdated: 0, errors: 0 } });
  expect(await spaceAttributes(a, target)).toEqual(await spaceAttributes(b, inbound));
});

test("B's endpoint sorts (sortBy, sortOrder) and answers /Me with 501", async () => {
  expect((await scimOnB('/ServiceProviderConfig')).sort).toEqual({ supported: true });
  const names = (list: { Resources: { userName: string }[] }) => list.Resources.map((u) => u.userName);
  const all = names(await scimOnB('/Users?count=100'));
  const asc = [...all].sort();
  expect(names(await scimOnB('/Users?count=100&sortBy=userName'))).toEqual(asc);
  expect(names(await scimOnB('/Users?count=100&sortBy=UserName&sortOrder=descending'))).toEqual([...asc].reverse());
  // A multi-valued attribute sorts by its primary (else first) value; paging applies after sorting.
  const byEmail = names(await scimOnB('/Users?sortBy=emails&startIndex=2&count=3'));
  expect(byEmail).toEqual(asc.slice(1, 4));
  const bad = await fetch(`${b.baseUrl}/scim/v2/Users?sortBy=userName&sortOrder=sideways`, { headers: { authorization: `Bearer ${bToken}` } });
  expect(bad.status).toBe(400);
  expect(await bad.json()).toMatchObject({ status: '400', scimType: 'invalidValue' });
  const me = await fetch(`${b.baseUrl}/scim/v2/Me`, { headers: { authorization: `Bearer ${bToken}` } });
  expect(me.status).toBe(501);
  expect(await me.json()).toMatchObject({ schemas: ['urn:ietf:params:scim:api:messages:2.0:Error'], status: '501' });
});
