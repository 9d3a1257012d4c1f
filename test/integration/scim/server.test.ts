import { startService, type ServiceUnderTest } from '../../support/service';

/**
 * The SCIM endpoint driven over HTTP the way SCIM clients drive it: the request shapes of Microsoft's SCIM
 * validation collections and of Entra ID provisioning (attribute names in any case, `"True"` strings, `Replace`
 * without a path, members as bare ids, unquoted filter values, paths in any case), against the built service.
 */
let svc: ServiceUnderTest;
let token: string;
const CORE = 'urn:ietf:params:scim:schemas:core:2.0:User';
const ENT = 'urn:ietf:params:scim:schemas:extension:enterprise:2.0:User';
const GROUP = 'urn:ietf:params:scim:schemas:core:2.0:Group';
const PATCH = 'urn:ietf:params:scim:api:messages:2.0:PatchOp';

interface Res {
  status: number;
  headers: Headers;
  text: string;
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  body: any;
}

async function scim(method: string, path: string, body?: unknown, headers: Record<string, string> = {}, bearer: string | null = token): Promise<Res> {
  const h: Record<string, string> = { ...headers };
  if (bearer) h.authorization = `Bearer ${bearer}`;
  let payload: string | undefined;
  if (body !== undefined) {
    payload = typeof body === 'string' ? body : JSON.stringify(body);
    if (!Object.keys(h).some((k) => k.toLowerCase() === 'content-type')) h['content-type'] = 'application/json';
  }
  const res = await fetch(`${svc.baseUrl}/scim/v2${path}`, { method, headers: h, body: payload });
  const text = await res.text();
  let parsed: unknown;
  try {
    parsed = text ? JSON.parse(text) : undefined;
  } catch {
    parsed = text;
  }
  return { status: res.status, headers: res.headers, text, body: parsed };
}

const user = (userName: string, extra: Record<string, unknown> = {}) => ({
  schemas: [CORE],
  userName,
  active: true,
  displayName: `${userName} display`,
  externalId: `ext-${userName}`,
  name: { formatted: 'Ryan Leenay', familyName: 'Leenay', givenName: 'Ryan' },
  emails: [
    { Primary: true, type: 'work', value: `${userName}@work.example.com` },
    { Primary: false, type: 'home', value: `${userName}@home.example.org` },
  ],
  ...extra,
});

beforeAll(async () => {
  svc = await startService({ env: { Scim__Enabled: 'true' } });
  token = await svc.token('Operator');
});

afterAll(async () => {
  await svc?.dispose();
});

describe('discovery', () => {
  it('ServiceProviderConfig says patch, bulk (50), filter and etag are supported', async () => {
    const res = await scim('GET', '/ServiceProviderConfig');
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toMatch(/^application\/scim\+json/);
    expect(res.body.patch.supported).toBe(true);
    expect(res.body.bulk).toMatchObject({ supported: true, maxOperations: 50 });
    expect(res.body.filter.supported).toBe(true);
    expect(res.body.etag.supported).toBe(true);
  });

  it('ResourceTypes lists Users first, with the enterprise extension', async () => {
    const res = await scim('GET', '/ResourceTypes');
    expect(res.status).toBe(200);
    expect(res.body.Resources[0].endpoint).toBe('/Users');
    expect(res.body.Resources[0].schemaExtensions).toEqual([{ schema: ENT, required: false }]);
    expect(res.body.Resources[1].endpoint).toBe('/Groups');
  });

  it('Schemas describes the User Account, the enterprise user and Group', async () => {
    const res = await scim('GET', '/Schemas');
    expect(res.status).toBe(200);
    expect(res.text).toContain('User Account');
    expect(res.body.Resources.map((r: { id: string }) => r.id)).toEqual([CORE, ENT, GROUP]);
    const one = await scim('GET', `/Schemas/${ENT}`);
    expect(one.body.attributes.map((a: { name: string }) => a.name)).toEqual(expect.arrayContaining(['employeeNumber', 'department', 'manager']));
  });

  it('empty lists still carry Resources: []', async () => {
    for (const p of ['/users', '/Groups']) {
      const res = await scim('GET', p);
      expect(res.status).toBe(200);
      expect(res.body).toMatchObject({ schemas: ['urn:ietf:params:scim:api:messages:2.0:ListResponse'], totalResults: 0, Resources: [] });
    }
  });
});

