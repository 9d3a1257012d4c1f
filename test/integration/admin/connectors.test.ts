import path from 'node:path';
import os from 'node:os';
import { Attribute, Change, Client } from 'ldapts';
import { startPostgres, type Postgres } from '../../support/postgres';
import { serverAvailable } from '../../support/servers';
import { dumpTable, startService, USERS, type ServiceUnderTest } from '../../support/service';
import { startSlapd, type Slapd } from '../../support/slapd';

// A folder of the file connector must be inside its roots (the test service's are the temporary folder).
const HR_FOLDER = path.join(os.tmpdir(), 'hr-exports');

/**
 * Connectors over HTTP against the running service and Azurite. Creating an `sql` or directory connector runs a
 * live test connection, so `sql` connectors here point at a real PostgreSQL (table `people`, and a role `canary`
 * whose password is the canary of the secrets test) and `ldap`/`active_directory` ones at a real slapd (suffix
 * dc=example,dc=test, bound as cn=sync).
 */
let svc: ServiceUnderTest;
let pg: Postgres | undefined;
let slapd: Slapd | undefined;
const hasPostgres = serverAvailable('postgres');
const withPostgres = hasPostgres ? it : it.skip;

const SYNC_DN = 'cn=sync,dc=example,dc=test';
// Values read when called: the table of validation cases below is built before slapd starts (those requests
// are refused before any connection).
const ldapConfig = (extra: Record<string, unknown> = {}) => ({
  host: 'localhost',
  port: slapd?.ldapsPort,
  caCertificate: slapd?.caCertificate,
  baseDN: 'dc=example,dc=test',
  bindDN: 'cn=sync,dc=example,dc=test',
  bindPassword: 'S3cret-Bind-Pa55!',
  ...extra,
});

const sqlConfig = (extra: Record<string, unknown> = {}) => ({
  dialect: 'postgres',
  host: '127.0.0.1',
  port: pg?.port,
  database: 'hr',
  user: 'postgres',
  password: 'Sql-Pa55word-XYZ',
  anchorColumn: 'id',
  fullImportQuery: 'SELECT * FROM people',
  ...extra,
});

/** The password of the sync account in the directory (what a bind with `bindPassword` must match). */
async function setSyncPassword(password: string) {
  const admin = new Client({ url: slapd!.url });
  await admin.bind(slapd!.rootDN, slapd!.rootPassword);
  await admin.modify(SYNC_DN, [new Change({ operation: 'replace', modification: new Attribute({ type: 'userPassword', values: [password] }) })]);
  await admin.unbind();
}

beforeAll(async () => {
  svc = await startService();
  slapd = await startSlapd({ suffix: 'dc=example,dc=test' });
  const admin = new Client({ url: slapd.url });
  await admin.bind(slapd.rootDN, slapd.rootPassword);
  await admin.add(SYNC_DN, { objectClass: 'person', cn: 'sync', sn: 'sync', userPassword: 'S3cret-Bind-Pa55!' });
  await admin.unbind();
  if (!hasPostgres) return;
  pg = await startPostgres({ password: 'Sql-Pa55word-XYZ' });
  await pg.createDatabase('hr');
  await pg.query(
    "CREATE TABLE people (id int PRIMARY KEY, name text); CREATE ROLE canary LOGIN PASSWORD 'Plaintext-Canary-42'; GRANT SELECT ON people TO canary",
    [],
    'hr',
  );
});

afterAll(async () => {
  await svc?.dispose();
  await pg?.stop();
  await slapd?.stop();
});

async function create(name: string, type = 'ldap', config: Record<string, unknown> = ldapConfig()) {
  const res = await svc.call('POST', 'connectors', { body: { name, type, config } });
  expect(res.status).toBe(201);
  return res;
}

