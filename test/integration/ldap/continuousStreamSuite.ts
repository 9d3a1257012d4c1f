import { execFile } from 'node:child_process';
import { closeParkedSearches } from '../../../lib/connectors/ldap';
import type { DirectoryConfig } from '../../../lib/connectors/ldap/schema';
import { PEOPLE } from '../../support/connectorContract';
import { startService, type ServiceUnderTest } from '../../support/service';
import type { Slapd } from '../../support/slapd';
import { runImport, valueOf } from '../sync/syncSupport';
import { directoryRules, ldapConnector, meshOf, putConnectorConfig, waitFor } from './e2eSupport';
import { SlapdFixture } from './ldapFixture';

/**
 * Continuous mode with the directory's change stream, end to end (the built service over HTTP, the real servers):
 * the tests one directory source passes, followed with `intervalSeconds: 300`, so that only the stream can explain
 * a batch that starts within a minute of a change. A change (made by another client) is imported by a continuous
 * DeltaImport run; the server restarts, the stream drops (the gauge shows 0) and comes back (1), and changes made
 * around the restart arrive; a kill -9 of the service loses no change and the new process opens the stream again;
 * the reconciling delta finds nothing missed. `stream: "off"` closes the stream. One suite file per server
 * (e2eContinuousStreamSlapd, e2eContinuousStreamDs389, e2eContinuousStreamSamba), so that jest runs them side by side.
 */
/** Well under intervalSeconds (300 s): a batch within this is the stream's doing. */
const STREAM_MS = 60_000;

/**
 * The service's reconcile minute (the Development-only test hook Continuous__TestHooks__ReconcileMinuteSeconds):
 * `reconcileMinutes: 1` reconciles 10 s after it is set, `60` not within 10 minutes, longer than the suite.
 */
const RECONCILE_MINUTE = { Continuous__TestHooks__ReconcileMinuteSeconds: '10' };

/** What the suite needs of one directory. */
export interface DirectoryUnderTest {
  kind: string;
  /** Make the connector (named `name`) and its rules in the service, with `sn` flowing in; returns its id. */
  connector(rt: ServiceUnderTest, name: string): Promise<string>;
  /** The anchor value (mesh) of the entry {@link DirectoryUnderTest.setSn} changes. */
  anchor: string;
  /** Replace the entry's sn (as another client of the directory). */
  setSn(value: string): Promise<void>;
  halt(): Promise<void>;
  restart(): Promise<void>;
}

/** Apply an LDIF change with ldapmodify (another client of the directory than the service). */
function ldapmodify(url: string, bindDN: string, password: string, ldif: string): Promise<void> {
  return new Promise((resolve, reject) => {
    const child = execFile('ldapmodify', ['-x', '-H', url, '-D', bindDN, '-w', password], { timeout: 30_000 }, (err, _out, stderr) =>
      err ? reject(new Error(`ldapmodify: ${stderr || err.message}`)) : resolve(),
    );
    child.stdin?.end(ldif);
  });
}