describe('authentication and enablement', () => {
  it('401 without a token, 403 with a token that lacks the SCIM role value, as SCIM error bodies', async () => {
    const none = await scim('GET', '/Users', undefined, {}, null);
    expect(none.status).toBe(401);
    expect(none.body).toMatchObject({ schemas: ['urn:ietf:params:scim:api:messages:2.0:Error'], status: '401' });
    const viewer = await scim('GET', '/Users', undefined, {}, await svc.token('Viewer'));
    expect(viewer.status).toBe(403);
    expect(viewer.body.status).toBe('403');
  });
});

describe('users', () => {
  let id1: string;
  let id2: string;

  it('POST creates: 201, Location, ETag, meta, the body as stored', async () => {
    const res = await scim('POST', '/Users', user('UserName123', { meta: { created: '2019-09-18T18:15:26Z', resourceType: 'User' } }));
    expect(res.status).toBe(201);
    expect(res.headers.get('content-type')).toMatch(/^application\/scim\+json/);
    id1 = res.body.id;
    expect(res.headers.get('location')).toBe(`${svc.baseUrl}/scim/v2/Users/${id1}`);
    expect(res.headers.get('etag')).toBe('W/"1"');
    expect(res.body.meta).toMatchObject({ resourceType: 'User', location: `${svc.baseUrl}/scim/v2/Users/${id1}`, version: 'W/"1"' });
    expect(res.body.meta.created).not.toBe('2019-09-18T18:15:26Z');
    // `Primary` as sent is stored as the schema spells it.
    expect(res.body.emails[0]).toEqual({ primary: true, type: 'work', value: 'UserName123@work.example.com' });
  });

  it('POST an enterprise user: Department in any case, a manager as an object with Value', async () => {
    const res = await scim(
      'POST',
      '/Users',
      user('UserName222', { schemas: [ENT, CORE], [ENT]: { Department: 'bob', Manager: { Value: 'SuzzyQ' }, employeeNumber: 701984 } }),
    );
    expect(res.status).toBe(201);
    id2 = res.body.id;
    expect(res.body.schemas).toEqual([CORE, ENT]);
    expect(res.body[ENT]).toEqual({ department: 'bob', manager: { value: 'SuzzyQ' }, employeeNumber: '701984' });
  });

  it('"active": "True" is a boolean; a duplicate userName (any case) is 409 uniqueness with detail; externalId need not be unique', async () => {
    const t = await scim('POST', '/Users', user('emp1', { active: 'True', externalId: 'shared' }));
    expect(t.status).toBe(201);
    expect(t.body.active).toBe(true);
    const dup = await scim('POST', '/Users', user('EMP1', { externalId: 'other' }));
    expect(dup.status).toBe(409);
    expect(dup.body).toMatchObject({ status: '409', scimType: 'uniqueness' });
    expect(dup.body.detail).toContain('EMP1');
    const sameExternal = await scim('POST', '/Users', user('emp2', { externalId: 'shared' }));
    expect(sameExternal.status).toBe(201);
    for (const id of [t.body.id, sameExternal.body.id]) expect((await scim('DELETE', `/Users/${id}`)).status).toBe(204);
  });

  it('400 without userName, 400 on a body that is not JSON; nothing is stored', async () => {
    const before = (await scim('GET', '/Users')).body.totalResults;
    const noName = await scim('POST', '/Users', { schemas: [CORE], displayName: 'x', active: true });
    expect(noName.status).toBe(400);
    expect(noName.body).toMatchObject({ status: '400', scimType: 'invalidValue' });
    const junk = await scim('POST', '/Users', '{ "acve": tre, "adadfdresses": [ ');
    expect(junk.status).toBe(400);
    expect(junk.body.scimType).toBe('invalidSyntax');
    expect((await scim('GET', '/Users')).body.totalResults).toBe(before);
  });

  it('GET by id; GET with attributes; filters with odd spellings', async () => {
    const one = await scim('GET', `/Users/${id1}`);
    expect(one.status).toBe(200);
    expect(one.body.id).toBe(id1);
    expect(one.headers.get('etag')).toBe('W/"1"');

    const attrs = await scim('GET', '/Users?attributes=userName,emails');
    expect(attrs.body.Resources).toContainEqual({ schemas: [CORE], id: id1, userName: 'UserName123', emails: expect.any(Array) });
    const filtered = await scim('GET', `/Users?attributes=${encodeURIComponent('emails[type eq "work"]')}`);
    expect(filtered.text).toContain('UserName123@work.example.com');

    const byDisplay = await scim('GET', '/Users/?filter=DisplayName+eq+%22UserName123+display%22');
    expect(byDisplay.status).toBe(200);
    expect(byDisplay.body.Resources.map((r: { id: string }) => r.id)).toEqual([id1]);
    const sw = await scim('GET', `/Users?filter=${encodeURIComponent('userName sw userName1')}`);
    expect(sw.body.totalResults).toBe(1);
    const complex = await scim(
      'GET',
      `/Users?filter=${encodeURIComponent('name.FamilyName eq Leenay and (emails.Value co work.example.com or emails.Value co nowhere.example)')}`,
    );
    expect(complex.body.totalResults).toBe(2);
    const valueFilter = await scim('GET', `/Users?filter=${encodeURIComponent('emails[type eq "home" and value ew "example.org"]')}`);
    expect(valueFilter.body.totalResults).toBe(2);
    const gt = await scim('GET', `/Users?filter=${encodeURIComponent('meta.Created gt 2015-10-10T14:38:21.8617979-07:00')}`);
    expect(gt.body.totalResults).toBe(2);
    const not = await scim('GET', `/Users?filter=${encodeURIComponent(`not (userName eq "UserName123") and ${ENT}:department eq "BOB"`)}`);
    expect(not.body.Resources.map((r: { id: string }) => r.id)).toEqual([id2]);
    const pr = await scim('GET', `/Users?filter=${encodeURIComponent(`${ENT}:manager pr`)}`);
    expect(pr.body.totalResults).toBe(1);
    const eq = await scim('GET', `/Users?filter=${encodeURIComponent('userName eq "username123"')}`);
    expect(eq.body.Resources.map((r: { id: string }) => r.id)).toEqual([id1]);
    const bad = await scim('GET', `/Users?filter=${encodeURIComponent('userName zz "x"')}`);
    expect(bad.status).toBe(400);
    expect(bad.body.scimType).toBe('invalidFilter');
  });

  it('paging: startIndex/count (any case), totalResults and itemsPerPage', async () => {
    const page = await scim('GET', '/Users?startIndex=1&count=1');
    expect(page.body).toMatchObject({ totalResults: 2, itemsPerPage: 1, startIndex: 1 });
    const second = await scim('GET', '/Users?startindex=2&Count=1');
    expect(second.body.itemsPerPage).toBe(1);
    expect(second.body.Resources[0].id).not.toBe(page.body.Resources[0].id);
    const zero = await scim('GET', '/Users?startindex=0&count=100');
    expect(zero.body.startIndex).toBe(1);
  });

  it('PATCH answers 204: Replace with and without a path, booleans, a manager as a bare id', async () => {
    const a = await scim('PATCH', `/Users/${id1}`, { schemas: [PATCH], Operations: [{ op: 'Replace', path: 'userName', value: 'ryan3' }] });
    expect(a.status).toBe(204);
    const b = await scim('PATCH', `/Users/${id1}`, { schemas: [PATCH], Operations: [{ op: 'Replace', path: 'active', value: 'False' }] });
    expect(b.status).toBe(204);
    const c = await scim('PATCH', `/Users/${id1}`, {
      schemas: [PATCH],
      Operations: [
        { op: 'Replace', value: { displayName: 'Ryan Three', 'name.givenName': 'Ry', [`${ENT}:department`]: 'Sales' } },
        { op: 'Add', path: `${ENT}:manager`, value: id2 },
        { op: 'replace', path: 'emails[type eq "work"].value', value: 'ryan3@work.example.com' },
        { op: 'add', path: 'phoneNumbers[type eq "mobile"].value', value: '+1 555 0100' },
        { op: 'remove', path: 'emails[type eq "home"]' },
      ],
    });
    expect(c.status).toBe(204);
    const got = await scim('GET', `/Users/${id1}`);
    expect(got.body).toMatchObject({
      userName: 'ryan3',
      active: false,
      displayName: 'Ryan Three',
      name: { givenName: 'Ry', familyName: 'Leenay' },
      [ENT]: { department: 'Sales', manager: { value: id2 } },
      emails: [{ primary: true, type: 'work', value: 'ryan3@work.example.com' }],
      phoneNumbers: [{ type: 'mobile', value: '+1 555 0100' }],
    });
    expect(got.body.meta.version).toBe('W/"4"');
    // The old name is free again, the new one taken.
    expect((await scim('GET', `/Users?filter=${encodeURIComponent('userName eq "UserName123"')}`)).body.totalResults).toBe(0);
  });

  it('PATCH with attributes answers 200 with the resource; a bad op is 400 and changes nothing', async () => {
    const ok = await scim('PATCH', `/Users/${id1}?attributes=title`, { schemas: [PATCH], Operations: [{ op: 'add', path: 'title', value: 'Engineer' }] });
    expect(ok.status).toBe(200);
    expect(ok.body).toEqual({ schemas: [CORE, ENT], id: id1, title: 'Engineer' });
    const bad = await scim('PATCH', `/Users/${id1}`, { schemas: [PATCH], Operations: [{ op: 'frobnicate', path: 'title', value: 'x' }] });
    expect(bad.status).toBe(400);
    const removeName = await scim('PATCH', `/Users/${id1}`, { schemas: [PATCH], Operations: [{ op: 'remove', path: 'userName' }] });
    expect(removeName.status).toBe(400);
    expect((await scim('GET', `/Users/${id1}`)).body.title).toBe('Engineer');
  });

  it('If-Match: a stale version is 412, the current one goes through', async () => {
    const cur = await scim('GET', `/Users/${id1}`);
    const etag = cur.headers.get('etag')!;
    const stale = await scim(
      'PATCH',
      `/Users/${id1}`,
      { schemas: [PATCH], Operations: [{ op: 'replace', path: 'title', value: 'x' }] },
      { 'if-match': 'W/"1"' },
    );
    expect(stale.status).toBe(412);
    expect(stale.body.status).toBe('412');
    const fresh = await scim(
      'PATCH',
      `/Users/${id1}`,
      { schemas: [PATCH], Operations: [{ op: 'replace', path: 'title', value: 'Lead' }] },
      { 'if-match': etag },
    );
    expect(fresh.status).toBe(204);
    expect(fresh.headers.get('etag')).not.toBe(etag);
  });

  it('PUT replaces: unknown attributes are ignored, a missing userName is 400', async () => {
    const put = await scim('PUT', `/Users/${id2}`, {
      ...user('UserNameReplace2'),
      id: id2,
      adreses: [{ country: 'Germany' }],
      name: { formatted: 'NewName', familyName: 'Leenay', givenName: 'Ryan' },
    });
    expect(put.status).toBe(200);
    expect(put.body.name.formatted).toBe('NewName');
    expect(put.text).not.toContain('adreses');
    expect(put.body[ENT]).toBeUndefined();
    const noName = await scim('PUT', `/Users/${id2}`, { id: id2, userame: 'x', active: false });
    expect(noName.status).toBe(400);
  });

  it('DELETE answers 204, then 404', async () => {
    expect((await scim('DELETE', `/Users/${id2}`)).status).toBe(204);
    const gone = await scim('GET', `/Users/${id2}`);
    expect(gone.status).toBe(404);
    expect(gone.body).toMatchObject({ status: '404', detail: expect.any(String) });
    expect((await scim('DELETE', `/Users/${id2}`)).status).toBe(404);
    // An id the store could never hold is simply not found.
    expect((await scim('GET', '/Users/a%23b%2Fc%3F')).status).toBe(404);
    expect((await scim('DELETE', `/Users/${id1}`)).status).toBe(204);
  });
});

