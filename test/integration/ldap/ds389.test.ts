import { Attribute, Change } from 'ldapts';
import { closeParkedSearches } from '../../../lib/connectors/ldap';
import { PEOPLE } from '../../support/connectorContract';
import { startDs389, type Ds389 } from '../../support/ds389';
import { describeWithServer } from '../../support/servers';
import { startService, type ServiceUnderTest } from '../../support/service';
import type { Slapd } from '../../support/slapd';
import { runImport, valueOf } from '../sync/syncSupport';
import { count, directoryRules, idsOf, ldapConnector, meshOf, relationshipRules, targets } from './e2eSupport';
import { SlapdFixture } from './ldapFixture';

/**
 * The directory connector end to end against a real 389 Directory Server (the server of Red Hat Directory
 * Server and FreeIPA): retro changelog (cn=changelog, changeNumber; targets named by DN only, as a default
 * instance writes them), memberOf and referential integrity plugins. Connectors and rules over the Admin API of
 * the running service, imports as runs of the sync engine, the mesh read back from storage.
 */
jest.setTimeout(300_000);

describeWithServer('ds389')('directory connector through the sync engine (389 Directory Server)', () => {
  let ds: Ds389;
  let rt: ServiceUnderTest;
  let f: SlapdFixture;
  let id = '';
  const groupDn = (name: string) => `cn=${name},ou=groups,${f.base}`;

  beforeAll(async () => {
    ds = await startDs389();
    rt = await startService();
    // The fixture's subtree and people helpers need only the server's address, root account, suffix and CA.
    f = await new SlapdFixture(ds as unknown as Slapd).init();
    await f.seed([...PEOPLE, { key: 'E007', givenName: 'Kurt', sn: 'Gödel', manager: 'E001', container: 'Engineering' }]);
    const admin = await f.client();
    const dns = (keys: string[]) => keys.map((k) => f.dns.get(k)!);
    await admin.add(groupDn('eng'), { objectClass: 'groupOfNames', cn: 'eng', member: dns(['E001', 'E002', 'E004', 'E007']) });
    await admin.add(groupDn('sales'), { objectClass: 'groupOfNames', cn: 'sales', member: dns(['E003', 'E004', 'E005']) });
    await admin.add(groupDn('everyone'), { objectClass: 'groupOfNames', cn: 'everyone', member: [groupDn('eng'), groupDn('sales')] });
    // No anchorAttribute and deltaStrategy auto: both decided from the server (nsUniqueId, changelog).
    id = await ldapConnector(rt, 'Directory 389', f.config({ deltaStrategy: 'auto', deletionThreshold: { objects: 10, percent: 100 } }));
    await directoryRules(rt, id);
    await relationshipRules(rt);
  });
  afterAll(async () => {
    await rt?.dispose();
    await f?.cleanup();
    await closeParkedSearches();
    await ds?.stop();
  });

  test('the connector is anchored by nsUniqueId (decided from the root DSE when it was created) and the full import reads users and groups', async () => {
    const got = await rt.call('GET', `connectors/${id}`);
    expect(got.body.config).toMatchObject({ anchorAttribute: 'nsUniqueId', deltaStrategy: 'auto' });
    const run = await runImport(rt, id);
    expect(run).toMatchObject({ status: 'Completed', runType: 'FullImport', stats: { objectsProcessed: 9, objectsCreated: 9, errors: 0 } });
    const mesh = await meshOf(id);
    expect([...mesh.keys()].sort()).toEqual(['E001', 'E002', 'E003', 'E004', 'E005', 'E007', 'eng', 'everyone', 'sales']);
    expect(targets(mesh.get('eng'), 'member')).toEqual(idsOf(mesh, ['E001', 'E002', 'E004', 'E007']));
    expect(targets(mesh.get('everyone'), 'member')).toEqual(idsOf(mesh, ['eng', 'sales']));
    expect(targets(mesh.get('E002'), 'manager')).toEqual([mesh.get('E001')!.id]);
    expect(valueOf(mesh.get('E005'), 'sn')).toBe('Ørsted "Quote"');
  });

  test('a changelog delta brings adds, modifies, a rename, a move, deletes (one after a rename, one of an entry added in the same delta) and membership changes', async () => {
    const before = await meshOf(id);
    const admin = await f.client();
    const member = (op: 'add' | 'delete', group: string, key: string) =>
      admin.modify(groupDn(group), [new Change({ operation: op, modification: new Attribute({ type: 'member', values: [f.dns.get(key)!] }) })]);
    await f.seed([...PEOPLE, { key: 'E006', givenName: 'Grace', sn: 'Hopper', mail: 'grace@example.test', manager: 'E001', container: 'Engineering' }]);
    await member('add', 'eng', 'E006');
    await member('add', 'eng', 'E003');
    await member('delete', 'eng', 'E002');
    await f.update('E003', { sn: 'Lee' });
    // A rename (new RDN, same container) and a move of a manager (same RDN, another container).
    await admin.modifyDN(f.dns.get('E005')!, `uid=E005r,ou=Sales,${f.base}`);
    await f.move('E001', 'Sales');
    // Deleted: E004 (a member of eng and sales), E007 after a move (the log names it by its new DN only), E008
    // added and deleted within the delta (never imported).
    await f.remove('E004');
    await f.move('E007', 'Sales');
    await f.remove('E007');
    await f.seed([{ key: 'E008', givenName: 'Tmp', sn: 'Temp', container: 'Engineering' }]);
    await f.remove('E008');
    // Referential integrity (no delay) has rewritten member/manager values: the plugin's changes are in the log too.
    expect(await count(admin, f.base, `(member=uid=E001,ou=Sales,${f.base})`)).toBe(1);
    expect(await count(admin, f.base, `(manager=uid=E001,ou=Sales,${f.base})`)).toBe(3);
    expect(await count(admin, f.base, `(member=uid=E004,ou=Sales,${f.base})`)).toBe(0);

    const run = await runImport(rt, id, { runType: 'DeltaImport' });
    expect(run).toMatchObject({ status: 'Completed', runType: 'DeltaImport', stats: { objectsCreated: 1, objectsDeleted: 2, errors: 0 } });
    expect(run.errors ?? []).toEqual([]);
    const mesh = await meshOf(id);
    expect([...mesh.keys()].sort()).toEqual(['E001', 'E002', 'E003', 'E005', 'E006', 'eng', 'everyone', 'sales']);
    // The move and the rename keep their mesh objects (anchor nsUniqueId).
    expect(mesh.get('E001')!.id).toBe(before.get('E001')!.id);
    expect(valueOf(mesh.get('E001'), 'dn')).toBe(`uid=E001,ou=Sales,${f.base}`);
    expect(valueOf(mesh.get('E001'), 'container')).toBe(`ou=Sales,${f.base}`);
    expect(mesh.get('E005')!.id).toBe(before.get('E005')!.id);
    expect(valueOf(mesh.get('E005'), 'uid')).toBe('E005r');
    expect(valueOf(mesh.get('E003'), 'sn')).toBe('Lee');
    // Memberships: added, removed, the moved member still the same object, the deleted ones gone.
    expect(targets(mesh.get('eng'), 'member')).toEqual(idsOf(mesh, ['E001', 'E003', 'E006']));
    expect(targets(mesh.get('sales'), 'member')).toEqual(idsOf(mesh, ['E003', 'E005']));
    // The reports of the moved manager still point to her.
    for (const report of ['E002', 'E003', 'E006']) expect(targets(mesh.get(report), 'manager')).toEqual([mesh.get('E001')!.id]);
    for (const gone of [before.get('E004')!.id, before.get('E007')!.id]) {
      expect([...mesh.values()].flatMap((o) => o.relationships).filter((r) => r.targetId === gone)).toEqual([]);
    }
    expect([...mesh.values()].flatMap((o) => o.pendingReferences)).toEqual([]);

    const again = await runImport(rt, id, { runType: 'DeltaImport' });
    expect(again).toMatchObject({ status: 'Completed', stats: { objectsCreated: 0, objectsUpdated: 0, objectsDeleted: 0, errors: 0 } });
  });

  test("entries made before the entryUUID plugin (the instance's sample entries) are imported, updated and deleted by nsUniqueId", async () => {
    const admin = await f.client();
    const demo = `uid=demo_user,ou=people,${ds.suffix}`;
    const [entry] = (await admin.search(demo, { scope: 'base', attributes: ['entryUUID', 'nsUniqueId', 'objectClass'] })).searchEntries;
    expect(entry.entryUUID ?? []).toEqual([]);
    expect(String(entry.nsUniqueId)).toMatch(/^[0-9a-f]{8}-[0-9a-f]{8}-[0-9a-f]{8}-[0-9a-f]{8}$/);
    const people = await ldapConnector(
      rt,
      'Directory 389 people',
      f.config({
        baseDN: `ou=people,${ds.suffix}`,
        deltaStrategy: 'changelog',
        objectClasses: { nsPerson: 'User' },
        deletionThreshold: { objects: 10, percent: 100 },
      }),
    );
    await directoryRules(rt, people);
    const full = await runImport(rt, people);
    expect(full).toMatchObject({ status: 'Completed', stats: { objectsCreated: 1, errors: 0 } });
    expect([...(await meshOf(people)).keys()]).toEqual(['demo_user']);

    await admin.modify(demo, [new Change({ operation: 'replace', modification: new Attribute({ type: 'cn', values: ['Demo Changed'] }) })]);
    const modified = await runImport(rt, people, { runType: 'DeltaImport' });
    expect(modified).toMatchObject({ status: 'Completed', stats: { objectsUpdated: 1, errors: 0 } });
    expect(valueOf((await meshOf(people)).get('demo_user'), 'cn')).toBe('Demo Changed');

    await admin.del(demo);
    const deleted = await runImport(rt, people, { runType: 'DeltaImport' });
    expect(deleted).toMatchObject({ status: 'Completed', stats: { objectsDeleted: 1, errors: 0 } });
    expect(deleted.errors ?? []).toEqual([]);
    expect([...(await meshOf(people)).keys()]).toEqual([]);
  });

  test('the changelog trimmed past the watermark: the delta run does a full import by itself and says so', async () => {
    const admin = await f.client();
    const lastChange = async () => Number((await admin.search('', { scope: 'base', attributes: ['lastChangeNumber'] })).searchEntries[0].lastChangeNumber);
    await f.update('E003', { mail: 'lee@example.test' });
    const trimmedTo = await lastChange();
    // 389 DS keeps the newest change when it trims: one more, so the log ends up past the E003 change.
    await f.update('E006', { mail: 'grace@example.org' });
    await ds.trimChangelogPast(trimmedTo);
    // The restart that applied the trimming closed the fixture's bound connection.
    await f.cleanup();
    const run = await runImport(rt, id, { runType: 'DeltaImport' });
    expect(run).toMatchObject({
      status: 'Completed',
      runType: 'DeltaImport',
      stats: { objectsProcessed: 8, objectsCreated: 0, objectsUpdated: 2, objectsDeleted: 0, errors: 0 },
    });
    expect(run.errors).toEqual([
      { message: expect.stringMatching(/^The delta import ran as a full import: The change log was trimmed: it starts at \d+, after the watermark \d+/) },
    ]);
    const mesh = await meshOf(id);
    expect(valueOf(mesh.get('E003'), 'mail')).toBe('lee@example.test');
    expect(valueOf(mesh.get('E006'), 'mail')).toBe('grace@example.org');
    // The full import set a new watermark: the next delta is a delta again.
    await f.update('E002', { sn: 'Muñoz-Ruiz' });
    const next = await runImport(rt, id, { runType: 'DeltaImport' });
    expect(next).toMatchObject({ status: 'Completed', stats: { objectsUpdated: 1, errors: 0 } });
    expect(next.errors ?? []).toEqual([]);
  });
});
