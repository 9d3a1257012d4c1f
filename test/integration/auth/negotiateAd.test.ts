import os from 'node:os';
import path from 'node:path';
import { mkdirSync, rmSync } from 'node:fs';
import { DirectoryGroups } from '../../../lib/auth/directory';
import type { DirectoryConfig } from '../../../lib/auth/authConfig';
import { startSambaAd, SAMBA_START_TIMEOUT_MS, type SambaAd } from '../../support/samba';
import { describeWithServer } from '../../support/servers';
import { startService, type ServiceUnderTest } from '../../support/service';
import { curl } from './curl';
import { memoryLog } from './helpers';

/**
 * Windows Negotiate against a real Active Directory domain controller (Samba 4's AD DC): the service's keytab
 * for HTTP/localhost is exported from the DC, callers get their tickets from its KDC (kinit, then curl
 * --negotiate), roles come from their AD groups (directly, and through a group nested in the mapped one), and the
 * audit names them by their AD userPrincipalName and objectSid. Needs `npm run build` (npm test runs it first).
 */
const PASSWORD = { dora: 'Passw0rd!Dora1', nick: 'Passw0rd!Nick1', vera: 'Passw0rd!Vera1' };

describeWithServer('samba')('Negotiate with a real AD DC: tickets, roles from direct and nested groups, audit identity', () => {
  let dc: SambaAd;
  let svc: ServiceUnderTest;
  let base: string;
  let dora: Record<string, string>;
  let nick: Record<string, string>;
  let vera: Record<string, string>;
  const dn: Record<string, string> = {};
  const folder = path.join(os.tmpdir(), `ad-negotiate-${process.pid}`);

  /** The user's attributes as samba-tool shows them (not through the service's code). */
  async function shown(user: string): Promise<{ objectSid: string; userPrincipalName: string }> {
    const out = await dc.tool(['user', 'show', user, '--attributes=objectSid,userPrincipalName']);
    const value = (name: string) => new RegExp(`^${name}: (.+)$`, 'm').exec(out)?.[1].trim() ?? '';
    return { objectSid: value('objectSid'), userPrincipalName: value('userPrincipalName') };
  }

  beforeAll(async () => {
    dc = await startSambaAd();
    const staff = await dc.addOU(`OU=Staff,${dc.baseDN}`);
    const groups = await dc.addOU(`OU=Groups,${dc.baseDN}`);
    dn.dora = await dc.addUser({ sAMAccountName: 'dora', parentDN: staff, password: PASSWORD.dora });
    // nick's UPN is not his Kerberos principal: the audit must show the directory's value.
    dn.nick = await dc.addUser({ sAMAccountName: 'nick', parentDN: staff, password: PASSWORD.nick, userPrincipalName: 'nick.lead@corp.example' });
    dn.vera = await dc.addUser({ sAMAccountName: 'vera', parentDN: staff, password: PASSWORD.vera });
    dn.admins = await dc.addGroup({ cn: 'Sync Admins', parentDN: groups, members: [dn.dora] });
    dn.leads = await dc.addGroup({ cn: 'Helpdesk Leads', parentDN: groups, members: [dn.nick] });
    // nick is an Operator only through nesting: Helpdesk Leads is a member of Sync Operators.
    dn.operators = await dc.addGroup({ cn: 'Sync Operators', parentDN: groups, members: [dn.leads] });
    dn.other = await dc.addGroup({ cn: 'Canteen', parentDN: groups, members: [dn.vera] });

    const { env } = await dc.exportKeytab('HTTP/localhost');
    [dora, nick, vera] = await Promise.all([dc.kinit('dora', PASSWORD.dora), dc.kinit('nick', PASSWORD.nick), dc.kinit('vera', PASSWORD.vera)]);
    mkdirSync(folder, { recursive: true });
    svc = await startService({
      env: {
        // The realm's GSSAPI environment (krb5.conf naming the DC's KDC, the exported keytab) in the service process.
        ...env,
        Authentication__Negotiate__Enabled: 'true',
        Authentication__Negotiate__ServicePrincipal: 'HTTP@localhost',
        Authentication__Negotiate__Ldap__Url: dc.ldapsUrl,
        Authentication__Negotiate__Ldap__CaCertificateFile: dc.caCertificateFile,
        Authentication__Negotiate__Ldap__BindDN: dc.adminDN,
        Authentication__Negotiate__Ldap__BindPassword: dc.adminPassword,
        Authentication__Negotiate__Ldap__BaseDN: dc.baseDN,
        // The AD groups and the test issuer's role values (Bearer) side by side.
        Service__Roles__Admin: 'Sync Admins,Service.Admin',
        Service__Roles__Operator: 'Sync Operators,Service.Operator',
      },
    });
    // The service principal is HTTP/localhost: call localhost, not 127.0.0.1.
    base = `http://localhost:${svc.port}/api`;
  }, SAMBA_START_TIMEOUT_MS);

  afterAll(async () => {
    await svc?.dispose();
    await dc?.release();
    rmSync(folder, { recursive: true, force: true });
  });

  /** The service's own engine instance, as GET /instances lists it once it has registered. */
  async function instanceId(): Promise<string> {
    const deadline = Date.now() + 30_000;
    for (;;) {
      const res = await svc.call('GET', 'instances', { role: 'Viewer' });
      const mine = (res.body?.items as Array<{ id: string; name: string }> | undefined)?.find((i) => i.name === `admin-test-${svc.prefix}`);
      if (mine) return mine.id;
      if (Date.now() > deadline) throw new Error(`the instance did not register: ${JSON.stringify(res.body)}`);
      await new Promise((r) => setTimeout(r, 300));
    }
  }

  it('accepts a ticket from the DC and maps a direct AD group to Admin: creates a connector, reads the audit', async () => {
    const created = await curl(`${base}/connectors`, {
      method: 'POST',
      negotiateEnv: dora,
      json: { name: 'Created by dora', type: 'custom', config: { implementation: 'file', settings: { path: folder, anchorColumn: 'id' } } },
    });
    expect(created.status).toBe(201);
    expect(created.headers['www-authenticate']).toMatch(/^Negotiate \S+$/);
    const audit = await curl(`${base}/audit?targetType=connector`, { negotiateEnv: dora });
    expect(audit.status).toBe(200);
    const record = audit.body.items.find((r: { targetId: string }) => r.targetId === created.body.id);
    const ad = await shown('dora');
    expect(ad.objectSid).toMatch(/^S-1-5-21-\d+-\d+-\d+-\d+$/);
    expect(record).toMatchObject({ action: 'create', targetType: 'connector', actorUpn: ad.userPrincipalName, actorSid: ad.objectSid });
  });

  it('maps a group nested in the mapped group to its role: Helpdesk Leads inside Sync Operators makes an Operator', async () => {
    const id = await instanceId();
    const paused = await curl(`${base}/instances/${id}/pause`, { method: 'POST', negotiateEnv: nick });
    expect(paused.status).toBe(200);
    expect(paused.body).toMatchObject({ id, status: 'paused' });
    expect((await curl(`${base}/instances/${id}/resume`, { method: 'POST', negotiateEnv: nick })).status).toBe(200);
    // Operator, not Admin: the audit and rule writes stay closed.
    const audit = await curl(`${base}/audit`, { negotiateEnv: nick });
    expect(audit.status).toBe(403);
    expect(audit.body).toMatchObject({ code: 'forbidden' });

    // The audit (read as Admin) names nick by his AD userPrincipalName and objectSid, not his Kerberos principal.
    const ad = await shown('nick');
    expect(ad.userPrincipalName).toBe('nick.lead@corp.example');
    const records = await svc.call('GET', `audit?targetType=instance&targetId=${id}`);
    expect(records.status).toBe(200);
    const actions = (records.body.items as Array<Record<string, unknown>>).filter((r) => r.actorSid === ad.objectSid).map((r) => [r.action, r.actorUpn]);
    expect(actions.sort()).toEqual([
      ['pause', 'nick.lead@corp.example'],
      ['resume', 'nick.lead@corp.example'],
    ]);
  });

  it('makes a caller whose AD groups map to no role a Viewer', async () => {
    expect((await curl(`${base}/connectors`, { negotiateEnv: vera })).status).toBe(200);
    const id = await instanceId();
    const refused = await curl(`${base}/instances/${id}/pause`, { method: 'POST', negotiateEnv: vera });
    expect(refused.status).toBe(403);
  });

  it('refuses a caller without a ticket and a ticket-less Negotiate header (401 with the challenges)', async () => {
    const anonymous = await curl(`${base}/connectors`);
    expect(anonymous.status).toBe(401);
    expect(anonymous.headers['www-authenticate']).toContain('Negotiate');
    const forged = await curl(`${base}/connectors`, { headers: { authorization: `Negotiate ${Buffer.from('no ticket here').toString('base64')}` } });
    expect(forged.status).toBe(401);
  });

  describe('each nested-group strategy against the DC (the directory lookup the service uses)', () => {
    const config = (over: Partial<DirectoryConfig>): DirectoryConfig => ({
      url: dc.ldapsUrl,
      bindDN: dc.adminDN,
      bindPassword: dc.adminPassword,
      baseDN: dc.baseDN,
      userFilter: '(|(userPrincipalName={principal})(sAMAccountName={user}))',
      cacheMinutes: 0,
      startTls: false,
      caCertificateFile: dc.caCertificateFile,
      timeoutSeconds: 10,
      nestedGroups: 'auto',
      maxNestingDepth: 10,
      upnAttribute: 'userPrincipalName',
      ...over,
    });
    const names = (groups: string[]) => groups.filter((g) => !g.includes('=') && !g.startsWith('S-1-')).sort();

    it("auto: the root DSE says Active Directory, so tokenGroups; the groups' SIDs are candidates too", async () => {
      const log = memoryLog();
      const identity = await new DirectoryGroups(config({}), log).lookup('nick@SAMDOM.TEST');
      expect(log.lines).toContain('info: Negotiate: the directory is Active Directory; nested groups come from tokenGroups.');
      // tokenGroups holds the primary group (Domain Users) and what it is in (Builtin Users) as a Windows token does.
      expect(names(identity.groups)).toEqual(['Domain Users', 'Helpdesk Leads', 'Sync Operators', 'Users']);
      expect(identity.groups).toContain(dn.operators);
      const operatorsSid = /^objectSid: (.+)$/m.exec(await dc.tool(['group', 'show', 'Sync Operators', '--attributes=objectSid']))![1].trim();
      expect(identity.groups).toContain(operatorsSid);
      const ad = await shown('nick');
      expect(identity).toMatchObject({ sid: ad.objectSid, upn: 'nick.lead@corp.example' });
    });

    it("needs no rights beyond a domain user's: bound as vera, nick's tokenGroups are read", async () => {
      const log = memoryLog();
      const identity = await new DirectoryGroups(config({ bindDN: dn.vera, bindPassword: PASSWORD.vera }), log).lookup('nick@SAMDOM.TEST');
      expect(names(identity.groups)).toEqual(['Domain Users', 'Helpdesk Leads', 'Sync Operators', 'Users']);
      expect(log.lines.filter((l) => l.startsWith('warn:'))).toEqual([]);
    });

    it('falls back to the in-chain rule, with a warning, when the bind account may not read tokenGroups', async () => {
      // dora's Sync Admins is itself in Change Board; deny vera reading tokenGroups (its schemaIDGUID) on dora's entry.
      await dc.addGroup({ cn: 'Change Board', parentDN: `OU=Groups,${dc.baseDN}`, members: [dn.admins] });
      const veraSid = (await shown('vera')).objectSid;
      await dc.tool(['dsacl', 'set', `--objectdn=${dn.dora}`, `--sddl=(OD;;RP;b7c69e6d-2cc7-11d2-854e-00a0c983f608;;${veraSid})`]);
      const log = memoryLog();
      const identity = await new DirectoryGroups(config({ bindDN: dn.vera, bindPassword: PASSWORD.vera }), log).lookup('dora@SAMDOM.TEST');
      expect(log.lines).toContain(
        `warn: Negotiate: the tokenGroups of ${dn.dora} could not be read (the bind account may not read it); its nested groups come from the in-chain rule instead.`,
      );
      expect(names(identity.groups)).toEqual(['Change Board', 'Sync Admins']);
    });

    it('inChain and memberOf find the nested group too; direct (memberOf only) does not', async () => {
      const inChain = await new DirectoryGroups(config({ nestedGroups: 'inChain' }), memoryLog()).lookup('nick@SAMDOM.TEST');
      expect(names(inChain.groups)).toEqual(['Helpdesk Leads', 'Sync Operators']);
      const walk = await new DirectoryGroups(config({ nestedGroups: 'memberOf' }), memoryLog()).lookup('nick@SAMDOM.TEST');
      expect(names(walk.groups)).toEqual(['Helpdesk Leads', 'Sync Operators']);
      const direct = await new DirectoryGroups(config({ nestedGroups: 'direct' }), memoryLog()).lookup('nick@SAMDOM.TEST');
      expect(names(direct.groups)).toEqual(['Helpdesk Leads']);
    });
  });
});