describe('groups', () => {
  it('members: objects and bare ids, shown with their display names; remove by filter and all', async () => {
    const u3 = (await scim('POST', '/Users', user('UserName333', { displayName: 'lennay' }))).body.id;
    const u4 = (await scim('POST', '/Users', user('UserName444', { displayName: 'Four' }))).body.id;
    const g = await scim('POST', '/Groups', { schemas: [GROUP], externalId: 'g-1', displayName: 'Group1DisplayName', members: [] });
    expect(g.status).toBe(201);
    const gid = g.body.id;
    const filled = await scim('POST', '/Groups', { schemas: [GROUP], displayName: 'Group2', members: [{ value: u3, display: 'VP' }] });
    expect(filled.body.members).toEqual([{ value: u3, display: 'VP' }]);

    const add = await scim('PATCH', `/Groups/${gid}`, {
      schemas: [PATCH],
      Operations: [{ name: 'addMember', op: 'add', path: 'members', value: [{ displayName: 'new User', value: u4 }] }],
    });
    expect(add.status).toBe(204);
    const bare = await scim('PATCH', `/Groups/${gid}`, { schemas: [PATCH], Operations: [{ op: 'Add', path: 'members', value: u3 }] });
    expect(bare.status).toBe(204);
    const got = await scim('GET', `/Groups/${gid}`);
    expect(got.body.members).toEqual([
      { value: u4, display: 'new User' },
      { value: u3, display: 'lennay' },
    ]);
    const excluded = await scim('GET', `/Groups/${gid}?excludedAttributes=members`);
    expect(excluded.body.members).toBeUndefined();
    expect(excluded.body.displayName).toBe('Group1DisplayName');

    const byMember = await scim('GET', `/Groups?filter=${encodeURIComponent(`members[value eq "${u3}"]`)}&excludedAttributes=members`);
    expect(byMember.body.totalResults).toBe(2);

    const rm = await scim('PATCH', `/Groups/${gid}`, { schemas: [PATCH], Operations: [{ op: 'remove', path: `members[value eq "${u4}"]` }] });
    expect(rm.status).toBe(204);
    expect((await scim('GET', `/Groups/${gid}`)).text).not.toContain('new User');
    const rmList = await scim('PATCH', `/Groups/${gid}`, { schemas: [PATCH], Operations: [{ op: 'Remove', path: 'members', value: [{ value: u3 }] }] });
    expect(rmList.status).toBe(204);
    expect((await scim('GET', `/Groups/${gid}`)).body.members).toEqual([]);
    await scim('PATCH', `/Groups/${gid}`, { schemas: [PATCH], Operations: [{ op: 'add', path: 'members', value: [{ value: u3 }] }] });
    await scim('PATCH', `/Groups/${gid}`, { schemas: [PATCH], Operations: [{ op: 'remove', path: 'members' }] });
    expect((await scim('GET', `/Groups/${gid}`)).body.members).toBeUndefined();

    const put = await scim('PUT', `/Groups/${gid}`, { schemas: [GROUP], id: gid, displayName: 'Tiffany Ortiz' });
    expect(put.status).toBe(200);
    expect(put.body.displayName).toBe('Tiffany Ortiz');
    const rename = await scim('PATCH', `/Groups/${gid}`, { schemas: [PATCH], Operations: [{ op: 'Replace', value: { id: gid, displayName: 'Renamed' } }] });
    expect(rename.status).toBe(204);

    for (const [t, id] of [
      ['Groups', gid],
      ['Groups', filled.body.id],
      ['Users', u3],
      ['Users', u4],
    ]) {
      expect((await scim('DELETE', `/${t}/${id}`)).status).toBe(204);
    }
    expect((await scim('GET', '/Users?attributes=userName')).body.Resources).toEqual([]);
    expect((await scim('GET', '/Groups')).body.Resources).toEqual([]);
  });
});

