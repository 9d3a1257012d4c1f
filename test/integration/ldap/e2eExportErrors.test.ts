import { mkdirSync } from 'node:fs';
import path from 'node:path';
import { closeParkedSearches } from '../../../lib/connectors/ldap';
import { describeWithServer } from '../../support/servers';
import { startService, type ServiceUnderTest } from '../../support/service';
import { startSlapd, type Slapd } from '../../support/slapd';
import { rule, runExport, runImport, sourceRules, writeCsv } from '../sync/syncSupport';
import { ldapConnector } from './e2eSupport';
import { SlapdFixture } from './ldapFixture';

/**
 * An export run whose add meets an entry already in the directory (an entry the engine never joined): the
 * run's errors, as an operator reads them over the API, name the DN in a sentence, never the protocol's
 * "Code: 0x44 (LDAP result 68)".
 */
jest.setTimeout(300_000);

describeWithServer('slapd')('export run errors from the directory are readable (slapd, over HTTP)', () => {
  let slapd: Slapd;
  let rt: ServiceUnderTest;
  let f: SlapdFixture;

  beforeAll(async () => {
    slapd = await startSlapd();
    rt = await startService();
    f = await new SlapdFixture(slapd).init();
    // The directory already holds E001 where the DN template would put it.
    await f.seed([{ key: 'E001', givenName: 'Ada', sn: 'Lovelace', container: 'Engineering' }]);
  });
  afterAll(async () => {
    await rt?.dispose();
    await f?.cleanup();
    await closeParkedSearches();
    await slapd?.stop();
  });

  test('an add of an existing DN is listed as "An entry with the DN ... already exists."; the other add lands', async () => {
    // The file connector's folder is under the service's data folder (its default root for file connectors).
    const hrDir = path.join(rt.dataDir, 'files', 'hr');
    mkdirSync(hrDir, { recursive: true });
    writeCsv(
      hrDir,
      'people.csv',
      ['id', 'employeeId', 'givenName', 'sn', 'department'],
      [
        { id: 'h1', employeeId: 'E001', givenName: 'Ada', sn: 'Lovelace', department: 'Engineering' },
        { id: 'h2', employeeId: 'E002', givenName: 'José', sn: 'Muñoz', department: 'Engineering' },
      ],
    );
    const res = await rt.call('POST', 'connectors', {
      body: { name: 'HR', type: 'custom', config: { implementation: 'file', objectType: 'User', settings: { path: hrDir, anchorColumn: 'id' } } },
    });
    expect(res.status).toBe(201);
    const hr = res.body.id as string;
    await sourceRules(rt, hr, 'employeeId', ['employeeId', 'givenName', 'sn', 'department']);

    // No join rule and no import of the directory: the engine does not know uid=E001 is there.
    const dir = await ldapConnector(rt, 'Directory', f.config());
    const out = (sourceAttribute: string, targetAttribute: string) =>
      rule(rt, { ruleType: 'FlowRule', connectorId: dir, direction: 'outbound', sourceAttribute, targetAttribute, confidence: 50 });
    await out('employeeId', 'uid');
    await out('givenName', 'givenName');
    await out('sn', 'sn');
    await out('sn', 'cn');
    await out('department', 'departmentNumber');

    expect(await runImport(rt, hr)).toMatchObject({ status: 'Completed', stats: { objectsCreated: 2, errors: 0 } });
    const run = await runExport(rt, dir);
    expect(run).toMatchObject({ status: 'CompletedWithErrors', stats: { objectsCreated: 1, errors: 1 } });
    expect(run.errors).toEqual([{ object: 'E001', message: `An entry with the DN 'uid=E001,ou=Engineering,${f.base}' already exists.` }]);
    // As read again over the API (the run list too): no protocol numbers anywhere.
    const again = await rt.call('GET', `runs/${run.runId}`);
    expect(again.text).not.toMatch(/0x44|LDAP result|Code:/);
    const admin = await f.client();
    const { searchEntries } = await admin.search(`uid=E002,ou=Engineering,${f.base}`, { scope: 'base' });
    expect(searchEntries).toHaveLength(1);
  });
});
