import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Attribute, Change, Client } from 'ldapts';
import { startPostgres, type Postgres } from '../../support/postgres';
import { serverAvailable } from '../../support/servers';
import { dumpTable, startService, type ServiceUnderTest } from '../../support/service';
import { startSlapd, type Slapd } from '../../support/slapd';

/**
 * `POST /api/connectors/{id}/test` over HTTP: the stored connector's connection is tested now, for any type,
 * against real sources (slapd, PostgreSQL, a folder of files, a custom implementation with no test of its own).
 * 200 `{ ok, message, durationMs }` whatever the outcome; a failed test is `ok: false`. Operator and Admin; it
 * writes nothing (no audit record, no status change).
 */
jest.setTimeout(180_000);

const PROBES = path.join(__dirname, '..', '..', 'fixtures', 'connectors', 'probe-connectors.js');
const roots = mkdtempSync(path.join(os.tmpdir(), 'ims-test-route-'));
let svc: ServiceUnderTest;

beforeAll(async () => {
  svc = await startService({ env: { Connectors__File__Roots: roots, NODE_OPTIONS: `${process.env.NODE_OPTIONS ?? ''} --require "${PROBES}"`.trim() } });
});

afterAll(async () => {
  await svc?.dispose();
  rmSync(roots, { recursive: true, force: true });
});

async function create(name: string, type: string, config: Record<string, unknown>): Promise<string> {
  const res = await svc.call('POST', 'connectors', { body: { name, type, config } });
  expect({ status: res.status, text: res.status === 201 ? '' : res.text }).toEqual({ status: 201, text: '' });
  return res.body.id;
}

/** Run the test as `role`; the answer is always the three fields. */
async function test(id: string, role: 'Admin' | 'Operator' = 'Operator') {
  const res = await svc.call('POST', `connectors/${id}/test`, { role });
  expect(res.status).toBe(200);
  expect(res.headers.get('content-type')).toMatch(/^application\/json/);
  expect(Object.keys(res.body).sort()).toEqual(['durationMs', 'message', 'ok']);
  expect(Number.isInteger(res.body.durationMs) && res.body.durationMs >= 0).toBe(true);
  return res;
}

const describeIf = (ok: boolean) => (ok ? describe : describe.skip);

describeIf(serverAvailable('slapd'))('ldap (slapd)', () => {
  let slapd: Slapd;
  let id = '';
  const dn = () => `uid=tester,ou=people,${slapd.suffix}`;
  const setPassword = async (value: string) => {
    const admin = new Client({ url: slapd.url });
    await admin.bind(slapd.rootDN, slapd.rootPassword);
    await admin.modify(dn(), [new Change({ operation: 'replace', modification: new Attribute({ type: 'userPassword', values: [value] }) })]);
    await admin.unbind();
  };

  beforeAll(async () => {
    slapd = await startSlapd();
    const admin = new Client({ url: slapd.url });
    await admin.bind(slapd.rootDN, slapd.rootPassword);
    await admin.add(dn(), { objectClass: 'inetOrgPerson', uid: 'tester', cn: 'tester', sn: 'tester', userPassword: 'Tester-Pa55-First' });
    await admin.unbind();
    id = await create('Directory', 'ldap', {
      host: 'localhost',
      port: slapd.ldapsPort,
      security: 'ldaps',
      caCertificate: slapd.caCertificate,
      baseDN: slapd.suffix,
      bindDN: dn(),
      bindPassword: 'Tester-Pa55-First',
    });
  });
  afterAll(async () => {
    await slapd?.stop();
  });

  it('ok: bound and baseDN read', async () => {
    const res = await test(id);
    expect(res.body).toMatchObject({ ok: true, message: `Bound to localhost:${slapd.ldapsPort} (ldaps) as ${dn()}; ${slapd.suffix} is readable.` });
  });

  it('the password changed in the directory: ok false, authentication_failed, 200, no secret; nothing written', async () => {
    await setPassword('Tester-Pa55-Second');
    const before = { connectors: await dumpTable('Connectors'), audit: await dumpTable('Audit') };
    const res = await test(id);
    expect(res.body).toMatchObject({ ok: false, message: expect.stringMatching(/^authentication_failed: .*invalid credentials/) });
    expect(res.text).not.toContain('Tester-Pa55');
    expect({ connectors: await dumpTable('Connectors'), audit: await dumpTable('Audit') }).toEqual(before);
    expect((await svc.call('GET', `connectors/${id}`)).body.status).toBe('active');
    await setPassword('Tester-Pa55-First');
    expect((await test(id, 'Admin')).body.ok).toBe(true);
  });

  it('the directory down: ok false, connection_failed', async () => {
    await slapd.halt();
    try {
      const res = await test(id);
      expect(res.body).toMatchObject({ ok: false, message: expect.stringMatching(/^connection_failed: .*cannot reach the directory/) });
    } finally {
      await slapd.restart();
    }
  });
});