describe('bulk', () => {
  it('creates users and a group whose members name them by bulkId; Entra inbound records re-sent are replaced', async () => {
    const inbound = (n: number, title: string) => ({
      method: 'POST',
      bulkId: `b${n}`,
      path: '/Users',
      data: {
        schemas: [CORE, ENT, 'urn:ietf:params:scim:schemas:extension:csv:1.0:User'],
        externalId: `70198${n}`,
        userName: `bulk${n}@example.com`,
        name: { familyName: 'Jensen', givenName: `B${n}` },
        displayName: `Bulk ${n}`,
        title,
        active: true,
        [ENT]: { employeeNumber: `70198${n}`, department: 'Dept', manager: { value: n > 1 ? 'bulkId:b1' : undefined } },
        'urn:ietf:params:scim:schemas:extension:csv:1.0:User': { HireDate: '2024-01-01' },
      },
    });
    const body = {
      schemas: ['urn:ietf:params:scim:api:messages:2.0:BulkRequest'],
      Operations: [
        {
          method: 'POST',
          bulkId: 'g',
          path: '/Groups',
          data: { schemas: [GROUP], displayName: 'Bulk group', members: [{ value: 'bulkId:b1' }, { value: 'bulkId:b2' }] },
        },
        inbound(1, 'Engineer'),
        inbound(2, 'Engineer'),
      ],
      failOnErrors: null,
    };
    const res = await scim('POST', '/Bulk', body);
    expect(res.status).toBe(200);
    expect(res.body.schemas).toEqual(['urn:ietf:params:scim:api:messages:2.0:BulkResponse']);
    const ops = res.body.Operations as { bulkId: string; status: string; location: string }[];
    // In request order; the group waited for the users its members name.
    expect(ops.map((o) => [o.bulkId, o.status])).toEqual([
      ['g', '201'],
      ['b1', '201'],
      ['b2', '201'],
    ]);
    const b1 = ops[1].location.split('/').pop();
    const b2 = ops[2].location.split('/').pop();
    const group = await scim('GET', `/Groups/${ops[0].location.split('/').pop()}`);
    expect(group.body.members).toEqual([
      { value: b1, display: 'Bulk 1' },
      { value: b2, display: 'Bulk 2' },
    ]);
    const u2 = await scim('GET', `/Users/${b2}`);
    expect(u2.body[ENT].manager).toEqual({ value: b1 });
    expect(u2.body['urn:ietf:params:scim:schemas:extension:csv:1.0:User']).toEqual({ HireDate: '2024-01-01' });

    const again = await scim('POST', '/Bulk', { ...body, Operations: [inbound(1, 'Manager')] });
    expect(again.body.Operations[0].status).toBe('200');
    expect((await scim('GET', `/Users/${b1}`)).body.title).toBe('Manager');
  });

  it('more than 50 operations is 413 tooMany; errors are reported per operation', async () => {
    const many = Array.from({ length: 51 }, (_, i) => ({ method: 'POST', path: '/Users', bulkId: `x${i}`, data: { userName: `many${i}` } }));
    const res = await scim('POST', '/Bulk', { schemas: ['urn:ietf:params:scim:api:messages:2.0:BulkRequest'], Operations: many });
    expect(res.status).toBe(413);
    expect(res.body.scimType).toBe('tooMany');
    expect((await scim('GET', `/Users?filter=${encodeURIComponent('userName sw many')}`)).body.totalResults).toBe(0);

    const mixed = await scim('POST', '/Bulk', {
      schemas: ['urn:ietf:params:scim:api:messages:2.0:BulkRequest'],
      Operations: [
        { method: 'POST', path: '/Users', bulkId: 'ok', data: { userName: 'mixed-ok' } },
        { method: 'POST', path: '/Users', bulkId: 'dup', data: { userName: 'MIXED-OK' } },
        { method: 'DELETE', path: '/Users/does-not-exist' },
      ],
    });
    expect(mixed.status).toBe(200);
    expect(mixed.body.Operations.map((o: { status: string }) => o.status)).toEqual(['201', '409', '404']);
    expect(mixed.body.Operations[1].response).toMatchObject({ scimType: 'uniqueness', status: '409' });
  });
});

