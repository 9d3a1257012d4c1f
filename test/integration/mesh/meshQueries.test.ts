import { startService, type ServiceUnderTest } from '../../support/service';
import { fileConnector, folder, rule, runImport, writeCsv } from '../sync/syncSupport';

/**
 * Mesh queries over HTTP (GET /mesh/objects, POST /mesh/objects/search, GET /mesh/objects/{id}) on a mesh
 * built by real imports through the file connector, read from the process's read model (lib/mesh/readModel.ts).
 */
jest.setTimeout(180_000);

const H = ['id', 'name', 'dept', 'mail', 'active', 'groups', 'note', 'managerId'];
type Row = Record<string, string>;
const USERS: Row[] = [
  { id: 'a1', name: 'alice', dept: 'Sales', mail: 'alice@corp.test', active: 'true', groups: 'g1;g2', note: 'hello', managerId: '' },
  { id: 'a2', name: 'Alice', dept: 'Support', mail: 'alice2@corp.test', active: '', groups: '', note: '', managerId: 'bob' },
  { id: 'a3', name: 'bob', dept: 'R&D', mail: 'bob@corp.test', active: 'no', groups: 'G2', note: '', managerId: '' },
  { id: 'a4', name: 'Émile', dept: 'Sales', mail: 'emile@corp.test', active: 'YES', groups: 'g3', note: '', managerId: '' },
  { id: 'a5', name: '山田太郎', dept: '営業', mail: 'yamada@corp.test', active: '0', groups: '', note: '', managerId: '' },
  { id: 'a6', name: 'carol', dept: 'Support', mail: 'CAROL@Example.test', active: 'maybe', groups: '', note: '', managerId: '' },
  { id: 'a7', name: 'ÉCOLE', dept: '', mail: '', active: '', groups: '', note: '', managerId: '' },
];
const CONTACTS: Row[] = [
  { id: 'c1', name: 'dave', mail: 'dave@partner.test' },
  { id: 'c2', name: 'alice-contact', mail: 'ac@partner.test' },
];

let rt: ServiceUnderTest;
const usersDir = folder('ims-mesh-');
const contactsDir = folder('ims-mesh-');
let users = '';
let contacts = '';

// eslint-disable-next-line @typescript-eslint/no-explicit-any
const anchors = (body: any): string[] => body.items.map((i: { anchorValue: string }) => i.anchorValue);
const search = (body: Record<string, unknown>, on: ServiceUnderTest = rt) => on.call('POST', 'mesh/objects/search', { body });
const crit = (attributeName: string, operator: string, value?: string) => ({ attributeName, operator, ...(value === undefined ? {} : { value }) });

beforeAll(async () => {
  rt = await startService();
  writeCsv(usersDir, 'users.csv', H, USERS);
  writeCsv(contactsDir, 'contacts.csv', ['id', 'name', 'mail'], CONTACTS);
  users = await fileConnector(rt, 'Mesh users', usersDir, { multiValueColumns: ['groups'] });
  contacts = await fileConnector(rt, 'Mesh contacts', contactsDir);
  await rule(rt, { ruleType: 'ProjectionRule', connectorId: users, sourceAttribute: 'name', objectType: 'User' });
  const flows: [string, string][] = [
    ['dept', 'department'],
    ['mail', 'mail'],
    ['active', 'isActive'],
    ['groups', 'groups'],
    ['note', 'note'],
    ['managerId', 'managerId'],
  ];
  for (const [s, t] of flows) await rule(rt, { ruleType: 'FlowRule', connectorId: users, sourceAttribute: s, targetAttribute: t, confidence: 50 });
  await rule(rt, { ruleType: 'MeshComposerRule', relationshipType: 'manager', sourceAttribute: 'managerId' });
  await rule(rt, { ruleType: 'ProjectionRule', connectorId: contacts, sourceAttribute: 'name', objectType: 'Contact' });
  await rule(rt, { ruleType: 'FlowRule', connectorId: contacts, sourceAttribute: 'mail', targetAttribute: 'mail', confidence: 60 });
  expect(await runImport(rt, users)).toMatchObject({ status: 'Completed', stats: { objectsCreated: 7 } });
  expect(await runImport(rt, contacts)).toMatchObject({ status: 'Completed', stats: { objectsCreated: 2 } });
  await untilList((b) => b.totalCount === 9);
});

