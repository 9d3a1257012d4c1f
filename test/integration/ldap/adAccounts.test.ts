import { Client } from 'ldapts';
import { closeParkedSearches } from '../../../lib/connectors/ldap';
import { LdapConnector } from '../../../lib/connectors/ldap/ldapConnector';
import { describeWithServer } from '../../support/servers';
import { SAMBA_START_TIMEOUT_MS, startSambaAd, type SambaAd } from '../../support/samba';

/**
 * New AD accounts against a real DC (Samba AD): the initial password in unicodePwd (quoted, UTF-16LE, over an
 * encrypted connection only), must change at first logon (pwdLastSet 0: a bind answers AD's data 773), enabled
 * by the flow's userAccountControl in the same add; passwords on update only with passwordOnUpdate; disable and
 * re-enable by the ACCOUNTDISABLE bit keeping the other flags.
 */
describeWithServer('samba')('Active Directory accounts: password, enabled, disabled (real DC)', () => {
  let dc: SambaAd;
  let ou: string;
  const connectors: LdapConnector[] = [];

  beforeAll(async () => {
    dc = await startSambaAd();
    ou = await dc.addOU(`OU=Accounts,${dc.baseDN}`);
  }, SAMBA_START_TIMEOUT_MS);
  afterAll(async () => {
    for (const c of connectors) await c.close();
    await closeParkedSearches();
    await dc?.release();
  });

  const connector = (over: Record<string, unknown> = {}) => {
    const c = new LdapConnector('active_directory', {
      ...dc.connection,
      containers: { include: [ou] },
      exportDnTemplate: "'CN=' + source.cn + ',' + baseDN",
      ...over,
    } as never);
    connectors.push(c);
    return c;
  };
  /** A simple bind as the account: 'ok', or AD's data code from the error (773 must change, 52e bad password, 533 disabled). */
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
  const read = (dn: string, attributes: string[]) => dc.ldap(async (c) => (await c.search(dn, { scope: 'base', attributes })).searchEntries[0]);
  const add = (c: LdapConnector, name: string, extra: Record<string, unknown>) =>
    c.export({
      kind: 'add',
      objectType: 'User',
      dn: `CN=${name},${ou}`,
      attributes: {
        objectClass: ['top', 'person', 'organizationalPerson', 'user'],
        cn: name,
        sAMAccountName: name,
        userPrincipalName: `${name}@samdom.test`,
        ...extra,
      },
    } as never);

  it('a new account with a password and userAccountControl 512 is enabled and must change its password (data 773)', async () => {
    const r = await add(connector(), 'new.hire', { unicodePwd: 'Initial-Pw-2024!', userAccountControl: '512' });
    expect(r).toMatchObject({ status: 'success', dn: `CN=new.hire,${ou}` });
    const e = await read(`CN=new.hire,${ou}`, ['userAccountControl', 'pwdLastSet']);
    expect(e.userAccountControl).toBe('512');
    expect(e.pwdLastSet).toBe('0');
    expect(await bindAs('new.hire@samdom.test', 'Initial-Pw-2024!')).toBe('773');
    expect(await bindAs('new.hire@samdom.test', 'wrong-password')).toBe('52e');
  });

  it('mustChangePassword false: the password works at once', async () => {
    expect(await add(connector({ mustChangePassword: false }), 'ready.hire', { unicodePwd: 'Ready-Pw-2024!', userAccountControl: '512' })).toMatchObject({
      status: 'success',
    });
    expect(await bindAs('ready.hire@samdom.test', 'Ready-Pw-2024!')).toBe('ok');
  });

  it('a password over plain LDAP is refused with a clear error, and nothing is written', async () => {
    const plain = connector({ security: 'none', allowInsecure: true, port: 389, host: '127.0.0.1' });
    const r = await add(plain, 'plain.hire', { unicodePwd: 'Plain-Pw-2024!', userAccountControl: '512' });
    expect(r).toMatchObject({ status: 'error', error: { code: 'object_error' } });
    const message = (r as { error: { message: string } }).error.message;
    expect(message).toMatch(/only over an encrypted connection/);
    expect(message).not.toContain('Plain-Pw-2024!');
    await expect(read(`CN=plain.hire,${ou}`, ['cn'])).rejects.toThrow();
  });

  it("a password the DC refuses is the object's error without the password in it", async () => {
    const r = await add(connector(), 'weak.hire', { unicodePwd: 'abc', userAccountControl: '512' });
    expect(r).toMatchObject({ status: 'error', error: { code: 'constraint_violation' } });
    const message = (r as { error: { message: string } }).error.message;
    expect(message).toContain(`CN=weak.hire,${ou}`);
    expect(message).not.toMatch(/\babc\b/);
  });

  it('passwords on update: ignored by default, written with passwordOnUpdate', async () => {
    const c = connector({ mustChangePassword: false });
    const r = await add(c, 'pw.update', { unicodePwd: 'First-Pw-2024!', userAccountControl: '512' });
    const anchor = (r as { anchor: string }).anchor;
    expect(await c.export({ kind: 'update', objectType: 'User', anchor, attributes: { unicodePwd: 'Second-Pw-2024!' } })).toMatchObject({ status: 'success' });
    expect(await bindAs('pw.update@samdom.test', 'First-Pw-2024!')).toBe('ok');
    const resetting = connector({ mustChangePassword: false, passwordOnUpdate: true });
    expect(await resetting.export({ kind: 'update', objectType: 'User', anchor, attributes: { unicodePwd: 'Second-Pw-2024!' } })).toMatchObject({
      status: 'success',
    });
    expect(await bindAs('pw.update@samdom.test', 'Second-Pw-2024!')).toBe('ok');
  });

  it('accountDisabled sets and clears bit 2 of the current userAccountControl, keeping DONT_EXPIRE_PASSWORD', async () => {
    const c = connector({ mustChangePassword: false });
    const r = await add(c, 'leaver', { unicodePwd: 'Leaver-Pw-2024!', userAccountControl: String(512 | 0x10000) });
    const anchor = (r as { anchor: string }).anchor;
    const dn = `CN=leaver,${ou}`;
    expect((await read(dn, ['userAccountControl'])).userAccountControl).toBe('66048');
    expect(await c.export({ kind: 'update', objectType: 'User', anchor, attributes: { accountDisabled: true } })).toMatchObject({ status: 'success' });
    expect((await read(dn, ['userAccountControl'])).userAccountControl).toBe('66050');
    expect(await bindAs('leaver@samdom.test', 'Leaver-Pw-2024!')).toBe('533');
    expect(await c.export({ kind: 'update', objectType: 'User', anchor, attributes: { accountDisabled: false } })).toMatchObject({ status: 'success' });
    expect((await read(dn, ['userAccountControl'])).userAccountControl).toBe('66048');
    expect(await bindAs('leaver@samdom.test', 'Leaver-Pw-2024!')).toBe('ok');
  });

  it('an account added disabled by accountDisabled', async () => {
    const r = await add(connector(), 'not.yet', { unicodePwd: 'NotYet-Pw-2024!', accountDisabled: true });
    expect(r).toMatchObject({ status: 'success' });
    expect((await read(`CN=not.yet,${ou}`, ['userAccountControl'])).userAccountControl).toBe('514');
  });
});
