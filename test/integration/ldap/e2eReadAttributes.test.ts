import { describeWithServer } from '../../support/servers';
import { startService, type ServiceUnderTest } from '../../support/service';
import { startSlapd, type Slapd } from '../../support/slapd';
import { rule, runImport } from '../sync/syncSupport';
import { ldapConnector, meshOf, plainRelationships, stopSlapdSuite } from './e2eSupport';
import { SlapdFixture } from './ldapFixture';

/**
 * What an import reads of a directory (real slapd, over HTTP): with `attributesFromRules: true` and no
 * `attributes` in its config, the connector reads the attributes its rules use, the anchor, objectClass and the well-known reference attributes (a manager
 * becomes a relationship without a rule); a rule that reads an attribute the last full import did not read
 * makes the next delta import a full import, which brings it for every object; the default (no
 * `attributesFromRules`) reads every user attribute.
 */
jest.setTimeout(300_000);

describeWithServer('slapd')('what a directory import reads (slapd, Azurite, over HTTP)', () => {
  let slapd: Slapd;
  let rt: ServiceUnderTest;
  let f: SlapdFixture;
  let dir: string;

  beforeAll(async () => {
    slapd = await startSlapd();
    rt = await startService();
    f = await new SlapdFixture(slapd).init();
    await f.seed([
      { key: 'E001', givenName: 'Ann', sn: 'Boss', mail: 'ann@corp.test' },
      { key: 'E002', givenName: 'Bob', sn: 'Report', mail: 'bob@corp.test', manager: 'E001' },
    ]);
    dir = await ldapConnector(rt, 'Directory', f.config({ attributesFromRules: true }));
    await rule(rt, { ruleType: 'ProjectionRule', connectorId: dir, sourceAttribute: 'uid', objectType: 'User' });
    await rule(rt, { ruleType: 'FlowRule', connectorId: dir, sourceAttribute: 'givenName', targetAttribute: 'givenName', confidence: 50 });
  });
  afterAll(() => stopSlapdSuite({ rt, f, slapd }));

  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  const spaceObject = async (uid: string): Promise<Record<string, any>> => {
    const list = await rt.call('GET', `connectors/${dir}/space?search=${encodeURIComponent(`uid=${uid},`)}`, { role: 'Viewer' });
    expect(list.status).toBe(200);
    expect(list.body.items).toHaveLength(1);
    const detail = await rt.call('GET', `connectors/${dir}/space/${list.body.items[0].csObjectId}`, { role: 'Viewer' });
    expect(detail.status).toBe(200);
    return detail.body.attributes;
  };

  test("a full import reads the rules' attributes and the references; a new rule's attribute comes with the next delta, run as a full import", async () => {
    expect(await runImport(rt, dir)).toMatchObject({ status: 'Completed', stats: { objectsCreated: 2, errors: 0 } });
    const bob = await spaceObject('E002');
    // The rules' (uid, givenName), the anchor, objectClass, the manager reference, and the DN and container.
    expect(Object.keys(bob).sort()).toEqual(['container', 'dn', 'entryUUID', 'givenName', 'manager', 'objectClass', 'uid']);
    expect(bob.manager).toEqual([f.dns.get('E001')]);
    let mesh = await meshOf(dir);
    expect(mesh.get('E002')!.attributes.givenName?.value).toBe('Bob');
    expect(plainRelationships(mesh.get('E002'))).toEqual([{ type: 'manager', targetId: mesh.get('E001')!.id, targetAnchor: 'E001', targetType: 'User' }]);

    // A flow of sn, which the last full import did not read: the delta import reads every object again.
    await rule(rt, { ruleType: 'FlowRule', connectorId: dir, sourceAttribute: 'sn', targetAttribute: 'surname', confidence: 50 });
    const delta = await runImport(rt, dir, { runType: 'DeltaImport' });
    expect(delta.status).toBe('Completed');
    expect(delta.errors.map((e: { message: string }) => e.message)).toContainEqual(
      expect.stringMatching(/^The delta import ran as a full import: .*did not read \(sn\)/),
    );
    mesh = await meshOf(dir);
    expect([mesh.get('E001')!.attributes.surname?.value, mesh.get('E002')!.attributes.surname?.value]).toEqual(['Boss', 'Report']);
    expect(Object.keys(await spaceObject('E001'))).toContain('sn');

    // Now that a full import read sn, a delta is a delta again.
    await f.update('E002', { sn: 'Reported' });
    const next = await runImport(rt, dir, { runType: 'DeltaImport' });
    expect(next).toMatchObject({ status: 'Completed', stats: { objectsUpdated: 1 } });
    expect(next.errors.map((e: { message: string }) => e.message).join('\n')).not.toMatch(/full import/);
    expect((await meshOf(dir)).get('E002')!.attributes.surname?.value).toBe('Reported');
  });

  test('the default (no attributesFromRules) reads every user attribute of the entries', async () => {
    const res = await rt.call('PUT', `connectors/${dir}`, { body: { name: 'Directory', config: f.config() } });
    expect(res.status).toBe(200);
    const run = await runImport(rt, dir, { runType: 'DeltaImport' });
    expect(run.status).toBe('Completed');
    expect(run.errors.map((e: { message: string }) => e.message)).toContainEqual(
      expect.stringMatching(/^The delta import ran as a full import: .*every attribute/),
    );
    expect(await spaceObject('E001')).toMatchObject({ mail: 'ann@corp.test', cn: 'Ann Boss', employeeNumber: 'E001', sn: 'Boss' });
  });
});
