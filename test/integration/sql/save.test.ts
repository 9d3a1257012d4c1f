import net from 'node:net';
import { freePort } from '../../../lib/runtime/azurite';
import type { SqlConfig } from '../../../lib/connectors/sql/schema';
import { startMariaDb, type MariaDb } from '../../support/mariadb';
import { startPostgres, type Postgres } from '../../support/postgres';
import { describeWithServer } from '../../support/servers';
import { dumpTable, startService, type ServiceUnderTest } from '../../support/service';
import { mariaServer, pgServer, SqlContractFixture, type SqlServer } from './sqlFixture';

/**
 * Create and update of `sql` connectors over HTTP run a live test connection against the real server before
 * anything is stored: a configuration the database refuses is a 400 problem naming what failed, and the
 * Connectors tables are unchanged.
 */
jest.setTimeout(180_000);

let svc: ServiceUnderTest;
let silent: net.Server;
let silentPort = 0;
const held: net.Socket[] = [];

beforeAll(async () => {
  svc = await startService();
  // Accepts connections and never answers: a database that hangs, so only the test's time bound ends it.
  silent = net.createServer((socket) => void held.push(socket));
  silentPort = await freePort();
  await new Promise<void>((resolve) => silent.listen(silentPort, '127.0.0.1', resolve));
});

afterAll(async () => {
  for (const s of held) s.destroy();
  await new Promise((resolve) => silent?.close(resolve));
  await svc?.dispose();
});

const storage = async () => ({ connectors: await dumpTable('Connectors'), names: await dumpTable('ConnectorNames') });

