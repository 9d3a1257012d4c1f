import type { Client } from 'ldapts';
import { describeWithServer } from '../../support/servers';
import { startService, type ServiceUnderTest } from '../../support/service';
import { startSlapd, type Slapd } from '../../support/slapd';
import { correlationPeople, type DirectoryEntry } from '../../support/correlationData';
import { fileConnector, folder, rule, runImport, sourceRules, writeCsv } from './syncSupport';
import { ldapConnector, meshOf, stopSlapdSuite } from '../ldap/e2eSupport';
import { SlapdFixture } from '../ldap/ldapFixture';
import { iterateMesh } from '../../../lib/mesh/store';
import { projectedMeshId, type MeshObject } from '../../../lib/mesh/model';

/**
 * Correlation cases end to end (docs/correlation.md), against a real slapd and an HR file: an existing directory
 * of CORR_PEOPLE people (default 500, to keep npm test quick; CORR_PEOPLE=2000 runs the worked example's 2,000
 * in about 95 s, and bench/correlation/correlation.js measures it) with 10% of its entries missing the key and
 * 20 name twins is imported
 * against HR. The import joins exactly the sure entries and opens exactly the expected cases (reason, candidates,
 * how each matched); decisions through the API (one, by filter, join to any object, project, ignore) land in the
 * mesh; a manual disconnect and its undo are recorded and audited; a second import changes nothing.
 */
jest.setTimeout(600_000);

const N = Number(process.env.CORR_PEOPLE ?? 500);
const HR_COLUMNS = ['id', 'employeeId', 'givenName', 'sn', 'displayName'];

// eslint-disable-next-line @typescript-eslint/no-explicit-any
type Case = any;

