import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { Client } from 'ldapts';
import { startKdc, type Kdc } from '../../support/kdc';
import { startOidcProvider, type OidcProviderIssuer } from '../../support/oidcIssuer';
import { serverAvailable } from '../../support/servers';
import { AUDIENCE, startService, type ServiceUnderTest } from '../../support/service';
import { startSlapd, type Slapd } from '../../support/slapd';
import { meshsync, newHome } from './cliSupport';

/**
 * `meshsync login` against real issuers: the service's own development issuer (a service started in
 * Development without an authority, as `npm start` does), and client credentials against a real OIDC
 * server (oidc-provider) that the service trusts, and Negotiate with Kerberos tickets from a real MIT KDC (roles
 * from the user's groups in a real slapd). The token is cached per profile and renewed when it has
 * expired; a refused secret is exit code 4 with the issuer's error.
 */
jest.setTimeout(300_000);

describe('meshsync login with the development issuer', () => {
  let rt: ServiceUnderTest;
  const home = newHome();
  const cli = (args: string[]) => meshsync(args, { MESHSYNC_HOME: home });

  beforeAll(async () => {
    rt = await startService({ env: { Authentication__Jwt__Authority: '', Authentication__Jwt__Enabled: 'false' } });
  });
  afterAll(async () => {
    await rt?.dispose();
  });

  test('login --dev signs in as the role asked for; writes beyond it are refused; an expired token is renewed', async () => {
    const login = await cli(['login', '--dev', '--data-dir', rt.dataDir, '--role', 'Operator', '--user', 'ops@example.test', '--url', rt.baseUrl]);
    expect(login.stderr).toBe('');
    expect(login.code).toBe(0);
    expect(login.stdout).toMatch(/profile 'default': signed in to http:\/\/127\.0\.0\.1:\d+\/api until \d{4}-/);

    const instances = await cli(['instances', 'ls', '-o', 'json']);
    expect(instances.code).toBe(0);
    expect(JSON.parse(instances.stdout).items.length).toBeGreaterThan(0);
    // Operator: no connector writes.
    const file = path.join(home, 'c.json');
    writeFileSync(file, JSON.stringify({ name: 'x', type: 'file', config: {} }));
    const refused = await cli(['connectors', 'create', '-f', file]);
    expect(refused.code).toBe(4);
    expect(refused.stderr).toContain('403');

    // The cached token has expired: the next command gets a new one from the issuer by itself.
    const credFile = path.join(home, 'credentials.json');
    const creds = JSON.parse(readFileSync(credFile, 'utf8'));
    const oldToken = creds.default.accessToken;
    // A token minted in the same second as this one would be the same bytes (same claims, same key): wait for
    // the next second, so that a renewed token can be told from the cached one.
    const iat = (JSON.parse(Buffer.from(String(oldToken).split('.')[1], 'base64url').toString()) as { iat: number }).iat;
    while (Date.now() < (iat + 1) * 1000) await new Promise((r) => setTimeout(r, 50));
    creds.default.expiresOn = new Date(Date.now() - 1000).toISOString();
    writeFileSync(credFile, JSON.stringify(creds));
    const again = await cli(['instances', 'ls']);
    expect(again.code).toBe(0);
    const renewed = JSON.parse(readFileSync(credFile, 'utf8')).default;
    expect(renewed.accessToken).not.toBe(oldToken);
    expect(Date.parse(renewed.expiresOn)).toBeGreaterThan(Date.now());

    // The audit names the user the token was asked for.
    await cli(['instances', 'pause', JSON.parse(instances.stdout).items[0].id]);
    await cli(['instances', 'resume', JSON.parse(instances.stdout).items[0].id]);
    const admin = await meshsync(['login', '--dev', '--data-dir', rt.dataDir, '--role', 'Admin', '--profile', 'admin', '--url', rt.baseUrl], {
      MESHSYNC_HOME: home,
    });
    expect(admin.code).toBe(0);
    const audit = await meshsync(['audit', '--profile', 'admin', '--target-type', 'instance', '-o', 'json'], { MESHSYNC_HOME: home });
    expect(audit.code).toBe(0);
    expect(JSON.parse(audit.stdout).items.map((a: { action: string; actorUpn: string }) => `${a.action} ${a.actorUpn}`)).toEqual([
      'resume ops@example.test',
      'pause ops@example.test',
    ]);
  });

  test('login refuses a wrong role and a missing data folder with exit code 3 and 4', async () => {
    expect((await cli(['login', '--dev', '--role', 'Root', '--data-dir', rt.dataDir])).code).toBe(3);
    const missing = await cli(['login', '--dev', '--data-dir', path.join(home, 'nowhere')]);
    expect(missing.code).toBe(4);
    expect(missing.stderr).toContain('dev-issuer.json not found');
    expect((await cli(['login'])).code).toBe(3);
  });

  test("login --dev without the sign-in secret of the data folder: exit 4 with the issuer's reason, nothing cached", async () => {
    // A copy of the data folder's issuer address without its secret file (what another local user could see),
    // then with a secret that is not the issuer's.
    const other = path.join(home, 'other-data');
    mkdirSync(other, { recursive: true });
    writeFileSync(
      path.join(other, 'dev-issuer.json'),
      readFileSync(path.join(rt.dataDir, 'dev-issuer.json'), 'utf8').replace(/"clientSecret": "[^"]*"/, '"clientSecret": ""'),
    );
    const noSecret = await cli(['login', '--dev', '--data-dir', other, '--profile', 'intruder', '--url', rt.baseUrl]);
    expect(noSecret.code).toBe(4);
    expect(noSecret.stderr).toContain(`${path.join(other, 'dev-issuer.secret')} not found`);
    writeFileSync(path.join(other, 'dev-issuer.secret'), 'a-guessed-secret\n');
    const guessed = await cli(['login', '--dev', '--data-dir', other, '--profile', 'intruder', '--url', rt.baseUrl]);
    expect(guessed.code).toBe(4);
    expect(guessed.stderr).toContain('(invalid_client: the client secret is not the sign-in secret of dev-issuer.secret in the data folder.)');
    const creds = JSON.parse(readFileSync(path.join(home, 'credentials.json'), 'utf8'));
    expect(creds.intruder).toBeUndefined();
  });
});

