import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import type { Client } from 'ldapts';
import { listReservations } from '../../../lib/storage/uniqueValues';
import { describeWithServer } from '../../support/servers';
import { startService, type ServiceUnderTest } from '../../support/service';
import { startSlapd, type Slapd } from '../../support/slapd';
import { fileConnector, folder, outboundRule, rule, runExport, runImport, sourceRules, waitRun, writeCsv } from '../sync/syncSupport';
import { ldapConnector, meshOf, stopSlapdSuite } from './e2eSupport';
import { SlapdFixture } from './ldapFixture';

/**
 * A unique computed attribute (projection time) end to end: the built service over HTTP, two service processes
 * on one storage, HR files, real slapd. A MeshComposerRule computes the mesh `uid` from candidates (scope mesh):
 * two HR sources whose people have colliding names are imported at the same time, one on each engine instance,
 * and no uid is handed out twice. The mesh attribute is read through the API (with explain saying which candidate
 * won and why earlier ones were skipped), exported by a plain outbound flow into slapd and read back with
 * ldapsearch. A rule whose candidates are all taken holds the new object (not projected) with an error naming the
 * rule, and the next import tries it again.
 */
jest.setTimeout(600_000);

const exec = promisify(execFile);
const HR = ['id', 'employeeId', 'givenName', 'sn', 'department'];
const GIVEN = ['John', 'Jane', 'Jim', 'Joan', 'Jake'];
const SURNAMES = ['Smith', 'Stone'];
const hires = (prefix: string, n: number) =>
  Array.from({ length: n }, (_, i) => ({
    id: `${prefix}${i}`,
    employeeId: `${prefix.toUpperCase()}${String(i).padStart(3, '0')}`,
    givenName: GIVEN[i % GIVEN.length],
    sn: SURNAMES[Math.floor(i / GIVEN.length) % SURNAMES.length],
    department: 'Engineering',
  }));
const EAST = hires('e', 30);
const WEST = hires('w', 30);

const INITIAL = 'object.givenName.substring(0, 1).toLowerCase() + object.sn.toLowerCase()';
const FULL = 'object.givenName.toLowerCase() + "." + object.sn.toLowerCase()';
const COUNTED = 'object.givenName.substring(0, 1).toLowerCase() + object.sn.toLowerCase() + counter';