describe('create, read, list', () => {
  it('creates a connector: 201, Location, defaults applied, secret masked', async () => {
    const res = await create('Corp LDAP');
    expect(res.headers.get('location')).toBe(`/api/connectors/${res.body.id}`);
    expect(res.headers.get('content-type')).toMatch(/^application\/json/);
    expect(res.body).toMatchObject({
      name: 'Corp LDAP',
      type: 'ldap',
      status: 'active',
      lastSync: null,
      instanceId: null,
      // The port is the test directory's (the default, 636 with ldaps and 389 otherwise: test/unit/connectors/ldap/defaults.test.ts).
      config: {
        host: 'localhost',
        port: slapd!.ldapsPort,
        security: 'ldaps',
        bindPassword: '********',
        anchorAttribute: 'entryUUID',
        objectClasses: { inetOrgPerson: 'User', groupOfNames: 'Group' },
      },
    });
    expect(res.body.id).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/);
    expect(res.body.createdOn).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
    const got = await svc.call('GET', `connectors/${res.body.id}`, { role: 'Viewer' });
    expect(got.status).toBe(200);
    expect(got.body).toEqual(res.body);
  });

  it('applies type-dependent defaults for active_directory and custom', async () => {
    const ad = await create('Corp AD', 'active_directory', ldapConfig({ security: 'starttls', port: slapd!.port }));
    expect(ad.body.config).toMatchObject({ port: slapd!.port, anchorAttribute: 'objectGUID', objectClasses: { user: 'User', group: 'Group' } });
    const settings = { path: HR_FOLDER, anchorColumn: 'employeeId' };
    const custom = await create('Custom One', 'custom', { implementation: 'file', settings, secrets: { apiKey: 'custom-api-key-value' } });
    expect(custom.body.config).toEqual({ implementation: 'file', settings, secrets: { apiKey: '********' }, objectType: 'User' });
  });

  // The sql port default (5432) cannot be reached by a test connection here: test/unit/connectors/sql/schema.test.ts.
  withPostgres('applies sql defaults and accepts its deletion threshold', async () => {
    const sql = await create('HR DB', 'sql', sqlConfig({ deletionThreshold: { objects: 10, percent: 5 } }));
    expect(sql.body.config).toMatchObject({ port: pg!.port, password: '********', objectType: 'User', deltaOverlapSeconds: 0, timeoutSeconds: 30 });
    expect(sql.body.config.deletionThreshold).toEqual({ objects: 10, percent: 5 });
  });

  it('accepts a deletion threshold as a count or { objects, percent }, and refuses one out of range', async () => {
    const counted = await create('Threshold Count', 'ldap', ldapConfig({ deletionThreshold: 250 }));
    expect(counted.body.config.deletionThreshold).toBe(250);
    const shaped = await create('Threshold Shape', 'ldap', ldapConfig({ deletionThreshold: { objects: 10, percent: 5 } }));
    expect(shaped.body.config.deletionThreshold).toEqual({ objects: 10, percent: 5 });
    const bad = await svc.call('POST', 'connectors', {
      body: { name: 'Threshold Bad', type: 'ldap', config: ldapConfig({ deletionThreshold: { percent: 101 } }) },
    });
    expect(bad.status).toBe(400);
    expect(bad.body.errors).toEqual(expect.arrayContaining([expect.objectContaining({ path: expect.stringMatching(/^\/config\/deletionThreshold/) })]));
  });

  it('refuses a custom connector whose implementation is not registered, or whose settings it rejects', async () => {
    const unknown = await svc.call('POST', 'connectors', { body: { name: 'Custom Unknown', type: 'custom', config: { implementation: 'acme.hr' } } });
    expect(unknown.status).toBe(400);
    expect(unknown.body.errors).toEqual([expect.objectContaining({ path: '/config/implementation' })]);
    const bad = await svc.call('POST', 'connectors', {
      body: { name: 'Custom Bad', type: 'custom', config: { implementation: 'file', settings: { path: '/srv' } } },
    });
    expect(bad.status).toBe(400);
    expect(bad.body.errors).toEqual(expect.arrayContaining([expect.objectContaining({ path: expect.stringMatching(/^\/config\/settings/) })]));
  });

  it('lists connectors as { connectors, total } with the list fields only (updatedOn: when its configuration last changed)', async () => {
    const res = await svc.call('GET', 'connectors', { role: 'Viewer' });
    expect(res.status).toBe(200);
    expect(res.body.total).toBe(res.body.connectors.length);
    expect(res.body.total).toBeGreaterThanOrEqual(4);
    for (const c of res.body.connectors) {
      expect(Object.keys(c).sort()).toEqual(['id', 'lastSync', 'name', 'status', 'type', 'updatedOn']);
      expect(c.updatedOn).toBe((await svc.call('GET', `connectors/${c.id}`)).body.updatedOn);
    }
  });
});

