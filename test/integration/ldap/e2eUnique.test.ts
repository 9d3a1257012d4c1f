import type { Client } from 'ldapts';
import { describeWithServer } from '../../support/servers';
import { startService, type ServiceUnderTest } from '../../support/service';
import { startSlapd, type Slapd } from '../../support/slapd';
import { folder, rule, runExport, runImport, sourceRules, waitRun, writeCsv, outboundRule } from '../sync/syncSupport';
import { ldapConnector, meshOf, stopSlapdSuite } from './e2eSupport';
import { SlapdFixture } from './ldapFixture';

/**
 * Unique values end to end against slapd, through two running engine instances on one storage: 60 hires whose
 * names collide are provisioned into two directories (Engineering into one, Sales into the other) whose `uid`
 * rules share one pool (scope targets), by two exports that run at the same time, one on each instance. No uid is
 * handed out twice, in either directory or across them. A value held by an entry made outside the engine (an
 * ldapadd before the export, unknown to the engine) is refused by the directory: the next candidate is used and
 * explain says why; a value an import brought in blocks its candidate before any add. A rule whose candidates are
 * all taken holds the object with an error naming the rule.
 */
jest.setTimeout(600_000);

const HR = ['id', 'employeeId', 'givenName', 'sn', 'department'];
const GIVEN = ['John', 'Jane', 'Jim', 'Joan', 'Jake', 'Jill'];
const SURNAMES = ['Smith', 'Stone'];
const HIRES = Array.from({ length: 60 }, (_, i) => ({
  id: `h${i}`,
  employeeId: `E${String(i).padStart(3, '0')}`,
  givenName: GIVEN[i % GIVEN.length],
  sn: SURNAMES[Math.floor(i / GIVEN.length) % SURNAMES.length],
  department: i % 2 ? 'Sales' : 'Engineering',
}));

const INITIAL = 'object.givenName.substring(0, 1).toLowerCase() + object.sn.toLowerCase()';
const FULL = 'object.givenName.toLowerCase() + "." + object.sn.toLowerCase()';
const COUNTED = 'object.givenName.substring(0, 1).toLowerCase() + object.sn.toLowerCase() + counter';