/** The suite's tests, for one directory (set up by `start`, torn down by `stop`). */
export function streamSuite(start: () => Promise<DirectoryUnderTest>, stop: () => Promise<void>, startTimeoutMs = 300_000): void {
  const NAME = 'Streamed';
  let d: DirectoryUnderTest;
  let rt: ServiceUnderTest;
  let id = '';
  let n = 0;

  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  const runsOf = async (): Promise<any[]> => (await rt.call('GET', `runs?connectorId=${id}&take=100`, { role: 'Viewer' })).body.items;
  /** The gauge's sample for the connector: 1, 0, or undefined (none). */
  const streamUp = async (): Promise<number | undefined> => {
    const text = (await rt.call('GET', 'metrics', { role: 'Viewer' })).text;
    const m = new RegExp(`^meshsync_continuous_stream_up\\{connector="${NAME}"\\} (\\d+)$`, 'm').exec(text);
    return m ? Number(m[1]) : undefined;
  };
  /** The service's count of the stream's notifications (meshsync_continuous_stream_notifications_total). */
  const notifications = async (): Promise<number> => {
    const text = (await rt.call('GET', 'metrics', { role: 'Viewer' })).text;
    const m = new RegExp(`^meshsync_continuous_stream_notifications_total\\{connector="${NAME}"\\} (\\d+)$`, 'm').exec(text);
    return m ? Number(m[1]) : 0;
  };
  const snInMesh = async () => valueOf((await meshOf(id)).get(d.anchor), 'sn');
  const idle = async () => (await runsOf()).every((r) => !['Running', 'Queued'].includes(r.status));
  /**
   * Wait until the open stream is seen registered by the server. A persistent search (389 DS) and a change
   * notification (AD) get no answer when the server registered them: a change applied in the instant before is
   * not notified (docs/continuous.md), and a test that changes an entry right after the gauge shows 1 would wait
   * for the look every intervalSeconds (300 s). So sn is changed once a second until the service counts a
   * notification, and the batch that brings the last value in is waited for, so that it is not taken for the
   * batch of the change the test asserts on.
   */
  async function streamHeard(what: string): Promise<void> {
    const before = await notifications();
    const deadline = Date.now() + STREAM_MS;
    let value = '';
    while ((await notifications()) === before) {
      if (Date.now() > deadline) throw new Error(`${what}: no notification counted in ${STREAM_MS / 1000} s of changes`);
      value = `Probe${++n}`;
      await d.setSn(value);
      const until = Date.now() + 1000;
      while ((await notifications()) === before && Date.now() < until) await new Promise((r) => setTimeout(r, 100));
    }
    await waitFor(`${what}: the probe's sn ${value} in the mesh, its batch over`, async () => (await snInMesh()) === value && (await idle()), STREAM_MS);
  }
  /**
   * Change sn and wait until a continuous DeltaImport run brought it into the mesh; returns that run. `before` runs
   * before the change, `after` after it (before the wait).
   */
  async function changeArrives(what: string, timeoutMs = STREAM_MS, around: { before?: () => Promise<void>; after?: () => Promise<void> } = {}) {
    const value = `Stream${++n}`;
    const known = new Set((await runsOf()).map((r) => r.runId));
    await around.before?.();
    await d.setSn(value);
    await around.after?.();
    await waitFor(`${what}: sn ${value} in the mesh`, async () => (await snInMesh()) === value, timeoutMs);
    // eslint-disable-next-line @typescript-eslint/no-explicit-any
    let batch: any;
    await waitFor(
      `${what}: its batch over`,
      async () => {
        batch = (await runsOf()).find((r) => !known.has(r.runId) && r.runType === 'DeltaImport' && r.stats.objectsUpdated >= 1);
        return !!batch && !['Running', 'Queued'].includes(batch.status);
      },
      timeoutMs,
    );
    expect(batch).toMatchObject({ status: 'Completed', trigger: { type: 'continuous', actorUpn: `continuous:${NAME}` } });
    return batch;
  }

  beforeAll(async () => {
    // The directory and the service start side by side; afterAll stops whichever of them started.
    const [dir, service] = await Promise.allSettled([start(), startService({ env: RECONCILE_MINUTE })]);
    if (service.status === 'fulfilled') rt = service.value;
    if (dir.status === 'rejected') throw dir.reason;
    if (service.status === 'rejected') throw service.reason;
    d = dir.value;
    id = await d.connector(rt, NAME);
    expect(await runImport(rt, id)).toMatchObject({ status: 'Completed', stats: { errors: 0 } });
    expect(await snInMesh()).toBeDefined();
    const on = await putConnectorConfig(rt, id, { continuous: { enabled: true, intervalSeconds: 300, reconcileMinutes: 60 } });
    expect(on.status).toBe(200);
    await waitFor('the change stream open (gauge 1)', async () => (await streamUp()) === 1, 60_000);
    await rt.untilLogged(`change stream open (${d.kind})`, 0, 10_000);
  }, startTimeoutMs);
  afterAll(async () => {
    await rt?.dispose();
    await closeParkedSearches();
    await stop();
  });

  test('a change in the directory is imported by a continuous batch within a minute, twice (the next look is 5 minutes away)', async () => {
    await streamHeard('the stream registered');
    const first = await changeArrives('the first change');
    expect(first.trigger.reconcile).toBeUndefined();
    // After that batch the follower's next look is intervalSeconds away: only the stream explains this one.
    await changeArrives('the second change');
  });

  test('the server restarts: the stream drops (gauge 0), comes back (1); a change made as it came back and one after arrive', async () => {
    const mark = rt.logMark();
    await d.halt();
    await waitFor('the stream down (gauge 0)', async () => (await streamUp()) === 0, 60_000);
    await rt.untilLogged(/the change stream \([^)]+\) dropped/, mark, 10_000);
    await d.restart();
    // Made at once: the stream is normally still down (it is reopened after 1, 2, 4... s); its reopening wakes the follower.
    await changeArrives('the change made while the stream was down', 120_000);
    await waitFor('the stream up again (gauge 1)', async () => (await streamUp()) === 1, 120_000);
    await streamHeard('the stream registered again');
    await changeArrives('the change after the stream came back');
  });

  test('kill -9 of the service: a change made while it was down arrives after the restart, and the new process opens the stream', async () => {
    await changeArrives('the change made while the service was down', 180_000, { before: () => rt.kill(), after: () => rt.start() });
    await waitFor('the stream open in the new process', async () => (await streamUp()) === 1, 120_000);
    await streamHeard('the stream registered in the new process');
    await changeArrives('a change after the restart');
  });

  test('the reconciling delta finds nothing missed', async () => {
    const mark = rt.logMark();
    expect((await putConnectorConfig(rt, id, { continuous: { enabled: true, intervalSeconds: 300, reconcileMinutes: 1 } })).status).toBe(200);
    // eslint-disable-next-line @typescript-eslint/no-explicit-any
    let reconciled: any;
    await waitFor(
      'a reconciling delta',
      async () => {
        reconciled = (await runsOf()).find((r) => r.trigger.reconcile === true && !['Running', 'Queued'].includes(r.status));
        return !!reconciled;
      },
      180_000,
    );
    expect(reconciled).toMatchObject({ runType: 'DeltaImport', status: 'Completed', stats: { objectsCreated: 0, objectsUpdated: 0, objectsDeleted: 0 } });
    await rt.untilLogged(`the reconciling delta ${reconciled.runId} found nothing missed`, mark, 30_000);
  });

  test('stream "off" closes the stream (no gauge sample); a wrong value is a 400 naming the path', async () => {
    const bad = await putConnectorConfig(rt, id, { continuous: { enabled: true, stream: 'sometimes' } });
    expect(bad.status).toBe(400);
    expect(bad.body.errors).toContainEqual(expect.objectContaining({ path: '/config/continuous/stream' }));
    expect((await putConnectorConfig(rt, id, { continuous: { enabled: true, intervalSeconds: 300, reconcileMinutes: 60, stream: 'off' } })).status).toBe(200);
    await waitFor('no gauge sample', async () => (await streamUp()) === undefined, 60_000);
  });
}