describe('secrets', () => {
  withPostgres('never stores a secret in clear text and never returns it', async () => {
    const res = await create('Secret Holder', 'sql', sqlConfig({ user: 'canary', password: 'Plaintext-Canary-42' }));
    const raw = JSON.stringify(await dumpTable('Connectors'));
    expect(raw).toContain(res.body.id);
    expect(raw).not.toContain('Plaintext-Canary-42');
    expect(raw).not.toContain('S3cret-Bind-Pa55!');
    expect(raw).not.toContain('custom-api-key-value');
    const list = await svc.call('GET', 'connectors');
    const one = await svc.call('GET', `connectors/${res.body.id}`);
    expect(list.text + one.text).not.toContain('Plaintext-Canary-42');
    expect(svc.logs()).not.toContain('Plaintext-Canary-42');
  });

  it('a PUT with the placeholder keeps the stored secret (unless it moves the endpoint); a new value replaces it', async () => {
    const { connectorConfigWithSecrets } = await import('../../../lib/secrets/connectorSecrets');
    const { setSecretsKey } = await import('../../../lib/secrets');
    const { readFileSync } = await import('node:fs');
    await setSyncPassword('First-Secret-1');
    try {
      const { body: c } = await create('Keeper', 'ldap', ldapConfig({ bindPassword: 'First-Secret-1' }));
      const kept = await svc.call('PUT', `connectors/${c.id}`, { body: { name: 'Keeper', config: ldapConfig({ bindPassword: '********', pageSize: 200 }) } });
      expect(kept.status).toBe(200);
      expect(kept.body.config).toMatchObject({ pageSize: 200, bindPassword: '********' });
      setSecretsKey(Buffer.from(readFileSync(`${svc.dataDir}/secrets.key`, 'utf8').trim(), 'base64'));
      expect((await connectorConfigWithSecrets(c.id)).config.bindPassword).toBe('First-Secret-1');
      // Another host with the stored password: the secret must be sent again (test/integration/security/secretDestination.test.ts).
      const moved = await svc.call('PUT', `connectors/${c.id}`, {
        body: { name: 'Keeper', config: ldapConfig({ bindPassword: '********', host: '127.0.0.1' }) },
      });
      expect(moved.status).toBe(400);
      expect(moved.body.errors).toEqual([{ path: '/config/bindPassword', message: expect.stringContaining('must be sent again') }]);
      await setSyncPassword('Second-Secret-2');
      const replaced = await svc.call('PUT', `connectors/${c.id}`, { body: { name: 'Keeper', config: ldapConfig({ bindPassword: 'Second-Secret-2' }) } });
      expect(replaced.status).toBe(200);
      expect((await connectorConfigWithSecrets(c.id)).config.bindPassword).toBe('Second-Secret-2');
      expect(JSON.stringify(await dumpTable('Connectors'))).not.toContain('Second-Secret-2');
    } finally {
      await setSyncPassword('S3cret-Bind-Pa55!');
    }
  });

  it('refuses the placeholder on create (nothing to keep)', async () => {
    const res = await svc.call('POST', 'connectors', { body: { name: 'No Secret', type: 'ldap', config: ldapConfig({ bindPassword: '********' }) } });
    expect(res.status).toBe(400);
    expect(res.body.errors).toContainEqual({ path: '/config/bindPassword', message: expect.stringContaining('placeholder') });
  });
});

