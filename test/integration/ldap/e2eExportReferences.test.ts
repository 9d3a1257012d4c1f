import type { Client } from 'ldapts';
import { describeWithServer } from '../../support/servers';
import { startService, type ServiceUnderTest } from '../../support/service';
import { startSlapd, type Slapd } from '../../support/slapd';
import { fileConnector, folder, rule, runExport, runImport, sourceRules, writeCsv, outboundRule } from '../sync/syncSupport';
import { ldapConnector, meshOf, stopSlapdSuite, targets } from './e2eSupport';
import { SlapdFixture } from './ldapFixture';

/**
 * Relationships exported in the target's own terms, against a real slapd: an HR file names each person's
 * manager by the manager's row anchor (a reference column); the engine resolves it through the HR connector
 * space to a `manager` relationship; an outbound flow of that relationship writes, in the directory, the DN
 * of the manager's entry there. When the manager moves to another OU, every report's `manager` names the new
 * DN, and an outbound script reads the manager's attributes (`related.manager`).
 */
jest.setTimeout(300_000);

const HR = ['id', 'employeeId', 'givenName', 'sn', 'department', 'managerRow'];

describeWithServer('slapd')('relationships exported as DNs (slapd)', () => {
  let slapd: Slapd;
  let rt: ServiceUnderTest;
  let f: SlapdFixture;
  let admin: Client;
  const hrDir = folder('ims-refexport-hr-');
  let hr = '';
  let dir = '';
  const rows = (bossDepartment: string) => [
    // Reports come before their manager in the file: forward references.
    { id: 'h2', employeeId: 'E002', givenName: 'José', sn: 'Muñoz', department: 'Engineering', managerRow: 'h1' },
    { id: 'h3', employeeId: 'E003', givenName: 'Li', sn: 'Lee', department: 'Sales', managerRow: 'h1' },
    { id: 'h4', employeeId: 'E004', givenName: 'Zoë', sn: 'Obi', department: 'Sales', managerRow: 'h2' },
    { id: 'h1', employeeId: 'E001', givenName: 'Ada', sn: 'Lovelace', department: bossDepartment, managerRow: '' },
  ];
  const entry = async (uid: string) =>
    (await admin.search(f.base, { scope: 'sub', filter: `(uid=${uid})`, attributes: ['manager', 'description'] })).searchEntries[0];

  beforeAll(async () => {
    // No referential integrity on `manager`: when a manager moves, only the engine can rewrite the reports.
    slapd = await startSlapd({ refintAttributes: ['member'] });
    rt = await startService();
    f = await new SlapdFixture(slapd).init();
    admin = await f.client();
    writeCsv(hrDir, 'hr.csv', HR, rows('Engineering'));
    hr = await fileConnector(rt, 'HR', hrDir, { referenceColumns: { managerRow: 'User' } });
    await sourceRules(rt, hr, 'employeeId', ['employeeId', 'givenName', 'sn', 'department']);
    // The reference column's relationship is named `manager`.
    await rule(rt, { ruleType: 'MeshComposerRule', connectorId: hr, relationshipType: 'manager', sourceAttribute: 'managerRow' });

    dir = await ldapConnector(rt, 'Directory', f.config({ deletionThreshold: { objects: 10, percent: 100 } }));
    const out = outboundRule(rt, dir);
    await out('employeeId', 'uid');
    await out('employeeId', 'employeeNumber');
    await out('sn', 'sn');
    await out('givenName', 'cn', 'object.givenName + " " + object.sn');
    await out('department', 'departmentNumber');
    // A relationship flows out as the DN of the related object's entry in this directory.
    await out('manager', 'manager');
    // An outbound script reads the manager's attributes.
    await out('employeeId', 'description', 'related.manager ? "Reports to " + related.manager.givenName : "Reports to nobody"');
    await rule(rt, { ruleType: 'JoinRule', connectorId: dir, sourceAttribute: 'employeeNumber', targetAttribute: 'employeeId' });
  });
  afterAll(async () => {
    await stopSlapdSuite({ admin, rt, f, slapd });
  });

  test("the HR reference column gives manager relationships; the export writes the manager entries' DNs", async () => {
    expect(await runImport(rt, hr)).toMatchObject({ status: 'Completed', stats: { objectsCreated: 4, errors: 0 } });
    const mesh = await meshOf(hr);
    expect(targets(mesh.get('E002'), 'manager')).toEqual([mesh.get('E001')!.id]);
    expect(targets(mesh.get('E004'), 'manager')).toEqual([mesh.get('E002')!.id]);

    // One export adds every entry and, in a second pass over what it added, writes the references to the
    // managers it added with them.
    const first = await runExport(rt, dir);
    // (How many references the second pass writes depends on the order of the mesh partitions; an export's
    // objectsProcessed counts the changes it applied.)
    expect(first).toMatchObject({ status: 'Completed', stats: { objectsCreated: 4, errors: 0 } });
    expect(first.stats.objectsProcessed).toBe(first.stats.objectsCreated + first.stats.objectsUpdated);
    expect((await entry('E002')).manager).toBe(`uid=E001,ou=Engineering,${f.base}`);
    expect((await entry('E003')).manager).toBe(`uid=E001,ou=Engineering,${f.base}`);
    expect((await entry('E004')).manager).toBe(`uid=E002,ou=Engineering,${f.base}`);
    expect((await entry('E001')).manager ?? []).toEqual([]);
    expect((await entry('E004')).description).toBe('Reports to José');
    expect((await entry('E001')).description).toBe('Reports to nobody');
    // Nothing left to do.
    await runImport(rt, dir);
    expect(await runExport(rt, dir)).toMatchObject({ status: 'Completed', stats: { objectsCreated: 0, objectsUpdated: 0, errors: 0 } });
  });

  test('the manager moves to another OU: one export moves the entry and rewrites every report, the next has nothing to change', async () => {
    writeCsv(hrDir, 'hr.csv', HR, rows('Sales'));
    expect(await runImport(rt, hr, { runType: 'DeltaImport' })).toMatchObject({ status: 'Completed', stats: { objectsUpdated: 1, errors: 0 } });
    const moved = await runExport(rt, dir);
    // The move itself and the two reports' manager values (in whichever pass their partition came).
    expect(moved).toMatchObject({ status: 'Completed', stats: { objectsUpdated: 3, errors: 0 } });
    const newDn = `uid=E001,ou=Sales,${f.base}`;
    expect((await admin.search(newDn, { scope: 'base', attributes: ['uid'] })).searchEntries).toHaveLength(1);
    for (const uid of ['E002', 'E003']) expect((await entry(uid)).manager).toBe(newDn);
    await runImport(rt, dir);
    expect(await runExport(rt, dir)).toMatchObject({ status: 'Completed', stats: { objectsCreated: 0, objectsUpdated: 0, errors: 0 } });
  });
});
