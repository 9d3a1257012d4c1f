import { Attribute, Change, type Client } from 'ldapts';
import { describeWithServer } from '../../support/servers';
import { startService, type ServiceUnderTest } from '../../support/service';
import { startSlapd, type Slapd } from '../../support/slapd';
import { folder, rule, runExport, runImport, sourceRules, valueOf, writeCsv, outboundRule } from '../sync/syncSupport';
import { count, idsOf, ldapConnector, meshOf, relationshipRules, stopSlapdSuite, targets, waitFor } from './e2eSupport';
import { SlapdFixture } from './ldapFixture';

/**
 * Export to the directory end to end: an HR file is the source, the directory a target (outbound flow rules,
 * exportDnTemplate, provisioningCondition), runs of the running service over HTTP against slapd. New people
 * are provisioned into the OU of their department, the confirming import joins them, a new department moves
 * the entry (modifyDN, same entryUUID, group membership kept through refint), a person gone from HR is
 * deprovisioned.
 */
jest.setTimeout(300_000);

const HR = ['id', 'employeeId', 'givenName', 'sn', 'department', 'mail'];
type Row = Record<(typeof HR)[number], string>;
const ROWS: Row[] = [
  { id: 'h1', employeeId: 'E001', givenName: 'Ada', sn: 'Lovelace', department: 'Engineering', mail: 'ada@hr.test' },
  { id: 'h2', employeeId: 'E002', givenName: 'José', sn: 'Muñoz', department: 'Engineering', mail: 'jose@hr.test' },
  { id: 'h3', employeeId: 'E003', givenName: 'Li', sn: 'Lee', department: 'Sales', mail: 'li@hr.test' },
  { id: 'h9', employeeId: 'E009', givenName: 'Temp', sn: 'Worker', department: 'Contractors', mail: 'temp@hr.test' },
];