describe('inbound full and delta sync reads', () => {
  const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
  const window = (from: string, to: string) =>
    encodeURIComponent(`userName sw "delta-" and active eq true and (meta.lastModified ge "${from}" and meta.lastModified le "${to}")`);
  const ids = (res: Res) => (res.body.Resources as { id: string }[]).map((r) => r.id).sort();

  it('pages a lastModified window from year 0001, then a delta window holds only what changed after the watermark', async () => {
    const made: string[] = [];
    for (const [n, active] of [
      [1, true],
      [2, true],
      [3, true],
      [4, false],
    ] as const) {
      const res = await scim('POST', '/Users', user(`delta-${n}`, { active, schemas: [CORE, ENT], [ENT]: { employeeNumber: `9${n}`, department: 'Ops' } }));
      expect(res.status).toBe(201);
      made.push(res.body.id);
    }
    await sleep(10);
    const w0 = new Date().toISOString();

    const first = await scim('GET', `/Users?filter=${window('0001-01-03T00:00:00.0000000Z', w0)}&count=2&startIndex=1`);
    expect(first.status).toBe(200);
    expect(first.body).toMatchObject({ totalResults: 3, itemsPerPage: 2, startIndex: 1 });
    const second = await scim('GET', `/Users?filter=${window('0001-01-03T00:00:00.0000000Z', w0)}&count=2&startIndex=3`);
    expect(second.body).toMatchObject({ totalResults: 3, itemsPerPage: 1, startIndex: 3 });
    expect([...ids(first), ...ids(second)].sort()).toEqual(made.slice(0, 3).sort());

    await sleep(10);
    const activated = await scim('PATCH', `/Users/${made[3]}`, { schemas: [PATCH], Operations: [{ op: 'replace', path: 'active', value: true }] });
    expect(activated.status).toBe(204);
    const managed = await scim('PATCH', `/Users/${made[2]}`, { schemas: [PATCH], Operations: [{ op: 'replace', path: `${ENT}.manager`, value: made[0] }] });
    expect(managed.status).toBe(204);
    const w1 = new Date().toISOString();

    const delta = await scim('GET', `/Users?filter=${window(w0, w1)}&count=100&startindex=0`);
    expect(delta.status).toBe(200);
    expect(ids(delta)).toEqual([made[2], made[3]].sort());
    expect((await scim('GET', `/Users/${made[2]}`)).body[ENT].manager).toEqual({ value: made[0] });
  });

  it('answers a base that already ends in /scim/v2 with /scim/ added again, as inbound provisioning samples write it', async () => {
    const made = await scim('POST', '/scim/Users', user('doubled-base'));
    expect(made.status).toBe(201);
    const got = await scim('GET', `/scim/Users?filter=${encodeURIComponent('userName eq "doubled-base"')}`);
    expect(got.status).toBe(200);
    expect(got.body.totalResults).toBe(1);
    expect(got.body.Resources[0].id).toBe(made.body.id);
    expect((await scim('GET', `/SCIM/Users/${made.body.id}`)).body.userName).toBe('doubled-base');
    expect((await scim('GET', '/scim')).status).toBe(404);
  });
});

describe('audit', () => {
  it('records every request under targetType scimResource: writes by resource, reads by path, refusals as failures', async () => {
    const created = await scim('POST', '/Users', user('audited'));
    await scim('GET', `/Users/${created.body.id}?attributes=userName`);
    await scim('POST', '/Users', user('AUDITED'));
    const res = await svc.call('GET', 'audit?targetType=scimResource&take=200');
    expect(res.status).toBe(200);
    const items = (res.body.items ?? res.body) as { action: string; targetId: string; outcome: string; actorUpn: string }[];
    expect(items.every((i) => i.actorUpn === 'operator.upn@example.test')).toBe(true);
    expect(items).toContainEqual(expect.objectContaining({ action: 'create', targetId: `User/${created.body.id}`, outcome: 'success' }));
    expect(items).toContainEqual(expect.objectContaining({ action: 'read', targetId: `/Users/${created.body.id}?attributes=userName`, outcome: 'success' }));
    expect(items).toContainEqual(expect.objectContaining({ action: 'create', targetId: '/Users', outcome: 'failure' }));
  });
});
