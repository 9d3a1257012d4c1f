import { Attribute, Change, Client } from 'ldapts';
import { closeParkedSearches } from '../../../lib/connectors/ldap';
import { guidToString } from '../../../lib/connectors/ldap/values';
import { iterateCsObjects } from '../../../lib/sync/space/connectorSpace';
import { iterateMesh } from '../../../lib/mesh/store';
import { describeWithServer } from '../../support/servers';
import { SAMBA_START_TIMEOUT_MS, startSambaAd, type SambaAd } from '../../support/samba';
import { startService, type ServiceUnderTest } from '../../support/service';
import { folder, rule, runExport, runImport, sourceRules, writeCsv, outboundRule } from '../sync/syncSupport';
import { meshOf } from './e2eSupport';

/**
 * Provisioning Active Directory end to end, over HTTP through the running service, against a real DC (Samba AD):
 * an HR file is the source; the AD connector (type active_directory) provisions people into the OU of their
 * department with an initial password (outbound flow to unicodePwd) and an enabled account, updates them, moves
 * them (same objectGUID) and deletes a leaver (confirmed gone). The password is in no answer, log, run, mesh
 * object or connector-space row. A wrong bind password and an untrusted CA are refused at create.
 */
jest.setTimeout(300_000);

const HR = ['id', 'employeeId', 'givenName', 'sn', 'department'];
type Row = Record<(typeof HR)[number], string>;
const ROWS: Row[] = [
  { id: 'h1', employeeId: 'E101', givenName: 'Ada', sn: 'Lovelace', department: 'Engineering' },
  { id: 'h2', employeeId: 'E102', givenName: 'José', sn: 'Muñoz', department: 'Engineering' },
  { id: 'h3', employeeId: 'E103', givenName: 'Li', sn: 'Lee', department: 'Sales' },
];
/** The initial password the outbound flow computes (never in the mesh: it comes from the rule's script). */
const passwordOf = (employeeId: string) => `Init-${employeeId}-Pw!z9`;