describeIf(serverAvailable('postgres'))('sql (PostgreSQL)', () => {
  let pg: Postgres;
  let id = '';

  beforeAll(async () => {
    pg = await startPostgres({ password: 'Pg-Route-Test-77' });
    await pg.createDatabase('hr');
    await pg.query(
      "CREATE TABLE people (id int PRIMARY KEY, name text); CREATE ROLE reader LOGIN PASSWORD 'Reader-Pa55-One'; GRANT SELECT ON people TO reader",
      [],
      'hr',
    );
    id = await create('HR', 'sql', {
      dialect: 'postgres',
      host: pg.host,
      port: pg.port,
      database: 'hr',
      user: 'reader',
      password: 'Reader-Pa55-One',
      anchorColumn: 'id',
      fullImportQuery: 'SELECT id, name FROM people',
    });
  });
  afterAll(async () => {
    await pg?.stop();
  });

  it('ok: connected and every query checked', async () => {
    const res = await test(id);
    expect(res.body).toMatchObject({
      ok: true,
      message: `Connected to postgres database 'hr' on ${pg.host}:${pg.port}; the full import query returns 2 column(s).`,
    });
  });

  it('the table dropped, then the password changed: ok false naming each', async () => {
    await pg.query('ALTER TABLE people RENAME TO staff', [], 'hr');
    expect((await test(id)).body).toMatchObject({ ok: false, message: expect.stringMatching(/^configuration_invalid: fullImportQuery: .*people/) });
    await pg.query("ALTER TABLE staff RENAME TO people; ALTER ROLE reader PASSWORD 'Reader-Pa55-Two'", [], 'hr');
    const res = await test(id);
    expect(res.body).toMatchObject({ ok: false, message: expect.stringMatching(/^authentication_failed: /) });
    expect(res.text).not.toContain('Reader-Pa55');
    expect(svc.logs()).not.toContain('Reader-Pa55-One');
  });
});

describe('file (custom implementation "file")', () => {
  const folder = path.join(roots, 'hr');
  let id = '';

  beforeAll(async () => {
    mkdirSync(folder, { recursive: true });
    writeFileSync(path.join(folder, 'people.csv'), 'id,name\n1,Ada\n2,Grace\n');
    writeFileSync(path.join(folder, 'more.csv'), 'id,name\n3,Edsger\n');
    id = await create('HR files', 'custom', { implementation: 'file', settings: { path: folder, anchorColumn: 'id' } });
  });

  it('ok: the folder and its files are readable', async () => {
    expect((await test(id)).body).toMatchObject({ ok: true, message: expect.stringMatching(/^2 file\(s\) matching \*\.csv in /) });
  });

  it('a file without the anchor column, then the folder gone: ok false', async () => {
    writeFileSync(path.join(folder, 'bad.csv'), 'name\nAlan\n');
    expect((await test(id)).body).toMatchObject({ ok: false, message: expect.stringMatching(/^configuration_invalid: /) });
    rmSync(folder, { recursive: true, force: true });
    expect((await test(id)).body).toMatchObject({ ok: false, message: expect.stringMatching(/^(configuration_invalid|connection_failed|not_found): /) });
  });
});

describe('custom implementation without a test of its own', () => {
  it('ok, saying there is nothing to test', async () => {
    const id = await create('Nothing to test', 'custom', { implementation: 'probe-no-test', settings: {} });
    expect((await test(id)).body).toMatchObject({ ok: true, message: 'The implementation has no connection test.' });
  });
});

describe('the route', () => {
  it('Viewer 403, anonymous 401, unknown or malformed id 404; not audited', async () => {
    const id = await create('Route checks', 'custom', { implementation: 'probe-no-test' });
    expect((await svc.call('POST', `connectors/${id}/test`, { role: 'Viewer' })).status).toBe(403);
    expect((await svc.call('POST', `connectors/${id}/test`, { role: null })).status).toBe(401);
    for (const bad of ['00000000-0000-4000-8000-000000000000', 'not-a-guid']) {
      const res = await svc.call('POST', `connectors/${bad}/test`);
      expect(res.status).toBe(404);
      expect(res.headers.get('content-type')).toBe('application/problem+json');
    }
    await test(id, 'Admin');
    const audit = await svc.call('GET', `audit?targetType=connector&targetId=${id}`);
    expect(audit.body.items.map((i: { action: string }) => i.action)).toEqual(['create']);
  });
});