describe('meshsync login with client credentials against a real OIDC server', () => {
  let issuer: OidcProviderIssuer;
  let rt: ServiceUnderTest;
  const home = newHome();
  const cli = (args: string[], env: Record<string, string> = {}) => meshsync(args, { MESHSYNC_HOME: home, ...env });

  beforeAll(async () => {
    issuer = await startOidcProvider({
      audience: AUDIENCE,
      clients: { 'ops-app': { roles: ['Service.Admin'], preferred_username: 'svc-ops@example.test', oid: '44444444-4444-4444-8444-444444444444' } },
    });
    rt = await startService({ env: { Authentication__Jwt__Authority: issuer.issuer } });
  });
  afterAll(async () => {
    await rt?.dispose();
    await issuer?.stop();
  });

  test('login --client-id/--client-secret gets a token from the authority; the profile remembers authority and resource', async () => {
    const login = await cli(['login', '--client-id', 'ops-app', '--authority', issuer.issuer, '--resource', AUDIENCE, '--url', rt.baseUrl], {
      MESHSYNC_CLIENT_SECRET: 'ops-app-secret',
    });
    expect(login.stderr).toBe('');
    expect(login.code).toBe(0);
    const ls = await cli(['connectors', 'ls', '-o', 'json']);
    expect(ls.code).toBe(0);
    expect(JSON.parse(ls.stdout)).toEqual({ connectors: [], total: 0 });
    const profiles = JSON.parse(readFileSync(path.join(home, 'profiles.json'), 'utf8'));
    expect(profiles.profiles.default).toMatchObject({ url: rt.baseUrl, authority: issuer.issuer, resource: AUDIENCE, auth: 'bearer' });
    // The secret is in the credentials file only (mode 0600), never in the profiles.
    expect(JSON.stringify(profiles)).not.toContain('ops-app-secret');
  });

  test("a wrong secret is refused with the issuer's error and exit code 4; nothing is cached", async () => {
    const bad = await cli([
      'login',
      '--client-id',
      'ops-app',
      '--client-secret',
      'wrong',
      '--authority',
      issuer.issuer,
      '--profile',
      'bad',
      '--url',
      rt.baseUrl,
    ]);
    expect(bad.code).toBe(4);
    expect(bad.stderr).toMatch(/Sign-in refused by .*invalid_client/);
    expect(bad.stderr).not.toContain('wrong');
    expect(JSON.parse(readFileSync(path.join(home, 'credentials.json'), 'utf8')).bad).toBeUndefined();
  });
});

