import type { Client } from 'ldapts';
import type { LeaverView } from '../../../lib/api/leavers';
import { describeWithServer } from '../../support/servers';
import { type ServiceUnderTest } from '../../support/service';
import type { Slapd } from '../../support/slapd';
import { folder, writeCsv } from '../sync/syncSupport';
import { meshOf, putConnectorConfig, stopSlapdSuite, waitFor, NO_DELETION_LIMIT, startHrDirectory } from './e2eSupport';
import { SlapdFixture } from './ldapFixture';

/**
 * Continuous delta mode end to end (the built service over HTTP, an HR file source, a real slapd target): with
 * `continuous` on the source (and on the directory, whose own continuous imports confirm what was sent), a
 * termination written to the HR file reaches the directory with no run triggered by hand: a DeltaImport run with
 * trigger `continuous` on HR, an Export run with trigger `continuous` naming it on the directory, the leaver done.
 * A kill -9 of the service right after a change loses nothing (the change arrives after the restart); the
 * reconciling delta finds nothing missed; bad settings are a 400.
 */
jest.setTimeout(600_000);

const HR = ['id', 'employeeId', 'givenName', 'sn'];
type Row = Record<(typeof HR)[number], string>;
const person = (n: number, givenName: string): Row => ({ id: `c${n}`, employeeId: `C${String(n).padStart(3, '0')}`, givenName, sn: 'Follow' });

