import { Attribute, Change, Client } from 'ldapts';
import { DirectoryGroups, DirectoryUnavailableError } from '../../../lib/auth/directory';
import type { DirectoryConfig } from '../../../lib/auth/authConfig';
import { describeWithServer } from '../../support/servers';
import { startSlapd, type Slapd } from '../../support/slapd';
import { memoryLog } from './helpers';

describeWithServer('slapd')('Windows callers: groups from the directory (real slapd, memberof overlay)', () => {
  let slapd: Slapd;

  beforeAll(async () => {
    slapd = await startSlapd();
    const client = new Client({ url: slapd.url });
    await client.bind(slapd.rootDN, slapd.rootPassword);
    const people = `ou=people,${slapd.suffix}`;
    const groups = `ou=groups,${slapd.suffix}`;
    for (const uid of ['alice', 'dave', 'erin', 'frank', 'gina']) {
      await client.add(`uid=${uid},${people}`, { objectClass: ['inetOrgPerson'], uid, cn: uid, sn: uid });
    }
    // Added online, so the memberof overlay maintains memberOf on the members.
    await client.add(`cn=Sync Admins,${groups}`, { objectClass: ['groupOfNames'], cn: 'Sync Admins', member: [`uid=alice,${people}`] });
    await client.add(`cn=Comma\\, Group,${groups}`, { objectClass: ['groupOfNames'], cn: 'Comma, Group', member: [`uid=alice,${people}`] });
    // Nesting: erin is in Helpdesk Leads, itself a member of Sync Operators. The overlay gives erin
    // memberOf=Helpdesk Leads and Helpdesk Leads memberOf=Sync Operators, not erin memberOf=Sync Operators.
    const group = (cn: string, member: string[]) => client.add(`cn=${cn},${groups}`, { objectClass: ['groupOfNames'], cn, member });
    await group('Helpdesk Leads', [`uid=erin,${people}`]);
    await group('Sync Operators', [`cn=Helpdesk Leads,${groups}`]);
    // A cycle: frank in Loop A, Loop A in Loop B, Loop B in Loop A.
    await group('Loop A', [`uid=frank,${people}`]);
    await group('Loop B', [`cn=Loop A,${groups}`]);
    await client.modify(
      `cn=Loop A,${groups}`,
      new Change({ operation: 'add', modification: new Attribute({ type: 'member', values: [`cn=Loop B,${groups}`] }) }),
    );
    // A chain four levels deep: gina in Level 0, Level 0 in Level 1, ... Level 3.
    await group('Level 0', [`uid=gina,${people}`]);
    for (let i = 1; i <= 3; i++) await group(`Level ${i}`, [`cn=Level ${i - 1},${groups}`]);
    await client.unbind();
  });

  afterAll(async () => {
    await slapd?.stop();
  });

  const config = (over: Partial<DirectoryConfig> = {}): DirectoryConfig => ({
    url: slapd.url,
    bindDN: slapd.rootDN,
    bindPassword: slapd.rootPassword,
    baseDN: slapd.suffix,
    userFilter: '(|(uid={user})(krbPrincipalName={principal}))',
    cacheMinutes: 10,
    startTls: false,
    caCertificateFile: undefined,
    timeoutSeconds: 5,
    nestedGroups: 'auto',
    maxNestingDepth: 10,
    upnAttribute: 'userPrincipalName',
    ...over,
  });

  it('reads memberOf and gives each group by name (its CN, escapes undone) and by DN', async () => {
    const identity = await new DirectoryGroups(config(), memoryLog()).lookup('alice@EXAMPLE.TEST');
    // The DN is as the server writes it (slapd escapes the comma as \2C); the name has the escape undone.
    expect(identity.groups.sort()).toEqual(
      ['Comma, Group', 'Sync Admins', `cn=Comma\\2C Group,ou=groups,${slapd.suffix}`, `cn=Sync Admins,ou=groups,${slapd.suffix}`].sort(),
    );
    expect(identity.sid).toBeNull();
  });

  it('finds groups held through nesting by walking up memberOf (auto on a directory that is not AD)', async () => {
    const log = memoryLog();
    const identity = await new DirectoryGroups(config(), log).lookup('erin@EXAMPLE.TEST');
    expect(identity.groups.sort()).toEqual(
      ['Helpdesk Leads', 'Sync Operators', `cn=Helpdesk Leads,ou=groups,${slapd.suffix}`, `cn=Sync Operators,ou=groups,${slapd.suffix}`].sort(),
    );
    expect(log.lines).toContain('info: Negotiate: nested groups come from a walk up memberOf (at most 10 levels).');
    // The entry's own memberOf (the behaviour of nestedGroups=direct) has Helpdesk Leads only.
    const direct = await new DirectoryGroups(config({ nestedGroups: 'direct' }), memoryLog()).lookup('erin@EXAMPLE.TEST');
    expect(direct.groups.sort()).toEqual(['Helpdesk Leads', `cn=Helpdesk Leads,ou=groups,${slapd.suffix}`].sort());
  });

  it('ends the walk on a cycle of groups', async () => {
    const identity = await new DirectoryGroups(config({ nestedGroups: 'memberOf' }), memoryLog()).lookup('frank@EXAMPLE.TEST');
    expect(identity.groups.filter((g) => !g.includes('=')).sort()).toEqual(['Loop A', 'Loop B']);
  });

  it('follows nesting up to MaxNestingDepth levels and logs that deeper groups were left out', async () => {
    const log = memoryLog();
    const bounded = await new DirectoryGroups(config({ maxNestingDepth: 2 }), log).lookup('gina@EXAMPLE.TEST');
    expect(bounded.groups.filter((g) => !g.includes('=')).sort()).toEqual(['Level 0', 'Level 1', 'Level 2']);
    expect(log.lines.some((l) => l.startsWith('warn: Negotiate: gina@EXAMPLE.TEST is in groups nested deeper than 2 levels'))).toBe(true);
    const deep = memoryLog();
    const all = await new DirectoryGroups(config({ maxNestingDepth: 3 }), deep).lookup('gina@EXAMPLE.TEST');
    expect(all.groups.filter((g) => !g.includes('=')).sort()).toEqual(['Level 0', 'Level 1', 'Level 2', 'Level 3']);
    expect(deep.lines.filter((l) => l.startsWith('warn:'))).toEqual([]);
  });

  it('gives no groups to a principal with none or unknown to the directory', async () => {
    const dir = new DirectoryGroups(config(), memoryLog());
    expect((await dir.lookup('dave@EXAMPLE.TEST')).groups).toEqual([]);
    expect((await dir.lookup('nobody@EXAMPLE.TEST')).groups).toEqual([]);
  });

  it('escapes the principal in the filter: a wildcard principal matches nobody', async () => {
    const dir = new DirectoryGroups(config(), memoryLog());
    expect((await dir.lookup('*@EXAMPLE.TEST')).groups).toEqual([]);
    expect((await dir.lookup('a*)(uid=alice@EXAMPLE.TEST')).groups).toEqual([]);
  });

  it('works over ldaps and StartTLS with the server certificate trusted', async () => {
    const viaLdaps = await new DirectoryGroups(config({ url: slapd.ldapsUrl, caCertificateFile: slapd.caCertificateFile }), memoryLog()).lookup(
      'alice@EXAMPLE.TEST',
    );
    expect(viaLdaps.groups).toContain('Sync Admins');
    const viaStartTls = await new DirectoryGroups(
      config({ url: `ldap://localhost:${slapd.port}`, startTls: true, caCertificateFile: slapd.caCertificateFile }),
      memoryLog(),
    ).lookup('alice@EXAMPLE.TEST');
    expect(viaStartTls.groups).toContain('Sync Admins');
  });

  it('refuses an untrusted certificate (no silent downgrade)', async () => {
    const dir = new DirectoryGroups(config({ url: slapd.ldapsUrl }), memoryLog());
    await expect(dir.lookup('alice@EXAMPLE.TEST')).rejects.toBeInstanceOf(DirectoryUnavailableError);
  });

  // Last: it stops the directory.
  it('serves cached groups, even past their age, when the directory goes away; unavailable without a cache', async () => {
    const log = memoryLog();
    const dir = new DirectoryGroups(config({ cacheMinutes: 0.0001 }), log);
    expect((await dir.lookup('alice@EXAMPLE.TEST')).groups).toContain('Sync Admins');
    await slapd.stop();
    await new Promise((r) => setTimeout(r, 20));
    expect((await dir.lookup('ALICE@example.test')).groups).toContain('Sync Admins');
    expect(log.lines.some((l) => l.startsWith('warn: Negotiate: directory lookup failed'))).toBe(true);
    await expect(dir.lookup('dave@EXAMPLE.TEST')).rejects.toBeInstanceOf(DirectoryUnavailableError);
  });
});