describe('validation errors (problem+json, nothing written)', () => {
  const cases: [string, unknown, number, string, string?][] = [
    ['unknown type', { name: 'x1', type: 'ftp', config: {} }, 400, 'validation_failed', '/type'],
    ['unknown top-level field', { name: 'x2', type: 'ldap', config: ldapConfig(), extra: 1 }, 400, 'validation_failed', '/extra'],
    ['unknown config field', { name: 'x3', type: 'ldap', config: ldapConfig({ colour: 'red' }) }, 400, 'validation_failed', '/config/colour'],
    [
      'missing required config field',
      { name: 'x4', type: 'ldap', config: { host: 'h', baseDN: 'b', bindDN: 'c' } },
      400,
      'validation_failed',
      '/config/bindPassword',
    ],
    ['wrong type', { name: 'x5', type: 'ldap', config: ldapConfig({ port: '389' }) }, 400, 'validation_failed', '/config/port'],
    ['port out of range', { name: 'x6', type: 'ldap', config: ldapConfig({ port: 70000 }) }, 400, 'validation_failed', '/config/port'],
    [
      'security none without allowInsecure',
      { name: 'x7', type: 'ldap', config: ldapConfig({ security: 'none' }) },
      400,
      'validation_failed',
      '/config/allowInsecure',
    ],
    [
      'the DN as the anchor',
      { name: 'x11', type: 'ldap', config: ldapConfig({ anchorAttribute: 'distinguishedName' }) },
      400,
      'validation_failed',
      '/config/anchorAttribute',
    ],
    ['blank name', { name: '   ', type: 'ldap', config: ldapConfig() }, 400, 'validation_failed', '/name'],
    ['missing name', { type: 'ldap', config: ldapConfig() }, 400, 'validation_failed', '/name'],
    [
      'bad expression',
      { name: 'x8', type: 'ldap', config: ldapConfig({ exportDnTemplate: '"cn=" + source.cn +' }) },
      400,
      'validation_failed',
      '/config/exportDnTemplate',
    ],
    [
      'sql delta query without deltaColumn',
      { name: 'x9', type: 'sql', config: sqlConfig({ deltaImportQuery: 'SELECT * FROM p WHERE t > :watermark' }) },
      400,
      'validation_failed',
      '/config/deltaColumn',
    ],
    [
      'prototype key in custom settings',
      { name: 'x10', type: 'custom', config: { implementation: 'a', settings: JSON.parse('{"__proto__": {"x": 1}}') } },
      400,
      'validation_failed',
      '/config/settings',
    ],
    ['array body', [], 400, 'validation_failed', '/'],
  ];
  it.each(cases)('%s', async (_name, body, status, code, path) => {
    const before = await dumpTable('Connectors');
    const res = await svc.call('POST', 'connectors', { body });
    expect(res.status).toBe(status);
    expect(res.headers.get('content-type')).toBe('application/problem+json');
    expect(res.body).toMatchObject({ status, code, instance: '/api/connectors' });
    expect(typeof res.body.traceId).toBe('string');
    if (path) expect(res.body.errors.map((e: { path: string }) => e.path)).toContain(path);
    expect(await dumpTable('Connectors')).toEqual(before);
  });

  it('malformed JSON: 400 malformed_json', async () => {
    const res = await svc.call('POST', 'connectors', { body: '{"name": ', headers: { 'content-type': 'application/json' } });
    expect(res.status).toBe(400);
    expect(res.body.code).toBe('malformed_json');
  });

  it('wrong content type: 415', async () => {
    const res = await svc.call('POST', 'connectors', {
      body: JSON.stringify({ name: 'x', type: 'ldap', config: ldapConfig() }),
      headers: { 'content-type': 'text/plain' },
    });
    expect(res.status).toBe(415);
    expect(res.body.code).toBe('unsupported_media_type');
  });

  it('no body: 400', async () => {
    const res = await svc.call('POST', 'connectors');
    expect(res.status).toBe(400);
    expect(res.body.code).toBe('validation_failed');
  });

  it('oversized body: 413', async () => {
    const res = await svc.call('POST', 'connectors', {
      body: JSON.stringify({ name: 'big', type: 'custom', config: { implementation: 'a', settings: { blob: 'x'.repeat(2 * 1024 * 1024) } } }),
      headers: { 'content-type': 'application/json' },
    });
    expect(res.status).toBe(413);
    expect(res.headers.get('content-type')).toBe('application/problem+json');
  });

  it('ids that are not GUIDs: 404 problem', async () => {
    for (const [method, id] of [
      ['GET', 'not-a-guid'],
      ['PUT', '123'],
      ['DELETE', '%27%20or%201%3D1'],
    ] as const) {
      const res = await svc.call(method, `connectors/${id}`, method === 'PUT' ? { body: { name: 'x', config: {} } } : {});
      expect(res.status).toBe(404);
      expect(res.body.code).toBe('not_found');
    }
    const missing = await svc.call('GET', 'connectors/00000000-0000-4000-8000-000000000000');
    expect(missing.status).toBe(404);
  });
});

describe('names', () => {
  it('are unique case-insensitively: 409', async () => {
    await create('Unique Name');
    const res = await svc.call('POST', 'connectors', { body: { name: 'UNIQUE name', type: 'ldap', config: ldapConfig() } });
    expect(res.status).toBe(409);
    expect(res.body.code).toBe('conflict');
  });

  it('concurrent creates with one name: exactly one 201', async () => {
    const results = await Promise.all(
      Array.from({ length: 8 }, (_, i) =>
        svc.call('POST', 'connectors', { body: { name: i % 2 ? 'Race Name' : 'race name', type: 'ldap', config: ldapConfig() } }),
      ),
    );
    const statuses = results.map((r) => r.status).sort();
    expect(statuses.filter((s) => s === 201)).toHaveLength(1);
    expect(statuses.filter((s) => s === 409)).toHaveLength(7);
    const list = await svc.call('GET', 'connectors');
    expect(list.body.connectors.filter((c: { name: string }) => c.name.toLowerCase() === 'race name')).toHaveLength(1);
  });

  it('a rename frees the old name and takes the new one; renaming onto a taken name is 409', async () => {
    const { body: a } = await create('Old Name');
    await create('Taken Name');
    const taken = await svc.call('PUT', `connectors/${a.id}`, { body: { name: 'taken NAME', config: ldapConfig({ bindPassword: '********' }) } });
    expect(taken.status).toBe(409);
    const renamed = await svc.call('PUT', `connectors/${a.id}`, { body: { name: 'New Name', config: ldapConfig({ bindPassword: '********' }) } });
    expect(renamed.status).toBe(200);
    expect(renamed.body.name).toBe('New Name');
    await create('old name');
  });
});