describeWithServer('slapd')(`correlation cases: ${N} people (slapd + HR file)`, () => {
  let slapd: Slapd;
  let rt: ServiceUnderTest;
  let f: SlapdFixture;
  let admin: Client;
  const hrDir = folder('ims-corr-hr-');
  let hr = '';
  let dir = '';
  const { hr: people, directory } = correlationPeople(N);
  const byUid = new Map(directory.map((d) => [d.uid, d]));
  const nobody = directory.filter((d) => d.how === 'none').length;
  // After the decisions: the twins but one, the wrong keys but one.
  const stillOpen = directory.filter((d) => d.expect === 'severalCandidates' || d.expect === 'belowThreshold').length - 2;
  const uidOf = (c: Case) => /^uid=([^,]+),/.exec(c.object.dn)![1];

  async function allCases(query: string): Promise<Case[]> {
    const out: Case[] = [];
    for (let skip = 0; ; skip += 200) {
      const res = await rt.call('GET', `correlation-cases?connectorId=${dir}&take=200&skip=${skip}${query}`);
      expect(res.status).toBe(200);
      out.push(...res.body.items);
      if (out.length >= res.body.totalCount) return out;
    }
  }
  const meshByEmployee = async () => {
    const out = new Map<string, MeshObject>();
    for await (const page of iterateMesh()) for (const o of page) out.set(o.anchorValue, o);
    return out;
  };

  beforeAll(async () => {
    slapd = await startSlapd();
    rt = await startService();
    f = await new SlapdFixture(slapd).init();
    admin = await f.client();
    for (const d of directory) {
      const attrs: Record<string, string> = {
        objectClass: 'inetOrgPerson',
        uid: d.uid,
        cn: d.displayName.trim() || d.uid,
        sn: d.sn,
        givenName: d.givenName,
        displayName: d.displayName,
        mail: d.mail,
      };
      if (d.employeeNumber) attrs.employeeNumber = d.employeeNumber;
      await admin.add(`uid=${d.uid},ou=Engineering,${f.base}`, attrs);
    }
    writeCsv(
      hrDir,
      'hr.csv',
      HR_COLUMNS,
      people.map((p) => ({ ...p })),
    );
    hr = await fileConnector(rt, 'HR', hrDir);
    await sourceRules(rt, hr, 'employeeId', ['employeeId', 'givenName', 'sn', 'displayName']);
    dir = await ldapConnector(rt, 'Directory', {
      ...f.config({ deletionThreshold: { objects: 100000, percent: 100 } }),
      correlation: { autoJoinConfidence: 80, caseOnMissingKey: true },
    } as unknown as Record<string, unknown>);
    await rule(rt, { ruleType: 'JoinRule', connectorId: dir, sourceAttribute: 'employeeNumber', targetAttribute: 'employeeId', confidence: 100 });
    await rule(rt, {
      ruleType: 'JoinRule',
      connectorId: dir,
      sourceAttribute: 'displayName',
      targetAttribute: 'displayName',
      confidence: 60,
      match: 'fuzzy',
      fuzzyThreshold: 0.9,
    });
    await rule(rt, { ruleType: 'FlowRule', connectorId: dir, sourceAttribute: 'mail', targetAttribute: 'mail', confidence: 40 });
  });
  afterAll(async () => {
    await stopSlapdSuite({ admin, rt, f, slapd });
  });

  test('the first import joins the sure entries and opens exactly the expected cases', async () => {
    expect(await runImport(rt, hr)).toMatchObject({ status: 'Completed', stats: { objectsCreated: N, errors: 0 } });
    const run = await runImport(rt, dir);
    expect(run).toMatchObject({ status: 'Completed', stats: { objectsProcessed: N, errors: 0 } });
    const joined = await meshOf(dir);
    const expectedJoins = directory.filter((d) => d.expect === 'join');
    expect(joined.size).toBe(expectedJoins.length);
    for (const d of expectedJoins) expect(joined.get(d.employeeNumber!)?.attributes.mail?.value).toBe(d.mail);
    // Nothing was projected from the directory.
    expect([...joined.values()].every((o) => Object.keys(o.links).length === 2)).toBe(true);

    const cases = await allCases('&state=open');
    const expected = directory.filter((d) => d.expect !== 'join');
    expect(cases).toHaveLength(expected.length);
    const seen = new Set<string>();
    for (const c of cases) {
      const d = byUid.get(uidOf(c))!;
      seen.add(d.uid);
      expect({ uid: d.uid, reason: c.reason }).toEqual({ uid: d.uid, reason: d.expect });
      expect(c.candidates.map((x: Case) => x.anchor).sort()).toEqual(d.candidates);
      expect(c.caseId).toBe(c.csObjectId);
      if (d.candidates.length === 1) {
        const m = c.candidates[0].matched;
        expect(m).toHaveLength(1);
        expect(m[0]).toMatchObject({ sourceAttribute: 'displayName', targetAttribute: 'displayName', how: d.how });
        expect(c.candidates[0].score).toBe(d.how === 'fuzzy' ? Math.round(60 * m[0].similarity) : 60);
      }
    }
    expect(seen.size).toBe(expected.length);
    const count = (reason: DirectoryEntry['expect']) => directory.filter((d) => d.expect === reason).length;
    expect((await rt.call('GET', `correlation-cases?connectorId=${dir}&reason=severalCandidates&take=0`)).body.totalCount).toBe(count('severalCandidates'));
    expect((await rt.call('GET', `correlation-cases?connectorId=${dir}&reason=belowThreshold&take=0`)).body.totalCount).toBe(count('belowThreshold'));
    expect((await rt.call('GET', `correlation-cases?connectorId=${dir}&reason=noKey&take=0`)).body.totalCount).toBe(count('noKey'));
  });

  test('decisions through the API land: one join, joins by filter, a tie skipped, a join to any object, project, ignore', async () => {
    const cases = await allCases('&state=open');
    const one = cases.find((c) => byUid.get(uidOf(c))!.how === 'fuzzy' && c.reason === 'noKey')!;
    const detail = await rt.call('GET', `correlation-cases/${one.caseId}`);
    expect(detail.status).toBe(200);
    expect(detail.body.candidates[0].matched[0].how).toBe('fuzzy');
    // Viewers read but do not decide; bad input changes nothing.
    expect((await rt.call('POST', `correlation-cases/${one.caseId}/decide`, { role: 'Viewer', body: { decision: 'join' } })).status).toBe(403);
    const bad = await rt.call('POST', `correlation-cases/${one.caseId}/decide`, { role: 'Operator', body: { decision: 'merge' } });
    expect(bad.status).toBe(400);
    expect(bad.headers.get('content-type')).toMatch(/application\/problem\+json/);
    expect(
      (
        await rt.call('POST', `correlation-cases/${one.caseId}/decide`, {
          role: 'Operator',
          body: { decision: 'project', meshObjectId: one.candidates[0].meshObjectId },
        })
      ).status,
    ).toBe(400);
    expect((await rt.call('GET', 'correlation-cases/00000000-0000-4000-8000-000000000000')).status).toBe(404);

    const decided = await rt.call('POST', `correlation-cases/${one.caseId}/decide`, { role: 'Operator', body: { decision: 'join' } });
    expect(decided.status).toBe(200);
    expect(decided.body).toMatchObject({
      state: 'decided',
      decision: 'join',
      meshObjectId: one.candidates[0].meshObjectId,
      decidedBy: 'operator.upn@example.test',
    });
    expect((await rt.call('POST', `correlation-cases/${one.caseId}/decide`, { role: 'Operator', body: { decision: 'join' } })).status).toBe(409);
    let mesh = await meshByEmployee();
    expect(mesh.get(one.candidates[0].anchor)!.links[dir]).toBeDefined();
    expect(mesh.get(one.candidates[0].anchor)!.attributes.mail?.value).toBe(byUid.get(uidOf(one))!.mail);

    // Every other no-key case with one candidate: joined by filter.
    const single = cases.filter((c) => c.reason === 'noKey' && c.candidates.length === 1).length - 1;
    const bulk = await rt.call('POST', 'correlation-cases/decide', {
      role: 'Operator',
      body: { filter: { connectorId: dir, reason: 'noKey', maxCandidates: 1, minScore: 50 }, decision: 'join' },
    });
    expect(bulk.status).toBe(200);
    expect(bulk.body).toEqual({ matched: single, decided: single, skipped: 0, failed: [] });
    // The twins tie: a join by filter skips them all.
    const twins = await rt.call('POST', 'correlation-cases/decide', {
      role: 'Operator',
      body: { filter: { connectorId: dir, reason: 'severalCandidates' }, decision: 'join' },
    });
    expect(twins.body).toMatchObject({ matched: 20, decided: 0, skipped: 20 });
    // One twin joined to the right person, named.
    const twin = cases.find((c) => c.reason === 'severalCandidates')!;
    const right = byUid.get(uidOf(twin))!;
    const person = people[Number(right.uid.slice(1))];
    const target = twin.candidates.find((x: Case) => x.anchor === person.employeeId).meshObjectId;
    expect(
      (await rt.call('POST', `correlation-cases/${twin.caseId}/decide`, { role: 'Operator', body: { decision: 'join', meshObjectId: target } })).status,
    ).toBe(200);
    // A wrong-key entry: a new mesh object of its own.
    const below = cases.find((c) => c.reason === 'belowThreshold')!;
    const projected = await rt.call('POST', `correlation-cases/${below.caseId}/decide`, { role: 'Operator', body: { decision: 'project' } });
    expect(projected.status).toBe(200);
    expect(projected.body).toMatchObject({ decision: 'project', meshObjectId: projectedMeshId(dir, below.object.anchor) });
    // Nobody known: explicit disconnectors.
    const ignored = await rt.call('POST', 'correlation-cases/decide', {
      role: 'Operator',
      body: { filter: { connectorId: dir, reason: 'noKey', maxCandidates: 0 }, decision: 'ignore' },
    });
    expect(ignored.body).toMatchObject({ matched: nobody, decided: nobody, skipped: 0 });

    mesh = await meshByEmployee();
    const linked = directory.filter((d) => d.expect === 'noKey' && d.how !== 'none');
    for (const d of linked) expect(mesh.get(d.candidates[0])!.links[dir]).toBeDefined();
    expect(mesh.get(person.employeeId)!.links[dir]).toBeDefined();
    expect(mesh.get(below.object.anchor)!.links).toEqual({ [dir]: below.object.anchor });
    const open = await allCases('&state=open');
    expect(open).toHaveLength(stillOpen);
    const audit = await rt.call('GET', `audit?targetId=${twin.caseId}`);
    expect(audit.body.items.some((a: Case) => a.action === 'decide' && a.actorUpn === 'operator.upn@example.test')).toBe(true);
  });

  test('a manual disconnect and its undo: out of the rules until undone, recorded and audited; a second import changes nothing', async () => {
    const d = directory.find((x) => x.expect === 'join')!;
    const list = await rt.call('GET', `connectors/${dir}/space?search=uid=${d.uid},&take=5`);
    const item = list.body.items.find((i: Case) => i.dn?.startsWith(`uid=${d.uid},`));
    const meshId = item.meshObjectId;
    const off = await rt.call('POST', `connectors/${dir}/space/${item.csObjectId}/disconnect`, { role: 'Operator' });
    expect(off.status).toBe(200);
    expect(off.body).toMatchObject({ decision: 'ignore', meshObjectId: null, history: [{ action: 'ignore', by: 'operator.upn@example.test' }] });
    let mesh = await meshByEmployee();
    expect(mesh.get(d.employeeNumber!)!.links[dir]).toBeUndefined();
    expect(mesh.get(d.employeeNumber!)!.attributes.mail).toBeUndefined();
    // A full import leaves the explicit disconnector alone, and opens no case for it.
    expect(await runImport(rt, dir)).toMatchObject({ status: 'Completed', stats: { errors: 0 } });
    mesh = await meshByEmployee();
    expect(mesh.get(d.employeeNumber!)!.links[dir]).toBeUndefined();
    expect(await allCases('&state=open')).toHaveLength(stillOpen);
    // Joined by hand to another person, then undone: the rules join it back by its key.
    const other = mesh.get(people[Number(directory.find((x) => x.expect === 'noKey' && x.how === 'none')!.uid.slice(1))].employeeId)!;
    const join = await rt.call('POST', `connectors/${dir}/space/${item.csObjectId}/join`, { role: 'Operator', body: { meshObjectId: other.id } });
    expect(join.status).toBe(200);
    expect(join.body).toMatchObject({ decision: 'join', meshObjectId: other.id });
    const taken = await rt.call('POST', `connectors/${dir}/space/${item.csObjectId}/join`, {
      role: 'Operator',
      body: { meshObjectId: mesh.get(directory.find((x) => x.expect === 'join' && x !== d)!.employeeNumber!)!.id },
    });
    expect(taken.status).toBe(409);
    const undo = await rt.call('POST', `connectors/${dir}/space/${item.csObjectId}/undo`, { role: 'Operator' });
    expect(undo.status).toBe(200);
    expect(undo.body).toMatchObject({ decision: null, meshObjectId: meshId });
    expect(undo.body.history.map((h: Case) => h.action)).toEqual(['ignore', 'join', 'undo']);
    expect((await rt.call('POST', `connectors/${dir}/space/${item.csObjectId}/undo`, { role: 'Operator' })).status).toBe(409);
    const decisions = await rt.call('GET', `connectors/${dir}/space/${item.csObjectId}/decisions`, { role: 'Viewer' });
    expect(decisions.status).toBe(200);
    expect(decisions.body).toEqual({ ...undo.body, history: undo.body.history });
    mesh = await meshByEmployee();
    expect(mesh.get(d.employeeNumber!)!.links[dir]).toBeDefined();
    expect(mesh.get(d.employeeNumber!)!.attributes.mail?.value).toBe(d.mail);
    expect(other.links[dir]).toBeUndefined();
    const history = await rt.call('GET', `mesh/objects/${meshId}/history`);
    expect(history.body.items.filter((h: Case) => h.changes.some((c: Case) => c.attribute === 'mail')).length).toBeGreaterThanOrEqual(2);
    const audit = await rt.call('GET', `audit?targetId=${item.csObjectId}`);
    expect(audit.body.items.map((a: Case) => a.action).sort()).toEqual(['disconnect', 'join', 'undo']);
    // Nothing changed in the directory: a second import changes nothing and opens nothing.
    const again = await runImport(rt, dir);
    expect(again).toMatchObject({ status: 'Completed', stats: { objectsCreated: 0, errors: 0 } });
    expect(await allCases('&state=open')).toHaveLength(stillOpen);
  });
});