describeWithServer('slapd')('unique computed attributes: projected by two engine instances at once, exported into slapd', () => {
  let slapd: Slapd;
  let a: ServiceUnderTest;
  let b: ServiceUnderTest;
  let f: SlapdFixture;
  let admin: Client;
  const eastDir = folder('ims-unique-computed-east-');
  const westDir = folder('ims-unique-computed-west-');
  let east = '';
  let west = '';
  let dir = '';
  let uidRule = '';

  /** The uid of each entry under ou=Engineering, by employeeNumber, read back with ldapsearch. */
  async function directoryUids(): Promise<Map<string, string>> {
    const { stdout } = await exec(
      'ldapsearch',
      [
        '-x',
        '-LLL',
        '-H',
        slapd.url,
        '-D',
        slapd.rootDN,
        '-w',
        slapd.rootPassword,
        '-b',
        `ou=Engineering,${f.base}`,
        '(employeeNumber=*)',
        'uid',
        'employeeNumber',
      ],
      { maxBuffer: 16 * 1024 * 1024 },
    );
    const out = new Map<string, string>();
    for (const entry of stdout.split(/\n\n+/)) {
      const uid = /^uid: (.*)$/m.exec(entry)?.[1];
      const emp = /^employeeNumber: (.*)$/m.exec(entry)?.[1];
      if (uid && emp) out.set(emp, uid);
    }
    return out;
  }

  beforeAll(async () => {
    slapd = await startSlapd();
    a = await startService({ env: { Engine__InstanceName: 'engine-a' } });
    b = await startService({ prefix: a.prefix, env: { Engine__InstanceName: 'engine-b' } });
    f = await new SlapdFixture(slapd).init();
    admin = await f.client();

    writeCsv(eastDir, 'hr.csv', HR, EAST);
    writeCsv(westDir, 'hr.csv', HR, WEST);
    east = await fileConnector(a, 'HR East', eastDir, { anchorColumn: 'id' });
    west = await fileConnector(a, 'HR West', westDir, { anchorColumn: 'id' });
    for (const hr of [east, west]) await sourceRules(a, hr, 'employeeId', HR.slice(1));
    const res = await a.call('POST', 'rules', {
      body: { ruleName: 'Login', ruleType: 'MeshComposerRule', targetAttribute: 'uid', unique: { candidates: [INITIAL, FULL, COUNTED] } },
    });
    expect(res.status).toBe(201);
    uidRule = res.body.ruleId;

    // The directory writes the mesh uid as it is (a plain flow): the value was made unique at projection time.
    dir = await ldapConnector(a, 'Engineering directory', f.config({ exportDnTemplate: '"uid=" + dnEscape(source.uid) + ",ou=Engineering," + baseDN' }));
    const out = outboundRule(a, dir);
    await out('uid', 'uid');
    await out('employeeId', 'employeeNumber');
    await out('givenName', 'givenName');
    await out('sn', 'sn');
    await out('givenName', 'cn', 'object.givenName + " " + object.sn');
    await rule(a, { ruleType: 'JoinRule', connectorId: dir, sourceAttribute: 'employeeNumber', targetAttribute: 'employeeId' });

    // HR West's runs are the second instance's.
    const instances = (await a.call('GET', 'instances')).body.items as { id: string; name: string }[];
    const idB = instances.find((i) => i.name === 'engine-b')!.id;
    expect((await a.call('PUT', `connectors/${west}/instance`, { body: { instanceId: idB } })).status).toBe(200);
  });
  afterAll(async () => {
    await b?.dispose();
    await stopSlapdSuite({ admin, rt: a, f, slapd });
  });

  test('a save checks the unique object of a computed attribute; it is stored with scope mesh', async () => {
    const base = { ruleName: 'bad login', ruleType: 'MeshComposerRule', targetAttribute: 'login' };
    const bad = await a.call('POST', 'rules', { body: { ...base, unique: { candidates: ['related.manager.uid', 'object.sn + countr'], scope: 'connector' } } });
    expect(bad.status).toBe(400);
    expect(bad.headers.get('content-type')).toMatch(/application\/problem\+json/);
    expect(bad.body.errors.map((e: { path: string }) => e.path)).toEqual(['/unique/candidates/0', '/unique/candidates/1', '/unique/scope']);
    const relationship = await a.call('POST', 'rules', {
      body: { ...base, relationshipType: 'manager', sourceAttribute: 'managerId', unique: { candidates: [INITIAL] } },
    });
    expect(relationship.status).toBe(400);
    expect(relationship.body.errors).toEqual([{ path: '/unique', message: 'applies only to an outbound FlowRule or a computed attribute (MeshComposerRule)' }]);
    const saved = (await a.call('GET', `rules/${uidRule}`)).body;
    expect(saved).toMatchObject({ transformScript: null, targetAttribute: 'uid' });
    expect(saved.unique).toEqual({
      candidates: [INITIAL, FULL, COUNTED],
      scope: 'mesh',
      meshAttribute: 'uid',
      counter: { from: 2, to: 99 },
      caseSensitive: false,
      keepOnRename: true,
      quarantineDays: 90,
    });
    expect((await a.call('GET', 'rules')).body.items.some((r: { ruleName: string }) => r.ruleName === 'bad login')).toBe(false);
  });

  test('two imports at once on two instances: 60 colliding hires, every mesh uid handed out once', async () => {
    const [ra, rb] = await Promise.all([
      a.call('POST', `connectors/${east}/import`, { body: { runType: 'FullImport' } }),
      b.call('POST', `connectors/${west}/import`, { body: { runType: 'FullImport' } }),
    ]);
    expect([ra.status, rb.status]).toEqual([202, 202]);
    const [runA, runB] = await Promise.all([waitRun(a, ra.body.runId), waitRun(b, rb.body.runId)]);
    expect(runA).toMatchObject({ status: 'Completed', stats: { objectsCreated: 30, errors: 0 } });
    expect(runB).toMatchObject({ status: 'Completed', stats: { objectsCreated: 30, errors: 0 } });

    const people = [...(await meshOf(east)).values(), ...(await meshOf(west)).values()];
    expect(people).toHaveLength(60);
    const uids = people.map((p) => String(p.attributes.uid?.value));
    expect(new Set(uids.map((u) => u.toLowerCase())).size).toBe(60);
    for (const p of people) {
      const given = String(p.attributes.givenName.value).toLowerCase();
      const sn = String(p.attributes.sn.value).toLowerCase();
      expect(String(p.attributes.uid.value)).toMatch(new RegExp(`^(${given[0]}${sn}|${given}\\.${sn}|${given[0]}${sn}\\d+)$`));
    }
    // One reservation per value, each owned by the mesh object that shows it.
    const reserved = await listReservations('mesh/uid');
    expect(reserved).toHaveLength(60);
    const owner = new Map(people.map((p) => [String(p.attributes.uid.value).toLowerCase(), p.id]));
    for (const r of reserved) expect(r.owner).toBe(owner.get(r.key));

    // Through the API: the attribute, and explain of one that did not get its first candidate.
    const counted = people.find((p) => /\d$/.test(String(p.attributes.uid.value)))!;
    const detail = await a.call('GET', `mesh/objects/${counted.id}`);
    expect(detail.status).toBe(200);
    expect(JSON.stringify(detail.body)).toContain(String(counted.attributes.uid.value));
    const ex = await a.call('GET', `mesh/objects/${counted.id}/attributes/uid/explain`);
    expect(ex.status).toBe(200);
    expect(ex.body.value).toBe(counted.attributes.uid.value);
    expect(ex.body.composedBy).toMatchObject({ ruleId: uidRule, unique: { pool: 'mesh/uid', value: counted.attributes.uid.value, candidate: 2 } });
    expect(ex.body.composedBy.inputs).toEqual(expect.arrayContaining(['givenName', 'sn']));
    const skipped = ex.body.composedBy.unique.skipped as { candidate: number; value: string; reason: string }[];
    expect(skipped.slice(0, 2).map((s) => s.candidate)).toEqual([0, 1]);
    for (const s of skipped) expect(s.reason).toMatch(/^(reserved by|held by) mesh object /);
    // One that won its first candidate: nothing skipped (no holding is written for it; its reservation says when).
    const firstWon = people.find((p) => {
      const given = String(p.attributes.givenName.value).toLowerCase();
      return p.attributes.uid.value === `${given[0]}${String(p.attributes.sn.value).toLowerCase()}`;
    })!;
    const exFirst = await a.call('GET', `mesh/objects/${firstWon.id}/attributes/uid/explain`);
    expect(exFirst.body.composedBy.unique).toMatchObject({ pool: 'mesh/uid', value: firstWon.attributes.uid.value, candidate: 0, counter: null, skipped: [] });
    expect(exFirst.body.composedBy.unique.reservedOn).toEqual(expect.any(String));
  });

  test('exported by a plain flow into slapd: ldapsearch reads back every mesh uid, none twice', async () => {
    const run = await runExport(a, dir);
    expect(run).toMatchObject({ status: 'Completed', stats: { objectsCreated: 60, errors: 0 } });
    const inDirectory = await directoryUids();
    expect(inDirectory.size).toBe(60);
    expect(new Set([...inDirectory.values()].map((u) => u.toLowerCase())).size).toBe(60);
    const mesh = new Map([...(await meshOf(east)).values(), ...(await meshOf(west)).values()].map((p) => [String(p.attributes.employeeId.value), p]));
    for (const [emp, uid] of inDirectory) expect(uid).toBe(mesh.get(emp)!.attributes.uid.value);
    // A re-import keeps every value (kept for life): nothing changes, nothing more to export.
    expect(await runImport(a, east)).toMatchObject({ status: 'Completed', stats: { errors: 0 } });
    expect(await runImport(a, dir)).toMatchObject({ status: 'Completed', stats: { errors: 0 } });
    expect(await runExport(a, dir)).toMatchObject({ status: 'Completed', stats: { objectsCreated: 0, objectsUpdated: 0, errors: 0 } });
  });

  test('every candidate taken: the new object is held (not projected) with an error naming the rule, and tried again', async () => {
    const first = 'object.department == "Support" ? "desk-" + object.sn.toLowerCase() : null';
    const res = await a.call('POST', 'rules', {
      body: {
        ruleName: 'Desk',
        ruleType: 'MeshComposerRule',
        targetAttribute: 'desk',
        unique: { candidates: [first] },
      },
    });
    expect(res.status).toBe(201);
    const ann = { id: 'e100', employeeId: 'E100', givenName: 'Ann', sn: 'Held', department: 'Support' };
    const bob = { id: 'e101', employeeId: 'E101', givenName: 'Bob', sn: 'Held', department: 'Support' };
    writeCsv(eastDir, 'hr.csv', HR, [...EAST, ann, bob]);
    const run = await runImport(a, east);
    expect(run).toMatchObject({ status: 'CompletedWithErrors', stats: { objectsCreated: 1, errors: 1 } });
    const err = (run.errors as { object?: string; message: string }[]).find((e) => e.object === 'e100' || e.object === 'e101')!;
    expect(err.message).toContain(
      `Rule 'Desk' (id ${res.body.ruleId}) on attribute 'desk': every candidate is taken: 1 value(s) tried, among them 'desk-held' (reserved by mesh object`,
    );
    expect(err.message).toContain('The object is held (not projected');
    // Held, not projected half made: one of the two is in the mesh, with its desk and a uid.
    const mesh = await meshOf(east);
    const inMesh = ['E100', 'E101'].filter((e) => mesh.has(e));
    expect(inMesh).toHaveLength(1);
    expect(mesh.get(inMesh[0])!.attributes.desk.value).toBe('desk-held');
    expect(mesh.get(inMesh[0])!.attributes.uid.value).toBeTruthy();
    // The held one is tried again by every later run of the connector (a failed object), a delta that reads
    // nothing included; once a candidate is free for it (here: the rule gets a second one), it is projected.
    const heldAnchor = err.object!;
    const again = await runImport(a, east, { runType: 'DeltaImport' });
    expect(again).toMatchObject({ status: 'CompletedWithErrors', stats: { errors: 1 } });
    expect((await meshOf(east)).has(heldAnchor === 'e100' ? 'E100' : 'E101')).toBe(false);
    const second = 'object.department == "Support" ? "desk-" + object.sn.toLowerCase() + "-" + object.givenName.toLowerCase() : null';
    const put = await a.call('PUT', `rules/${res.body.ruleId}`, {
      body: { ruleName: 'Desk', ruleType: 'MeshComposerRule', targetAttribute: 'desk', unique: { candidates: [first, second] } },
    });
    expect(put.status).toBe(200);
    // A full import after the rule change: every object goes through the new rules (their uids kept).
    const freed = await runImport(a, east);
    expect({ status: freed.status, errors: freed.errors ?? [] }).toEqual({ status: 'Completed', errors: [] });
    const heldPerson = heldAnchor === 'e100' ? ann : bob;
    const after = (await meshOf(east)).get(heldPerson.employeeId)!;
    expect(after.attributes.desk.value).toBe(`desk-held-${heldPerson.givenName.toLowerCase()}`);
    const ex = await a.call('GET', `mesh/objects/${after.id}/attributes/desk/explain`);
    expect(ex.body.composedBy.unique).toMatchObject({ pool: 'mesh/desk', candidate: 1, skipped: [{ candidate: 0, value: 'desk-held' }] });
    // Every uid kept through the new rules, still distinct.
    const uids = [...(await meshOf(east)).values(), ...(await meshOf(west)).values()].map((p) => String(p.attributes.uid?.value).toLowerCase());
    expect(uids).toHaveLength(62);
    expect(new Set(uids).size).toBe(62);
  });
});
