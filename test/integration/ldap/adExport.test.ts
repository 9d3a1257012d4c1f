import { closeParkedSearches } from '../../../lib/connectors/ldap';
import { LdapConnector } from '../../../lib/connectors/ldap/ldapConnector';
import { guidToString } from '../../../lib/connectors/ldap/values';
import { describeWithServer } from '../../support/servers';
import { SAMBA_START_TIMEOUT_MS, startSambaAd, type SambaAd } from '../../support/samba';

/**
 * Updates, moves and deletes of AD objects reach a real DC (Samba AD): the objects are found by their objectGUID
 * (random bytes, most of them >= 0x80), and a delete is "already gone" only when the DC confirms it.
 */
describeWithServer('samba')('Active Directory export by objectGUID (real DC)', () => {
  let dc: SambaAd;
  let staff: string;
  let sales: string;
  let leavers: string;
  let ad: LdapConnector;
  const users: Array<{ dn: string; guid: string; bytes: Buffer }> = [];

  beforeAll(async () => {
    dc = await startSambaAd();
    staff = await dc.addOU(`OU=Staff,${dc.baseDN}`);
    sales = await dc.addOU(`OU=Sales,${staff}`);
    leavers = await dc.addOU(`OU=Leavers,${dc.baseDN}`);
    for (let i = 0; i < 12; i++) {
      const dn = await dc.addUser({ sAMAccountName: `exp.user${i}`, parentDN: staff, password: `Exp-User-${i}-Pw!`, attributes: { title: 'Clerk' } });
      const bytes = await dc.objectGuid(dn);
      users.push({ dn, guid: guidToString(bytes), bytes });
    }
    ad = new LdapConnector('active_directory', {
      ...dc.connection,
      containers: { include: [staff] },
    });
  }, SAMBA_START_TIMEOUT_MS);
  afterAll(async () => {
    await ad?.close();
    await closeParkedSearches();
    await dc?.release();
  });

  const read = (dn: string, attributes: string[]) => dc.ldap(async (c) => (await c.search(dn, { scope: 'base', attributes })).searchEntries[0]);
  const exists = (guid: string) =>
    dc.ldap(async (c) => {
      try {
        return (await c.search(`<GUID=${guid}>`, { scope: 'base', attributes: ['1.1'] })).searchEntries.length > 0;
      } catch {
        return false;
      }
    });

  it('the GUIDs have bytes of 0x80 and above (what the string filters lost)', () => {
    expect(users.every((u) => u.bytes.some((b) => b >= 0x80))).toBe(true);
  });

  it('updates every account by its objectGUID', async () => {
    for (const u of users) {
      const r = await ad.export({ kind: 'update', objectType: 'User', anchor: u.guid, attributes: { title: 'Engineer' } });
      expect(r).toEqual({ status: 'success', anchor: u.guid, dn: u.dn });
      expect((await read(u.dn, ['title'])).title).toBe('Engineer');
    }
  });

  it('moves an account to another OU: the same objectGUID at the new DN', async () => {
    const u = users[0];
    const r = await ad.export({ kind: 'update', objectType: 'User', anchor: u.guid, attributes: {}, container: sales });
    const moved = `CN=exp.user0,${sales}`;
    expect(r).toMatchObject({ status: 'success', dn: moved });
    expect(guidToString(await dc.objectGuid(moved))).toBe(u.guid);
  });

  it('deletes an account (it is gone from the DC); deleting it again is confirmed gone', async () => {
    const u = users[1];
    expect(await ad.export({ kind: 'delete', objectType: 'User', anchor: u.guid, attributes: {} })).toEqual({ status: 'success', anchor: u.guid, dn: u.dn });
    expect(await exists(u.guid)).toBe(false);
    const again = await ad.export({ kind: 'delete', objectType: 'User', anchor: u.guid, attributes: {} });
    expect(again).toMatchObject({ status: 'success', anchor: u.guid });
    expect((again as { notes?: string[] }).notes?.[0]).toMatch(/already gone \(its tombstone is in the directory\)/);
  });

  it('a leaver moved out of the containers is not reported deleted: an error naming where it is, and it stays', async () => {
    const u = users[2];
    await dc.ldap((c) => c.modifyDN(u.dn, `CN=exp.user2,${leavers}`));
    const r = await ad.export({ kind: 'delete', objectType: 'User', anchor: u.guid, attributes: {} });
    expect(r).toMatchObject({ status: 'error', anchor: u.guid });
    expect((r as { error: { message: string } }).error.message).toContain(`CN=exp.user2,${leavers}`);
    expect(await exists(u.guid)).toBe(true);
    const upd = await ad.export({ kind: 'update', objectType: 'User', anchor: u.guid, attributes: { title: 'x' } });
    expect(upd).toMatchObject({ status: 'error', error: { code: 'not_found' } });
    expect((upd as { error: { message: string } }).error.message).toContain('outside the connector');
  });

  it('an objectGUID no object ever had is confirmed gone by the DC (noSuchObject)', async () => {
    const never = 'f0e1d2c3-b4a5-9687-f8e9-dacbbcad9e8f';
    const r = await ad.export({ kind: 'delete', objectType: 'User', anchor: never, attributes: {} });
    expect(r).toMatchObject({ status: 'success', anchor: never });
    expect((r as { notes?: string[] }).notes?.[0]).toMatch(/noSuchObject/);
  });
});
