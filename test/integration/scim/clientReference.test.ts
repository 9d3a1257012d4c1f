import { ScimConnector, type ScimConfig } from '../../../lib/connectors/scim';
import { ENTERPRISE_USER } from '../../../lib/connectors/scim/attributes';
import type { ConnectorObject, DeltaChange, ExportChange, ExportResult } from '../../../lib/connectors/sdk';
import { startScimReference, type ReferenceServer } from '../../support/scimReference';

/**
 * The SCIM client connector (type `scim`) against a reference SCIM server started here: SCIMMY and its express
 * routers (test/support/scimReference.ts), over HTTP on 127.0.0.1. Faults (429, 503) are answered by that server.
 */
let ref: ReferenceServer;

const config = (extra: Partial<ScimConfig> = {}): ScimConfig => ({
  baseUrl: ref.baseUrl,
  allowHttp: true,
  auth: { type: 'bearer', token: ref.token },
  pageSize: 100,
  timeoutSeconds: 10,
  ...extra,
});

const connector = (extra: Partial<ScimConfig> = {}) => new ScimConnector(config(extra));

async function readAll(c: ScimConnector, pageSize = 100): Promise<{ objects: ConnectorObject[]; pages: number; watermark: string | null | undefined }> {
  const objects: ConnectorObject[] = [];
  let pages = 0;
  let watermark: string | null | undefined;
  for await (const p of c.fullImport({ pageSize })) {
    pages++;
    expect(p.errors).toEqual([]);
    expect(p.objects.length).toBeLessThanOrEqual(pageSize);
    objects.push(...p.objects);
    if (p.cursor === null) watermark = p.watermark;
  }
  return { objects, pages, watermark };
}

async function delta(c: ScimConnector, watermark: string): Promise<{ changes: DeltaChange[]; next: string | undefined }> {
  const changes: DeltaChange[] = [];
  let next: string | undefined;
  for await (const p of c.deltaImport(watermark, { pageSize: 100 })) {
    expect(p.fullImportRequired).toBeUndefined();
    changes.push(...p.changes);
    next = p.nextWatermark ?? next;
  }
  return { changes, next };
}

const addUser = (n: number, extra: Record<string, unknown> = {}): ExportChange => ({
  kind: 'add',
  objectType: 'User',
  attributes: {
    userName: `user${n}@contoso.example`,
    givenName: `Given${n}`,
    familyName: `Family${n}`,
    displayName: `Given${n} Family${n}`,
    email: `user${n}@contoso.example`,
    active: true,
    externalId: `E${n}`,
    employeeNumber: String(1000 + n),
    department: n % 2 ? 'Sales' : 'Research',
    ...extra,
  },
});

function anchorOf(r: ExportResult): string {
  if (r.status !== 'success') throw new Error(`export failed: ${JSON.stringify(r)}`);
  return r.anchor;
}

beforeAll(async () => {
  ref = await startScimReference();
});

afterAll(async () => {
  await ref?.stop();
});