describe('update', () => {
  it('type cannot change: 400; same type may be sent', async () => {
    const { body: c } = await create('Typed');
    const res = await svc.call('PUT', `connectors/${c.id}`, { body: { name: 'Typed', type: 'sql', config: ldapConfig() } });
    expect(res.status).toBe(400);
    expect(res.body.errors).toContainEqual(expect.objectContaining({ path: '/type' }));
    const same = await svc.call('PUT', `connectors/${c.id}`, { body: { name: 'Typed', type: 'ldap', config: ldapConfig() } });
    expect(same.status).toBe(200);
    expect(Date.parse(same.body.updatedOn)).toBeGreaterThanOrEqual(Date.parse(c.updatedOn));
  });

  it('404 for an unknown connector', async () => {
    const res = await svc.call('PUT', 'connectors/00000000-0000-4000-8000-000000000001', { body: { name: 'x', config: ldapConfig() } });
    expect(res.status).toBe(404);
  });
});

describe('delete', () => {
  it('204, then 404; its rules are gone', async () => {
    const { body: c } = await create('Doomed');
    const rule = await svc.call('POST', 'rules', {
      body: { ruleName: 'join', ruleType: 'JoinRule', connectorId: c.id, sourceAttribute: 'mail', targetAttribute: 'mail' },
    });
    expect(rule.status).toBe(201);
    const del = await svc.call('DELETE', `connectors/${c.id}`);
    expect(del.status).toBe(204);
    expect(del.text).toBe('');
    expect((await svc.call('GET', `connectors/${c.id}`)).status).toBe(404);
    expect((await svc.call('GET', `rules/${rule.body.ruleId}`)).status).toBe(404);
    expect((await svc.call('DELETE', `connectors/${c.id}`)).status).toBe(404);
    expect(await dumpTable('Operations')).toEqual([]);
    await create('Doomed');
  });

  it('409 while a run is Running', async () => {
    const { body: c } = await create('Busy');
    const { createRun } = await import('../../../lib/storage/runs');
    await createRun({ connectorId: c.id, runType: 'FullImport', instanceId: null, status: 'Running' });
    const res = await svc.call('DELETE', `connectors/${c.id}`);
    expect(res.status).toBe(409);
    expect(res.body.code).toBe('conflict');
    expect((await svc.call('GET', `connectors/${c.id}`)).status).toBe(200);
  });
});

describe('permissions', () => {
  it('Viewer and Operator read but cannot write (403); anonymous is 401 with WWW-Authenticate', async () => {
    for (const role of ['Viewer', 'Operator'] as const) {
      expect((await svc.call('GET', 'connectors', { role })).status).toBe(200);
      const res = await svc.call('POST', 'connectors', { role, body: { name: 'nope', type: 'ldap', config: ldapConfig() } });
      expect(res.status).toBe(403);
      expect(res.body.code).toBe('forbidden');
    }
    const anon = await svc.call('GET', 'connectors', { role: null });
    expect(anon.status).toBe(401);
    expect(anon.headers.get('www-authenticate')).toMatch(/Bearer/);
  });
});

describe('audit', () => {
  it('records every write with the actor; "who touched connector X" is one query', async () => {
    const { body: c } = await create('Audited');
    await svc.call('PUT', `connectors/${c.id}`, { body: { name: 'Audited 2', config: ldapConfig({ bindPassword: '********' }) } });
    await svc.call('DELETE', `connectors/${c.id}`);
    const res = await svc.call('GET', `audit?targetType=connector&targetId=${c.id}`);
    expect(res.status).toBe(200);
    expect(res.body.totalCount).toBe(3);
    expect(res.body.items.map((i: { action: string }) => i.action)).toEqual(['delete', 'update', 'create']);
    expect(res.body.items[0]).toMatchObject({
      targetType: 'connector',
      targetId: c.id,
      actorUpn: USERS.Admin.upn,
      actorSid: USERS.Admin.oid,
      scheme: 'Bearer',
      outcome: 'success',
    });
    expect(res.body.items[0]).toMatchObject({ actorKey: `upn:${USERS.Admin.upn}`, actorKind: 'person' });
    expect(Object.keys(res.body.items[0]).sort()).toEqual([
      'action',
      'actorKey',
      'actorKind',
      'actorSid',
      'actorUpn',
      'auditId',
      'outcome',
      'scheme',
      'targetId',
      'targetType',
      'timestamp',
    ]);
  });
});
