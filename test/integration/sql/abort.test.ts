import { ConnectorError, type ExportChange, type ImportPage } from '../../../lib/connectors/sdk';
import { startMariaDb, type MariaDb } from '../../support/mariadb';
import { startPostgres, type Postgres } from '../../support/postgres';
import { describeWithServer } from '../../support/servers';
import { mariaServer, pgServer, SqlContractFixture, type SqlServer } from './sqlFixture';

/**
 * The SQL connector's answer to an abort with a statement in flight, on each real server: the statement is
 * cancelled in the server (gone from its list of running statements, not left sleeping), the call fails with
 * `aborted` at once, and an export's transaction in flight is rolled back.
 */
jest.setTimeout(300_000);

/** Seconds a stuck statement would sleep: far beyond the test, so only the abort can end it. */
const STUCK = 600;

async function failure(p: Promise<unknown>): Promise<ConnectorError> {
  const err = await p.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(ConnectorError);
  return err as ConnectorError;
}

async function until<T>(what: string, probe: () => Promise<T | undefined>, timeoutMs = 60_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const got = await probe();
    if (got !== undefined) return got;
    if (Date.now() > deadline) throw new Error(`${what}: not within ${timeoutMs} ms`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

interface Dialect {
  server: () => SqlServer;
  /** The running statements of the connector's user that sleep (id and text). */
  sleeping: (f: SqlContractFixture) => Promise<{ id: number; text: string }[]>;
  /** A full import query that sleeps STUCK seconds before its first row. */
  slowQuery: string;
  /** An insert that sleeps STUCK seconds for the anchor S2, at once for the others. */
  slowInsert: string;
  /** The ids of the connections open to the fixture's database, other than the one asking. */
  connections: (f: SqlContractFixture) => Promise<number[]>;
  /** End a connection from the server's side (a DBA's terminate, a failover). */
  terminate: (id: number) => Promise<void>;
}

function aborts(label: string, d: Dialect) {
  let f: SqlContractFixture;
  beforeEach(async () => {
    f = await SqlContractFixture.create(d.server());
    await f.exec("INSERT INTO people (employee_id, given_name, sn) VALUES ('P1', 'Ada', 'Lovelace')");
  });
  afterEach(async () => {
    await f.cleanup();
  });
  const quiet = { deltaImportQuery: undefined, deltaColumn: undefined, deleteDetection: undefined, multiValueQueries: undefined, timeoutSeconds: 900 };

  test(`${label}: an abort while the full import's query runs cancels the query in the server and fails the read with aborted`, async () => {
    const c = f.connector({ ...quiet, fullImportQuery: d.slowQuery, exportStatements: undefined });
    const controller = new AbortController();
    const read = c.fullImport({ pageSize: 100, signal: controller.signal })[Symbol.asyncIterator]().next() as Promise<IteratorResult<ImportPage>>;
    const stuck = await until('the query sleeping', async () => (await d.sleeping(f))[0]);
    const asked = Date.now();
    controller.abort();
    const err = await failure(read);
    expect(Date.now() - asked).toBeLessThan(5_000);
    expect(err.code).toBe('aborted');
    expect(err.message).toBe('The operation was cancelled.');
    await until('the query gone from the server', async () => ((await d.sleeping(f)).some((q) => q.id === stuck.id) ? undefined : true), 30_000);
    await c.close();
  });

  test(`${label}: an abort while an export batch's statement runs rolls the transaction back and fails the batch with aborted`, async () => {
    const c = f.connector({ ...quiet, exportStatements: { ...f.config().exportStatements, insert: d.slowInsert } });
    const add = (key: string): ExportChange => ({ kind: 'add', anchor: key, objectType: 'User', attributes: { employee_id: key, sn: `Row ${key}` } });
    const controller = new AbortController();
    const batch = c.exportBatch([add('S1'), add('S2')], { signal: controller.signal });
    const stuck = await until('the insert sleeping', async () => (await d.sleeping(f))[0]);
    expect(stuck.text).toContain('INSERT');
    controller.abort();
    const err = await failure(batch);
    expect(err.code).toBe('aborted');
    expect(err.applied ?? []).toEqual([]);
    await until('the insert gone from the server', async () => ((await d.sleeping(f)).some((q) => q.id === stuck.id) ? undefined : true), 30_000);
    // S1 was inserted in the same transaction: rolled back with it.
    expect(await f.exec("SELECT employee_id FROM people WHERE employee_id IN ('S1', 'S2')")).toEqual([]);
    // The connector works on: the next batch (no abort) lands.
    expect(await c.exportBatch([add('S1')])).toEqual([{ status: 'success', anchor: 'S1' }]);
    await c.close();
  });

  test(`${label}: a connector's export batches share one connection until it closes; a batch's signal aborted after it ended cancels nothing; a connection the server ended is replaced`, async () => {
    const c = f.connector(quiet);
    const add = (key: string): ExportChange => ({ kind: 'add', anchor: key, objectType: 'User', attributes: { employee_id: key, sn: `Row ${key}` } });
    const before = new Set(await d.connections(f));
    const controller = new AbortController();
    expect(await c.exportBatch([add('K1'), add('K2')], { signal: controller.signal })).toEqual([
      { status: 'success', anchor: 'K1' },
      { status: 'success', anchor: 'K2' },
    ]);
    const kept = (await d.connections(f)).filter((id) => !before.has(id));
    expect(kept).toHaveLength(1);
    // The first batch's run is over: its abort no longer reaches the connection the next batches use.
    controller.abort();
    expect(await c.exportBatch([add('K3')])).toEqual([{ status: 'success', anchor: 'K3' }]);
    expect(await c.exportBatch([add('K4')], { signal: new AbortController().signal })).toEqual([{ status: 'success', anchor: 'K4' }]);
    expect((await d.connections(f)).filter((id) => !before.has(id))).toEqual(kept);
    expect((await f.exec("SELECT employee_id FROM people WHERE employee_id LIKE 'K%' ORDER BY employee_id")).map((r) => r.employee_id)).toEqual([
      'K1',
      'K2',
      'K3',
      'K4',
    ]);
    // The server ends the kept connection (a DBA, a restart): the next batch does not fail, it opens another.
    await d.terminate(kept[0]);
    expect(await c.exportBatch([add('K6')])).toEqual([{ status: 'success', anchor: 'K6' }]);
    const renewed = (await d.connections(f)).filter((id) => !before.has(id));
    expect(renewed).toHaveLength(1);
    expect(renewed).not.toEqual(kept);
    kept.splice(0, 1, ...renewed);
    // A batch that fails for the run (a statement the server cannot run) drops the connection; the next opens another.
    const broken = f.connector({
      ...quiet,
      exportStatements: { ...f.config().exportStatements, insert: 'INSERT INTO no_such_table (a) VALUES (:employee_id)' },
    });
    await failure(broken.exportBatch([add('K5')]));
    // The dropped connection leaves the server's list a moment after the client closes it.
    const others = async () => (await d.connections(f)).filter((id) => !before.has(id));
    await until('the failed batch connection gone', async () => ((await others()).length === kept.length ? true : undefined), 10_000);
    expect(await others()).toEqual(kept);
    await c.close();
    await until('the connection closed', async () => ((await d.connections(f)).some((id) => !before.has(id)) ? undefined : true), 30_000);
  });
}

describeWithServer('postgres')('SQL connector abort (PostgreSQL)', () => {
  let pg: Postgres;
  beforeAll(async () => {
    pg = await startPostgres();
  });
  afterAll(async () => {
    await pg?.stop();
  });
  aborts('PostgreSQL', {
    server: () => pgServer(pg),
    // pg_stat_activity copies each backend's statement text when this probe starts reading it, but reads the wait
    // event live: a backend that moved from BEGIN to the insert in between shows BEGIN sleeping. So the text must
    // show the sleep too.
    sleeping: async (f) =>
      (
        await pg.query<{ pid: number; query: string }>(
          "SELECT pid, query FROM pg_stat_activity WHERE application_name = 'identity-sync' AND datname = $1 AND wait_event = 'PgSleep' AND query LIKE '%pg_sleep(%'",
          [f.db],
        )
      ).map((r) => ({ id: r.pid, text: r.query })),
    slowQuery: `SELECT employee_id, given_name, sn FROM people, pg_sleep(${STUCK}) AS s`,
    slowInsert: `INSERT INTO people (employee_id, sn) SELECT :employee_id, :sn FROM pg_sleep(CASE WHEN :employee_id = 'S2' THEN ${STUCK} ELSE 0 END) AS s`,
    connections: async (f) =>
      (await pg.query<{ pid: number }>("SELECT pid FROM pg_stat_activity WHERE application_name = 'identity-sync' AND datname = $1", [f.db])).map((r) => r.pid),
    terminate: async (id) => {
      await pg.query('SELECT pg_terminate_backend($1)', [id]);
    },
  });
});

describeWithServer('mariadb')('SQL connector abort (MariaDB)', () => {
  let maria: MariaDb;
  beforeAll(async () => {
    maria = await startMariaDb();
  });
  afterAll(async () => {
    await maria?.stop();
  });
  aborts('MariaDB', {
    server: () => mariaServer(maria),
    sleeping: async (f) =>
      (
        await maria.query<{ id: number; info: string }>(
          "SELECT id, info FROM information_schema.processlist WHERE db = ? AND info LIKE '%SLEEP(%' AND info NOT LIKE '%processlist%'",
          [f.db],
        )
      ).map((r) => ({ id: Number(r.id), text: r.info })),
    slowQuery: `SELECT employee_id, given_name, sn FROM people WHERE SLEEP(${STUCK}) = 0`,
    slowInsert: `INSERT INTO people (employee_id, sn) SELECT :employee_id, :sn FROM DUAL WHERE SLEEP(CASE WHEN :employee_id = 'S2' THEN ${STUCK} ELSE 0 END) = 0`,
    connections: async (f) =>
      (await maria.query<{ id: number }>('SELECT id FROM information_schema.processlist WHERE db = ? AND id <> CONNECTION_ID()', [f.db])).map((r) =>
        Number(r.id),
      ),
    terminate: async (id) => {
      await maria.query(`KILL ${Number(id)}`);
    },
  });
});
