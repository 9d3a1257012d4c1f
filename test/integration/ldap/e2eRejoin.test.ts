import type { Client } from 'ldapts';
import { describeWithServer } from '../../support/servers';
import { startService, type ServiceUnderTest } from '../../support/service';
import { startSlapd, type Slapd } from '../../support/slapd';
import { fileConnector, folder, rule, runExport, runImport, sourceRules, valueOf, writeCsv, outboundRule } from '../sync/syncSupport';
import { count, ldapConnector, meshOf, stopSlapdSuite } from './e2eSupport';
import { SlapdFixture } from './ldapFixture';

/**
 * Joins re-evaluated, against a real slapd: a directory entry imported before its HR person existed is a
 * disconnector; once HR projects the person, the next run of the directory connector joins it (the export
 * does not add it a second time), and a FullSync puts every connector-space object through the current rules
 * again without reading the directory.
 */
jest.setTimeout(300_000);

const HR = ['id', 'employeeId', 'givenName', 'sn', 'department'];

describeWithServer('slapd')('joins re-evaluated and FullSync (slapd)', () => {
  let slapd: Slapd;
  let rt: ServiceUnderTest;
  let f: SlapdFixture;
  let admin: Client;
  const hrDir = folder('ims-rejoin-hr-');
  let hr = '';
  let dir = '';

  beforeAll(async () => {
    slapd = await startSlapd();
    rt = await startService();
    f = await new SlapdFixture(slapd).init();
    admin = await f.client();
    // An account that exists in the directory before HR knows the person.
    await f.seed([{ key: 'E100', givenName: 'Ada', sn: 'Lovelace', mail: 'ada@dir.test', container: 'Engineering' }]);
    dir = await ldapConnector(rt, 'Directory', f.config({ deletionThreshold: { objects: 10, percent: 100 } }));
    await rule(rt, { ruleType: 'JoinRule', connectorId: dir, sourceAttribute: 'employeeNumber', targetAttribute: 'employeeId' });
    const out = outboundRule(rt, dir);
    await out('employeeId', 'uid');
    await out('employeeId', 'employeeNumber');
    await out('givenName', 'givenName');
    await out('sn', 'sn');
    await out('givenName', 'cn', 'object.givenName + " " + object.sn');
    await out('department', 'departmentNumber');

    writeCsv(hrDir, 'hr.csv', HR, [
      { id: 'h100', employeeId: 'E100', givenName: 'Ada', sn: 'Lovelace', department: 'Engineering' },
      { id: 'h101', employeeId: 'E101', givenName: 'Grace', sn: 'Hopper', department: 'Engineering' },
    ]);
    hr = await fileConnector(rt, 'HR', hrDir);
    await sourceRules(rt, hr, 'employeeId', ['employeeId', 'givenName', 'sn', 'department']);
  });
  afterAll(async () => {
    await stopSlapdSuite({ admin, rt, f, slapd });
  });

  test('a directory entry imported before its HR person joins at the next run of its connector; the export adds only the new person', async () => {
    // The directory first: nothing to join yet.
    expect(await runImport(rt, dir)).toMatchObject({ status: 'Completed', stats: { objectsProcessed: 1, errors: 0 } });
    expect((await meshOf(dir)).size).toBe(0);
    // HR projects both people.
    expect(await runImport(rt, hr)).toMatchObject({ status: 'Completed', stats: { objectsCreated: 2, errors: 0 } });
    // The export joins the existing entry (no add, no "already exists") and provisions the new person.
    const run = await runExport(rt, dir);
    expect(run.errors ?? []).toEqual([]);
    expect(run).toMatchObject({ status: 'Completed', stats: { objectsCreated: 1, errors: 0 } });
    const mesh = await meshOf(hr);
    expect(mesh.get('E100')!.links[dir]).toBeDefined();
    expect(mesh.get('E101')!.links[dir]).toBeDefined();
    expect(await count(admin, f.base, '(uid=E100)')).toBe(1);
    expect(await count(admin, f.base, '(uid=E101)')).toBe(1);
    // The joined entry took the HR values that differ (the directory had no departmentNumber).
    expect(await count(admin, f.base, '(&(uid=E100)(departmentNumber=Engineering))')).toBe(1);
  });

  test('FullSync reads no source and puts every connector-space object through the current rules', async () => {
    // A new inbound rule of the directory: its mail flows into the mesh. A delta sees no change in the source.
    await rule(rt, { ruleType: 'FlowRule', connectorId: dir, sourceAttribute: 'mail', targetAttribute: 'mail', confidence: 60 });
    // The directory is stopped from answering (a wrong password would do the same): FullSync must not read it.
    const before = await rt.call('GET', `connectors/${dir}`);
    expect(before.status).toBe(200);
    await slapd.halt();
    try {
      const res = await rt.call('POST', `connectors/${dir}/import`, { body: { runType: 'FullSync' } });
      expect(res.status).toBe(202);
      expect(res.body.runType).toBe('FullSync');
      const { waitRun } = await import('../sync/syncSupport');
      const run = await waitRun(rt, res.body.runId);
      expect(run).toMatchObject({ status: 'Completed', runType: 'FullSync', stats: { errors: 0 } });
      expect(run.stats.objectsProcessed).toBe(1);
      const mesh = await meshOf(hr);
      expect(valueOf(mesh.get('E100'), 'mail')).toBe('ada@dir.test');
    } finally {
      await slapd.restart();
    }
  });

  test('an unknown runType is a 400 that lists the allowed ones', async () => {
    const res = await rt.call('POST', `connectors/${dir}/import`, { body: { runType: 'Full' } });
    expect(res.status).toBe(400);
    expect(res.text).toMatch(/FullSync/);
  });
});
