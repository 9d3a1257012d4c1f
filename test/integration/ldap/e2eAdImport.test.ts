import { Attribute, Change } from 'ldapts';
import { closeParkedSearches } from '../../../lib/connectors/ldap';
import { guidToString } from '../../../lib/connectors/ldap/values';
import { describeWithServer } from '../../support/servers';
import { SAMBA_START_TIMEOUT_MS, startSambaAd, type SambaAd } from '../../support/samba';
import { startService, type ServiceUnderTest } from '../../support/service';
import { rule, runImport, valueOf } from '../sync/syncSupport';
import { idsOf, meshOf, relationshipRules, targets } from './e2eSupport';

/**
 * The import side of an Active Directory connector end to end, over HTTP through the running service, against a
 * real DC (Samba AD): a full import of users and groups (objectGUID anchors, member and manager relationships),
 * then USN deltas with modifies, deletes, a move, a rename, adds and membership changes, and a manager moved to
 * another OU whose reports keep their manager.
 */
jest.setTimeout(300_000);

describeWithServer('samba')('Active Directory import through the service: full and USN delta (Samba AD DC)', () => {
  let dc: SambaAd;
  let rt: ServiceUnderTest;
  let corp: string;
  let staff: string;
  let other: string;
  let managers: string;
  let id = '';
  const dns = new Map<string, string>();
  const modify = (dn: string, changes: Change[]) => dc.ldap((c) => c.modify(dn, changes));
  const replace = (type: string, values: string[]) => new Change({ operation: 'replace', modification: new Attribute({ type, values }) });
  const op = (operation: 'add' | 'delete', type: string, values: string[]) => new Change({ operation, modification: new Attribute({ type, values }) });

  beforeAll(async () => {
    dc = await startSambaAd();
    corp = await dc.addOU(`OU=Corp,${dc.baseDN}`);
    staff = await dc.addOU(`OU=Staff,${corp}`);
    other = await dc.addOU(`OU=Other,${corp}`);
    managers = await dc.addOU(`OU=Managers,${corp}`);
    // Outside the connector's containers: never imported.
    await dc.addUser({ sAMAccountName: 'outsider', password: 'Outsider-Pw-1!' });
    const user = async (sam: string, extra: Record<string, string> = {}) => {
      dns.set(
        sam,
        await dc.addUser({
          sAMAccountName: sam,
          parentDN: staff,
          password: `${sam}-Pw-1!Aa`,
          attributes: { givenName: sam, sn: 'Test', title: 'Clerk', ...extra },
        }),
      );
    };
    await user('boss');
    for (const sam of ['ann', 'bob', 'cat', 'dan']) await user(sam, { manager: dns.get('boss')! });
    dns.set('eng', await dc.addGroup({ cn: 'eng', parentDN: staff, members: [dns.get('ann')!, dns.get('bob')!, dns.get('cat')!] }));
    dns.set('all', await dc.addGroup({ cn: 'all', parentDN: staff, members: [dns.get('eng')!, dns.get('dan')!] }));

    rt = await startService();
    const res = await rt.call('POST', 'connectors', {
      body: {
        name: 'AD',
        type: 'active_directory',
        config: {
          ...dc.connection,
          containers: { include: [corp] },
          deltaStrategy: 'usn',
          deletionThreshold: { objects: 10, percent: 100 },
        },
      },
    });
    expect(res.status).toBe(201);
    id = res.body.id;
    await rule(rt, {
      ruleType: 'ProjectionRule',
      connectorId: id,
      sourceAttribute: 'sAMAccountName',
      objectType: 'User',
      priority: 10,
      transformScript: '!object.objectClass.includes("group")',
    });
    await rule(rt, {
      ruleType: 'ProjectionRule',
      connectorId: id,
      sourceAttribute: 'sAMAccountName',
      objectType: 'Group',
      priority: 20,
      transformScript: 'object.objectClass.includes("group")',
    });
    for (const a of ['dn', 'sAMAccountName', 'cn', 'title', 'container', 'member', 'manager']) {
      await rule(rt, { ruleType: 'FlowRule', connectorId: id, sourceAttribute: a, targetAttribute: a, confidence: 50 });
    }
    await relationshipRules(rt);
  }, SAMBA_START_TIMEOUT_MS);
  afterAll(async () => {
    await rt?.dispose();
    await closeParkedSearches();
    await dc?.release();
  });

  test('a full import: users and groups by objectGUID, member and manager relationships', async () => {
    const run = await runImport(rt, id);
    expect(run).toMatchObject({ status: 'Completed', runType: 'FullImport', stats: { objectsCreated: 7, errors: 0 } });
    const mesh = await meshOf(id);
    expect([...mesh.keys()].sort()).toEqual(['all', 'ann', 'bob', 'boss', 'cat', 'dan', 'eng']);
    expect(mesh.get('ann')!.links[id]).toBe(guidToString(await dc.objectGuid(dns.get('ann')!)));
    expect(mesh.get('eng')!.objectType).toBe('Group');
    expect(targets(mesh.get('eng'), 'member')).toEqual(idsOf(mesh, ['ann', 'bob', 'cat']));
    expect(targets(mesh.get('all'), 'member')).toEqual(idsOf(mesh, ['dan', 'eng']));
    for (const r of ['ann', 'bob', 'cat', 'dan']) expect(targets(mesh.get(r), 'manager')).toEqual(idsOf(mesh, ['boss']));
  });

  test('a USN delta: a modify, a delete, a move, a rename, an add and membership changes', async () => {
    await modify(dns.get('ann')!, [replace('title', ['Engineer'])]);
    await dc.ldap((c) => c.del(dns.get('dan')!));
    await dc.ldap((c) => c.modifyDN(dns.get('bob')!, `CN=bob,${other}`));
    await dc.ldap((c) => c.modifyDN(dns.get('cat')!, `CN=Catherine,${staff}`));
    const eve = await dc.addUser({
      sAMAccountName: 'eve',
      parentDN: staff,
      password: 'eve-Pw-1!Aa',
      attributes: { title: 'Intern', manager: dns.get('boss')! },
    });
    await modify(dns.get('eng')!, [op('add', 'member', [eve]), op('delete', 'member', [dns.get('ann')!])]);

    const run = await runImport(rt, id, { runType: 'DeltaImport' });
    expect(run.errors ?? []).toEqual([]);
    expect(run).toMatchObject({ status: 'Completed', runType: 'DeltaImport', stats: { objectsCreated: 1, objectsDeleted: 1, errors: 0 } });
    const mesh = await meshOf(id);
    expect([...mesh.keys()].sort()).toEqual(['all', 'ann', 'bob', 'boss', 'cat', 'eng', 'eve']);
    expect(valueOf(mesh.get('ann'), 'title')).toBe('Engineer');
    expect(valueOf(mesh.get('bob'), 'dn')).toBe(`CN=bob,${other}`);
    expect(valueOf(mesh.get('cat'), 'dn')).toBe(`CN=Catherine,${staff}`);
    expect(valueOf(mesh.get('eve'), 'title')).toBe('Intern');
    expect(targets(mesh.get('eng'), 'member')).toEqual(idsOf(mesh, ['bob', 'cat', 'eve']));
    expect(targets(mesh.get('all'), 'member')).toEqual(idsOf(mesh, ['eng']));
    // AD dropped the deleted dan from 'all' without touching the group: the engine drops the value too.
    expect(valueOf(mesh.get('all'), 'member')).toEqual([dns.get('eng')]);
    expect(targets(mesh.get('eve'), 'manager')).toEqual(idsOf(mesh, ['boss']));
    // The member values show the DNs AD has now (AD rewrote them without touching the groups' uSNChanged).
    expect([...(valueOf(mesh.get('eng'), 'member') as string[])].sort()).toEqual([`CN=bob,${other}`, `CN=Catherine,${staff}`, eve].sort());
  });

  test('a manager moved to another OU: the reports keep their manager', async () => {
    await dc.ldap((c) => c.modifyDN(dns.get('boss')!, `CN=boss,${managers}`));
    const run = await runImport(rt, id, { runType: 'DeltaImport' });
    expect(run).toMatchObject({ status: 'Completed', stats: { errors: 0 } });
    const mesh = await meshOf(id);
    expect(valueOf(mesh.get('boss'), 'dn')).toBe(`CN=boss,${managers}`);
    for (const r of ['ann', 'bob', 'cat', 'eve']) {
      expect(targets(mesh.get(r), 'manager')).toEqual(idsOf(mesh, ['boss']));
    }
    // A full import agrees with what the deltas made.
    expect(await runImport(rt, id)).toMatchObject({ status: 'Completed', stats: { objectsCreated: 0, objectsDeleted: 0, errors: 0 } });
    const full = await meshOf(id);
    for (const r of ['ann', 'bob', 'cat', 'eve']) expect(targets(full.get(r), 'manager')).toEqual(idsOf(full, ['boss']));
    expect(targets(full.get('eng'), 'member')).toEqual(idsOf(full, ['bob', 'cat', 'eve']));
  });
});
