import { BerWriter } from 'ldapts';
import { streamSearchFor } from '../../../../lib/connectors/ldap/changeStream';
import type { DirectorySession, LdapEntry, SearchRequest } from '../../../../lib/connectors/ldap/session';

/** A session answering the root DSE and the naming context's entry from recorded values. */
function session(root: Record<string, string[]>, contextCSN: string[] = []): DirectorySession & { searches: SearchRequest[] } {
  const searches: SearchRequest[] = [];
  return {
    searches,
    async search(req: SearchRequest): Promise<LdapEntry[]> {
      searches.push(req);
      if (req.base === '') return [{ dn: '', ...root }];
      return [{ dn: req.base, contextCSN }];
    },
  } as unknown as DirectorySession & { searches: SearchRequest[] };
}

/** The control's value bytes as it writes them. */
function controlBytes(c: { write(w: BerWriter): void }): Buffer {
  const w = new BerWriter();
  c.write(w);
  return w.buffer;
}

describe('the change stream a directory offers (lib/connectors/ldap/changeStream.ts)', () => {
  test('389 DS: persistent search on baseDN, every change type, changes only, with entry change notifications', async () => {
    const s = await streamSearchFor(session({ supportedControl: ['2.16.840.1.113730.3.4.3', '1.2.840.113556.1.4.319'] }), 'ou=people,dc=x');
    expect(s).toMatchObject({ kind: 'persistent search', base: 'ou=people,dc=x', scope: 'sub' });
    expect(s!.controls).toHaveLength(1);
    expect(s!.controls[0]).toMatchObject({ type: '2.16.840.1.113730.3.4.3', critical: true, value: { changeTypes: 15, changesOnly: true, returnECs: true } });
    expect(s!.refreshFirst).toBeUndefined();
  });

  test('OpenLDAP: syncrepl refreshAndPersist from a cookie of the naming context contextCSN (several values joined by ;)', async () => {
    const csns = ['20261129120000.000001Z#000000#000#000000', '20261129120000.000002Z#000000#001#000000'];
    const ses = session({ supportedControl: ['1.3.6.1.4.1.4203.1.9.1.1'], namingContexts: ['dc=x'] }, csns);
    const s = await streamSearchFor(ses, 'ou=people,dc=x');
    expect(s).toMatchObject({ kind: 'syncrepl', base: 'ou=people,dc=x', refreshFirst: true });
    expect(ses.searches[1]).toMatchObject({ base: 'dc=x', scope: 'base', attributes: ['contextCSN'] });
    const bytes = controlBytes(s!.controls[0]);
    expect(bytes.includes(Buffer.from('1.3.6.1.4.1.4203.1.9.1.1'))).toBe(true);
    expect(bytes.includes(Buffer.from(`rid=000,csn=${csns.join(';')}`))).toBe(true);
    // mode refreshAndPersist: ENUMERATED 3
    expect(bytes.includes(Buffer.from([0x0a, 0x01, 0x03]))).toBe(true);
  });

  test('Active Directory: change notification on the naming context (not baseDN), with Show Deleted when offered', async () => {
    const s = await streamSearchFor(
      session({
        supportedControl: ['1.2.840.113556.1.4.528', '1.2.840.113556.1.4.417'],
        namingContexts: ['DC=corp,DC=test', 'CN=Configuration,DC=corp,DC=test'],
        defaultNamingContext: ['DC=corp,DC=test'],
      }),
      'OU=Staff,DC=corp,DC=test',
    );
    expect(s).toMatchObject({ kind: 'change notification', base: 'DC=corp,DC=test', scope: 'sub', filter: '(objectClass=*)' });
    expect(s!.controls.map((c) => [c.type, c.critical])).toEqual([
      ['1.2.840.113556.1.4.528', true],
      ['1.2.840.113556.1.4.417', false],
    ]);
  });

  test('a server offering none of them: no stream', async () => {
    expect(await streamSearchFor(session({ supportedControl: ['1.2.840.113556.1.4.319'] }), 'dc=x')).toBeNull();
  });
});
