import { Attribute, Change, Client } from 'ldapts';
import { closeParkedSearches } from '../../../lib/connectors/ldap';
import { DEFAULT_PAGE_SIZE } from '../../../lib/sync/run/runTypes';
import { readSyncState } from '../../../lib/sync/run/state';
import { describeWithServer } from '../../support/servers';
import { startService, type ServiceUnderTest } from '../../support/service';
import { startSlapd, type Slapd } from '../../support/slapd';
import { rule, runImport, valueOf } from '../sync/syncSupport';
import { ldapConnector, meshOf, startImport, waitRun } from './e2eSupport';

/**
 * The directory server stopped in the middle of a run of the sync engine: four engine pages of users
 * bulk-loaded into slapd; slapd is stopped once the first page is committed. The run must end
 * Failed with the reason, keep the last committed watermark, and a delta after the restart must bring the
 * changes made before the failed run (which that run never reached).
 */
jest.setTimeout(600_000);

const USERS = 4 * DEFAULT_PAGE_SIZE;
const LAST = `u${String(USERS - 1).padStart(4, '0')}`;
const pad = (i: number) => String(i).padStart(4, '0');

function bulkLdif(base: string): string {
  const out = [`dn: ${base}\nobjectClass: organizationalUnit\nou: bulk\n`];
  for (let i = 1; i <= USERS; i++) {
    out.push(
      `dn: uid=u${pad(i)},${base}\nobjectClass: inetOrgPerson\nuid: u${pad(i)}\ncn: User ${i}\nsn: Surname${i}\ngivenName: Given${i}\nemployeeNumber: ${i}\nmail: u${pad(i)}@example.test\n`,
    );
  }
  return out.join('\n');
}

describeWithServer('slapd')('directory connector: the server stopped in the middle of a run', () => {
  let slapd: Slapd;
  let rt: ServiceUnderTest;
  let admin: Client;
  let id = '';
  let base = '';

  beforeAll(async () => {
    base = 'ou=bulk,dc=example,dc=com';
    slapd = await startSlapd({ ldif: bulkLdif(base) });
    rt = await startService();
    id = await ldapConnector(rt, 'Bulk directory', {
      host: 'localhost',
      port: slapd.ldapsPort,
      security: 'ldaps',
      caCertificate: slapd.caCertificate,
      baseDN: base,
      bindDN: slapd.rootDN,
      bindPassword: slapd.rootPassword,
      deltaStrategy: 'accesslog',
      timeoutSeconds: 10,
    });
    await rule(rt, { ruleType: 'ProjectionRule', connectorId: id, sourceAttribute: 'uid', objectType: 'User' });
    for (const a of ['dn', 'givenName', 'sn', 'mail'])
      await rule(rt, { ruleType: 'FlowRule', connectorId: id, sourceAttribute: a, targetAttribute: a, confidence: 50 });
  });
  afterAll(async () => {
    await admin?.unbind().catch(() => undefined);
    await rt?.dispose();
    await closeParkedSearches();
    await slapd?.stop();
  });

  test('Failed with the reason, the watermark kept; after the restart a delta brings the changes', async () => {
    const first = await runImport(rt, id);
    expect(first).toMatchObject({ status: 'Completed', stats: { objectsCreated: USERS, errors: 0 } });
    const watermark = (await readSyncState(id)).watermark;
    expect(watermark).toEqual(expect.any(String));

    // Changes after the watermark, in the last page of the directory's order (the last but one user, a new
    // entry) and a delete.
    admin = new Client({ url: slapd.url });
    await admin.bind(slapd.rootDN, slapd.rootPassword);
    await admin.modify(`uid=${LAST},${base}`, [new Change({ operation: 'replace', modification: new Attribute({ type: 'sn', values: ['Changed'] }) })]);
    await admin.add(`uid=u99999,${base}`, { objectClass: 'inetOrgPerson', uid: 'u99999', cn: 'New Person', sn: 'Person' });
    await admin.del(`uid=u0002,${base}`);
    await admin.unbind();

    // A new flow rule: every object is planned and written again, so each page takes a while.
    await rule(rt, { ruleType: 'FlowRule', connectorId: id, sourceAttribute: 'employeeNumber', targetAttribute: 'employeeNumber', confidence: 50 });
    const runId = await startImport(rt, id, 'FullImport');
    for (;;) {
      const run = (await rt.call('GET', `runs/${runId}`)).body;
      if (run.status !== 'Running') throw new Error(`the run ended before the server could be stopped: ${JSON.stringify(run)}`);
      if (run.stats.objectsProcessed >= DEFAULT_PAGE_SIZE) break;
      await new Promise((r) => setTimeout(r, 100));
    }
    await slapd.halt();
    const failed = await waitRun(rt, runId);
    expect(failed.status).toBe('Failed');
    expect(failed.error).toMatch(/directory/);
    expect(failed.error).toMatch(/connection to the directory was lost|cannot reach the directory/);
    expect(failed.stats.objectsProcessed).toBeLessThan(USERS);
    expect(JSON.stringify(failed)).not.toContain(slapd.rootPassword);
    expect((await rt.call('GET', `connectors/${id}`)).body.status).toBe('error');
    expect((await readSyncState(id)).watermark).toBe(watermark);
    const during = await meshOf(id);
    expect(valueOf(during.get(LAST), 'sn')).toBe(`Surname${USERS - 1}`);
    expect(during.has('u0002')).toBe(true);

    await slapd.restart();
    const delta = await runImport(rt, id, { runType: 'DeltaImport' });
    expect(delta).toMatchObject({ status: 'Completed', runType: 'DeltaImport', stats: { objectsCreated: 1, objectsUpdated: 1, objectsDeleted: 1, errors: 0 } });
    // The rule added before the failed full import was never applied by a full pass: the delta says so.
    expect(delta.errors ?? []).toEqual([{ message: expect.stringMatching(/^The rules of this connector changed since its last full import or FullSync/) }]);
    const after = await meshOf(id);
    expect(valueOf(after.get(LAST), 'sn')).toBe('Changed');
    expect(valueOf(after.get('u99999'), 'dn')).toBe(`uid=u99999,${base}`);
    expect(after.has('u0002')).toBe(false);
    expect(after.size).toBe(USERS);
    expect((await rt.call('GET', `connectors/${id}`)).body.status).toBe('active');
  });
});
