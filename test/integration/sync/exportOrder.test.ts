import { startPostgres, type Postgres } from '../../support/postgres';
import { serverAvailable } from '../../support/servers';
import { startService, type ServiceUnderTest } from '../../support/service';
import { startSlapd, type Slapd } from '../../support/slapd';
import { SlapdFixture } from '../ldap/ldapFixture';
import { person, TutorialDesign, type HrRow } from './tutorialDesign';

/**
 * A full export in reference order (docs/sync-engine.md, "A full export in reference order"), against a real
 * slapd and a real PostgreSQL with the tutorial's design: 40 new people in a tree (person i reports to person
 * (i - 1) / 3 rounded down, four levels), listed in the HR file reports first. With the default settings every
 * manager is added before the page of their reports, so every reference goes with its person's add: the runs'
 * changes are 40 adds and no update. With `Export__OrderedMax=0` the same export goes partition by partition
 * (the path of a type over the limit) and a second pass writes the references the first left out. Either way
 * the targets, read back from outside, hold exactly what the HR rows imply, and a second export has nothing to do.
 */
jest.setTimeout(600_000);

const N = 40;
const id = (i: number) => `E${String(7000 + i)}`;
const department = (i: number) => ['Engineering', 'Sales', 'Research'][i % 3];
// Reports before their managers in the file: the order must come from the references, not from the source.
const rows = (): HrRow[] => Array.from({ length: N }, (_, k) => N - 1 - k).map((i) => person(id(i), department(i), i === 0 ? '' : id(Math.floor((i - 1) / 3))));

const modes: [string, Record<string, string>][] = [
  ['in reference order (the default)', {}],
  ['partition by partition (Export__OrderedMax=0)', { Export__OrderedMax: '0' }],
];

(serverAvailable('slapd') && serverAvailable('postgres') ? describe.each(modes) : describe.skip.each(modes))('a full export %s', (mode, env) => {
  let slapd: Slapd;
  let pg: Postgres;
  let rt: ServiceUnderTest;
  let t: TutorialDesign;
  const ordered = Object.keys(env).length === 0;

  beforeAll(async () => {
    [slapd, pg] = await Promise.all([startSlapd({ refintAttributes: ['member'] }), startPostgres()]);
    rt = await startService({ env });
    const f = await new SlapdFixture(slapd).init();
    const db = await pg.createDatabase('order');
    t = await new TutorialDesign(rt, f, pg, db).setUp();
  });

  afterAll(async () => {
    await t?.close();
    await rt?.stop();
    await Promise.all([slapd?.stop(), pg?.stop()]);
  });

  it(`adds ${N} people with their managers to both targets, right when read back (${mode})`, async () => {
    const hr = rows();
    t.writeHr(hr);
    expect((await t.importHr('FullImport')).status).toBe('Completed');
    for (const target of [t.dir, t.staff]) {
      const run = await t.exportTo(target);
      expect(run).toMatchObject({ status: 'Completed', stats: { objectsProcessed: N, objectsCreated: N, objectsUpdated: 0, errors: 0 } });
      const changes = await rt.call('GET', `runs/${run.runId ?? run.id}/changes?take=100`);
      expect(changes.status).toBe(200);
      const items = changes.body.items as { operation: string; meshObjectId: string }[];
      const updates = items.filter((c) => c.operation === 'Update');
      expect(items.filter((c) => c.operation === 'Add')).toHaveLength(N);
      // In reference order every manager is in the target before its reports are planned: nothing is updated
      // after its add. Partition by partition, the references to managers added later are a second pass's updates.
      if (ordered) expect(updates).toEqual([]);
      else expect(updates.length).toBeGreaterThan(0);
    }
    expect(await t.differences(hr)).toEqual([]);
    // Nothing left over: the next export of each target changes nothing.
    for (const target of [t.dir, t.staff]) expect(await t.exportTo(target)).toMatchObject({ status: 'Completed', stats: { objectsProcessed: 0, errors: 0 } });
  });
});

(serverAvailable('slapd') && serverAvailable('postgres') ? describe : describe.skip)('a full export in reference order killed part way (kill -9)', () => {
  let slapd: Slapd;
  let pg: Postgres;
  let rt: ServiceUnderTest;
  let t: TutorialDesign;
  // 364 people: levels of 1, 3, 9, 27, 81 and 243, six pages.
  const M = 364;
  const people = (): HrRow[] =>
    Array.from({ length: M }, (_, k) => M - 1 - k).map((i) => person(id(i), department(i), i === 0 ? '' : id(Math.floor((i - 1) / 3))));

  beforeAll(async () => {
    [slapd, pg] = await Promise.all([startSlapd({ refintAttributes: ['member'] }), startPostgres()]);
    rt = await startService();
    const f = await new SlapdFixture(slapd).init();
    const db = await pg.createDatabase('orderkill');
    t = await new TutorialDesign(rt, f, pg, db).setUp();
  });

  afterAll(async () => {
    await t?.close();
    await rt?.stop();
    await Promise.all([slapd?.stop(), pg?.stop()]);
  });

  it('goes on after the restart without what the killed process kept: every person once, right, and nothing left to do', async () => {
    const hr = people();
    t.writeHr(hr);
    expect((await t.importHr('FullImport')).status).toBe('Completed');
    const started = await rt.call('POST', `connectors/${t.dir}/export`, { body: {} });
    expect(started.status).toBe(202);
    const runId = started.body.runId as string;
    // Killed once a page has been applied and recorded, before the run ends.
    for (;;) {
      const r = await rt.call('GET', `runs/${runId}`);
      if (r.body.status !== 'Running' && r.body.status !== 'Queued') throw new Error(`the run ended before the service could be killed: ${r.text}`);
      if (r.body.stats?.objectsProcessed > 0) break;
      await new Promise((res) => setTimeout(res, 50));
    }
    await rt.kill();
    await rt.start();
    const { waitRun } = await import('./syncSupport');
    const ended = await waitRun(rt, runId, 300_000);
    expect(ended).toMatchObject({ status: 'Completed', stats: { errors: 0 } });
    const staff = await t.exportTo(t.staff);
    expect(staff).toMatchObject({ status: 'Completed', stats: { objectsCreated: M, errors: 0 } });
    // Read back from outside: each person once (an entry per DN, the count right), with their manager.
    const entries = [...(await t.directory()).values()].flat();
    expect(entries).toHaveLength(M);
    expect(await t.differences(hr)).toEqual([]);
    for (const target of [t.dir, t.staff]) expect(await t.exportTo(target)).toMatchObject({ status: 'Completed', stats: { objectsProcessed: 0, errors: 0 } });
  });
});
