import { Attribute, Change } from 'ldapts';
import { closeParkedSearches } from '../../../lib/connectors/ldap';
import type { MeshObject } from '../../../lib/mesh/model';
import { describeWithServer } from '../../support/servers';
import { startService, type ServiceUnderTest } from '../../support/service';
import { startSlapd, type Slapd } from '../../support/slapd';
import { rule, runImport } from '../sync/syncSupport';
import { count, ldapConnector, meshOf, targets, waitFor } from './e2eSupport';
import { SlapdFixture } from './ldapFixture';

/**
 * Reference attributes resolved through the connector space, against a real slapd (refint, memberof,
 * accesslog): a `manager` or `member` DN names an entry of the same directory; the engine finds that entry's
 * connector-space object by DN, then the mesh object joined to it. No mesh-composer rule and no flow of the
 * DN into the mesh are needed (this suite has neither). Forward references (a manager read after the report,
 * in a later page or a later run), renames, moves, deletes and nested groups keep the relationships exact.
 */
jest.setTimeout(300_000);

describeWithServer('slapd')('references through the connector space (slapd)', () => {
  let slapd: Slapd;
  let rt: ServiceUnderTest;
  let f: SlapdFixture;
  let id = '';
  const groupDn = (name: string) => `cn=${name},ou=groups,${f.base}`;
  const userDn = (key: string, ou = 'Engineering') => `uid=${key},ou=${ou},${f.base}`;
  const ids = (mesh: Map<string, MeshObject>, keys: string[]) => keys.map((k) => mesh.get(k)!.id).sort();

  beforeAll(async () => {
    slapd = await startSlapd();
    rt = await startService();
    f = await new SlapdFixture(slapd).init();
    const admin = await f.client();
    const person = (key: string, manager?: string, ou = 'Engineering') =>
      admin.add(userDn(key, ou), { objectClass: 'inetOrgPerson', uid: key, cn: key, sn: key, ...(manager ? { manager } : {}) });
    // Reports are added before their managers (slapd returns entries in the order they were added, and the
    // connector reads two per page): every manager reference is a forward reference, across pages.
    await person('U004', userDn('U002'));
    await person('U003', userDn('U001'));
    await person('U002', userDn('U001'));
    await person('U001');
    await person('U005', userDn('U002'), 'Sales');
    // seeAlso has DN syntax in the core schema: a reference too, read from the directory's subschema.
    await admin.modify(userDn('U005', 'Sales'), [new Change({ operation: 'add', modification: new Attribute({ type: 'seeAlso', values: [userDn('U001')] }) })]);
    // A manager outside the connector's base can never be one of its objects: no reference, nothing waits.
    await admin.add(userDn('U008'), { objectClass: 'inetOrgPerson', uid: 'U008', cn: 'U008', sn: 'U008', manager: `uid=outside,ou=nowhere,${slapd.suffix}` });
    await admin.add(groupDn('eng'), { objectClass: 'groupOfNames', cn: 'eng', member: [userDn('U001'), userDn('U002'), userDn('U004')] });
    await admin.add(groupDn('all'), { objectClass: 'groupOfNames', cn: 'all', member: [groupDn('eng'), userDn('U005', 'Sales')] });
    id = await ldapConnector(rt, 'Directory', f.config({ deltaStrategy: 'accesslog', pageSize: 2 }));
    await rule(rt, { ruleType: 'ProjectionRule', connectorId: id, sourceAttribute: 'uid', objectType: 'User', priority: 10 });
    await rule(rt, {
      ruleType: 'ProjectionRule',
      connectorId: id,
      sourceAttribute: 'cn',
      objectType: 'Group',
      priority: 20,
      transformScript: 'object.objectClass.includes("groupOfNames")',
    });
    await rule(rt, { ruleType: 'FlowRule', connectorId: id, sourceAttribute: 'sn', targetAttribute: 'sn', confidence: 50 });
  });
  afterAll(async () => {
    await rt?.dispose();
    await f?.cleanup();
    await closeParkedSearches();
    await slapd?.stop();
  });

  test('a full import resolves manager, member and seeAlso DNs (forward references across pages, nested groups) with no rule', async () => {
    const run = await runImport(rt, id);
    expect(run).toMatchObject({ status: 'Completed', stats: { objectsCreated: 8, errors: 0 } });
    const mesh = await meshOf(id);
    expect(targets(mesh.get('U004'), 'manager')).toEqual(ids(mesh, ['U002']));
    expect(targets(mesh.get('U003'), 'manager')).toEqual(ids(mesh, ['U001']));
    expect(targets(mesh.get('U002'), 'manager')).toEqual(ids(mesh, ['U001']));
    expect(targets(mesh.get('U005'), 'manager')).toEqual(ids(mesh, ['U002']));
    expect(targets(mesh.get('U001'), 'manager')).toEqual([]);
    expect(targets(mesh.get('eng'), 'member')).toEqual(ids(mesh, ['U001', 'U002', 'U004']));
    expect(targets(mesh.get('all'), 'member')).toEqual(ids(mesh, ['eng', 'U005']));
    expect(targets(mesh.get('U005'), 'seeAlso')).toEqual(ids(mesh, ['U001']));
    expect(targets(mesh.get('U008'), 'manager')).toEqual([]);
    expect([...mesh.values()].flatMap((o) => o.pendingReferences)).toEqual([]);
    // The mesh has no `dn` or `manager` attribute: the relationships came through the connector space.
    expect(Object.keys(mesh.get('U004')!.attributes)).toEqual(['sn']);

    // Over the Admin API, as the spec shapes a relationship.
    const u4 = mesh.get('U004')!;
    await waitFor('the mesh read model', async () => (await rt.call('GET', `mesh/objects/${u4.id}`)).status === 200);
    const detail = await rt.call('GET', `mesh/objects/${u4.id}`);
    expect(detail.body.relationships).toEqual([
      { relationshipType: 'manager', targetMeshObjectId: mesh.get('U002')!.id, targetAnchorValue: 'U002', targetObjectType: 'User', targetDisplayName: 'U002' },
    ]);
  });

  test('a delta keeps relationships exact through a move, a rename and a delete; a reference to an entry of a later run resolves then', async () => {
    const before = await meshOf(id);
    const admin = await f.client();
    // Move the manager of U004 and U005 to another OU, rename U003 (new RDN), delete U004 (a member of eng).
    await admin.modifyDN(userDn('U002'), `uid=U002,ou=Sales,${f.base}`);
    await admin.modifyDN(userDn('U003'), `uid=U003x,ou=Engineering,${f.base}`);
    await admin.del(userDn('U004'));
    // A new report whose manager does not exist yet.
    await admin.add(userDn('U006'), { objectClass: 'inetOrgPerson', uid: 'U006', cn: 'U006', sn: 'U006', manager: userDn('U007') });
    await waitFor(
      'refint',
      async () =>
        (await count(admin, f.base, `(manager=uid=U002,ou=Sales,${f.base})`)) === 1 && (await count(admin, f.base, `(member=${userDn('U004')})`)) === 0,
    );

    const run = await runImport(rt, id, { runType: 'DeltaImport' });
    expect(run).toMatchObject({ status: 'Completed', stats: { objectsCreated: 1, objectsDeleted: 1, errors: 0 } });
    let mesh = await meshOf(id);
    expect(mesh.get('U002')!.id).toBe(before.get('U002')!.id);
    expect(targets(mesh.get('U005'), 'manager')).toEqual(ids(mesh, ['U002']));
    expect(targets(mesh.get('eng'), 'member')).toEqual(ids(mesh, ['U001', 'U002']));
    // The renamed entry keeps its mesh object (and its anchor value).
    expect(targets(mesh.get('U003'), 'manager')).toEqual(ids(mesh, ['U001']));
    const gone = before.get('U004')!.id;
    expect([...mesh.values()].flatMap((o) => o.relationships).filter((r) => r.targetId === gone)).toEqual([]);
    // U006's manager is not in the directory yet: a pending reference, no relationship.
    expect(targets(mesh.get('U006'), 'manager')).toEqual([]);
    expect(mesh.get('U006')!.pendingReferences.map((p) => p.type)).toEqual(['manager']);

    // The manager arrives in a later run: the waiting report resolves although it did not change.
    await admin.add(userDn('U007'), { objectClass: 'inetOrgPerson', uid: 'U007', cn: 'U007', sn: 'U007' });
    const late = await runImport(rt, id, { runType: 'DeltaImport' });
    expect(late).toMatchObject({ status: 'Completed', stats: { objectsCreated: 1, errors: 0 } });
    mesh = await meshOf(id);
    expect(targets(mesh.get('U006'), 'manager')).toEqual(ids(mesh, ['U007']));
    expect(mesh.get('U006')!.pendingReferences).toEqual([]);
  });

  test('the referenced entry deleted while its report keeps the value (no referential integrity on it): the relationship goes back to waiting', async () => {
    const admin = await f.client();
    // `secretary` is not kept by refint in this directory: the value stays after the entry is deleted.
    await admin.modify(userDn('U001'), [new Change({ operation: 'add', modification: new Attribute({ type: 'secretary', values: [userDn('U007')] }) })]);
    let run = await runImport(rt, id, { runType: 'DeltaImport' });
    expect(run).toMatchObject({ status: 'Completed', stats: { errors: 0 } });
    let mesh = await meshOf(id);
    expect(targets(mesh.get('U001'), 'secretary')).toEqual(ids(mesh, ['U007']));
    await admin.del(userDn('U007'));
    // A full import reads U001 as the directory has it: still naming the deleted entry.
    run = await runImport(rt, id, { runType: 'FullImport' });
    expect(run).toMatchObject({ status: 'Completed', stats: { errors: 0 } });
    mesh = await meshOf(id);
    expect(mesh.has('U007')).toBe(false);
    expect(targets(mesh.get('U001'), 'secretary')).toEqual([]);
    expect(mesh.get('U001')!.pendingReferences.map((p) => p.type)).toEqual(['secretary']);
  });
});