describeWithServer('slapd')('unique values provisioned into slapd by two engine instances', () => {
  let slapd: Slapd;
  let a: ServiceUnderTest;
  let b: ServiceUnderTest;
  let eng: SlapdFixture;
  let sales: SlapdFixture;
  let admin: Client;
  const hrDir = folder('ims-unique-hr-');
  let hr = '';
  let dirA = '';
  let dirB = '';
  let uidRuleA = '';

  const uidsUnder = async (base: string) =>
    (await admin.search(base, { scope: 'sub', filter: '(&(objectClass=inetOrgPerson)(employeeNumber=E*))', attributes: ['uid', 'employeeNumber', 'mail'] }))
      .searchEntries;

  beforeAll(async () => {
    slapd = await startSlapd();
    a = await startService({ env: { Engine__InstanceName: 'engine-a' } });
    b = await startService({ prefix: a.prefix, env: { Engine__InstanceName: 'engine-b' } });
    eng = await new SlapdFixture(slapd).init();
    sales = await new SlapdFixture(slapd).init();
    admin = await eng.client();

    writeCsv(hrDir, 'hr.csv', HR, HIRES);
    const res = await a.call('POST', 'connectors', {
      body: { name: 'HR', type: 'custom', config: { implementation: 'file', objectType: 'User', settings: { path: hrDir, anchorColumn: 'id' } } },
    });
    expect(res.status).toBe(201);
    hr = res.body.id;
    await sourceRules(a, hr, 'employeeId', HR.slice(1));

    dirA = await ldapConnector(a, 'Engineering directory', eng.config({ provisioningCondition: 'source.department == "Engineering"' }));
    dirB = await ldapConnector(a, 'Sales directory', sales.config({ provisioningCondition: 'source.department == "Sales"' }));
    const unique = { candidates: [INITIAL, FULL, COUNTED], scope: 'targets', connectorIds: [dirA, dirB] };
    for (const dir of [dirA, dirB]) {
      const out = outboundRule(a, dir);
      const id = await rule(a, { ruleType: 'FlowRule', connectorId: dir, direction: 'outbound', sourceAttribute: 'sn', targetAttribute: 'uid', unique });
      if (dir === dirA) uidRuleA = id;
      await out('employeeId', 'employeeNumber');
      await out('givenName', 'givenName');
      await out('sn', 'sn');
      await out('givenName', 'cn', 'object.givenName + " " + object.sn');
      await out('department', 'departmentNumber');
      await rule(a, { ruleType: 'JoinRule', connectorId: dir, sourceAttribute: 'employeeNumber', targetAttribute: 'employeeId' });
    }
    // mail: unique in the Engineering directory only (scope connector), first.last then first.last<n>.
    await rule(a, {
      ruleType: 'FlowRule',
      connectorId: dirA,
      direction: 'outbound',
      sourceAttribute: 'sn',
      targetAttribute: 'mail',
      unique: { candidates: [`${FULL} + "@example.test"`, `${FULL} + counter + "@example.test"`], counter: { from: 2, to: 50 } },
    });
    // The Sales directory's exports run on the second instance.
    const instances = (await a.call('GET', 'instances')).body.items as { id: string; name: string }[];
    const idB = instances.find((i) => i.name === 'engine-b')!.id;
    expect((await a.call('PUT', `connectors/${dirB}/instance`, { body: { instanceId: idB } })).status).toBe(200);
  });
  afterAll(async () => {
    await b?.dispose();
    await stopSlapdSuite({ admin, rt: a, f: eng, slapd: undefined });
    await sales?.cleanup();
    await slapd?.stop();
  });

  test('a save checks the unique object: candidates parse, scope connectors exist, only an outbound FlowRule has one', async () => {
    const base = { ruleName: 'bad unique', ruleType: 'FlowRule', connectorId: dirA, direction: 'outbound', sourceAttribute: 'sn', targetAttribute: 'uid' };
    const bad = await a.call('POST', 'rules', { body: { ...base, unique: { candidates: ['object.sn +', 'countr'] } } });
    expect(bad.status).toBe(400);
    expect(bad.headers.get('content-type')).toMatch(/application\/problem\+json/);
    expect(bad.body.errors.map((e: { path: string }) => e.path)).toEqual(['/unique/candidates/0', '/unique/candidates/1']);
    const missing = await a.call('POST', 'rules', {
      body: { ...base, unique: { candidates: [INITIAL], scope: 'targets', connectorIds: ['00000000-0000-4000-8000-000000000000'] } },
    });
    expect(missing.status).toBe(400);
    expect(missing.body.errors).toEqual([{ path: '/unique/connectorIds/0', message: 'is not an existing connector' }]);
    const inbound = await a.call('POST', 'rules', { body: { ...base, direction: 'inbound', confidence: 10, unique: { candidates: [INITIAL] } } });
    expect(inbound.status).toBe(400);
    expect(inbound.body.errors).toEqual([{ path: '/unique', message: 'applies only to an outbound FlowRule or a computed attribute (MeshComposerRule)' }]);
    const saved = (await a.call('GET', `rules/${uidRuleA}`)).body;
    expect(saved.unique).toEqual({
      candidates: [INITIAL, FULL, COUNTED],
      scope: 'targets',
      connectorIds: [dirA, dirB].sort(),
      counter: { from: 2, to: 99 },
      caseSensitive: false,
      keepOnRename: true,
      quarantineDays: 90,
    });
  });

  test('60 colliding hires, two exports at once on two instances: every uid and mail is handed out once', async () => {
    expect(await runImport(a, hr)).toMatchObject({ status: 'Completed', stats: { objectsCreated: 60, errors: 0 } });
    const [ra, rb] = await Promise.all([a.call('POST', `connectors/${dirA}/export`, { body: {} }), b.call('POST', `connectors/${dirB}/export`, { body: {} })]);
    expect([ra.status, rb.status]).toEqual([202, 202]);
    const [runA, runB] = await Promise.all([waitRun(a, ra.body.runId), waitRun(b, rb.body.runId)]);
    expect(runA).toMatchObject({ status: 'Completed', stats: { objectsCreated: 30, errors: 0 } });
    expect(runB).toMatchObject({ status: 'Completed', stats: { objectsCreated: 30, errors: 0 } });

    const people = [...(await uidsUnder(eng.base)), ...(await uidsUnder(sales.base))];
    expect(people).toHaveLength(60);
    const uids = people.map((p) => String(p.uid).toLowerCase());
    expect(new Set(uids).size).toBe(60);
    // Each hire got the first free candidate of its own name.
    for (const p of people) {
      const h = HIRES.find((x) => x.employeeId === p.employeeNumber)!;
      const initial = (h.givenName[0] + h.sn).toLowerCase();
      expect(String(p.uid)).toMatch(new RegExp(`^(${initial}|${h.givenName.toLowerCase()}\\.${h.sn.toLowerCase()}|${initial}\\d+)$`));
    }
    // ldapts gives [] for an attribute the entry does not have.
    const mails = people.flatMap((p) => [p.mail].flat()).map((m) => String(m).toLowerCase());
    expect(mails).toHaveLength(30);
    expect(new Set(mails).size).toBe(30);
    // Nothing left to export; the confirming imports join every entry.
    expect(await runImport(a, dirA)).toMatchObject({ status: 'Completed', stats: { errors: 0 } });
    expect(await runExport(a, dirA)).toMatchObject({ status: 'Completed', stats: { objectsCreated: 0, objectsUpdated: 0, errors: 0 } });
  });

  test('a value held outside the engine: the directory refuses it, the next candidate is used and explain says why', async () => {
    // Made outside and imported (a disconnector): uid=yzeta.
    await admin.add(`uid=yzeta,ou=Engineering,${eng.base}`, { objectClass: 'inetOrgPerson', uid: 'yzeta', cn: 'Another One', sn: 'One' });
    expect(await runImport(a, dirA)).toMatchObject({ status: 'Completed' });
    // Made outside the engine just before the export: uid=xwarrior (ldapadd), unknown to the connector space.
    await admin.add(`uid=xwarrior,ou=Engineering,${eng.base}`, { objectClass: 'inetOrgPerson', uid: 'xwarrior', cn: 'Someone Else', sn: 'Else' });
    writeCsv(hrDir, 'hr.csv', HR, [
      ...HIRES,
      { id: 'x1', employeeId: 'X001', givenName: 'Xena', sn: 'Warrior', department: 'Engineering' },
      { id: 'y1', employeeId: 'Y001', givenName: 'Yann', sn: 'Zeta', department: 'Engineering' },
    ]);
    expect(await runImport(a, hr)).toMatchObject({ status: 'Completed', stats: { objectsCreated: 2, errors: 0 } });
    const run = await runExport(a, dirA);
    expect(run).toMatchObject({ status: 'Completed', stats: { objectsCreated: 2, errors: 0 } });
    const x = (await admin.search(eng.base, { scope: 'sub', filter: '(employeeNumber=X001)', attributes: ['uid'] })).searchEntries[0];
    const y = (await admin.search(eng.base, { scope: 'sub', filter: '(employeeNumber=Y001)', attributes: ['uid'] })).searchEntries[0];
    expect(x.uid).toBe('xena.warrior');
    expect(y.uid).toBe('yann.zeta');
    // The entries made outside are untouched.
    expect((await admin.search(`uid=xwarrior,ou=Engineering,${eng.base}`, { scope: 'base', attributes: ['cn'] })).searchEntries[0].cn).toBe('Someone Else');

    const mesh = await meshOf(hr);
    const explain = async (anchor: string) => {
      const res = await a.call('GET', `mesh/objects/${mesh.get(anchor)!.id}/attributes/sn/explain`);
      expect(res.status).toBe(200);
      return (
        res.body.exports as {
          connectorId: string;
          targetAttribute: string;
          unique?: { value: string; candidate: number; skipped: { candidate: number; value: string | null; reason: string }[] };
        }[]
      ).find((e) => e.connectorId === dirA && e.targetAttribute === 'uid')!;
    };
    const ex = await explain('X001');
    expect(ex.unique).toMatchObject({ value: 'xena.warrior', candidate: 1, skipped: [{ candidate: 0, value: 'xwarrior' }] });
    expect(ex.unique!.skipped[0].reason).toMatch(/^taken in the target outside the engine \(the target refused it: .*already exists/);
    const ey = await explain('Y001');
    expect(ey.unique).toMatchObject({ value: 'yann.zeta', candidate: 1, skipped: [{ candidate: 0, value: 'yzeta' }] });
    expect(ey.unique!.skipped[0].reason).toMatch(/by an object the engine did not create/);
  });

  test('every candidate taken: the object is held, with an error naming the rule and the values tried', async () => {
    const dirC = await ldapConnector(
      a,
      'Support directory',
      sales.config({
        provisioningCondition: 'source.department == "Support"',
        exportDnTemplate: '"uid=" + dnEscape(source.uid) + ",ou=Sales," + baseDN',
      }),
    );
    const out = outboundRule(a, dirC);
    const ruleId = await rule(a, {
      ruleName: 'Support uid',
      ruleType: 'FlowRule',
      connectorId: dirC,
      direction: 'outbound',
      sourceAttribute: 'sn',
      targetAttribute: 'uid',
      unique: { candidates: ['object.sn.toLowerCase()'] },
    });
    await out('employeeId', 'employeeNumber');
    await out('sn', 'sn');
    await out('sn', 'cn');
    await out('department', 'departmentNumber');
    writeCsv(hrDir, 'hr.csv', HR, [
      ...HIRES,
      { id: 'x1', employeeId: 'X001', givenName: 'Xena', sn: 'Warrior', department: 'Engineering' },
      { id: 'y1', employeeId: 'Y001', givenName: 'Yann', sn: 'Zeta', department: 'Engineering' },
      { id: 's1', employeeId: 'S001', givenName: 'Ann', sn: 'Held', department: 'Support' },
      { id: 's2', employeeId: 'S002', givenName: 'Bob', sn: 'Held', department: 'Support' },
    ]);
    expect(await runImport(a, hr)).toMatchObject({ status: 'Completed', stats: { objectsCreated: 2 } });
    const run = await runExport(a, dirC);
    expect(run).toMatchObject({ status: 'CompletedWithErrors', stats: { objectsCreated: 1, errors: 1 } });
    const err = (run.errors as { object?: string; message: string }[]).find((e) => e.object === 'S002' || e.object === 'S001')!;
    expect(err.message).toContain(
      `Rule 'Support uid' (id ${ruleId}) on attribute 'uid': every candidate is taken: 1 value(s) tried, among them 'held' (reserved by mesh object`,
    );
    // Held, not added half made: one entry with uid=held.
    expect((await admin.search(sales.base, { scope: 'sub', filter: '(sn=Held)', attributes: ['uid'] })).searchEntries).toHaveLength(1);
  });
});