afterAll(async () => {
  await rt?.dispose();
});

/** Poll the list (the read model follows the feed within a poll interval) until `done`, with a deadline. */
// eslint-disable-next-line @typescript-eslint/no-explicit-any
async function untilList(done: (body: any) => boolean, on: ServiceUnderTest = rt, query = 'take=200', deadlineMs = 10_000): Promise<any> {
  const deadline = Date.now() + deadlineMs;
  for (;;) {
    const res = await on.call('GET', `mesh/objects?${query}`);
    if (res.status === 200 && done(res.body)) return res.body;
    if (Date.now() > deadline) throw new Error(`the mesh list did not reach the expected state: ${res.status} ${res.text.slice(0, 2000)}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

describe('list', () => {
  test('default page: every object ordered by anchor ignoring case, then id; take defaults to 50', async () => {
    const res = await rt.call('GET', 'mesh/objects');
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ totalCount: 9, skip: 0, take: 50 });
    expect(anchors(res.body).map((a) => a.toLowerCase())).toEqual(['alice', 'alice', 'alice-contact', 'bob', 'carol', 'dave', 'école', 'émile', '山田太郎']);
    // Equal anchors differing in case: id order.
    const [first, second] = res.body.items;
    expect(new Set([first.anchorValue, second.anchorValue])).toEqual(new Set(['alice', 'Alice']));
    expect(first.meshObjectId < second.meshObjectId).toBe(true);
  });

  test('items carry identity fields and attributeValues (multi-valued as arrays)', async () => {
    const res = await rt.call('GET', 'mesh/objects?search=alice&objectType=User');
    const a1 = res.body.items.find((i: { anchorValue: string }) => i.anchorValue === 'alice');
    expect(Object.keys(a1).sort()).toEqual(['anchorValue', 'attributeValues', 'createdOn', 'meshObjectId', 'objectType', 'state', 'updatedOn']);
    expect(a1.state).toBe('active');
    expect(a1.meshObjectId).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/);
    expect(a1.createdOn).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
    expect(a1.attributeValues).toMatchObject({ department: 'Sales', mail: 'alice@corp.test', isActive: 'true', groups: ['g1', 'g2'], note: 'hello' });
  });

  test('objectType filter (case-insensitive) and paging edges', async () => {
    expect((await rt.call('GET', 'mesh/objects?objectType=Contact')).body).toMatchObject({ totalCount: 2 });
    expect(anchors((await rt.call('GET', 'mesh/objects?objectType=contact')).body)).toEqual(['alice-contact', 'dave']);
    expect((await rt.call('GET', 'mesh/objects?objectType=User')).body.totalCount).toBe(7);
    expect((await rt.call('GET', 'mesh/objects?objectType=Nothing')).body).toEqual({ items: [], totalCount: 0, skip: 0, take: 50 });
    const tail = await rt.call('GET', 'mesh/objects?skip=7&take=50');
    expect(anchors(tail.body)).toEqual(['Émile', '山田太郎']);
    expect((await rt.call('GET', 'mesh/objects?skip=100')).body).toEqual({ items: [], totalCount: 9, skip: 100, take: 50 });
    expect((await rt.call('GET', 'mesh/objects?take=0')).body).toEqual({ items: [], totalCount: 9, skip: 0, take: 0 });
    const page = await rt.call('GET', 'mesh/objects?skip=2&take=3&objectType=User');
    expect(anchors(page.body)).toEqual(['bob', 'carol', 'ÉCOLE']);
    expect((await rt.call('GET', 'mesh/objects?take=200')).body).toMatchObject({ totalCount: 9, take: 200 });
  });

  test.each([['take=201'], ['take=-1'], ['skip=-1'], ['take=1.5'], ['skip=2.0'], ['take=ten'], ['search='], ['take=1&take=2']])('400 for %s', async (q) => {
    const res = await rt.call('GET', `mesh/objects?${q}`);
    expect(res.status).toBe(400);
    expect(res.headers.get('content-type')).toMatch(/application\/problem\+json/);
    expect(res.body.code).toBe('validation_failed');
    expect(res.body.errors[0].path).toBe(q.split('=')[0]);
  });

  test('search: case-insensitive substring of the anchor, non-ASCII included', async () => {
    expect(anchors((await rt.call('GET', 'mesh/objects?search=ALI')).body).map((a) => a.toLowerCase())).toEqual(['alice', 'alice', 'alice-contact']);
    expect(anchors((await rt.call('GET', `mesh/objects?search=${encodeURIComponent('ÉMI')}`)).body)).toEqual(['Émile']);
    expect(anchors((await rt.call('GET', `mesh/objects?search=${encodeURIComponent('écol')}`)).body)).toEqual(['ÉCOLE']);
    expect(anchors((await rt.call('GET', `mesh/objects?search=${encodeURIComponent('田太')}`)).body)).toEqual(['山田太郎']);
    const some = await rt.call('GET', 'mesh/objects?search=e&objectType=user&skip=2&take=2');
    expect(some.body).toMatchObject({ totalCount: 4, skip: 2, take: 2 });
    expect(anchors(some.body)).toEqual(['ÉCOLE', 'Émile']);
    expect((await rt.call('GET', 'mesh/objects?search=nobody')).body).toEqual({ items: [], totalCount: 0, skip: 0, take: 50 });
  });

  test('a Viewer may read; no token is 401', async () => {
    expect((await rt.call('GET', 'mesh/objects', { role: 'Viewer' })).status).toBe(200);
    expect((await rt.call('GET', 'mesh/objects', { role: null })).status).toBe(401);
  });
});

describe('advanced search', () => {
  const cases: [string, Record<string, unknown>, string[]][] = [
    ['equals (case-insensitive value, attribute name any case)', { criteria: [crit('DEPARTMENT', 'equals', 'sales')] }, ['alice', 'Émile']],
    ['equals on a multi-valued attribute: any value', { criteria: [crit('groups', 'equals', 'g2')] }, ['alice', 'bob']],
    ['equals non-ASCII', { criteria: [crit('department', 'equals', '営業')] }, ['山田太郎']],
    ['contains', { criteria: [crit('mail', 'contains', 'EXAMPLE')] }, ['carol']],
    ['startswith', { criteria: [crit('mail', 'startswith', 'ALICE')] }, ['alice', 'Alice']],
    ['endswith', { criteria: [crit('mail', 'endswith', '@partner.test')], objectType: 'Contact' }, ['alice-contact', 'dave']],
    ['ispresent', { criteria: [crit('note', 'ispresent')] }, ['alice']],
    ['ispresent on a multi-valued attribute', { criteria: [crit('groups', 'ispresent')], objectType: 'User' }, ['alice', 'bob', 'Émile']],
    ['isnotpresent (objects without the attribute at all included)', { criteria: [crit('department', 'isnotpresent')] }, ['alice-contact', 'dave', 'ÉCOLE']],
    ['istrue: true, 1, yes in any case', { criteria: [crit('isActive', 'istrue')] }, ['alice', 'Émile']],
    ['isfalse: false, 0, no in any case', { criteria: [crit('isActive', 'isfalse')] }, ['bob', '山田太郎']],
    ['an attribute nobody has: ispresent matches nothing', { criteria: [crit('noSuchAttribute', 'ispresent')] }, []],
    ['an attribute nobody has: equals matches nothing', { criteria: [crit('noSuchAttribute', 'equals', 'x')] }, []],
    [
      'combined with AND, with objectType and anchorSearch',
      {
        objectType: 'User',
        anchorSearch: 'MI',
        criteria: [crit('department', 'equals', 'SALES'), crit('isActive', 'istrue'), crit('mail', 'contains', 'corp')],
      },
      ['Émile'],
    ],
    ['no criteria: the list', { anchorSearch: 'ALICE' }, ['alice', 'Alice', 'alice-contact']],
  ];

  test.each(cases)('%s', async (_name, body, expected) => {
    const res = await search(body);
    expect(res.status).toBe(200);
    expect(res.body.totalCount).toBe(expected.length);
    const got = anchors(res.body);
    // Equal anchors (alice/Alice) come in id order: compare ignoring that tie.
    expect(got.map((a) => a.toLowerCase())).toEqual(expected.map((a) => a.toLowerCase()));
    expect(new Set(got)).toEqual(new Set(expected));
  });

  test('isnotpresent complements ispresent; paging reports the exact total', async () => {
    const res = await search({ criteria: [crit('note', 'isnotpresent')], skip: 2, take: 3 });
    expect(res.body).toMatchObject({ totalCount: 8, skip: 2, take: 3 });
    expect(anchors(res.body)).toEqual(['bob', 'carol', 'dave']);
    expect((await search({ criteria: [crit('isActive', 'ispresent')], take: 0 })).body).toEqual({ items: [], totalCount: 5, skip: 0, take: 0 });
    expect((await search({ criteria: [crit('isActive', 'ispresent')], skip: 50 })).body).toEqual({ items: [], totalCount: 5, skip: 50, take: 50 });
  });

  test.each([
    ['unknown operator', { criteria: [crit('mail', 'like', 'x')] }, '/criteria/0/operator'],
    ['operator in upper case', { criteria: [crit('mail', 'EQUALS', 'x')] }, '/criteria/0/operator'],
    ['missing value', { criteria: [crit('mail', 'contains')] }, '/criteria/0/value'],
    ['missing attributeName', { criteria: [{ operator: 'ispresent' }] }, '/criteria/0/attributeName'],
    ['take over 200', { take: 201 }, '/take'],
    ['negative skip', { skip: -1 }, '/skip'],
    ['non-integer take', { take: 2.5 }, '/take'],
    ['take as a string', { take: '10' }, '/take'],
    ['unknown property', { search: 'x' }, '/search'],
  ])('400: %s', async (_name, body, path) => {
    const res = await search(body);
    expect(res.status).toBe(400);
    expect(res.body.code).toBe('validation_failed');
    expect(res.body.errors.map((e: { path: string }) => e.path)).toContain(path);
  });

  test('no body is 400, a non-JSON body is 415', async () => {
    expect((await rt.call('POST', 'mesh/objects/search')).status).toBe(400);
    expect((await rt.call('POST', 'mesh/objects/search', { body: 'x', headers: { 'content-type': 'text/plain' } })).status).toBe(415);
  });
});

describe('detail', () => {
  test('attributes (one entry per value, source connector, confidence, updatedOn) and relationships', async () => {
    const list = await search({ anchorSearch: 'alice', objectType: 'User' });
    const byAnchor = new Map<string, string>(list.body.items.map((i: { anchorValue: string; meshObjectId: string }) => [i.anchorValue, i.meshObjectId]));
    const bob = (await search({ anchorSearch: 'bob' })).body.items[0].meshObjectId;
    const res = await rt.call('GET', `mesh/objects/${byAnchor.get('alice')}`);
    expect(res.status).toBe(200);
    expect(Object.keys(res.body).sort()).toEqual([
      'anchorValue',
      'attributes',
      'connectorObjects',
      'createdOn',
      'displayName',
      'incomingRelationships',
      'meshObjectId',
      'objectType',
      'relationships',
      'state',
      'updatedOn',
    ]);
    expect(res.body.state).toBe('active');
    expect(res.body).toMatchObject({ meshObjectId: byAnchor.get('alice'), objectType: 'User', anchorValue: 'alice', relationships: [] });
    const groups = res.body.attributes.filter((a: { attributeName: string }) => a.attributeName === 'groups');
    expect(groups.map((g: { attributeValue: string }) => g.attributeValue)).toEqual(['g1', 'g2']);
    expect(groups[0]).toEqual({ attributeName: 'groups', attributeValue: 'g1', source: users, confidence: 50, updatedOn: expect.stringMatching(/Z$/) });
    expect(res.body.attributes.find((a: { attributeName: string }) => a.attributeName === 'department')).toMatchObject({
      attributeValue: 'Sales',
      source: users,
    });
    const a2 = await rt.call('GET', `mesh/objects/${byAnchor.get('Alice')!.toUpperCase()}`);
    expect(a2.status).toBe(200);
    expect(a2.body.relationships).toEqual([
      // The target's display name beside it (no display attribute here: its anchor).
      { relationshipType: 'manager', targetMeshObjectId: bob, targetAnchorValue: 'bob', targetObjectType: 'User', targetDisplayName: 'bob' },
    ]);
  });

  test('404 for an unknown id or a malformed one', async () => {
    const unknown = await rt.call('GET', 'mesh/objects/7d3c2b1a-0000-4000-8000-000000000000');
    expect(unknown.status).toBe(404);
    expect(unknown.body.code).toBe('not_found');
    expect((await rt.call('GET', 'mesh/objects/not-a-guid')).status).toBe(404);
  });
});

describe('changes', () => {
  test('a deleted object disappears from lists and searches; its detail answers as a tombstone (state deleted)', async () => {
    const carol = (await search({ anchorSearch: 'carol' })).body.items[0].meshObjectId;
    writeCsv(
      usersDir,
      'users.csv',
      H,
      USERS.filter((u) => u.id !== 'a6'),
    );
    expect(await runImport(rt, users)).toMatchObject({ status: 'Completed', stats: { objectsDeleted: 1 } });
    const body = await untilList((b) => b.totalCount === 8);
    expect(anchors(body)).not.toContain('carol');
    expect((await search({ criteria: [crit('mail', 'contains', 'example')] })).body.totalCount).toBe(0);
    // Kept as a tombstone until its purge (docs/deleted-objects.md): listed only with state=deleted.
    expect((await rt.call('GET', `mesh/objects/${carol}`)).body).toMatchObject({ meshObjectId: carol, state: 'deleted', anchorValue: 'carol' });
    expect(anchors((await rt.call('GET', 'mesh/objects?state=deleted')).body)).toEqual(['carol']);
  });

  test('an anchor that changes (the row re-keyed under a new name) moves in the order', async () => {
    const rows = USERS.filter((u) => u.id !== 'a6').map((u) => (u.id === 'a3' ? { ...u, id: 'a3b', name: 'Zed' } : u));
    writeCsv(usersDir, 'users.csv', H, rows);
    expect(await runImport(rt, users)).toMatchObject({ status: 'Completed' });
    const body = await untilList((b) => anchors(b).includes('Zed') && !anchors(b).includes('bob'));
    expect(anchors(body).map((a) => a.toLowerCase())).toEqual(['alice', 'alice', 'alice-contact', 'dave', 'zed', 'école', 'émile', '山田太郎']);
    expect(anchors((await search({ criteria: [crit('groups', 'equals', 'G2')] })).body).sort()).toEqual(['Zed', 'alice']);
  });

  test('a write imported through one runtime process is visible on another', async () => {
    const other = await startService({ prefix: rt.prefix, env: { Engine__InstanceName: `mesh-other-${rt.prefix}` } });
    try {
      await untilList((b) => b.totalCount === 8, other);
      writeCsv(contactsDir, 'contacts.csv', ['id', 'name', 'mail'], [...CONTACTS, { id: 'c3', name: 'Frank', mail: 'frank@partner.test' }]);
      expect(await runImport(rt, contacts)).toMatchObject({ status: 'Completed', stats: { objectsCreated: 1 } });
      // The run is finished: the other process's read model follows the feed within a poll (deadline, not a timing assertion).
      const body = await untilList((b) => anchors(b).includes('Frank'), other, 'objectType=Contact', 5_000);
      expect(anchors(body)).toEqual(['alice-contact', 'dave', 'Frank']);
      const res = await search({ anchorSearch: 'fra', criteria: [crit('mail', 'endswith', 'partner.test')] }, other);
      expect(anchors(res.body)).toEqual(['Frank']);
    } finally {
      await other.dispose();
    }
  });
});