describeWithServer('samba')('provisioning Active Directory through the service (Samba AD DC)', () => {
  let dc: SambaAd;
  let rt: ServiceUnderTest;
  let people: string;
  let hr = '';
  let ad = '';
  const hrDir = folder('ims-ad-hr-');
  const dnOf = (cn: string, department: string) => `CN=${cn},OU=${department},${people}`;
  const read = (dn: string, attributes: string[]) =>
    dc.ldap(
      async (c) =>
        (await c.search(dn, { scope: 'base', attributes, explicitBufferAttributes: ['objectGUID'] }).catch(() => ({ searchEntries: [] }))).searchEntries[0],
    );
  const adConfig = (over: Record<string, unknown> = {}) => ({
    ...dc.connection,
    containers: { include: [people] },
    exportDnTemplate: '"CN=" + dnEscape(source.cn) + ",OU=" + dnEscape(source.department) + "," + "OU=People," + baseDN',
    deletionThreshold: { objects: 10, percent: 100 },
    ...over,
  });
  const bindAs = async (upn: string, password: string): Promise<string> => {
    const client = new Client({ url: dc.ldapsUrl, tlsOptions: { ca: [dc.caCertificate] } });
    try {
      await client.bind(upn, password);
      return 'ok';
    } catch (err) {
      return /data ([0-9a-f]+)/i.exec(String((err as Error).message))?.[1] ?? String((err as Error).message);
    } finally {
      await client.unbind().catch(() => undefined);
    }
  };

  beforeAll(async () => {
    dc = await startSambaAd();
    people = await dc.addOU(`OU=People,${dc.baseDN}`);
    for (const d of ['Engineering', 'Sales']) await dc.addOU(`OU=${d},${people}`);
    rt = await startService();

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
    await sourceRules(rt, hr, 'employeeId', HR.slice(1));

    const created = await rt.call('POST', 'connectors', { body: { name: 'AD', type: 'active_directory', config: adConfig() } });
    expect(created.status).toBe(201);
    expect(created.text).not.toContain(dc.adminPassword);
    ad = created.body.id;
    const out = outboundRule(rt, ad, { confidence: 50 });
    await out('employeeId', 'employeeID');
    await out('employeeId', 'sAMAccountName');
    await out('employeeId', 'userPrincipalName', 'source + "@samdom.test"');
    await out('givenName', 'givenName');
    await out('sn', 'sn');
    await out('givenName', 'cn', 'object.givenName + " " + object.sn');
    await out('department', 'department');
    await out('employeeId', 'unicodePwd', '"Init-" + source + "-Pw!z9"');
    await out('employeeId', 'userAccountControl', '"512"');
    await rule(rt, { ruleType: 'JoinRule', connectorId: ad, sourceAttribute: 'employeeID', targetAttribute: 'employeeId' });
  }, SAMBA_START_TIMEOUT_MS);
  afterAll(async () => {
    await rt?.dispose();
    await closeParkedSearches();
    await dc?.release();
  });

  test('new people are provisioned into the OU of their department, enabled, with a password they must change', async () => {
    expect(await runImport(rt, hr)).toMatchObject({ status: 'Completed', stats: { objectsCreated: 3, errors: 0 } });
    const run = await runExport(rt, ad);
    expect(run).toMatchObject({ status: 'Completed', stats: { objectsCreated: 3, errors: 0 } });
    // What the export recorded in the connector space (awaiting the confirming import) has no password.
    const rows: string[] = [];
    for await (const page of iterateCsObjects(ad)) rows.push(JSON.stringify(page));
    expect(rows.join('')).toContain('E101');
    for (const r of ROWS) expect(rows.join('')).not.toContain(passwordOf(r.employeeId));
    for (const r of ROWS) {
      const e = await read(dnOf(`${r.givenName} ${r.sn}`, r.department), ['userAccountControl', 'pwdLastSet', 'employeeID', 'department']);
      expect(e).toMatchObject({ userAccountControl: '512', pwdLastSet: '0', employeeID: r.employeeId, department: r.department });
      // The DC took the password: AD's "must change password" (data 773), not invalid credentials (52e).
      expect(await bindAs(`${r.employeeId}@samdom.test`, passwordOf(r.employeeId))).toBe('773');
    }
    // The confirming import joins them; nothing is left to export (the password is not a difference).
    expect(await runImport(rt, ad)).toMatchObject({ status: 'Completed', stats: { objectsProcessed: 3, errors: 0 } });
    expect(await runExport(rt, ad)).toMatchObject({ status: 'Completed', stats: { objectsCreated: 0, objectsUpdated: 0, objectsDeleted: 0, errors: 0 } });
  });

  test('the password is in no answer, log, mesh object or connector-space row', async () => {
    const secrets = ROWS.map((r) => passwordOf(r.employeeId));
    const texts: string[] = [rt.logs()];
    for await (const page of iterateCsObjects(ad)) texts.push(JSON.stringify(page));
    for await (const page of iterateMesh()) texts.push(JSON.stringify(page));
    texts.push((await rt.call('GET', 'runs')).text, (await rt.call('GET', 'audit')).text);
    for (const t of texts) for (const s of secrets) expect(t).not.toContain(s);
    expect(texts.slice(1, -2).join('').length).toBeGreaterThan(0);
  });

  test('an update reaches the account by its objectGUID; a new department moves it (same objectGUID)', async () => {
    const before = await read(dnOf('José Muñoz', 'Engineering'), ['objectGUID']);
    const link = (await meshOf(hr)).get('E102')!.links[ad];
    expect(link).toBe(guidToString(before.objectGUID as Buffer));

    writeCsv(
      hrDir,
      'hr.csv',
      HR,
      ROWS.map((r) => (r.employeeId === 'E101' ? { ...r, sn: 'King' } : r.employeeId === 'E102' ? { ...r, department: 'Sales' } : r)),
    );
    expect(await runImport(rt, hr, { runType: 'DeltaImport' })).toMatchObject({ status: 'Completed', stats: { objectsUpdated: 2, errors: 0 } });
    const run = await runExport(rt, ad);
    expect(run.errors ?? []).toEqual([]);
    expect(run).toMatchObject({ status: 'Completed', stats: { objectsUpdated: 2, errors: 0 } });
    // Ada's cn follows her sn: the template moves (renames) her entry too.
    expect(await read(dnOf('Ada King', 'Engineering'), ['sn'])).toMatchObject({ sn: 'King' });
    expect(await read(dnOf('José Muñoz', 'Engineering'), ['cn'])).toBeUndefined();
    const moved = await read(dnOf('José Muñoz', 'Sales'), ['objectGUID', 'department', 'userAccountControl']);
    expect(moved).toMatchObject({ department: 'Sales', userAccountControl: '512' });
    expect(guidToString(moved.objectGUID as Buffer)).toBe(link);
    expect(await runImport(rt, ad)).toMatchObject({ status: 'Completed', stats: { errors: 0 } });
  });

  test('a person gone from HR is deprovisioned: the account is deleted, and the DC confirms it is gone', async () => {
    const guid = (await meshOf(hr)).get('E103')!.links[ad];
    writeCsv(
      hrDir,
      'hr.csv',
      HR,
      ROWS.filter((r) => r.employeeId !== 'E103').map((r) =>
        r.employeeId === 'E101' ? { ...r, sn: 'King' } : r.employeeId === 'E102' ? { ...r, department: 'Sales' } : r,
      ),
    );
    expect(await runImport(rt, hr, { runType: 'DeltaImport' })).toMatchObject({ status: 'Completed', stats: { objectsDeleted: 1, errors: 0 } });
    const run = await runExport(rt, ad);
    expect(run).toMatchObject({ status: 'Completed', stats: { objectsDeleted: 1, errors: 0 } });
    expect(await read(dnOf('Li Lee', 'Sales'), ['cn'])).toBeUndefined();
    const live = await dc.ldap(async (c) =>
      c.search(`<GUID=${guid}>`, { scope: 'base', attributes: ['1.1'] }).then(
        (r) => r.searchEntries.length,
        () => 0,
      ),
    );
    expect(live).toBe(0);
    expect(await bindAs('E103@samdom.test', passwordOf('E103'))).toBe('52e');
  });

  test('the password goes with an update only with passwordOnUpdate (then pwdLastSet is 0 again)', async () => {
    const rows = (sn: string) =>
      ROWS.filter((r) => r.employeeId !== 'E103').map((r) =>
        r.employeeId === 'E101' ? { ...r, sn } : r.employeeId === 'E102' ? { ...r, department: 'Sales' } : r,
      );
    const pwdLastSet = async (cn: string) => (await read(dnOf(cn, 'Engineering'), ['pwdLastSet'])).pwdLastSet as string;
    // Ada set a password of her own (pwdLastSet: now).
    await dc.ldap((c) =>
      c.modify(dnOf('Ada King', 'Engineering'), [new Change({ operation: 'replace', modification: new Attribute({ type: 'pwdLastSet', values: ['-1'] }) })]),
    );
    expect(await pwdLastSet('Ada King')).not.toBe('0');

    writeCsv(hrDir, 'hr.csv', HR, rows('Byron'));
    expect(await runImport(rt, hr, { runType: 'DeltaImport' })).toMatchObject({ status: 'Completed', stats: { objectsUpdated: 1, errors: 0 } });
    expect(await runExport(rt, ad)).toMatchObject({ status: 'Completed', stats: { objectsUpdated: 1, errors: 0 } });
    expect(await pwdLastSet('Ada Byron')).not.toBe('0');

    const current = (await rt.call('GET', `connectors/${ad}`)).body;
    const put = await rt.call('PUT', `connectors/${ad}`, { body: { name: current.name, config: { ...current.config, passwordOnUpdate: true } } });
    expect(put.status).toBe(200);
    writeCsv(hrDir, 'hr.csv', HR, rows('Lovelace'));
    expect(await runImport(rt, hr, { runType: 'DeltaImport' })).toMatchObject({ status: 'Completed', stats: { objectsUpdated: 1, errors: 0 } });
    const run = await runExport(rt, ad);
    expect(run.errors ?? []).toEqual([]);
    expect(run).toMatchObject({ status: 'Completed', stats: { objectsUpdated: 1, errors: 0 } });
    expect(await pwdLastSet('Ada Lovelace')).toBe('0');
    expect(await bindAs('E101@samdom.test', passwordOf('E101'))).toBe('773');
    const rowsNow: string[] = [];
    for await (const page of iterateCsObjects(ad)) rowsNow.push(JSON.stringify(page));
    expect(rowsNow.join('')).not.toContain(passwordOf('E101'));
  });

  test('a wrong bind password and an untrusted CA are refused at create (400), nothing stored', async () => {
    const before = (await rt.call('GET', 'connectors')).body;
    const wrong = await rt.call('POST', 'connectors', {
      body: { name: 'AD wrong', type: 'active_directory', config: adConfig({ bindPassword: 'Not-The-Admin-Pw1' }) },
    });
    expect(wrong.status).toBe(400);
    expect(wrong.headers.get('content-type')).toMatch(/application\/problem\+json/);
    expect(wrong.text).toMatch(/invalid credentials/);
    expect(wrong.text).not.toContain('Not-The-Admin-Pw1');
    const { caCertificate: _ca, ...untrusted } = adConfig();
    const ca = await rt.call('POST', 'connectors', { body: { name: 'AD untrusted', type: 'active_directory', config: untrusted } });
    expect(ca.status).toBe(400);
    expect(ca.text).toMatch(/certificate is not trusted .*caCertificate/);
    expect((await rt.call('GET', 'connectors')).body).toEqual(before);
    expect(rt.logs()).not.toContain('Not-The-Admin-Pw1');
  });
});
