import { Attribute, Change, Client } from 'ldapts';
import { DirectoryGroups } from '../../../lib/auth/directory';
import type { DirectoryConfig } from '../../../lib/auth/authConfig';
import { startDs389, type Ds389 } from '../../support/ds389';
import { describeWithServer } from '../../support/servers';
import { memoryLog } from './helpers';

/**
 * Windows callers' groups from a real 389 Directory Server (memberOf plugin): `auto` takes the memberOf walk
 * (389 DS is not Active Directory); nested groups, a cycle of groups.
 */
describeWithServer('ds389')('Windows callers: nested groups from a real 389 Directory Server', () => {
  let ds: Ds389;
  let people: string;
  let groups: string;

  beforeAll(async () => {
    ds = await startDs389();
    people = `ou=People,${ds.suffix}`;
    groups = `ou=Groups,${ds.suffix}`;
    const client = new Client({ url: ds.url });
    await client.bind(ds.rootDN, ds.rootPassword);
    try {
      for (const uid of ['erin', 'frank']) {
        await client.add(`uid=${uid},${people}`, { objectClass: ['top', 'person', 'organizationalPerson', 'inetOrgPerson'], uid, cn: uid, sn: uid });
      }
      const group = (cn: string, member: string[]) => client.add(`cn=${cn},${groups}`, { objectClass: ['top', 'groupOfNames'], cn, member });
      await group('Helpdesk Leads', [`uid=erin,${people}`]);
      await group('Sync Operators', [`cn=Helpdesk Leads,${groups}`]);
      await group('Loop A', [`uid=frank,${people}`]);
      await group('Loop B', [`cn=Loop A,${groups}`]);
      await client.modify(
        `cn=Loop A,${groups}`,
        new Change({ operation: 'add', modification: new Attribute({ type: 'member', values: [`cn=Loop B,${groups}`] }) }),
      );
    } finally {
      await client.unbind();
    }
  }, 180_000);

  afterAll(async () => {
    await ds?.stop();
  });

  const config = (over: Partial<DirectoryConfig> = {}): DirectoryConfig => ({
    url: ds.ldapsUrl,
    bindDN: ds.rootDN,
    bindPassword: ds.rootPassword,
    baseDN: ds.suffix,
    userFilter: '(uid={user})',
    cacheMinutes: 10,
    startTls: false,
    caCertificateFile: ds.caCertificateFile,
    timeoutSeconds: 10,
    nestedGroups: 'auto',
    maxNestingDepth: 10,
    upnAttribute: 'userPrincipalName',
    ...over,
  });
  const names = (groups: string[]) => groups.filter((g) => !g.includes('=')).sort();

  it('auto walks memberOf (not AD) and finds the group nested in the mapped one', async () => {
    const log = memoryLog();
    const identity = await new DirectoryGroups(config(), log).lookup('erin@EXAMPLE.TEST');
    expect(log.lines).toContain('info: Negotiate: nested groups come from a walk up memberOf (at most 10 levels).');
    expect(names(identity.groups)).toEqual(['Helpdesk Leads', 'Sync Operators']);
    expect(identity.groups.map((g) => g.toLowerCase())).toContain(`cn=sync operators,${groups}`.toLowerCase());
  });

  it('lists the nested group on the user itself (the memberOf plugin is transitive): direct already has it', async () => {
    const direct = await new DirectoryGroups(config({ nestedGroups: 'direct' }), memoryLog()).lookup('erin@EXAMPLE.TEST');
    expect(names(direct.groups)).toEqual(['Helpdesk Leads', 'Sync Operators']);
  });

  it('ends on a cycle of groups', async () => {
    const identity = await new DirectoryGroups(config({ nestedGroups: 'memberOf' }), memoryLog()).lookup('frank@EXAMPLE.TEST');
    expect(names(identity.groups)).toEqual(['Loop A', 'Loop B']);
  });
});
