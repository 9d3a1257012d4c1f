import type { Client } from 'ldapts';
import type { OrphanView } from '../../../lib/api/orphans';
import { describeWithServer } from '../../support/servers';
import { type ServiceUnderTest } from '../../support/service';
import type { Slapd } from '../../support/slapd';
import { folder, meshByAnchor, runImport, waitRun, writeCsv } from '../sync/syncSupport';
import { stopSlapdSuite, startHrDirectory } from './e2eSupport';
import { SlapdFixture } from './ldapFixture';

/**
 * A gated import (a target whose thresholds limit updates: every run is planned first, then applies its plan)
 * still takes every account of the target into the connector space: accounts made in slapd outside the engine
 * (ldapadd) are disconnectors there after a full import, and in the orphan report; an apply of an explicit plan
 * records an account that appeared after the plan was made (a disconnector changes no mesh object), while a new
 * HR person that would project is left for the next run.
 */
jest.setTimeout(300_000);

const HR = ['id', 'employeeId', 'givenName', 'sn'];
type Row = Record<(typeof HR)[number], string>;
const person = (n: number, givenName: string): Row => ({ id: `g${n}`, employeeId: `E7${String(n).padStart(2, '0')}`, givenName, sn: 'Gated' });

describeWithServer('slapd')('a gated import records disconnectors (HR file source, slapd target with an updates threshold)', () => {
  let slapd: Slapd;
  let rt: ServiceUnderTest;
  let f: SlapdFixture;
  let admin: Client;
  let hr = '';
  let dir = '';
  const hrDir = folder('ims-gated-hr-');
  let rows = [person(1, 'Ann'), person(2, 'Bob'), person(3, 'Cy')];
  const writeHr = () => writeCsv(hrDir, 'hr.csv', HR, rows);
  const dnOf = (uid: string) => `uid=${uid},ou=Engineering,${f.base}`;
  const rogue = (uid: string) => admin.add(dnOf(uid), { objectClass: ['inetOrgPerson'], uid, cn: `${uid} account`, sn: 'Outside' });
  /** The connector-space objects of the directory whose DN names `uid`. */
  const inSpace = async (uid: string) => {
    const res = await rt.call('GET', `connectors/${dir}/space?search=${encodeURIComponent(`uid=${uid},`)}`, { role: 'Viewer' });
    expect(res.status).toBe(200);
    return res.body.items as { dn: string; meshObjectId: string | null }[];
  };
  const orphans = async () => {
    const res = await rt.call('GET', `connectors/${dir}/orphans`, { role: 'Viewer' });
    expect(res.status).toBe(200);
    return (res.body.items as OrphanView[]).map((o) => `${o.dn} ${o.reason}`).sort();
  };
  const dryRun = async (connectorId: string) => {
    const plan = await runImport(rt, connectorId, { runType: 'FullImport', dryRun: true });
    expect(plan).toMatchObject({ status: 'Completed', dryRun: true, plan: { expiresOn: expect.any(String) } });
    return plan.runId as string;
  };
  const apply = async (planRunId: string) => {
    const started = await rt.call('POST', `runs/${planRunId}/apply`, { role: 'Operator' });
    expect(started.status).toBe(202);
    return waitRun(rt, started.body.runId);
  };

  beforeAll(async () => {
    writeHr();
    ({ slapd, rt, f, admin, hr, dir } = await startHrDirectory({
      hrDir,
      people: 3,
      hrFlows: ['employeeId', 'givenName', 'sn'],
      // A limit on updates (never reached here): every run of the directory is planned first, then applied.
      directory: { thresholds: { updates: { count: 1000 } } },
    }));
  });
  afterAll(async () => {
    await stopSlapdSuite({ admin, rt, f, slapd });
  });

  test('a full import of the gated target takes accounts made outside the engine into its connector space, and the orphan report lists them', async () => {
    await rogue('svc-gated');
    await rogue('old-gated');
    const run = await runImport(rt, dir);
    expect(run).toMatchObject({ status: 'Completed', stats: { objectsCreated: 2, errors: 0 } });
    for (const uid of ['svc-gated', 'old-gated']) expect(await inSpace(uid)).toEqual([expect.objectContaining({ dn: dnOf(uid), meshObjectId: null })]);
    expect(await orphans()).toEqual([`${dnOf('old-gated')} disconnector`, `${dnOf('svc-gated')} disconnector`]);
    // The joined accounts stay joined; nothing reached the mesh from the new accounts.
    expect((await inSpace('E701'))[0].meshObjectId).toEqual(expect.any(String));
    expect([...(await meshByAnchor()).keys()].sort()).toEqual(['E701', 'E702', 'E703']);

    // A second import finds them as it left them; one removed in the directory leaves the connector space.
    await admin.del(dnOf('old-gated'));
    expect(await runImport(rt, dir)).toMatchObject({ status: 'Completed', stats: { objectsCreated: 0, errors: 0 } });
    expect(await inSpace('old-gated')).toEqual([]);
    expect(await orphans()).toEqual([`${dnOf('svc-gated')} disconnector`]);
  });

  test('an apply records an account that appeared after its plan; a new HR person that would project waits for the next run', async () => {
    const dirPlan = await dryRun(dir);
    const hrPlan = await dryRun(hr);
    // Between the plans and their applies: an account is made in the directory, a person arrives in HR.
    await rogue('late-gated');
    rows = [...rows, person(4, 'Dee')];
    writeHr();

    expect(await apply(dirPlan)).toMatchObject({ status: 'Completed', stats: { objectsCreated: 1, errors: 0 } });
    expect(await inSpace('late-gated')).toEqual([expect.objectContaining({ dn: dnOf('late-gated'), meshObjectId: null })]);
    expect(await orphans()).toContain(`${dnOf('late-gated')} disconnector`);

    const applied = await apply(hrPlan);
    expect(applied).toMatchObject({ status: 'Completed', stats: { objectsCreated: 0, errors: 0 } });
    expect((await meshByAnchor()).has('E704')).toBe(false);
    expect(await runImport(rt, hr)).toMatchObject({ status: 'Completed', stats: { objectsCreated: 1, errors: 0 } });
    expect((await meshByAnchor()).has('E704')).toBe(true);
  });
});