describeWithServer('slapd')('continuous delta mode (HR file source, slapd target)', () => {
  let slapd: Slapd;
  let rt: ServiceUnderTest;
  let f: SlapdFixture;
  let admin: Client;
  const hrDir = folder('ims-continuous-hr-');
  let rows: Row[] = [person(1, 'Ann'), person(2, 'Bob'), person(3, 'Cy'), person(4, 'Dee')];
  let hr = '';
  let dir = '';
  const dnOf = (key: string) => `uid=${key},ou=Engineering,${f.base}`;
  const entry = async (key: string) =>
    (await admin.search(dnOf(key), { scope: 'base', attributes: ['*'] }).catch(() => ({ searchEntries: [] }))).searchEntries[0];
  const writeHr = () => writeCsv(hrDir, 'hr.csv', HR, rows);
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  const runsOf = async (connectorId: string): Promise<any[]> => {
    const res = await rt.call('GET', `runs?connectorId=${connectorId}&take=100`, { role: 'Viewer' });
    expect(res.status).toBe(200);
    return res.body.items;
  };
  const putConfig = (id: string, patch: Record<string, unknown>) => putConnectorConfig(rt, id, patch);
  const leaverOf = async (id: string): Promise<LeaverView | undefined> =>
    ((await rt.call('GET', 'leavers', { role: 'Viewer' })).body.items as LeaverView[]).find((l) => l.meshObjectId === id && l.connectorId === dir);

  beforeAll(async () => {
    writeHr();
    ({ slapd, rt, f, admin, hr, dir } = await startHrDirectory({
      hrDir,
      people: 4,
      hrFlows: ['employeeId', 'givenName', 'sn'],
      hrConfig: NO_DELETION_LIMIT,
      directory: NO_DELETION_LIMIT,
      // reconcileMinutes counts 10 s minutes (a Development-only test hook): 1 reconciles within seconds, 60 not in this suite.
      service: { env: { Continuous__TestHooks__ReconcileMinuteSeconds: '10' } },
    }));
  });
  afterAll(async () => {
    await stopSlapdSuite({ admin, rt, f, slapd });
  });

  test('continuous settings are validated: 400 with the path, nothing changed', async () => {
    for (const [continuous, path, message] of [
      [{ enabled: true, intervalSeconds: 0 }, '/config/continuous/intervalSeconds', 'must be >= 1'],
      [{ enabled: true, reconcileMinutes: 1.5 }, '/config/continuous/reconcileMinutes', 'must be integer'],
      [{ intervalSeconds: 5 }, '/config/continuous/enabled', 'is required'],
    ] as const) {
      const res = await putConfig(hr, { continuous });
      expect(res.status).toBe(400);
      expect(res.body.errors).toContainEqual({ path, message });
    }
    expect((await rt.call('GET', `connectors/${hr}`)).body.config.continuous).toBeUndefined();
  });

  test('a termination written to the HR file reaches the directory with no manual trigger, as runs with trigger continuous; the leaver is done', async () => {
    expect((await putConfig(hr, { continuous: { enabled: true, intervalSeconds: 1, reconcileMinutes: 60 } })).status).toBe(200);
    expect((await putConfig(dir, { continuous: { enabled: true, intervalSeconds: 1, reconcileMinutes: 60 } })).status).toBe(200);
    expect((await rt.call('GET', `connectors/${hr}`)).body.config.continuous).toEqual({ enabled: true, intervalSeconds: 1, reconcileMinutes: 60 });
    // A follower that starts asks each target for one untargeted export (whatever an earlier process landed).
    await waitFor(
      'the first export of the follower',
      async () =>
        (await runsOf(dir)).some((r) => r.runType === 'Export' && r.trigger.type === 'continuous' && !r.trigger.sourceRunId && r.status === 'Completed'),
      120_000,
    );
    const id = (await meshOf(hr)).get('C001')!.id;
    expect(await entry('C001')).toBeDefined();
    rows = rows.filter((r) => r.employeeId !== 'C001');
    writeHr();
    await waitFor('C001 gone from the directory', async () => (await entry('C001')) === undefined, 120_000);
    await waitFor('the leaver done', async () => (await leaverOf(id))?.state === 'done', 120_000);

    const batch = (await runsOf(hr)).find((r) => r.trigger.type === 'continuous' && r.runType === 'DeltaImport' && r.stats.objectsDeleted === 1);
    expect(batch).toMatchObject({ status: 'Completed', trigger: { type: 'continuous', actorUpn: 'continuous:HR' } });
    expect(batch.trigger.reconcile).toBeUndefined();
    // The batch's export: a targeted Export run naming it, which deleted the one leaver and looked at nothing else.
    const exported = (await runsOf(dir)).find((r) => r.runType === 'Export' && r.trigger.sourceRunId === batch.runId);
    expect(exported).toMatchObject({
      status: 'Completed',
      trigger: { type: 'continuous', actorUpn: 'continuous:HR' },
      stats: { objectsProcessed: 1, objectsCreated: 0, objectsUpdated: 0, objectsDeleted: 1, errors: 0 },
    });
    expect((await leaverOf(id))!.sentRunId).toBe(exported.runId);
    // An update flows the same way.
    rows = rows.map((r) => (r.employeeId === 'C002' ? { ...r, givenName: 'Robert' } : r));
    writeHr();
    await waitFor('C002 renamed in the directory', async () => (await entry('C002'))?.givenName === 'Robert', 120_000);
  });

  test('a look that sees nothing starts no run', async () => {
    // Wait until every run of both connectors is over, then for several looks (each a second apart).
    await waitFor(
      'no active run',
      async () => [...(await runsOf(hr)), ...(await runsOf(dir))].every((r) => !['Running', 'Queued'].includes(r.status)),
      120_000,
    );
    const before = (await runsOf(hr)).length;
    const marker = Date.now();
    await waitFor('five seconds of looks', async () => Date.now() - marker > 5000, 10_000);
    expect((await runsOf(hr)).length).toBe(before);
  });

  test('kill -9 right after a change loses nothing: after the restart the change arrives', async () => {
    rows = rows.filter((r) => r.employeeId !== 'C003');
    writeHr();
    await rt.kill();
    await rt.start();
    await waitFor('C003 gone from the directory after the restart', async () => (await entry('C003')) === undefined, 180_000);
  });

  test('the reconciling delta runs on its own and finds nothing missed', async () => {
    expect((await putConfig(hr, { continuous: { enabled: true, intervalSeconds: 1, reconcileMinutes: 1 } })).status).toBe(200);
    // eslint-disable-next-line @typescript-eslint/no-explicit-any
    let reconciled: any;
    await waitFor(
      'a reconciling delta',
      async () => {
        reconciled = (await runsOf(hr)).find((r) => r.trigger.reconcile === true && !['Running', 'Queued'].includes(r.status));
        return !!reconciled;
      },
      180_000,
    );
    expect(reconciled).toMatchObject({
      runType: 'DeltaImport',
      status: 'Completed',
      trigger: { type: 'continuous' },
      stats: { objectsCreated: 0, objectsUpdated: 0, objectsDeleted: 0 },
    });
    expect(await entry('C004')).toBeDefined();
    // Reconciling an hour (of test minutes) away again: the next test's batch is a look's, not a reconcile.
    expect((await putConfig(hr, { continuous: { enabled: true, intervalSeconds: 1, reconcileMinutes: 60 } })).status).toBe(200);
  });
  test('a batch over the deletes threshold waits for approval (no other batch meanwhile); approved, it is applied and exported', async () => {
    expect((await putConfig(hr, { deletionThreshold: undefined, thresholds: { deletes: { count: 1 } } })).status).toBe(200);
    rows = rows.filter((r) => r.employeeId !== 'C002' && r.employeeId !== 'C004');
    writeHr();
    // eslint-disable-next-line @typescript-eslint/no-explicit-any
    let held: any;
    await waitFor(
      'a batch awaiting approval',
      async () => {
        held = (await runsOf(hr)).find((r) => r.status === 'AwaitingApproval');
        return !!held;
      },
      120_000,
    );
    expect(held).toMatchObject({ runType: 'DeltaImport', trigger: { type: 'continuous', actorUpn: 'continuous:HR' } });
    expect(await entry('C002')).toBeDefined();
    expect(await entry('C004')).toBeDefined();
    // While it waits the follower starts nothing else on HR (the run holds the connector's lock).
    const count = (await runsOf(hr)).length;
    const marker = Date.now();
    await waitFor('a few looks', async () => Date.now() - marker > 4000, 10_000);
    expect((await runsOf(hr)).length).toBe(count);
    expect((await rt.call('POST', `runs/${held.runId}/approve`, { body: {} })).status).toBe(202);
    await waitFor('C002 and C004 gone from the directory', async () => (await entry('C002')) === undefined && (await entry('C004')) === undefined, 120_000);
    expect((await runsOf(dir)).find((r) => r.runType === 'Export' && r.trigger.sourceRunId === held.runId)).toMatchObject({
      trigger: { type: 'continuous' },
    });
  });
});
