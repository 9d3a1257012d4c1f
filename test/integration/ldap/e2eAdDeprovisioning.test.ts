import { closeParkedSearches } from '../../../lib/connectors/ldap';
import { guidToString } from '../../../lib/connectors/ldap/values';
import { readCsObjects } from '../../../lib/sync/space/connectorSpace';
import { describeWithServer } from '../../support/servers';
import { SAMBA_START_TIMEOUT_MS, startSambaAd, type SambaAd } from '../../support/samba';
import { startService, type ServiceUnderTest } from '../../support/service';
import { folder, rule, runExport, runImport, sourceRules, writeCsv, outboundRule } from '../sync/syncSupport';
import { meshOf } from './e2eSupport';

/**
 * Deprovisioning by disabling on Active Directory end to end (over HTTP through the running service, real DC:
 * Samba AD). The AD connector has `deprovisioning: { action: "disable" }` and no disableAttributes: a leaver's
 * account is disabled by setting bit 2 (ACCOUNTDISABLE) of its current userAccountControl, every other flag kept
 * (DONT_EXPIRE_PASSWORD here: a fixed 514 would drop it); the account stays, with its objectGUID. A rehire (back
 * in HR under a new HR row, joined to the account again through the join rule) clears the bit.
 */
jest.setTimeout(300_000);

const HR = ['id', 'employeeId', 'givenName', 'sn'];
type Row = Record<(typeof HR)[number], string>;
const ROWS: Row[] = [
  { id: 'h1', employeeId: 'E201', givenName: 'Ada', sn: 'Lovelace' },
  { id: 'h2', employeeId: 'E202', givenName: 'Alan', sn: 'Turing' },
];
const NORMAL_ACCOUNT = 0x200;
const ACCOUNTDISABLE = 0x2;
const DONT_EXPIRE_PASSWORD = 0x10000;