describe('test connection', () => {
  it('reads ServiceProviderConfig and lists one resource of each type', async () => {
    const before = ref.requests.length;
    const r = await connector().testConnection();
    expect(r.message).toMatch(/\/Users: \d+ resources, \/Groups: \d+ resources/);
    expect(r.message).toMatch(/PATCH yes, Bulk yes \(at most 50 operations\), filter yes/);
    expect(ref.requests.slice(before).map((q) => q.path)).toEqual([
      '/scim/v2/ServiceProviderConfig',
      '/scim/v2/Users?startIndex=1&count=1',
      '/scim/v2/Groups?startIndex=1&count=1',
    ]);
  });

  it('a wrong token is authentication_failed, and the message does not carry the token', async () => {
    const wrong = 'not-the-token-' + 'x'.repeat(20);
    const err = await connector({ auth: { type: 'bearer', token: wrong } })
      .testConnection()
      .catch((e: unknown) => e);
    expect(err).toMatchObject({ code: 'authentication_failed', retriable: false });
    expect((err as Error).message).toMatch(/refused the credentials \(auth\) \(HTTP 401/);
    expect((err as Error).message).not.toContain(wrong);
  });

  it('a base URL that is not a SCIM server is configuration_invalid', async () => {
    const err = await connector({ baseUrl: ref.baseUrl.replace('/scim/v2', '/elsewhere') })
      .testConnection()
      .catch((e: unknown) => e);
    expect(err).toMatchObject({ code: 'configuration_invalid' });
    expect((err as Error).message).toMatch(/does not look like a SCIM 2.0 base URL/);
  });

  it('a redirect is not followed (the token would go along): configuration_invalid', async () => {
    const before = ref.requests.length;
    const err = await connector({ baseUrl: ref.baseUrl.replace('/scim/v2', '/moved/scim/v2') })
      .testConnection()
      .catch((e: unknown) => e);
    expect(err).toMatchObject({ code: 'configuration_invalid' });
    expect((err as Error).message).toMatch(/redirect, which is not followed/);
    expect(ref.requests.slice(before).map((q) => [q.path, q.status])).toEqual([['/moved/scim/v2/ServiceProviderConfig', 302]]);
  });

  it('an unreachable server is connection_failed', async () => {
    const err = await connector({ baseUrl: 'http://127.0.0.1:1/scim/v2' })
      .testConnection()
      .catch((e: unknown) => e);
    expect(err).toMatchObject({ code: 'connection_failed' });
  });
});

describe('export and import', () => {
  const ids: string[] = [];

  it('adds 250 users (POST), and a full import pages through them (startIndex/count) with every mapped attribute', async () => {
    const c = connector();
    for (let n = 0; n < 250; n++) ids.push(anchorOf(await c.export(addUser(n, n > 0 ? { manager: ids[0] } : {}))));
    expect(ref.users.size).toBe(250);
    const stored = ref.users.get(ids[3])!;
    expect(stored).toMatchObject({
      userName: 'user3@contoso.example',
      name: { givenName: 'Given3', familyName: 'Family3' },
      emails: [{ value: 'user3@contoso.example', type: 'work', primary: true }],
      active: true,
      externalId: 'E3',
      [ENTERPRISE_USER]: { employeeNumber: '1003', department: 'Sales', manager: { value: ids[0] } },
    });

    const before = ref.requests.length;
    const { objects, pages, watermark } = await readAll(c, 100);
    const users = objects.filter((o) => o.objectType === 'User');
    expect(users).toHaveLength(250);
    expect(new Set(users.map((u) => u.anchor)).size).toBe(250);
    expect(pages).toBeGreaterThanOrEqual(3);
    expect(
      ref.requests
        .slice(before)
        .filter((q) => q.path.startsWith('/scim/v2/Users?'))
        .map((q) => q.path),
    ).toEqual(['/scim/v2/Users?startIndex=1&count=100', '/scim/v2/Users?startIndex=101&count=100', '/scim/v2/Users?startIndex=201&count=100']);
    const u3 = users.find((u) => u.anchor === ids[3])!;
    expect(u3.attributes).toMatchObject({
      id: ids[3],
      userName: 'user3@contoso.example',
      givenName: 'Given3',
      familyName: 'Family3',
      displayName: 'Given3 Family3',
      email: 'user3@contoso.example',
      active: true,
      externalId: 'E3',
      employeeNumber: '1003',
      department: 'Sales',
      manager: ids[0],
    });
    expect(u3.references).toEqual({ manager: [ids[0]] });
    expect(watermark).toEqual(expect.any(String));
  });

  it('updates by PATCH (replace, remove) and disables with active=false', async () => {
    const c = connector();
    const before = ref.requests.length;
    const r = await c.export({
      kind: 'update',
      anchor: ids[5],
      objectType: 'User',
      attributes: { department: 'Legal', email: 'new5@contoso.example', employeeNumber: null },
    });
    expect(r).toEqual({ status: 'success', anchor: ids[5] });
    expect(ref.requests.slice(before).map((q) => q.method)).toEqual(['GET', 'PATCH']);
    const u = ref.users.get(ids[5])!;
    expect((u[ENTERPRISE_USER] as Record<string, unknown>).department).toBe('Legal');
    expect((u[ENTERPRISE_USER] as Record<string, unknown>).employeeNumber).toBeUndefined();
    expect(u.emails).toEqual([expect.objectContaining({ value: 'new5@contoso.example', type: 'work' })]);

    expect(await c.export({ kind: 'update', anchor: ids[6], objectType: 'User', attributes: { active: false } })).toMatchObject({ status: 'success' });
    expect(ref.users.get(ids[6])!.active).toBe(false);
  });

  it('an update of a user that is not there is not_found; a delete removes, and a second delete succeeds', async () => {
    const c = connector();
    const missing = await c.export({ kind: 'update', anchor: '00000000-0000-4000-8000-000000000000', objectType: 'User', attributes: { title: 'x' } });
    expect(missing).toMatchObject({ status: 'error', error: { code: 'not_found' } });
    expect(await c.export({ kind: 'delete', anchor: ids[249], objectType: 'User', attributes: {} })).toEqual({ status: 'success', anchor: ids[249] });
    expect(ref.users.has(ids[249])).toBe(false);
    expect(await c.export({ kind: 'delete', anchor: ids[249], objectType: 'User', attributes: {} })).toEqual({ status: 'success', anchor: ids[249] });
  });

  it('an add whose userName is taken (409) is already_exists with the existing user, found by userName', async () => {
    const r = await connector().export(addUser(7, { department: 'Other' }));
    expect(r).toMatchObject({
      status: 'error',
      error: { code: 'already_exists' },
      existing: { anchor: ids[7], attributes: { userName: 'user7@contoso.example' } },
    });
    expect(ref.requests.some((q) => q.path.includes('filter=userName+eq+%22user7%40contoso.example%22'))).toBe(true);
  });

  it('an attribute the mapping does not write is the object\u2019s error, naming it', async () => {
    const r = await connector().export({ kind: 'update', anchor: ids[8], objectType: 'User', attributes: { shoeSize: '44' } });
    expect(r).toMatchObject({ status: 'error', error: { code: 'object_error', message: expect.stringContaining("'shoeSize'") } });
  });

  it('groups: members as references, added and removed by PATCH', async () => {
    const c = connector();
    const gid = anchorOf(
      await c.export({ kind: 'add', objectType: 'Group', attributes: { displayName: 'Engineers', externalId: 'G1', members: [ids[0], ids[1]] } }),
    );
    expect(ref.groups.get(gid)!.members).toEqual([expect.objectContaining({ value: ids[0] }), expect.objectContaining({ value: ids[1] })]);
    const r = await c.export({
      kind: 'update',
      anchor: gid,
      objectType: 'Group',
      attributes: {},
      multiValueAdds: { members: [ids[2], ids[3]] },
      multiValueRemoves: { members: [ids[0]] },
    });
    expect(r).toEqual({ status: 'success', anchor: gid });
    expect((ref.groups.get(gid)!.members as { value: string }[]).map((m) => m.value).sort()).toEqual([ids[1], ids[2], ids[3]].sort());
    const { objects } = await readAll(c);
    const g = objects.find((o) => o.anchor === gid)!;
    expect(g).toMatchObject({ objectType: 'Group', attributes: { displayName: 'Engineers', externalId: 'G1' } });
    expect([...g.references!.members].sort()).toEqual([ids[1], ids[2], ids[3]].sort());
  });

  it('delta by meta.lastModified with the overlap: only what changed since the watermark, each version once', async () => {
    const c = connector({ deltaOverlapSeconds: 120 });
    const { watermark } = await readAll(c);
    // Everything was written within the overlap: the delta asks for it again and leaves out the versions it saw.
    const none = await delta(c, watermark!);
    expect(none.changes).toEqual([]);
    expect(ref.requests.some((q) => /filter=meta\.lastModified\+gt\+%22\d{4}-\d\d-\d\dT\d\d%3A\d\d%3A\d\dZ%22/.test(q.path))).toBe(true);

    ref.touch('User', ids[10], { title: 'Director' });
    const one = await delta(c, none.next!);
    expect(one.changes).toHaveLength(1);
    expect(one.changes[0]).toMatchObject({ kind: expect.stringMatching(/^(add|update)$/), anchor: ids[10], object: { attributes: { title: 'Director' } } });
    const again = await delta(c, one.next!);
    expect(again.changes).toEqual([]);
  });

  it('a delta without a watermark asks for a full import', async () => {
    const pages = [];
    for await (const p of connector().deltaImport(null, { pageSize: 10 })) pages.push(p);
    expect(pages).toEqual([expect.objectContaining({ fullImportRequired: expect.objectContaining({ reason: expect.any(String) }) })]);
  });
});

describe('throttling', () => {
  it('429 with Retry-After is waited out and retried', async () => {
    const before = ref.requests.length;
    ref.fault({ nth: 1, status: 429, retryAfter: '1' });
    const started = Date.now();
    const r = await connector({ resourceTypes: ['Group'] }).testConnection();
    expect(r.message).toContain('/Groups');
    expect(Date.now() - started).toBeGreaterThanOrEqual(900);
    expect(ref.requests.slice(before).map((q) => [q.path.replace(/\?.*/, ''), q.status])).toEqual([
      ['/scim/v2/ServiceProviderConfig', 429],
      ['/scim/v2/ServiceProviderConfig', 200],
      ['/scim/v2/Groups', 200],
    ]);
  });

  it('503 without Retry-After is retried with backoff; past maxRetries the run-level error says so', async () => {
    ref.fault({ nth: 1, status: 503, times: 2 });
    const before = ref.requests.length;
    const { objects } = await readAll(connector({ resourceTypes: ['Group'] }));
    expect(objects.length).toBeGreaterThan(0);
    expect(ref.requests.slice(before).map((q) => q.status)).toEqual([503, 503, 200]);

    ref.fault({ nth: 1, status: 503, times: 3 });
    const err = await readAll(connector({ resourceTypes: ['Group'], maxRetries: 2 })).catch((e: unknown) => e);
    expect(err).toMatchObject({ code: 'connection_failed', retriable: true });
    expect((err as Error).message).toMatch(/HTTP 503.*retried 2 times/);
  });
});

describe('server features', () => {
  afterAll(() => ref.configure({ patch: true, etag: false, bulkMaxOperations: 50 }));

  it('without PATCH an update is GET then PUT, with If-Match when the server keeps ETags', async () => {
    ref.configure({ patch: false, etag: true });
    const id = anchorOf(await connector().export(addUser(900)));
    const version = (ref.users.get(id)!.meta as Record<string, unknown>).version;
    const before = ref.requests.length;
    const r = await connector().export({ kind: 'update', anchor: id, objectType: 'User', attributes: { department: 'Finance' } });
    expect(r).toEqual({ status: 'success', anchor: id });
    const sent = ref.requests.slice(before);
    expect(sent.map((q) => q.method)).toEqual(['GET', 'GET', 'PUT']);
    expect(sent[2].ifMatch).toBe(version);
    expect(ref.users.get(id)).toMatchObject({ userName: 'user900@contoso.example', [ENTERPRISE_USER]: { department: 'Finance' } });
  });

  it('Bulk: adds go in requests of at most the configured (and the server\u2019s) maxOperations', async () => {
    ref.configure({ patch: true, etag: false, bulkMaxOperations: 10 });
    const c = connector({ useBulk: true, bulkMaxOperations: 25 });
    const before = ref.requests.length;
    const changes = Array.from({ length: 23 }, (_, i) => addUser(2000 + i));
    changes.push(addUser(7));
    const results = await c.exportBatch(changes);
    expect(results.slice(0, 23).every((r) => r.status === 'success')).toBe(true);
    expect(results[23]).toMatchObject({ status: 'error', error: { code: 'already_exists' }, existing: { attributes: { userName: 'user7@contoso.example' } } });
    expect(ref.requests.slice(before).filter((q) => q.path === '/scim/v2/Bulk')).toHaveLength(3);
    expect(ref.users.get(anchorOf(results[0]))).toMatchObject({ userName: 'user2000@contoso.example' });
  });
});

describe('OAuth client credentials', () => {
  it('fetches a token from the token endpoint (HTTP Basic) and uses it', async () => {
    const c = connector({ auth: { type: 'oauthClientCredentials', tokenUrl: ref.tokenUrl, ...ref.oauthClient, scope: 'scim' } });
    const before = ref.requests.length;
    await c.testConnection();
    const sent = ref.requests.slice(before);
    expect(sent[0]).toMatchObject({ method: 'POST', path: '/oauth/token', status: 200 });
    expect(sent.slice(1).every((q) => q.status === 200 && q.authorization?.startsWith('Bearer ') && q.authorization !== `Bearer ${ref.token}`)).toBe(true);
  });

  it('a wrong client secret is authentication_failed, without the secret', async () => {
    const secret = 'wrong-secret-' + 'y'.repeat(16);
    const err = await connector({ auth: { type: 'oauthClientCredentials', tokenUrl: ref.tokenUrl, clientId: ref.oauthClient.clientId, clientSecret: secret } })
      .testConnection()
      .catch((e: unknown) => e);
    expect(err).toMatchObject({ code: 'authentication_failed' });
    expect((err as Error).message).toMatch(/token endpoint \(auth.tokenUrl\) refused the client credentials/);
    expect((err as Error).message).not.toContain(secret);
  });
});
