import { readSyncState } from '../../../lib/sync/run/state';
import { startPostgres, type Postgres } from '../../support/postgres';
import { describeWithServer } from '../../support/servers';
import { startService, USERS, type ServiceUnderTest } from '../../support/service';
import { pgServer, SqlContractFixture } from '../sql/sqlFixture';
import { rule, runImport } from './syncSupport';

/**
 * A cancel that finds the run inside a connector call, against a real PostgreSQL source and the running
 * service: the full import's source query is stuck in the database (a row gate that sleeps for minutes), the
 * run is cancelled, and it ends `Cancelled` within 10 s with the pages applied before kept and counted, and
 * the query gone from the server (pg_stat_activity), not left running for its minutes.
 */
jest.setTimeout(600_000);

const ROWS = 5_000;
/**
 * Rows after this anchor sleep in the source query. The query streams in anchor order from the anchor's index
 * (the table analyzed, so the planner prefers it to a sort of every row): the first pages arrive, a later read
 * hangs.
 */
const GATE = 'C004500';

describeWithServer('postgres')('cancel with a connector call in flight (PostgreSQL)', () => {
  let pg: Postgres;
  let rt: ServiceUnderTest;
  let f: SqlContractFixture;
  let target: SqlContractFixture | undefined;
  let connectorId: string;

  /** The service's statements running in a database (the service names its connections): the source's by default. */
  const inFlight = (db = f.db) =>
    pg.query<{ pid: number; wait_event: string | null; query: string }>(
      "SELECT pid, wait_event, query FROM pg_stat_activity WHERE application_name = 'identity-sync' AND datname = $1 AND state = 'active'",
      [db],
    );
  /** The rows after GATE sleep `seconds` each while the gate is closed; an open gate lets every row through. */
  const gate = (seconds: number) =>
    f.exec(`CREATE OR REPLACE FUNCTION slow_gate(id text) RETURNS boolean LANGUAGE plpgsql AS $$
            BEGIN IF id > '${GATE}' THEN PERFORM pg_sleep(${seconds}); END IF; RETURN true; END $$`);

  async function until<T>(what: string, probe: () => Promise<T | undefined>, timeoutMs = 120_000): Promise<T> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const got = await probe();
      if (got !== undefined) return got;
      if (Date.now() > deadline) throw new Error(`${what}: not within ${timeoutMs} ms\n${rt.logs().slice(-3000)}`);
      await new Promise((r) => setTimeout(r, 100));
    }
  }

  /** Cancel the run (202) and wait for its end: the run as it ended, and the milliseconds from the request. */
  async function cancelAndWait(runId: string): Promise<{ ended: { status: string; stats: Record<string, number> } & Record<string, unknown>; took: number }> {
    const asked = Date.now();
    const cancel = await rt.call('POST', `runs/${runId}/cancel`, { role: 'Operator' });
    expect(cancel.status).toBe(202);
    const ended = await until(
      'the run ended',
      async () => {
        const r = await rt.call('GET', `runs/${runId}`);
        return r.body.status === 'Running' ? undefined : r.body;
      },
      30_000,
    );
    return { ended, took: Date.now() - asked };
  }

  beforeAll(async () => {
    pg = await startPostgres();
    rt = await startService();
    f = await SqlContractFixture.create(pgServer(pg));
    await f.exec(
      `INSERT INTO people (employee_id, given_name, sn) SELECT 'C' || lpad(i::text, 6, '0'), 'Bulk', 'Row' || i FROM generate_series(1, ${ROWS}) i;
       ANALYZE people`,
    );
    await gate(600);
    const config = f.config({
      fullImportQuery: 'SELECT employee_id, given_name, sn FROM people WHERE slow_gate(employee_id)',
      deltaImportQuery: undefined,
      deltaColumn: undefined,
      deleteDetection: undefined,
      multiValueQueries: undefined,
      referenceColumns: undefined,
      exportStatements: undefined,
      // Far beyond the test: only the cancel can end the stuck read.
      timeoutSeconds: 900,
    });
    const res = await rt.call('POST', 'connectors', { body: { name: 'HR slow', type: 'sql', config } });
    if (res.status !== 201) throw new Error(res.text);
    connectorId = res.body.id;
    await rule(rt, { ruleType: 'ProjectionRule', connectorId, sourceAttribute: 'employee_id', objectType: 'User' });
    await rule(rt, { ruleType: 'FlowRule', connectorId, sourceAttribute: 'sn', targetAttribute: 'sn', confidence: 50 });
    await rule(rt, { ruleType: 'FlowRule', connectorId, sourceAttribute: 'employee_id', targetAttribute: 'employeeId', confidence: 50 });
  });
  afterAll(async () => {
    await rt?.dispose();
    await f?.cleanup();
    await target?.cleanup();
    await pg?.stop();
  });

  test('a full import whose source query is stuck ends Cancelled within 10 s, its applied page counted, the query gone from the server', async () => {
    const started = await rt.call('POST', `connectors/${connectorId}/import`, { role: 'Operator', body: { runType: 'FullImport' } });
    expect(started.status).toBe(202);
    const runId = started.body.runId as string;

    // The first page is applied, the read after it sleeps at the gate in the database, and the run is Running.
    const running = await until('a page applied', async () => {
      const r = await rt.call('GET', `runs/${runId}`);
      return r.body.status !== 'Running' || r.body.stats.objectsCreated > 0 ? r.body : undefined;
    });
    expect(running.status).toBe('Running');
    const stuck = await until('the source query sleeping at the gate', async () => (await inFlight()).find((q) => q.wait_event === 'PgSleep'));
    expect(stuck.query).toContain('slow_gate');
    const applied = (await rt.call('GET', `runs/${runId}`)).body.stats.objectsCreated as number;
    expect(applied).toBe(running.stats.objectsCreated);

    const { ended, took } = await cancelAndWait(runId);
    expect(took).toBeLessThan(10_000);
    expect(ended.status).toBe('Cancelled');
    expect(ended.error).toContain(USERS.Operator.upn);
    // What was applied before the stuck read stays and is counted; nothing after the gate was read.
    expect(ended.stats.objectsCreated).toBe(applied);
    expect(ended.stats.objectsCreated).toBeGreaterThan(0);
    expect(ended.stats.objectsCreated).toBeLessThan(ROWS);
    // The query was cancelled in the database, not left sleeping there.
    await until('the stuck query gone from pg_stat_activity', async () => ((await inFlight()).some((q) => q.pid === stuck.pid) ? undefined : true), 30_000);

    // The connector is free: with the gate open, the next full import reads every row, the cancelled run's included.
    await gate(0);
    const next = await runImport(rt, connectorId);
    expect(next.status).toBe('Completed');
    expect(next.stats.objectsCreated + ended.stats.objectsCreated).toBe(ROWS);
  });

  test('a delta import whose change query is stuck ends Cancelled within 10 s with nothing applied, the watermark kept, the query gone', async () => {
    // A second connector over the same table, with a delta query whose rows sleep while its gate is closed.
    await f.exec(`CREATE OR REPLACE FUNCTION slow_delta(id text) RETURNS boolean LANGUAGE plpgsql AS $$
                  BEGIN PERFORM pg_sleep(coalesce(current_setting('test.delta_sleep', true), '0')::int); RETURN true; END $$`);
    const config = f.config({
      fullImportQuery: 'SELECT employee_id, given_name, sn, row_version FROM people',
      deltaImportQuery: 'SELECT employee_id, given_name, sn, row_version FROM people WHERE row_version > :watermark AND slow_delta(employee_id)',
      multiValueQueries: undefined,
      referenceColumns: undefined,
      exportStatements: undefined,
      timeoutSeconds: 900,
    });
    const res = await rt.call('POST', 'connectors', { body: { name: 'HR delta', type: 'sql', config } });
    if (res.status !== 201) throw new Error(res.text);
    const deltaId = res.body.id as string;
    await rule(rt, { ruleType: 'FlowRule', connectorId: deltaId, sourceAttribute: 'given_name', targetAttribute: 'givenName', confidence: 40 });
    expect((await runImport(rt, deltaId)).status).toBe('Completed');
    const watermark = (await readSyncState(deltaId)).watermark;
    expect(watermark).not.toBeNull();

    await f.exec("UPDATE people SET given_name = 'Changed' WHERE employee_id <= 'C000010'");
    // The gate: every session of the database sleeps in slow_delta from now on (the setting is read per call).
    await f.exec(`ALTER DATABASE ${f.db} SET test.delta_sleep = '600'`);
    try {
      const started = await rt.call('POST', `connectors/${deltaId}/import`, { role: 'Operator', body: { runType: 'DeltaImport' } });
      expect(started.status).toBe(202);
      const runId = started.body.runId as string;
      const stuck = await until('the delta query sleeping', async () => (await inFlight()).find((q) => q.wait_event === 'PgSleep'));
      expect(stuck.query).toContain('slow_delta');
      expect((await rt.call('GET', `runs/${runId}`)).body.status).toBe('Running');

      const { ended, took } = await cancelAndWait(runId);
      expect(took).toBeLessThan(10_000);
      expect(ended.status).toBe('Cancelled');
      // The changes were being read: none was applied, and the watermark stays where the full import left it.
      expect(ended.stats.objectsProcessed).toBe(0);
      expect((await readSyncState(deltaId)).watermark).toBe(watermark);
      await until('the delta query gone from pg_stat_activity', async () => ((await inFlight()).some((q) => q.pid === stuck.pid) ? undefined : true), 30_000);
    } finally {
      await f.exec(`ALTER DATABASE ${f.db} RESET test.delta_sleep`);
    }
    // The gate open, the next delta reads the same changes from the kept watermark and moves it.
    const next = await runImport(rt, deltaId, { runType: 'DeltaImport' });
    expect(next.status).toBe('Completed');
    expect(next.stats.objectsUpdated).toBe(10);
    expect((await readSyncState(deltaId)).watermark).not.toBe(watermark);
  });

  test('an export whose target statement is stuck ends Cancelled within 10 s: the transaction in flight rolls back, what was committed stays and is counted', async () => {
    // The mesh holds every source row (the test above). The target's inserts sleep once it holds LIMIT rows:
    // the first page's transaction commits (a full export of ROWS objects goes in pages of 2,000 ids), the
    // second sleeps inside its transaction.
    const LIMIT = 2_500;
    target = await SqlContractFixture.create(pgServer(pg));
    await target.exec(`CREATE FUNCTION slow_insert() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN IF (SELECT count(*) FROM people) >= ${LIMIT} THEN PERFORM pg_sleep(600); END IF; RETURN NEW; END $$;
      CREATE TRIGGER slow_insert BEFORE INSERT ON people FOR EACH ROW EXECUTE FUNCTION slow_insert()`);
    const config = target.config({ timeoutSeconds: 900 });
    const created = await rt.call('POST', 'connectors', { body: { name: 'Slow target', type: 'sql', config } });
    if (created.status !== 201) throw new Error(created.text);
    const targetId = created.body.id as string;
    for (const [s, t] of [
      ['employeeId', 'employee_id'],
      ['sn', 'sn'],
    ])
      await rule(rt, { ruleType: 'FlowRule', connectorId: targetId, direction: 'outbound', sourceAttribute: s, targetAttribute: t, confidence: 50 });

    const started = await rt.call('POST', `connectors/${targetId}/export`, { role: 'Operator', body: {} });
    expect(started.status).toBe(202);
    const runId = started.body.runId as string;
    const stuck = await until('the target insert sleeping', async () => (await inFlight(target!.db)).find((q) => q.wait_event === 'PgSleep'));
    expect(stuck.query).toContain('INSERT INTO people');
    expect((await rt.call('GET', `runs/${runId}`)).body.status).toBe('Running');

    const { ended, took } = await cancelAndWait(runId);
    expect(took).toBeLessThan(10_000);
    expect(ended.status).toBe('Cancelled');
    // The transaction in flight was rolled back; what the target committed before is there and counted.
    await until(
      'the stuck insert gone from pg_stat_activity',
      async () => ((await inFlight(target!.db)).some((q) => q.pid === stuck.pid) ? undefined : true),
      5_000,
    );
    const [{ n }] = await target.exec('SELECT count(*)::int AS n FROM people');
    expect(n).toBeGreaterThan(0);
    expect(n).toBeLessThan(LIMIT);
    expect(ended.stats.objectsCreated).toBe(n);
    expect(ended.stats.errors).toBe(0);

    // The next export, the target fast again, adds the rest and nothing twice.
    await target.exec('DROP TRIGGER slow_insert ON people');
    const next = await rt.call('POST', `connectors/${targetId}/export`, { body: {} });
    expect(next.status).toBe(202);
    const done = await until('the next export', async () => {
      const r = await rt.call('GET', `runs/${next.body.runId}`);
      return r.body.status === 'Running' || r.body.status === 'Queued' ? undefined : r.body;
    });
    expect(done.status).toBe('Completed');
    expect(done.stats.objectsCreated + n).toBe(ROWS);
    expect((await target.exec('SELECT count(*)::int AS n FROM people'))[0].n).toBe(ROWS);
  });
});