describeWithServer('samba')('Active Directory deprovisioning by disable (Samba AD DC)', () => {
  let dc: SambaAd;
  let rt: ServiceUnderTest;
  let people: string;
  let hr = '';
  let ad = '';
  const hrDir = folder('ims-ad-deprov-hr-');
  const dnOf = (cn: string) => `CN=${cn},${people}`;
  const read = (dn: string) =>
    dc.ldap(
      async (c) =>
        (
          await c
            .search(dn, { scope: 'base', attributes: ['objectGUID', 'userAccountControl'], explicitBufferAttributes: ['objectGUID'] })
            .catch(() => ({ searchEntries: [] }))
        ).searchEntries[0],
    );
  const uac = async (cn: string) => Number((await read(dnOf(cn)))?.userAccountControl);

  beforeAll(async () => {
    dc = await startSambaAd();
    people = await dc.addOU(`OU=People,${dc.baseDN}`);
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

    const created = await rt.call('POST', 'connectors', {
      body: {
        name: 'AD',
        type: 'active_directory',
        config: {
          ...dc.connection,
          containers: { include: [people] },
          exportDnTemplate: '"CN=" + dnEscape(source.cn) + ",OU=People," + baseDN',
          deletionThreshold: { objects: 10, percent: 100 },
          deprovisioning: { action: 'disable' },
        },
      },
    });
    expect(created.status).toBe(201);
    ad = created.body.id;
    // The defaults applied are shown.
    expect(created.body.config.deprovisioning).toEqual({
      action: 'disable',
      graceDays: 0,
      onConditionFalse: false,
      deadlineMinutes: 60,
      orphanAction: 'disable',
    });
    const out = outboundRule(rt, ad, { confidence: 50 });
    await out('employeeId', 'employeeID');
    await out('employeeId', 'sAMAccountName');
    await out('employeeId', 'userPrincipalName', 'source + "@samdom.test"');
    await out('givenName', 'givenName');
    await out('sn', 'sn');
    await out('givenName', 'cn', 'object.givenName + " " + object.sn');
    await out('employeeId', 'unicodePwd', '"Init-" + source + "-Pw!z9"');
    // Enabled, and the password never expires: NORMAL_ACCOUNT | DONT_EXPIRE_PASSWORD.
    await out('employeeId', 'userAccountControl', `"${NORMAL_ACCOUNT | DONT_EXPIRE_PASSWORD}"`);
    await rule(rt, { ruleType: 'JoinRule', connectorId: ad, sourceAttribute: 'employeeID', targetAttribute: 'employeeId' });

    expect(await runImport(rt, hr)).toMatchObject({ status: 'Completed', stats: { objectsCreated: 2, errors: 0 } });
    expect(await runExport(rt, ad)).toMatchObject({ status: 'Completed', stats: { objectsCreated: 2, errors: 0 } });
    expect(await runImport(rt, ad)).toMatchObject({ status: 'Completed', stats: { errors: 0 } });
  }, SAMBA_START_TIMEOUT_MS);
  afterAll(async () => {
    await rt?.dispose();
    await closeParkedSearches();
    await dc?.release();
  });

  test('a leaver is disabled (bit 2 set, DONT_EXPIRE_PASSWORD kept), not deleted; a rehire re-enables the same account', async () => {
    const before = await read(dnOf('Ada Lovelace'));
    const guid = guidToString(before.objectGUID as Buffer);
    expect(Number(before.userAccountControl)).toBe(0x10200);

    writeCsv(
      hrDir,
      'hr.csv',
      HR,
      ROWS.filter((r) => r.employeeId !== 'E201'),
    );
    expect(await runImport(rt, hr, { runType: 'DeltaImport' })).toMatchObject({ status: 'Completed', stats: { objectsDeleted: 1, errors: 0 } });
    const leave = await runExport(rt, ad);
    expect(leave.errors ?? []).toEqual([]);
    expect(leave).toMatchObject({ status: 'Completed', stats: { objectsUpdated: 1, objectsDeleted: 0, errors: 0 } });
    expect(await uac('Ada Lovelace')).toBe(NORMAL_ACCOUNT | DONT_EXPIRE_PASSWORD | ACCOUNTDISABLE);
    expect(await uac('Ada Lovelace')).toBe(0x10202);
    expect(guidToString((await read(dnOf('Ada Lovelace'))).objectGUID as Buffer)).toBe(guid);
    expect(await uac('Alan Turing')).toBe(0x10200);
    expect((await readCsObjects(ad, [guid])).get(guid)).toMatchObject({
      meshId: null,
      deprovisioned: { state: 'disabled', reason: 'gone', written: ['accountDisabled'] },
    });
    // The confirming import reads the disabled account: no unconfirmed value (accountDisabled is not an attribute).
    const confirm = await runImport(rt, ad, { runType: 'DeltaImport' });
    expect(confirm).toMatchObject({ status: 'Completed', stats: { errors: 0 } });
    expect(confirm.errors ?? []).toEqual([]);
    expect(await runExport(rt, ad)).toMatchObject({ status: 'Completed', stats: { objectsCreated: 0, objectsUpdated: 0, objectsDeleted: 0, errors: 0 } });

    // The rehire: a new HR row with the same employee id; joined to the disabled account, not added again.
    writeCsv(hrDir, 'hr.csv', HR, [...ROWS.filter((r) => r.employeeId !== 'E201'), { id: 'h1b', employeeId: 'E201', givenName: 'Ada', sn: 'Lovelace' }]);
    expect(await runImport(rt, hr, { runType: 'DeltaImport' })).toMatchObject({ status: 'Completed', stats: { objectsCreated: 1, errors: 0 } });
    const rehire = await runExport(rt, ad);
    expect(rehire.errors ?? []).toEqual([]);
    expect(rehire).toMatchObject({ status: 'Completed', stats: { objectsCreated: 0, objectsUpdated: 1, objectsDeleted: 0, errors: 0 } });
    const after = await read(dnOf('Ada Lovelace'));
    expect(Number(after.userAccountControl)).toBe(0x10200);
    expect(guidToString(after.objectGUID as Buffer)).toBe(guid);
    expect((await meshOf(hr)).get('E201')!.links[ad]).toBe(guid);
    expect((await readCsObjects(ad, [guid])).get(guid)?.deprovisioned).toBeUndefined();
    expect(await runImport(rt, ad, { runType: 'DeltaImport' })).toMatchObject({ status: 'Completed', stats: { errors: 0 } });

    // The account the engine added stays a provisioned link after the rehire: when the person leaves again, the
    // mesh object goes (the AD link does not keep it) and the account is disabled again.
    expect((await meshOf(hr)).get('E201')!.provisioned).toContain(ad);
    writeCsv(
      hrDir,
      'hr.csv',
      HR,
      ROWS.filter((r) => r.employeeId !== 'E201'),
    );
    expect(await runImport(rt, hr, { runType: 'DeltaImport' })).toMatchObject({ status: 'Completed', stats: { objectsDeleted: 1, errors: 0 } });
    expect(await runExport(rt, ad)).toMatchObject({ status: 'Completed', stats: { objectsUpdated: 1, objectsDeleted: 0, errors: 0 } });
    expect(await uac('Ada Lovelace')).toBe(0x10202);
  });
});
