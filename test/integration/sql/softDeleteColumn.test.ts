import type { SqlConfig } from '../../../lib/connectors/sql/schema';
import { startMariaDb, type MariaDb } from '../../support/mariadb';
import { startPostgres, type Postgres } from '../../support/postgres';
import { describeWithServer } from '../../support/servers';
import { dumpTable, startService, type ServiceUnderTest } from '../../support/service';
import { mariaServer, pgServer, SqlContractFixture, type SqlServer } from './sqlFixture';

/**
 * `deleteDetection: { mode: "softDeleteColumn" }` over HTTP against real servers. The usual shape: the full
 * query leaves deleted rows out (and so does not return the flag), the delta query returns every changed row
 * with the flag. The column is checked against the query that must return it: the delta query when there is
 * one (deletes are seen there), else the full query.
 */
jest.setTimeout(180_000);

let svc: ServiceUnderTest;

beforeAll(async () => {
  svc = await startService();
});

afterAll(async () => {
  await svc?.dispose();
});

function softDeleteSuite(label: string, server: () => SqlServer) {
  let f: SqlContractFixture;
  let deltaColumn = '';
  const cols = () => `employee_id, given_name, sn, mail, ${deltaColumn}`;
  const where = () => (deltaColumn === 'row_version' ? 'row_version > :watermark' : 'updated_at >= :watermark');
  const soft = { mode: 'softDeleteColumn', column: 'deleted', value: true } as const;
  /** Neither references, multi-values nor exports: only what this test is about. */
  const config = (overrides: Partial<SqlConfig>) =>
    f.config({ referenceColumns: undefined, multiValueQueries: undefined, exportStatements: undefined, deltaOverlapSeconds: undefined, ...overrides });

  beforeAll(async () => {
    f = await SqlContractFixture.create(server());
    deltaColumn = f.config().deltaColumn!;
  });
  afterAll(async () => {
    await f?.cleanup();
  });

  const post = (name: string, c: SqlConfig) => svc.call('POST', 'connectors', { body: { name, type: 'sql', config: c } });

  test('the flag returned by the delta query only (the full query filters deleted rows out): 201', async () => {
    const res = await post(
      `${label} soft delete in delta`,
      config({
        fullImportQuery: `SELECT ${cols()} FROM people WHERE deleted = false`,
        deltaImportQuery: `SELECT ${cols()}, deleted FROM people WHERE ${where()}`,
        deleteDetection: soft,
      }),
    );
    expect({ status: res.status, body: res.status === 201 ? 'created' : res.body }).toEqual({ status: 201, body: 'created' });
    expect(res.body.config.deleteDetection).toEqual(soft);
  });

  test('the flag returned by both queries: 201', async () => {
    const res = await post(
      `${label} soft delete in both`,
      config({
        fullImportQuery: `SELECT ${cols()}, deleted FROM people`,
        deltaImportQuery: `SELECT ${cols()}, deleted FROM people WHERE ${where()}`,
        deleteDetection: soft,
      }),
    );
    expect(res.status).toBe(201);
  });

  /** A refused create: 400 naming the query the column is missing from, nothing stored. */
  async function refused(name: string, c: SqlConfig, message: RegExp) {
    const before = await dumpTable('Connectors');
    const res = await post(name, c);
    expect(res.status).toBe(400);
    expect(res.body.code).toBe('validation_failed');
    expect(res.body.errors).toEqual([{ path: '/config', message: expect.stringMatching(message) }]);
    expect(await dumpTable('Connectors')).toEqual(before);
  }

  test('a delta query that does not return the flag (deletes would never be seen): 400 naming deltaImportQuery', async () => {
    await refused(
      `${label} soft delete missing in delta`,
      config({
        fullImportQuery: `SELECT ${cols()}, deleted FROM people`,
        deltaImportQuery: `SELECT ${cols()} FROM people WHERE ${where()}`,
        deleteDetection: soft,
      }),
      /^configuration_invalid: deleteDetection\.column \(in deltaImportQuery\) 'deleted' is not a column of the query/,
    );
  });

  test('no delta query: the full query must return the flag', async () => {
    await refused(
      `${label} soft delete missing in full`,
      config({ fullImportQuery: `SELECT ${cols()} FROM people`, deltaImportQuery: undefined, deltaColumn: undefined, deleteDetection: soft }),
      /^configuration_invalid: deleteDetection\.column 'deleted' is not a column of the query/,
    );
    const res = await post(
      `${label} soft delete full only`,
      config({ fullImportQuery: `SELECT ${cols()}, deleted FROM people`, deltaImportQuery: undefined, deltaColumn: undefined, deleteDetection: soft }),
    );
    expect(res.status).toBe(201);
  });
}

describeWithServer('postgres')('sql softDeleteColumn checked against the query that returns it (PostgreSQL)', () => {
  let pg: Postgres;
  beforeAll(async () => {
    pg = await startPostgres();
  });
  afterAll(async () => {
    await pg?.stop();
  });
  softDeleteSuite('pg', () => pgServer(pg));
});

describeWithServer('mariadb')('sql softDeleteColumn checked against the query that returns it (MariaDB)', () => {
  let db: MariaDb;
  beforeAll(async () => {
    db = await startMariaDb();
  });
  afterAll(async () => {
    await db?.stop();
  });
  softDeleteSuite('maria', () => mariaServer(db));
});
