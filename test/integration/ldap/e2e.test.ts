import { Attribute, Change } from 'ldapts';
import { closeParkedSearches } from '../../../lib/connectors/ldap';
import { PEOPLE } from '../../support/connectorContract';
import { describeWithServer } from '../../support/servers';
import { startService, type ServiceUnderTest } from '../../support/service';
import { startSlapd, type Slapd } from '../../support/slapd';
import { runImport, valueOf } from '../sync/syncSupport';
import { count, directoryRules, idsOf, ldapConnector, meshOf, plainRelationships, relationshipRules, targets, waitFor } from './e2eSupport';
import { SlapdFixture } from './ldapFixture';

/**
 * The directory connector end to end: a connector of type `ldap` and its rules made over the Admin API of the
 * running service, imports as runs of the sync engine against a real slapd (memberof, refint, syncprov,
 * accesslog), the mesh read back from storage and over HTTP.
 */
jest.setTimeout(300_000);

describeWithServer('slapd')('directory connector through the sync engine (slapd)', () => {
  let slapd: Slapd;
  let rt: ServiceUnderTest;
  let f: SlapdFixture;
  let id = '';
  const groupDn = (name: string) => `cn=${name},ou=groups,${f.base}`;

  beforeAll(async () => {
    slapd = await startSlapd();
    rt = await startService();
    f = await new SlapdFixture(slapd).init();
    await f.seed(PEOPLE);
    const admin = await f.client();
    const dns = (keys: string[]) => keys.map((k) => f.dns.get(k)!);
    await admin.add(groupDn('eng'), { objectClass: 'groupOfNames', cn: 'eng', member: dns(['E001', 'E002', 'E004']) });
    await admin.add(groupDn('sales'), { objectClass: 'groupOfNames', cn: 'sales', member: dns(['E003', 'E004', 'E005']) });
    await admin.add(groupDn('everyone'), { objectClass: 'groupOfNames', cn: 'everyone', member: [groupDn('eng'), groupDn('sales')] });
    // ldaps with the fixture's CA certificate; the delta strategy found from the directory (auditContext: accesslog).
    id = await ldapConnector(rt, 'Directory', f.config({ deltaStrategy: 'auto' }));
    await directoryRules(rt, id);
    await relationshipRules(rt);
  });
  afterAll(async () => {
    await rt?.dispose();
    await f?.cleanup();
    await closeParkedSearches();
    await slapd?.stop();
  });

  test('a full import makes users and groups; groups have member relationships to users and groups, users manager ones', async () => {
    const run = await runImport(rt, id);
    expect(run).toMatchObject({ status: 'Completed', runType: 'FullImport', stats: { objectsProcessed: 8, objectsCreated: 8, errors: 0 } });
    const mesh = await meshOf(id);
    expect([...mesh.keys()].sort()).toEqual(['E001', 'E002', 'E003', 'E004', 'E005', 'eng', 'everyone', 'sales']);
    for (const p of PEOPLE) expect(mesh.get(p.key)!.objectType).toBe('User');
    for (const g of ['eng', 'sales', 'everyone']) expect(mesh.get(g)!.objectType).toBe('Group');
    expect(targets(mesh.get('eng'), 'member')).toEqual(idsOf(mesh, ['E001', 'E002', 'E004']));
    expect(targets(mesh.get('sales'), 'member')).toEqual(idsOf(mesh, ['E003', 'E004', 'E005']));
    expect(plainRelationships(mesh.get('everyone'))).toEqual(
      expect.arrayContaining([
        { type: 'member', targetId: mesh.get('eng')!.id, targetAnchor: 'eng', targetType: 'Group' },
        { type: 'member', targetId: mesh.get('sales')!.id, targetAnchor: 'sales', targetType: 'Group' },
      ]),
    );
    expect(plainRelationships(mesh.get('E002'))).toEqual([{ type: 'manager', targetId: mesh.get('E001')!.id, targetAnchor: 'E001', targetType: 'User' }]);
    expect([...mesh.values()].flatMap((o) => o.pendingReferences)).toEqual([]);
    expect(valueOf(mesh.get('E004'), 'container')).toBe(`ou=Sales,${f.base}`);
    expect(valueOf(mesh.get('E004'), 'dn')).toBe(f.dns.get('E004'));
    expect(valueOf(mesh.get('E005'), 'sn')).toBe('Ørsted "Quote"');
    expect(mesh.get('E001')!.attributes.givenName).toMatchObject({ value: 'Ada', sourceConnectorId: id, confidence: 50 });

    // The same over the Admin API (the mesh read model follows the change feed).
    const eng = mesh.get('eng')!;
    await waitFor(
      'the groups in GET /mesh/objects',
      async () =>
        (await rt.call('GET', 'mesh/objects?objectType=Group&take=200')).body.items.filter((o: { meshObjectId: string }) => o.meshObjectId === eng.id)
          .length === 1,
    );
    const detail = await rt.call('GET', `mesh/objects/${eng.id}`);
    expect(detail.status).toBe(200);
    expect(detail.body.objectType).toBe('Group');
    const members = detail.body.relationships.filter((r: { relationshipType: string }) => r.relationshipType === 'member');
    expect(members.map((r: { targetAnchorValue: string }) => r.targetAnchorValue).sort()).toEqual(['E001', 'E002', 'E004']);
    expect(members.every((r: { targetObjectType: string }) => r.targetObjectType === 'User')).toBe(true);
  });

  test('a delta import brings adds, modifies, a rename, a move, a delete and membership changes; moves keep the mesh object', async () => {
    const before = await meshOf(id);
    const admin = await f.client();
    const addMember = (group: string, key: string) =>
      admin.modify(groupDn(group), [new Change({ operation: 'add', modification: new Attribute({ type: 'member', values: [f.dns.get(key)!] }) })]);
    await f.seed([...PEOPLE, { key: 'E006', givenName: 'Grace', sn: 'Hopper', mail: 'grace@example.test', manager: 'E001', container: 'Engineering' }]);
    await addMember('eng', 'E006');
    await addMember('eng', 'E003');
    await admin.modify(groupDn('eng'), [new Change({ operation: 'delete', modification: new Attribute({ type: 'member', values: [f.dns.get('E002')!] }) })]);
    await f.update('E003', { sn: 'Lee' });
    // A rename (new RDN, same container) and a move (same RDN, another container).
    await admin.modifyDN(f.dns.get('E005')!, `uid=E005r,ou=Sales,${f.base}`);
    await f.move('E001', 'Sales');
    await f.remove('E004');
    // refint rewrites member/manager values after a rename or move and drops a deleted member, in the background.
    await waitFor(
      'refint',
      async () =>
        (await count(admin, f.base, `(member=uid=E001,ou=Sales,${f.base})`)) === 1 &&
        (await count(admin, f.base, `(member=uid=E005r,ou=Sales,${f.base})`)) === 1 &&
        (await count(admin, f.base, `(manager=uid=E001,ou=Sales,${f.base})`)) === 3 &&
        (await count(admin, f.base, `(member=uid=E004,ou=Sales,${f.base})`)) === 0,
    );

    const run = await runImport(rt, id, { runType: 'DeltaImport' });
    // Updated: E001 (moved), E002 and E003 (their manager's DN rewritten; E003's sn), E005 (renamed), eng, sales.
    expect(run).toMatchObject({ status: 'Completed', runType: 'DeltaImport', stats: { objectsCreated: 1, objectsUpdated: 6, objectsDeleted: 1, errors: 0 } });
    expect(run.errors ?? []).toEqual([]);
    const mesh = await meshOf(id);
    expect([...mesh.keys()].sort()).toEqual(['E001', 'E002', 'E003', 'E005', 'E006', 'eng', 'everyone', 'sales']);
    // The move: the same mesh object (anchor entryUUID), its container and DN changed.
    expect(mesh.get('E001')!.id).toBe(before.get('E001')!.id);
    expect(valueOf(mesh.get('E001'), 'container')).toBe(`ou=Sales,${f.base}`);
    expect(valueOf(mesh.get('E001'), 'dn')).toBe(`uid=E001,ou=Sales,${f.base}`);
    // The rename: the same mesh object, the new uid and DN.
    expect(mesh.get('E005')!.id).toBe(before.get('E005')!.id);
    expect(valueOf(mesh.get('E005'), 'uid')).toBe('E005r');
    expect(valueOf(mesh.get('E005'), 'dn')).toBe(`uid=E005r,ou=Sales,${f.base}`);
    expect(valueOf(mesh.get('E003'), 'sn')).toBe('Lee');
    // refint rewrote the group's member value to the moved DN; the relationship still names the same object.
    expect(valueOf(mesh.get('eng'), 'member')).toEqual(expect.arrayContaining([`uid=E001,ou=Sales,${f.base}`]));
    expect(targets(mesh.get('eng'), 'member')).toEqual(idsOf(mesh, ['E001', 'E003', 'E006']));
    expect(targets(mesh.get('sales'), 'member')).toEqual(idsOf(mesh, ['E003', 'E005']));
    expect(targets(mesh.get('E002'), 'manager')).toEqual([mesh.get('E001')!.id]);
    expect(targets(mesh.get('E006'), 'manager')).toEqual([mesh.get('E001')!.id]);
    // The deleted user left every group: no relationship and no pending reference names it.
    const gone = before.get('E004')!.id;
    expect([...mesh.values()].flatMap((o) => o.relationships).filter((r) => r.targetId === gone)).toEqual([]);
    expect([...mesh.values()].flatMap((o) => o.pendingReferences)).toEqual([]);
    expect(mesh.get('everyone')!.updatedOn).toBe(before.get('everyone')!.updatedOn);

    const again = await runImport(rt, id, { runType: 'DeltaImport' });
    expect(again).toMatchObject({ status: 'Completed', stats: { objectsCreated: 0, objectsUpdated: 0, objectsDeleted: 0, errors: 0 } });
  });

  test('the access log trimmed past the watermark: the delta run does a full import by itself and says so', async () => {
    await f.update('E003', { mail: 'lee@example.test' });
    const admin = await f.client();
    // Purge the log (the purge task removes old entries the same way).
    for (const e of (await admin.search('cn=accesslog', { scope: 'one', filter: '(objectClass=*)', attributes: ['1.1'] })).searchEntries) await admin.del(e.dn);
    const run = await runImport(rt, id, { runType: 'DeltaImport' });
    expect(run).toMatchObject({
      status: 'Completed',
      runType: 'DeltaImport',
      stats: { objectsProcessed: 8, objectsCreated: 0, objectsUpdated: 1, objectsDeleted: 0, errors: 0 },
    });
    expect(run.errors).toEqual([
      { message: expect.stringMatching(/^The delta import ran as a full import: The access log no longer reaches back to the watermark/) },
    ]);
    expect(valueOf((await meshOf(id)).get('E003'), 'mail')).toBe('lee@example.test');
    // The full import set a new watermark: the next delta is a delta again.
    await f.update('E002', { sn: 'Muñoz-Ruiz' });
    const next = await runImport(rt, id, { runType: 'DeltaImport' });
    expect(next).toMatchObject({ status: 'Completed', stats: { objectsProcessed: 1, objectsUpdated: 1, errors: 0 } });
    expect(next.errors ?? []).toEqual([]);
  });

  test('StartTLS with the CA certificate imports; a wrong CA or password is refused at create, a password changed after the save fails the run with a clear error and no secret', async () => {
    const tls = await ldapConnector(rt, 'Directory StartTLS', f.config({ security: 'starttls', port: slapd.port }));
    expect(await runImport(rt, tls)).toMatchObject({ status: 'Completed', stats: { objectsProcessed: 8, errors: 0 } });

    // Saving tests the connection (test/integration/ldap/save.test.ts has every case).
    const other = await startSlapd();
    const wrongCa = other.caCertificate;
    await other.stop();
    const ca = await rt.call('POST', 'connectors', { body: { name: 'Directory wrong CA', type: 'ldap', config: f.config({ caCertificate: wrongCa }) } });
    expect(ca.status).toBe(400);
    expect(ca.body.detail).toMatch(/certificate is not trusted.*caCertificate/);

    // An account whose password changes once the connector is saved (outside the connector's base).
    const admin = await f.client();
    const account = `uid=e2e-reader,ou=people,${slapd.suffix}`;
    const first = 'Reader-Password-1Qx';
    const secret = 'Reader-Password-7Qx';
    await admin.add(account, { objectClass: 'inetOrgPerson', uid: 'e2e-reader', cn: 'reader', sn: 'reader', userPassword: first });
    const bad = await ldapConnector(rt, 'Directory wrong password', f.config({ bindDN: account, bindPassword: first }));
    await admin.modify(account, [new Change({ operation: 'replace', modification: new Attribute({ type: 'userPassword', values: [secret] }) })]);
    const badRun = await runImport(rt, bad);
    expect(badRun.status).toBe('Failed');
    expect(badRun.error).toMatch(/invalid credentials/);
    const conn = await rt.call('GET', `connectors/${bad}`);
    expect(conn.body.status).toBe('error');
    expect(conn.body.config.bindPassword).toBe('********');
    for (const text of [JSON.stringify(badRun), conn.text, (await rt.call('GET', `runs?connectorId=${bad}`)).text, rt.logs()]) {
      expect(text).not.toContain(first);
      expect(text).not.toContain(secret);
    }
  });
});