describeWithServer('slapd')('export to the directory through the sync engine (slapd)', () => {
  let slapd: Slapd;
  let rt: ServiceUnderTest;
  let f: SlapdFixture;
  let admin: Client;
  const hrDir = folder('ims-ldap-hr-');
  let hr = '';
  let dir = '';
  const dnOf = (key: string, ou: string) => `uid=${key},ou=${ou},${f.base}`;
  const staff = () => `cn=staff,ou=groups,${f.base}`;
  const entry = async (dn: string) =>
    (await admin.search(dn, { scope: 'base', attributes: ['*', 'entryUUID'] }).catch(() => ({ searchEntries: [] }))).searchEntries[0];

  beforeAll(async () => {
    slapd = await startSlapd();
    rt = await startService();
    f = await new SlapdFixture(slapd).init();
    await f.seed([{ key: 'E001', givenName: 'Ada', sn: 'Lovelace', mail: 'ada@example.test', container: 'Engineering' }]);
    admin = await f.client();
    await admin.add(staff(), { objectClass: 'groupOfNames', cn: 'staff', member: [f.dns.get('E001')!] });

    writeCsv(hrDir, 'hr.csv', HR, ROWS);
    const res = await rt.call('POST', 'connectors', {
      body: {
        name: 'HR',
        type: 'custom',
        config: { implementation: 'file', objectType: 'User', settings: { path: hrDir, anchorColumn: 'id' }, deletionThreshold: { objects: 10, percent: 100 } },
      },
    });
    expect(res.status).toBe(201);
    hr = res.body.id;
    await sourceRules(rt, hr, 'employeeId', ['employeeId', 'givenName', 'sn', 'department', 'mail']);

    // The directory: people are provisioned into ou=<department>, contractors are not.
    // A small directory: deprovisioning one of a few entries is past the default threshold (20 %).
    dir = await ldapConnector(
      rt,
      'Directory',
      f.config({
        provisioningCondition: 'source.department == "Engineering" || source.department == "Sales"',
        deletionThreshold: { objects: 10, percent: 100 },
      }),
    );
    const out = outboundRule(rt, dir, { confidence: 50 });
    await out('employeeId', 'uid');
    await out('employeeId', 'employeeNumber');
    await out('givenName', 'givenName');
    await out('sn', 'sn');
    await out('givenName', 'cn', 'object.givenName + " " + object.sn');
    await out('mail', 'mail');
    await out('department', 'departmentNumber');
    // What the directory brings back: people join on their employee number, groups project, DNs flow in.
    await rule(rt, { ruleType: 'JoinRule', connectorId: dir, sourceAttribute: 'employeeNumber', targetAttribute: 'employeeId' });
    await rule(rt, {
      ruleType: 'ProjectionRule',
      connectorId: dir,
      sourceAttribute: 'cn',
      objectType: 'Group',
      transformScript: 'object.objectClass.includes("groupOfNames")',
    });
    for (const a of ['dn', 'container', 'member'])
      await rule(rt, { ruleType: 'FlowRule', connectorId: dir, sourceAttribute: a, targetAttribute: a, confidence: 10 });
    await relationshipRules(rt);
  });
  afterAll(async () => {
    await stopSlapdSuite({ admin, rt, f, slapd });
  });

  test('new people are provisioned into the OU of their department; the confirming import joins them; nothing is left to export', async () => {
    expect(await runImport(rt, hr)).toMatchObject({ status: 'Completed', stats: { objectsCreated: 4, errors: 0 } });
    // The directory's own E001 joins the HR person; the group projects.
    expect(await runImport(rt, dir)).toMatchObject({ status: 'Completed', stats: { objectsProcessed: 2, errors: 0 } });
    let mesh = await meshOf(hr);
    expect(mesh.get('E001')!.links[dir]).toEqual(expect.any(String));

    const dry = await runExport(rt, dir, { dryRun: true });
    expect(dry).toMatchObject({ status: 'Completed', dryRun: true, stats: { objectsCreated: 2, objectsUpdated: 1 } });
    expect(await entry(dnOf('E002', 'Engineering'))).toBeUndefined();
    const run = await runExport(rt, dir);
    expect(run).toMatchObject({ status: 'Completed', runType: 'Export', stats: { objectsCreated: 2, objectsUpdated: 1, objectsDeleted: 0, errors: 0 } });
    expect(await entry(dnOf('E002', 'Engineering'))).toMatchObject({
      uid: 'E002',
      employeeNumber: 'E002',
      cn: 'José Muñoz',
      sn: 'Muñoz',
      mail: 'jose@hr.test',
      departmentNumber: 'Engineering',
      objectClass: 'inetOrgPerson',
    });
    expect(await entry(dnOf('E003', 'Sales'))).toMatchObject({ cn: 'Li Lee', departmentNumber: 'Sales' });
    expect(await count(admin, f.base, '(uid=E009)')).toBe(0);
    // E001 was there already: only what differs was written, and it stays where it is.
    expect(await entry(f.dns.get('E001')!)).toMatchObject({ mail: 'ada@hr.test', departmentNumber: 'Engineering' });

    const confirm = await runImport(rt, dir);
    expect(confirm).toMatchObject({ status: 'Completed', stats: { objectsProcessed: 4, errors: 0 } });
    expect(confirm.errors ?? []).toEqual([]);
    mesh = await meshOf(hr);
    const e002 = await entry(dnOf('E002', 'Engineering'));
    expect(mesh.get('E002')!.links[dir]).toBe(e002.entryUUID);
    expect(valueOf(mesh.get('E002'), 'dn')).toBe(dnOf('E002', 'Engineering'));
    expect(mesh.has('E009')).toBe(true);
    expect(mesh.get('E009')!.links[dir]).toBeUndefined();
    expect(await runExport(rt, dir)).toMatchObject({ status: 'Completed', stats: { objectsCreated: 0, objectsUpdated: 0, objectsDeleted: 0, errors: 0 } });
  });

  test('a new department moves the entry (modifyDN, same entryUUID); its group membership follows', async () => {
    const addMember = (key: string, ou: string) =>
      admin.modify(staff(), [new Change({ operation: 'add', modification: new Attribute({ type: 'member', values: [dnOf(key, ou)] }) })]);
    await addMember('E002', 'Engineering');
    await addMember('E003', 'Sales');
    expect(await runImport(rt, dir, { runType: 'DeltaImport' })).toMatchObject({ status: 'Completed', stats: { objectsUpdated: 1, errors: 0 } });
    const before = await entry(dnOf('E002', 'Engineering'));

    writeCsv(
      hrDir,
      'hr.csv',
      HR,
      ROWS.map((r) => (r.employeeId === 'E002' ? { ...r, department: 'Sales' } : r)),
    );
    expect(await runImport(rt, hr, { runType: 'DeltaImport' })).toMatchObject({ status: 'Completed', stats: { objectsUpdated: 1, errors: 0 } });
    const run = await runExport(rt, dir);
    expect(run).toMatchObject({ status: 'Completed', stats: { objectsCreated: 0, objectsUpdated: 1, errors: 0 } });
    expect(await entry(dnOf('E002', 'Engineering'))).toBeUndefined();
    const moved = await entry(dnOf('E002', 'Sales'));
    expect(moved).toMatchObject({ entryUUID: before.entryUUID, departmentNumber: 'Sales' });
    await waitFor('refint', async () => (await count(admin, f.base, `(member=${dnOf('E002', 'Sales')})`)) === 1);

    const confirm = await runImport(rt, dir, { runType: 'DeltaImport' });
    expect(confirm).toMatchObject({ status: 'Completed', stats: { objectsUpdated: 2, errors: 0 } });
    expect(confirm.errors ?? []).toEqual([]);
    const people = await meshOf(hr);
    const groups = await meshOf(dir);
    expect(valueOf(people.get('E002'), 'dn')).toBe(dnOf('E002', 'Sales'));
    expect(valueOf(people.get('E002'), 'container')).toBe(`ou=Sales,${f.base}`);
    expect(valueOf(groups.get('staff'), 'member')).toEqual(expect.arrayContaining([dnOf('E002', 'Sales')]));
    expect(targets(groups.get('staff'), 'member')).toEqual(idsOf(people, ['E001', 'E002', 'E003']));
  });

  test('a person gone from HR is deprovisioned: the entry is deleted and leaves the group', async () => {
    writeCsv(
      hrDir,
      'hr.csv',
      HR,
      ROWS.filter((r) => r.employeeId !== 'E003').map((r) => (r.employeeId === 'E002' ? { ...r, department: 'Sales' } : r)),
    );
    expect(await runImport(rt, hr, { runType: 'DeltaImport' })).toMatchObject({ status: 'Completed', stats: { objectsDeleted: 1, errors: 0 } });
    // E003 was provisioned by the engine: that link does not keep its mesh object once HR lets go.
    expect((await meshOf(dir)).has('E003')).toBe(false);

    const run = await runExport(rt, dir);
    expect(run).toMatchObject({ status: 'Completed', stats: { objectsDeleted: 1, errors: 0 } });
    expect(await entry(dnOf('E003', 'Sales'))).toBeUndefined();
    expect(await entry(f.dns.get('E001')!)).toBeDefined();
    await waitFor('refint', async () => (await count(admin, f.base, `(member=${dnOf('E003', 'Sales')})`)) === 0);

    const confirm = await runImport(rt, dir, { runType: 'DeltaImport' });
    expect(confirm).toMatchObject({ status: 'Completed', stats: { errors: 0 } });
    const after = await meshOf(dir);
    expect(valueOf(after.get('staff'), 'member')).toEqual(expect.not.arrayContaining([dnOf('E003', 'Sales')]));
    expect(targets(after.get('staff'), 'member')).toEqual(idsOf(after, ['E001', 'E002']));
    expect(after.get('staff')!.pendingReferences).toEqual([]);
    expect(await runExport(rt, dir)).toMatchObject({ status: 'Completed', stats: { objectsCreated: 0, objectsUpdated: 0, objectsDeleted: 0, errors: 0 } });
  });
});