/**
 * {@link streamSuite} for an LDAP server with slapd's interface (OpenLDAP, 389 DS): a fixture subtree seeded with
 * the contract's people, an `ldap` connector (`extra` merged into its config) with the directory rules, E001's sn
 * changed with ldapmodify.
 */
export function ldapStreamSuite(kind: string, startServer: () => Promise<Slapd>, extra: Partial<DirectoryConfig> = {}): void {
  let server: Slapd | undefined;
  let f: SlapdFixture | undefined;
  streamSuite(
    async () => {
      const s = (server = await startServer());
      const fx = (f = await new SlapdFixture(s).init());
      await fx.seed(PEOPLE);
      return {
        kind,
        anchor: 'E001',
        connector: async (rt, name) => {
          const id = await ldapConnector(rt, name, fx.config({ ...extra, deletionThreshold: { objects: 10, percent: 100 } }));
          await directoryRules(rt, id);
          return id;
        },
        setSn: (value) => ldapmodify(s.url, s.rootDN, s.rootPassword, `dn: ${fx.dns.get('E001')}\nchangetype: modify\nreplace: sn\nsn: ${value}\n`),
        halt: () => s.halt(),
        restart: () => s.restart(),
      };
    },
    async () => {
      await f?.cleanup().catch(() => undefined);
      await server?.stop();
    },
  );
}
