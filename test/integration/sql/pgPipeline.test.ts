import { connect, type SqlSession } from '../../../lib/connectors/sql/drivers';
import { compileSql } from '../../../lib/connectors/sql/params';
import { ConnectorError } from '../../../lib/connectors/sdk';
import { startPostgres, type Postgres } from '../../support/postgres';
import { describeWithServer } from '../../support/servers';

/**
 * PostgreSQL's pipelined export session (lib/connectors/sql/drivers.ts, PgSession.queryMany) against a real
 * server: a batch prepares each statement once per connection under a name (the server parses and plans it once,
 * not once per row), and a connection that loses its prepared statements (a pooler in transaction mode, here a
 * DEALLOCATE ALL) makes that server's batches send their statements unnamed from then on.
 */
jest.setTimeout(120_000);

describeWithServer('postgres')('PostgreSQL pipelined batches', () => {
  let pg: Postgres;
  let session: SqlSession;
  const insert = compileSql('INSERT INTO people (id, name) VALUES (:id, :name)', 'postgres').statements[0];
  const prepared = async () =>
    (await session.query({ text: 'SELECT statement FROM pg_prepared_statements ORDER BY name', params: [] })).rows.map((r) => r.statement);
  const rows = async () => (await pg.query<{ id: string }>('SELECT id FROM people ORDER BY id')).map((r) => r.id);

  beforeAll(async () => {
    pg = await startPostgres();
    await pg.query('CREATE TABLE people (id text PRIMARY KEY, name text)');
    session = await connect(
      { dialect: 'postgres', host: '127.0.0.1', port: pg.port, database: pg.database, user: pg.user, password: pg.password, timeoutSeconds: 30 },
      undefined,
      { pipeline: true },
    );
  });

  afterAll(async () => {
    await session?.close();
    await pg?.stop();
  });

  test('300 rows in one batch: each lands, the statement is prepared once on the connection', async () => {
    const items = Array.from({ length: 300 }, (_, i) => ({ stmt: insert, values: { id: `A${String(i).padStart(3, '0')}`, name: `n${i}` } }));
    const results = await session.queryMany!(items);
    expect(results.map((r) => (r instanceof ConnectorError ? r.message : r.rowCount))).toEqual(items.map(() => 1));
    expect(await rows()).toHaveLength(300);
    expect(await prepared()).toEqual([insert.text]);
    // A second batch binds the same prepared statement: still one.
    const more = await session.queryMany!([{ stmt: insert, values: { id: 'B000', name: 'b' } }]);
    expect(more.map((r) => (r instanceof ConnectorError ? r.message : r.rowCount))).toEqual([1]);
    expect(await prepared()).toEqual([insert.text]);
  });

  test('a connection that lost its prepared statements: the rows of that batch are refused, so it goes row by row; the next batches go unnamed and land', async () => {
    await session.query({ text: 'DEALLOCATE ALL', params: [] });
    const lost = await session.queryMany!([
      { stmt: insert, values: { id: 'C000', name: 'c' } },
      { stmt: insert, values: { id: 'C001', name: 'c' } },
    ]);
    // Each refused as an object-level error: the connector's batch then goes row by row (statements unnamed).
    expect(lost.map((r) => (r instanceof ConnectorError ? r.code : 'landed'))).toEqual(['object_error', 'object_error']);
    expect(await rows()).not.toContain('C000');
    const again = await session.queryMany!([
      { stmt: insert, values: { id: 'C000', name: 'c' } },
      { stmt: insert, values: { id: 'C001', name: 'c' } },
    ]);
    expect(again.map((r) => (r instanceof ConnectorError ? r.message : r.rowCount))).toEqual([1, 1]);
    expect((await rows()).filter((id) => id.startsWith('C'))).toEqual(['C000', 'C001']);
    // Unnamed: nothing prepared on the connection.
    expect(await prepared()).toEqual([]);
  });
});
