import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import { Client, InvalidCredentialsError } from 'ldapts';
import { describeWithServer } from '../../support/servers';
import { SAMBA_START_TIMEOUT_MS, startSambaAd, type SambaAd } from '../../support/samba';

function klist(env: Record<string, string>, args: string[]): Promise<string> {
  return new Promise((resolve, reject) => {
    execFile('klist', args, { env: { ...process.env, ...env } }, (err, stdout, stderr) => (err ? reject(new Error(stderr || err.message)) : resolve(stdout)));
  });
}

/** The Samba AD DC fixture itself: what the AD suites rely on, and the machine-wide lock. */
describeWithServer('samba')('Samba AD DC fixture', () => {
  let dc: SambaAd;
  beforeAll(async () => {
    dc = await startSambaAd();
  }, SAMBA_START_TIMEOUT_MS);
  afterAll(async () => {
    await dc?.release();
  });

  it('answers LDAPS with our CA, holds OUs, users with passwords, groups and objectGUIDs', async () => {
    const ou = await dc.addOU(`OU=Fixture,${dc.baseDN}`);
    const dn = await dc.addUser({ sAMAccountName: 'fixture.one', parentDN: ou, password: 'Fixture-Pw-1!' });
    const group = await dc.addGroup({ cn: 'Fixture Group', parentDN: ou, members: [dn] });
    expect((await dc.objectGuid(dn)).length).toBe(16);

    const user = new Client({ url: dc.ldapsUrl, tlsOptions: { ca: [dc.caCertificate] } });
    await user.bind('fixture.one@samdom.test', 'Fixture-Pw-1!');
    const { searchEntries } = await user.search(dn, { scope: 'base', attributes: ['memberOf', 'userAccountControl'] });
    await user.unbind();
    expect(searchEntries[0].memberOf).toBe(group);
    expect(searchEntries[0].userAccountControl).toBe('512');

    const wrong = new Client({ url: dc.ldapsUrl, tlsOptions: { ca: [dc.caCertificate] } });
    await expect(wrong.bind('fixture.one@samdom.test', 'not-the-password')).rejects.toBeInstanceOf(InvalidCredentialsError);
  });

  it('issues Kerberos tickets and exports a service keytab for HTTP/localhost', async () => {
    await dc.addUser({ sAMAccountName: 'fixture.krb', password: 'Fixture-Krb-1!' });
    const client = await dc.kinit('fixture.krb', 'Fixture-Krb-1!');
    expect(await klist(client, [])).toContain('fixture.krb@SAMDOM.TEST');
    const { keytab, env } = await dc.exportKeytab();
    expect(existsSync(keytab)).toBe(true);
    expect(await klist(env, ['-k', keytab])).toContain('HTTP/localhost@SAMDOM.TEST');
  });

  it('lets no second DC start while this one runs: a second start waits for the lock', async () => {
    await expect(startSambaAd({ lockWaitMs: 2_000 })).rejects.toThrow(/lock .* was not free within 2 s/);
  });
});
