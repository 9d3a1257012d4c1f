import type { Client } from 'ldapts';
import { closeParkedSearches } from '../../../lib/connectors/ldap';
import { describeWithServer } from '../../support/servers';
import { SAMBA_START_TIMEOUT_MS, startSambaAd, type SambaAd } from '../../support/samba';
import { startService, type ServiceUnderTest } from '../../support/service';
import { startSlapd, type Slapd } from '../../support/slapd';
import { folder, rule, runImport, sourceRules, waitRun, writeCsv, outboundRule } from '../sync/syncSupport';
import { ldapConnector, meshOf } from './e2eSupport';
import { SlapdFixture } from './ldapFixture';

/**
 * Unique values in Active Directory (a real Samba AD DC) and slapd at once: hires whose names collide are
 * provisioned into both by two exports that run at the same time. sAMAccountName (AD) and uid (slapd) share one
 * pool (scope targets): each person has one login, the same in both, and no login is handed out twice; cn,
 * userPrincipalName and mail are unique in AD. An account created in AD outside the engine (its sAMAccountName
 * taken) makes the DC refuse the add: the engine moves to the next candidate, and explain says why.
 */
jest.setTimeout(600_000);

const HR = ['id', 'employeeId', 'givenName', 'sn'];
const NAMES: [string, string][] = [
  ['John', 'Smith'],
  ['Jane', 'Smith'],
  ['John', 'Smith'],
  ['Jim', 'Smith'],
  ['John', 'Smith'],
  ['Alan', 'Smith'],
  ['Jane', 'Stone'],
  ['John', 'Stone'],
];
const HIRES = NAMES.map(([givenName, sn], i) => ({ id: `h${i}`, employeeId: `A${String(i).padStart(3, '0')}`, givenName, sn }));

const INITIAL = 'object.givenName.substring(0, 1).toLowerCase() + object.sn.toLowerCase()';
const FULL = 'object.givenName.toLowerCase() + "." + object.sn.toLowerCase()';
const COUNTED = 'object.givenName.substring(0, 1).toLowerCase() + object.sn.toLowerCase() + counter';