(serverAvailable('kdc') && serverAvailable('slapd') ? describe : describe.skip)('meshsync login --negotiate with tickets from a real KDC', () => {
  let kdc: Kdc;
  let slapd: Slapd;
  let rt: ServiceUnderTest;
  const home = newHome();
  let alice: Record<string, string>;

  beforeAll(async () => {
    [kdc, slapd] = await Promise.all([startKdc(), startSlapd()]);
    await kdc.addUser('alice', 'alice-pw');
    alice = await kdc.kinit('alice', 'alice-pw');
    const client = new Client({ url: slapd.url });
    await client.bind(slapd.rootDN, slapd.rootPassword);
    await client.add(`uid=alice,ou=people,${slapd.suffix}`, { objectClass: ['inetOrgPerson'], uid: 'alice', cn: 'alice', sn: 'alice' });
    await client.add(`cn=Sync Operators,ou=groups,${slapd.suffix}`, {
      objectClass: ['groupOfNames'],
      cn: 'Sync Operators',
      member: [`uid=alice,ou=people,${slapd.suffix}`],
    });
    await client.unbind();
    rt = await startService({
      env: {
        ...kdc.env,
        Authentication__Negotiate__Enabled: 'true',
        Authentication__Negotiate__ServicePrincipal: 'HTTP@localhost',
        Authentication__Negotiate__Ldap__Url: slapd.url,
        Authentication__Negotiate__Ldap__BindDN: slapd.rootDN,
        Authentication__Negotiate__Ldap__BindPassword: slapd.rootPassword,
        Authentication__Negotiate__Ldap__BaseDN: slapd.suffix,
        Service__Roles__Operator: 'Sync Operators',
      },
    });
  });
  afterAll(async () => {
    await rt?.dispose();
    await Promise.all([kdc?.stop(), slapd?.stop()]);
  });

  test("requests are signed with Negotiate from the user's ticket; the role comes from the directory group; no ticket is exit code 4", async () => {
    const url = `http://localhost:${rt.port}/api`;
    const login = await meshsync(['login', '--negotiate', '--url', url], { MESHSYNC_HOME: home });
    expect(login.code).toBe(0);
    const instances = await meshsync(['instances', 'ls', '-o', 'json'], { MESHSYNC_HOME: home, ...alice });
    expect(instances.stderr).toBe('');
    expect(instances.code).toBe(0);
    const id = JSON.parse(instances.stdout).items[0].id as string;
    // Operator through "Sync Operators": pause works, connector writes do not.
    expect((await meshsync(['instances', 'pause', id], { MESHSYNC_HOME: home, ...alice })).code).toBe(0);
    expect((await meshsync(['instances', 'resume', id], { MESHSYNC_HOME: home, ...alice })).code).toBe(0);
    const audit = await rt.call('GET', `audit?targetType=instance&targetId=${id}`);
    expect(audit.body.items[0]).toMatchObject({ action: 'resume', actorUpn: 'alice@EXAMPLE.TEST', scheme: 'Negotiate' });
    // Without a ticket cache: a clear sign-in error.
    const noTicket = await meshsync(['instances', 'ls'], { MESHSYNC_HOME: home, ...alice, KRB5CCNAME: `FILE:${path.join(home, 'no-such-cache')}` });
    expect(noTicket.code).toBe(4);
    expect(noTicket.stderr).toMatch(/No Kerberos ticket for HTTP@localhost .*kinit/);
  });
});
