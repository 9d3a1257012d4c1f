import type { Client } from 'ldapts';
import type { LeaverView } from '../../../lib/api/leavers';
import { startPostgres, type Postgres } from '../../support/postgres';
import { describeWithServer, serverAvailable } from '../../support/servers';
import { startService, type ServiceUnderTest, SECOND_ADMIN } from '../../support/service';
import { startSlapd, type Slapd } from '../../support/slapd';
import { rule, runExport, runImport } from '../sync/syncSupport';
import { engineeringDirectory, meshOf, stopSlapdSuite, waitFor } from './e2eSupport';
import { pgServer, SqlContractFixture } from '../sql/sqlFixture';
import { SlapdFixture } from './ldapFixture';

/**
 * Continuous delta mode with a PostgreSQL source (a delta column, `row_version`, and deletes from a log table
 * filled by a trigger) and a real slapd target: a row deleted or updated in the HR table reaches the directory
 * with no run triggered by hand, through a DeltaImport run with trigger `continuous` and its targeted Export.
 */
jest.setTimeout(600_000);

(serverAvailable('postgres') ? describeWithServer('slapd') : describe.skip)('continuous delta mode (PostgreSQL source, slapd target)', () => {
  let slapd: Slapd;
  let rt: ServiceUnderTest;
  let f: SlapdFixture;
  let admin: Client;
  let pg: Postgres;
  let db: SqlContractFixture;
  let hr = '';
  let dir = '';
  const dnOf = (key: string) => `uid=${key},ou=Engineering,${f.base}`;
  const entry = async (key: string) =>
    (await admin.search(dnOf(key), { scope: 'base', attributes: ['*'] }).catch(() => ({ searchEntries: [] }))).searchEntries[0];
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  const runsOf = async (connectorId: string): Promise<any[]> =>
    (await rt.call('GET', `runs?connectorId=${connectorId}&take=100`, { role: 'Viewer' })).body.items;
  async function continuous(id: string): Promise<void> {
    const current = await rt.call('GET', `connectors/${id}`);
    const res = await rt.call('PUT', `connectors/${id}`, {
      body: { name: current.body.name, config: { ...current.body.config, continuous: { enabled: true, intervalSeconds: 1, reconcileMinutes: 60 } } },
    });
    if (res.status === 202) expect((await rt.call('POST', `config/changes/${res.body.changeId}/approve`, { as: SECOND_ADMIN })).status).toBe(200);
    else expect(res.status).toBe(200);
  }

  beforeAll(async () => {
    slapd = await startSlapd();
    pg = await startPostgres();
    rt = await startService();
    f = await new SlapdFixture(slapd).init();
    admin = await f.client();
    db = await SqlContractFixture.create(pgServer(pg));
    for (const [k, g] of [
      ['P001', 'Ann'],
      ['P002', 'Bob'],
      ['P003', 'Cy'],
    ])
      await db.exec('INSERT INTO people (employee_id, given_name, sn) VALUES (?, ?, ?)', [k, g, 'Sequel']);
    const res = await rt.call('POST', 'connectors', {
      body: {
        name: 'HR',
        type: 'sql',
        config: db.config({
          referenceColumns: undefined,
          multiValueQueries: undefined,
          exportStatements: undefined,
          deletionThreshold: { objects: 10, percent: 100 },
        }),
      },
    });
    expect(res.status).toBe(201);
    hr = res.body.id;
    await rule(rt, { ruleType: 'ProjectionRule', connectorId: hr, sourceAttribute: 'employee_id', objectType: 'User' });
    for (const [s, t] of [
      ['employee_id', 'employeeId'],
      ['given_name', 'givenName'],
      ['sn', 'sn'],
    ])
      await rule(rt, { ruleType: 'FlowRule', connectorId: hr, sourceAttribute: s, targetAttribute: t, confidence: 100 });
    dir = await engineeringDirectory(rt, f.config({ deletionThreshold: { objects: 10, percent: 100 } }));
    expect(await runImport(rt, hr)).toMatchObject({ status: 'Completed', stats: { objectsCreated: 3, errors: 0 } });
    expect(await runExport(rt, dir)).toMatchObject({ status: 'Completed', stats: { objectsCreated: 3, errors: 0 } });
    expect(await runImport(rt, dir)).toMatchObject({ status: 'Completed', stats: { errors: 0 } });
    await continuous(hr);
    await continuous(dir);
    await waitFor(
      'the first export of the follower',
      async () =>
        (await runsOf(dir)).some((r) => r.runType === 'Export' && r.trigger.type === 'continuous' && !r.trigger.sourceRunId && r.status === 'Completed'),
      120_000,
    );
  });
  afterAll(async () => {
    await stopSlapdSuite({ admin, rt, f, slapd });
    await db?.cleanup();
    await pg?.stop();
  });

  test('a row deleted in the HR table: the account is deleted with no manual trigger, the leaver done', async () => {
    const id = (await meshOf(hr)).get('P001')!.id;
    expect(await entry('P001')).toBeDefined();
    await db.exec('DELETE FROM people WHERE employee_id = ?', ['P001']);
    await waitFor('P001 gone from the directory', async () => (await entry('P001')) === undefined, 120_000);
    await waitFor(
      'the leaver done',
      async () =>
        ((await rt.call('GET', 'leavers', { role: 'Viewer' })).body.items as LeaverView[]).some(
          (l) => l.meshObjectId === id && l.connectorId === dir && l.state === 'done',
        ),
      120_000,
    );
    const batch = (await runsOf(hr)).find((r) => r.runType === 'DeltaImport' && r.trigger.type === 'continuous' && r.stats.objectsDeleted === 1);
    expect(batch).toMatchObject({ status: 'Completed', trigger: { actorUpn: 'continuous:HR' } });
    expect((await runsOf(dir)).find((r) => r.runType === 'Export' && r.trigger.sourceRunId === batch.runId)).toMatchObject({
      status: 'Completed',
      stats: { objectsDeleted: 1, errors: 0 },
    });
  });

  test('a row updated (its delta column moves): the directory follows', async () => {
    await db.exec('UPDATE people SET given_name = ? WHERE employee_id = ?', ['Robert', 'P002']);
    await waitFor('P002 renamed in the directory', async () => (await entry('P002'))?.givenName === 'Robert', 120_000);
    const batch = (await runsOf(hr)).find((r) => r.runType === 'DeltaImport' && r.trigger.type === 'continuous' && r.stats.objectsUpdated === 1);
    expect(batch).toMatchObject({ status: 'Completed' });
    // The entry is written before the export's run ends: wait for its end.
    // eslint-disable-next-line @typescript-eslint/no-explicit-any
    let exported: any;
    await waitFor(
      'the targeted export over',
      async () => {
        exported = (await runsOf(dir)).find((r) => r.runType === 'Export' && r.trigger.sourceRunId === batch.runId);
        return exported && exported.status !== 'Running';
      },
      120_000,
    );
    expect(exported).toMatchObject({ status: 'Completed', stats: { objectsUpdated: 1, errors: 0 } });
  });
});