describeWithServer('samba')('unique values provisioned into Active Directory and slapd (Samba AD DC)', () => {
  let dc: SambaAd;
  let slapd: Slapd;
  let f: SlapdFixture;
  let admin: Client;
  let rt: ServiceUnderTest;
  let people = '';
  let hr = '';
  let ad = '';
  let dir = '';
  const hrDir = folder('ims-ad-unique-hr-');

  beforeAll(async () => {
    dc = await startSambaAd();
    people = await dc.addOU(`OU=UniquePeople,${dc.baseDN}`);
    slapd = await startSlapd();
    f = await new SlapdFixture(slapd).init();
    admin = await f.client();
    rt = await startService();

    writeCsv(hrDir, 'hr.csv', HR, HIRES);
    const res = await rt.call('POST', 'connectors', {
      body: { name: 'HR', type: 'custom', config: { implementation: 'file', objectType: 'User', settings: { path: hrDir, anchorColumn: 'id' } } },
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
          exportDnTemplate: '"CN=" + dnEscape(source.cn) + "," + "OU=UniquePeople," + baseDN',
          deletionThreshold: { objects: 10, percent: 100 },
        },
      },
    });
    expect(created.status).toBe(201);
    ad = created.body.id;
    // Alan is not provisioned into slapd: the value the DC refuses him is one no other target wrote for him.
    dir = await ldapConnector(
      rt,
      'Directory',
      f.config({ exportDnTemplate: '"uid=" + dnEscape(source.uid) + ",ou=Engineering," + baseDN', provisioningCondition: 'source.givenName != "Alan"' }),
    );

    const logins = { candidates: [INITIAL, FULL, COUNTED], scope: 'targets', connectorIds: [ad, dir] };
    const unique = (targetAttribute: string, connectorId: string, u: Record<string, unknown>) =>
      rule(rt, { ruleType: 'FlowRule', connectorId, direction: 'outbound', sourceAttribute: 'sn', targetAttribute, unique: u });
    await unique('sAMAccountName', ad, logins);
    await unique('uid', dir, logins);
    await unique('cn', ad, { candidates: ['object.givenName + " " + object.sn', 'object.givenName + " " + object.sn + " (" + counter + ")"'] });
    // A UPN in the realm's suffix (john.smith@samdom.test) would clash with another account's sAMAccountName
    // john.smith (AD refuses a logon name two accounts could answer to): another suffix keeps the pools apart.
    await unique('userPrincipalName', ad, { candidates: [`${FULL} + "@corp.example"`, `${FULL} + counter + "@corp.example"`] });
    await unique('mail', ad, { candidates: [`${FULL} + "@example.test"`, `${FULL} + counter + "@example.test"`] });
    const outAd = outboundRule(rt, ad);
    await outAd('employeeId', 'employeeID');
    await outAd('givenName', 'givenName');
    await outAd('sn', 'sn');
    await rule(rt, { ruleType: 'JoinRule', connectorId: ad, sourceAttribute: 'employeeID', targetAttribute: 'employeeId' });
    const outDir = outboundRule(rt, dir);
    await outDir('employeeId', 'employeeNumber');
    await outDir('sn', 'sn');
    await outDir('givenName', 'cn', 'object.givenName + " " + object.sn');
    await rule(rt, { ruleType: 'JoinRule', connectorId: dir, sourceAttribute: 'employeeNumber', targetAttribute: 'employeeId' });
  }, SAMBA_START_TIMEOUT_MS);
  afterAll(async () => {
    await admin?.unbind().catch(() => undefined);
    await rt?.dispose();
    await f?.cleanup();
    await closeParkedSearches();
    await slapd?.stop();
    await dc?.release();
  });

  test('colliding hires go into AD and slapd by two exports at once; an account made outside AD moves its hire to the next candidate', async () => {
    // Made in AD outside the engine: an account whose sAMAccountName is Alan Smith's first candidate.
    await dc.ldap((c) =>
      c.add(`CN=Someone Else,${people}`, { objectClass: ['top', 'person', 'organizationalPerson', 'user'], sAMAccountName: 'asmith', sn: 'Else' }),
    );
    expect(await runImport(rt, hr)).toMatchObject({ status: 'Completed', stats: { objectsCreated: HIRES.length, errors: 0 } });
    const [ra, rd] = await Promise.all([rt.call('POST', `connectors/${ad}/export`, { body: {} }), rt.call('POST', `connectors/${dir}/export`, { body: {} })]);
    expect([ra.status, rd.status]).toEqual([202, 202]);
    const [runAd, runDir] = await Promise.all([waitRun(rt, ra.body.runId), waitRun(rt, rd.body.runId)]);
    expect(runAd.errors ?? []).toEqual([]);
    expect(runAd).toMatchObject({ status: 'Completed', stats: { objectsCreated: HIRES.length, errors: 0 } });
    expect(runDir).toMatchObject({ status: 'Completed', stats: { objectsCreated: HIRES.length - 1, errors: 0 } });

    const accounts = await dc.ldap(
      async (c) =>
        (
          await c.search(people, {
            scope: 'sub',
            filter: '(&(objectClass=user)(employeeID=A*))',
            attributes: ['sAMAccountName', 'employeeID', 'cn', 'userPrincipalName', 'mail'],
          })
        ).searchEntries,
    );
    expect(accounts).toHaveLength(HIRES.length);
    const entries = (await admin.search(f.base, { scope: 'sub', filter: '(employeeNumber=A*)', attributes: ['uid', 'employeeNumber'] })).searchEntries;
    expect(entries).toHaveLength(HIRES.length - 1);
    for (const attr of ['sAMAccountName', 'cn', 'userPrincipalName', 'mail'])
      expect(new Set(accounts.map((e) => String(e[attr]).toLowerCase())).size).toBe(HIRES.length);
    // One login per person, the same in AD and slapd, never the one taken outside.
    const uidOf = new Map(entries.map((e) => [String(e.employeeNumber), String(e.uid)]));
    for (const e of accounts) if (e.employeeID !== 'A005') expect(String(e.sAMAccountName)).toBe(uidOf.get(String(e.employeeID)));
    expect(new Set([...accounts.map((e) => String(e.sAMAccountName).toLowerCase()), 'asmith']).size).toBe(HIRES.length + 1);
    const alan = accounts.find((e) => e.employeeID === 'A005')!;
    expect(alan.sAMAccountName).toBe('alan.smith');
    const explain = await rt.call('GET', `mesh/objects/${(await meshOf(hr)).get('A005')!.id}/attributes/sn/explain`);
    const sam = (
      explain.body.exports as {
        connectorId: string;
        targetAttribute: string;
        unique?: { value: string; candidate: number; skipped: { candidate: number; value: string | null; reason: string }[] };
      }[]
    ).find((x) => x.connectorId === ad && x.targetAttribute === 'sAMAccountName')!;
    expect(sam.unique).toMatchObject({ value: 'alan.smith', candidate: 1, skipped: [{ candidate: 0, value: 'asmith' }] });
    expect(sam.unique!.skipped[0].reason).toMatch(/^taken in the target outside the engine \(the target refused it: /);
    // The account made outside is untouched.
    const other = await dc.ldap(async (c) => (await c.search(`CN=Someone Else,${people}`, { scope: 'base', attributes: ['sAMAccountName'] })).searchEntries[0]);
    expect(other.sAMAccountName).toBe('asmith');
  });
});
