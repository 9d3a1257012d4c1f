import { startPostgres, type Postgres } from '../../support/postgres';
import { serverAvailable } from '../../support/servers';
import { startService, type ServiceUnderTest } from '../../support/service';
import { startSlapd, type Slapd } from '../../support/slapd';
import { SlapdFixture } from '../ldap/ldapFixture';
import { rule, waitRun } from './syncSupport';
import { person, TutorialDesign, type HrRow } from './tutorialDesign';

/**
 * A large page of an export goes to the target in parts, and what the target answered for one part is recorded
 * (its connector-space rows, then its links) while the target works on the next (docs/sync-engine.md, "A full
 * export in reference order"). Against a real slapd and a real PostgreSQL with the tutorial's design: 1,111 new
 * people in a tree of fan-out 10 (levels of 1, 10, 100 and 1,000: the last page is over the size that is split).
 * Every object is added once with its manager, read back right from outside, and a full export afterwards (a
 * new rule of the target makes it full: it looks at every object) has nothing to do: a connector-space row or a
 * link not recorded would make it add (take over) the object again. Killed (kill -9) while the target works on the
 * large page, the export goes on after the restart and still adds every person once.
 */
jest.setTimeout(600_000);

const M = 1111;
const id = (i: number) => `E${String(20000 + i)}`;
const department = (i: number) => ['Engineering', 'Sales', 'Research', 'Support'][i % 4];
// Reports before their managers in the file: the order comes from the references.
const people = (): HrRow[] =>
  Array.from({ length: M }, (_, k) => M - 1 - k).map((i) => person(id(i), department(i), i === 0 ? '' : id(Math.floor((i - 1) / 10))));

const servers = serverAvailable('slapd') && serverAvailable('postgres');

/** A full export of each target, made full by a new rule of it that changes nothing: nothing to do. */
async function fullExportsFindNothing(rt: ServiceUnderTest, t: TutorialDesign): Promise<void> {
  for (const target of [t.dir, t.staff]) {
    await rule(rt, { ruleType: 'ProjectionRule', connectorId: target, sourceAttribute: 'uid', objectType: 'Ignored', transformScript: 'false' });
    expect(await t.exportTo(target)).toMatchObject({ status: 'Completed', stats: { objectsProcessed: 0, objectsCreated: 0, objectsUpdated: 0, errors: 0 } });
  }
}

async function setUp(database: string): Promise<{ slapd: Slapd; pg: Postgres; rt: ServiceUnderTest; t: TutorialDesign }> {
  const [slapd, pg] = await Promise.all([startSlapd({ refintAttributes: ['member'] }), startPostgres()]);
  const rt = await startService();
  const f = await new SlapdFixture(slapd).init();
  const db = await pg.createDatabase(database);
  const t = await new TutorialDesign(rt, f, pg, db).setUp();
  return { slapd, pg, rt, t };
}

(servers ? describe : describe.skip)('an export whose page goes to the target in parts', () => {
  let env: Awaited<ReturnType<typeof setUp>>;

  beforeAll(async () => {
    env = await setUp('overlap');
  });

  afterAll(async () => {
    await env?.t.close();
    await env?.rt.stop();
    await Promise.all([env?.slapd.stop(), env?.pg.stop()]);
  });

  it(`adds ${M} people with their managers to both targets, each once, right when read back; nothing left to do`, async () => {
    const { t } = env;
    const hr = people();
    t.writeHr(hr);
    expect((await t.importHr('FullImport')).status).toBe('Completed');
    for (const target of [t.dir, t.staff])
      expect(await t.exportTo(target)).toMatchObject({ status: 'Completed', stats: { objectsProcessed: M, objectsCreated: M, objectsUpdated: 0, errors: 0 } });
    expect([...(await t.directory()).values()].flat()).toHaveLength(M);
    expect(await t.differences(hr)).toEqual([]);
    await fullExportsFindNothing(env.rt, t);
  });
});

(servers ? describe : describe.skip)('an export killed (kill -9) while the target works on a page sent in parts', () => {
  let env: Awaited<ReturnType<typeof setUp>>;

  beforeAll(async () => {
    env = await setUp('overlapkill');
  });

  afterAll(async () => {
    await env?.t.close();
    await env?.rt.stop();
    await Promise.all([env?.slapd.stop(), env?.pg.stop()]);
  });

  it('goes on after the restart: every person once, right, and nothing left to do', async () => {
    const { t, rt } = env;
    const hr = people();
    t.writeHr(hr);
    expect((await t.importHr('FullImport')).status).toBe('Completed');
    const started = await rt.call('POST', `connectors/${t.dir}/export`, { body: {} });
    expect(started.status).toBe(202);
    const runId = started.body.runId as string;
    // Killed once the large page (the last 1,000) has its first part in the directory, before the run ends.
    for (;;) {
      const r = await rt.call('GET', `runs/${runId}`);
      if (r.body.status !== 'Running' && r.body.status !== 'Queued') throw new Error(`the run ended before the service could be killed: ${r.text}`);
      if ((await t.directory()).size >= 111 + 300) break;
    }
    await rt.kill();
    const atKill = (await t.directory()).size;
    expect(atKill).toBeLessThan(M);
    await rt.start();
    expect(await waitRun(rt, runId, 300_000)).toMatchObject({ status: 'Completed', stats: { errors: 0 } });
    expect(await t.exportTo(t.staff)).toMatchObject({ status: 'Completed', stats: { objectsCreated: M, errors: 0 } });
    expect([...(await t.directory()).values()].flat()).toHaveLength(M);
    expect(await t.differences(hr)).toEqual([]);
    await fullExportsFindNothing(rt, t);
  });
});