function saveSuite(label: string, server: () => SqlServer) {
  let f: SqlContractFixture;
  const wrong = () => 'wrong-' + f.server.password;

  beforeAll(async () => {
    f = await SqlContractFixture.create(server());
  });
  afterAll(async () => {
    await f?.cleanup();
  });

  /** POST a connector that must be refused: 400 problem+json naming `code`, storage and list unchanged. */
  async function refused(name: string, config: SqlConfig, code: string, detail: RegExp) {
    const before = await storage();
    const list = await svc.call('GET', 'connectors');
    const res = await svc.call('POST', 'connectors', { body: { name, type: 'sql', config } });
    expect(res.status).toBe(400);
    expect(res.headers.get('content-type')).toBe('application/problem+json');
    expect(res.body).toMatchObject({ status: 400, code: 'validation_failed', instance: '/api/connectors' });
    expect(res.body.detail).toMatch(/^The test connection failed, nothing was saved: /);
    expect(res.body.detail).toMatch(detail);
    expect(res.body.errors).toEqual([{ path: '/config', message: expect.stringMatching(new RegExp(`^${code}: `)) }]);
    expect(res.text).not.toContain(f.server.password);
    expect(await storage()).toEqual(before);
    expect((await svc.call('GET', 'connectors')).body).toEqual(list.body);
    return res;
  }

  test('a good configuration (every query, delta, deletes, multi-values, exports) is created: 201', async () => {
    const res = await svc.call('POST', 'connectors', { body: { name: `${label} good`, type: 'sql', config: f.config() } });
    expect(res.status).toBe(201);
    expect(res.body.config).toMatchObject({ dialect: f.server.dialect, password: '********', port: f.server.port });
    expect(res.text).not.toContain(f.server.password);
    const list = await svc.call('GET', 'connectors');
    expect(list.body.connectors).toContainEqual(expect.objectContaining({ id: res.body.id, name: `${label} good` }));
  });

  test('a wrong password: 400 authentication_failed, nothing stored, the password in no answer or log', async () => {
    await refused(`${label} wrong password`, f.config({ password: wrong() }), 'authentication_failed', /refused the credentials/);
    expect(svc.logs()).not.toContain(wrong());
    expect(svc.logs()).not.toContain(f.server.password);
  });

  test('an unknown table in fullImportQuery: 400 configuration_invalid naming the table', async () => {
    await refused(
      `${label} unknown table`,
      f.config({ fullImportQuery: 'SELECT employee_id, row_version, updated_at FROM no_such_people' }),
      'configuration_invalid',
      /fullImportQuery: .*no_such_people/,
    );
  });

  test('deltaImportQuery and the declared columns are checked against the database', async () => {
    const badDelta = f.config({ deltaImportQuery: 'SELECT employee_id, nope_column FROM people WHERE row_version > :watermark' });
    await refused(`${label} bad delta`, badDelta, 'configuration_invalid', /deltaImportQuery: .*nope_column/);
    await refused(`${label} bad anchor`, f.config({ anchorColumn: 'badge_no' }), 'configuration_invalid', /anchorColumn 'badge_no' is not a column/);
    await refused(
      `${label} bad export`,
      f.config({ exportStatements: { delete: 'DELETE FROM people WHERE employee_id = :anchor AND sn = :surname' } }),
      'configuration_invalid',
      /:surname/,
    );
  });

  test('an unknown database: 400', async () => {
    await refused(`${label} unknown database`, f.config({ database: 'no_such_database' }), 'configuration_invalid', /no_such_database/);
  });

  test('nothing listening on the port: 400 connection_failed', async () => {
    await refused(`${label} closed port`, f.config({ port: await freePort() }), 'connection_failed', /reach the database/);
  });

  test('a server that never answers: 400 once the time bound is reached, the request does not hang', async () => {
    await refused(
      `${label} silent`,
      f.config({ port: silentPort, timeoutSeconds: 2 }),
      '(timeout|connection_failed)',
      /within 2 s|timeout|timed out|ETIMEDOUT/i,
    );
  });

  describe('update', () => {
    let id = '';
    const get = async () => (await svc.call('GET', `connectors/${id}`)).body;
    /** A connector over the `staff` table only. */
    const staff = (overrides: Partial<SqlConfig> = {}) =>
      f.config({
        fullImportQuery: 'SELECT employee_id, sn FROM staff',
        deltaImportQuery: undefined,
        deltaColumn: undefined,
        deleteDetection: undefined,
        multiValueQueries: undefined,
        referenceColumns: undefined,
        exportStatements: undefined,
        ...overrides,
      });

    beforeAll(async () => {
      await f.exec('CREATE TABLE staff (employee_id varchar(20) PRIMARY KEY, sn varchar(200))');
      const res = await svc.call('POST', 'connectors', {
        body: { name: `${label} staff`, type: 'sql', config: staff({ fullImportQuery: 'SELECT employee_id FROM staff' }) },
      });
      expect(res.status).toBe(201);
      id = res.body.id;
    });

    /** PUT that must be refused: 400 naming `code`, the stored connector unchanged. */
    async function refusedPut(config: SqlConfig, code: string, detail: RegExp) {
      const before = await storage();
      const stored = await get();
      const res = await svc.call('PUT', `connectors/${id}`, { body: { name: `${label} staff renamed`, config } });
      expect(res.status).toBe(400);
      expect(res.body.code).toBe('validation_failed');
      expect(res.body.detail).toMatch(detail);
      expect(res.body.errors).toEqual([{ path: '/config', message: expect.stringMatching(new RegExp(`^${code}: `)) }]);
      expect(await storage()).toEqual(before);
      expect(await get()).toEqual(stored);
    }

    test('a bad change (unknown table, wrong password) is a 400 and the stored connector is unchanged', async () => {
      await refusedPut(
        staff({ fullImportQuery: 'SELECT employee_id, sn FROM staff_gone', password: '********' }),
        'configuration_invalid',
        /fullImportQuery: .*staff_gone/,
      );
      await refusedPut(staff({ password: wrong() }), 'authentication_failed', /refused the credentials/);
      expect(svc.logs()).not.toContain(wrong());
    });

    test('the placeholder and a good change: 200, tested with the stored password', async () => {
      const res = await svc.call('PUT', `connectors/${id}`, { body: { name: `${label} staff`, config: staff({ password: '********' }) } });
      expect(res.status).toBe(200);
      expect(res.body.config).toMatchObject({ fullImportQuery: 'SELECT employee_id, sn FROM staff', password: '********' });
      expect(await get()).toEqual(res.body);
    });

    test('a PUT that changes only the name runs no test (the stored configuration passed its own)', async () => {
      await f.exec('DROP TABLE staff');
      const res = await svc.call('PUT', `connectors/${id}`, { body: { name: `${label} staff renamed`, config: staff({ password: '********' }) } });
      expect(res.status).toBe(200);
      expect(res.body.name).toBe(`${label} staff renamed`);
      await refusedPut(staff({ password: '********', objectType: 'Person' }), 'configuration_invalid', /staff/);
    });
  });
}

describeWithServer('postgres')('sql connector create/update test connection (PostgreSQL)', () => {
  let pg: Postgres;
  beforeAll(async () => {
    pg = await startPostgres();
  });
  afterAll(async () => {
    await pg?.stop();
  });
  saveSuite('pg', () => pgServer(pg));
});

describeWithServer('mariadb')('sql connector create/update test connection (MariaDB)', () => {
  let db: MariaDb;
  beforeAll(async () => {
    db = await startMariaDb();
  });
  afterAll(async () => {
    await db?.stop();
  });
  saveSuite('maria', () => mariaServer(db));
});
