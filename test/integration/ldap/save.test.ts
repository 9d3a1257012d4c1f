import net from 'node:net';
import { Client } from 'ldapts';
import { freePort } from '../../../lib/runtime/azurite';
import { describeWithServer } from '../../support/servers';
import { dumpTable, startService, type ServiceUnderTest } from '../../support/service';
import { startSlapd, type Slapd } from '../../support/slapd';

/**
 * Create and update of directory connectors (`ldap`, `active_directory`) over HTTP run a live test against a
 * real slapd before anything is stored: bind, then a base read of baseDN (and of every included container). A
 * configuration the directory refuses is a 400 problem naming what failed, and the Connectors tables do not
 * change.
 */
jest.setTimeout(180_000);

describeWithServer('slapd')('directory connector create/update test connection (slapd)', () => {
  let slapd: Slapd;
  let svc: ServiceUnderTest;
  let silent: net.Server;
  let silentPort = 0;
  const held: net.Socket[] = [];
  const syncDN = () => `uid=sync-account,ou=people,${slapd.suffix}`;
  const SYNC_PASSWORD = 'Sync-Account-Pa55-1';

  beforeAll(async () => {
    slapd = await startSlapd();
    svc = await startService();
    const admin = new Client({ url: slapd.url });
    await admin.bind(slapd.rootDN, slapd.rootPassword);
    await admin.add(syncDN(), { objectClass: 'inetOrgPerson', uid: 'sync-account', cn: 'sync', sn: 'account', userPassword: SYNC_PASSWORD });
    await admin.unbind();
    // Accepts connections and never answers: a directory that hangs, so only the test's time bound ends it.
    silent = net.createServer((socket) => void held.push(socket));
    silentPort = await freePort();
    await new Promise<void>((resolve) => silent.listen(silentPort, '127.0.0.1', resolve));
  });

  afterAll(async () => {
    for (const s of held) s.destroy();
    await new Promise((resolve) => silent?.close(resolve));
    await svc?.dispose();
    await slapd?.stop();
  });

  const config = (extra: Record<string, unknown> = {}) => ({
    host: 'localhost',
    port: slapd.ldapsPort,
    security: 'ldaps',
    caCertificate: slapd.caCertificate,
    baseDN: slapd.suffix,
    bindDN: syncDN(),
    bindPassword: SYNC_PASSWORD,
    ...extra,
  });

  const storage = async () => ({ connectors: await dumpTable('Connectors'), names: await dumpTable('ConnectorNames') });

  /** POST a connector that must be refused: 400 problem+json naming `code`, storage unchanged, no secret shown. */
  async function refused(name: string, cfg: Record<string, unknown>, code: string, detail: RegExp, type = 'ldap') {
    const before = await storage();
    const res = await svc.call('POST', 'connectors', { body: { name, type, config: cfg } });
    expect(res.status).toBe(400);
    expect(res.headers.get('content-type')).toBe('application/problem+json');
    expect(res.body).toMatchObject({ status: 400, code: 'validation_failed', instance: '/api/connectors' });
    expect(res.body.detail).toMatch(/^The test connection failed, nothing was saved: /);
    expect(res.body.detail).toMatch(detail);
    expect(res.body.errors).toEqual([{ path: '/config', message: expect.stringMatching(new RegExp(`^${code}: `)) }]);
    expect(res.text).not.toContain(String(cfg.bindPassword));
    expect(res.text).not.toContain(SYNC_PASSWORD);
    expect(await storage()).toEqual(before);
    return res;
  }

  test('a good configuration is created: 201 (ldap and active_directory)', async () => {
    const ldap = await svc.call('POST', 'connectors', { body: { name: 'Good LDAP', type: 'ldap', config: config() } });
    expect(ldap.status).toBe(201);
    expect(ldap.body.config).toMatchObject({ bindPassword: '********', port: slapd.ldapsPort });
    const ad = await svc.call('POST', 'connectors', {
      body: { name: 'Good AD', type: 'active_directory', config: config({ security: 'starttls', port: slapd.port }) },
    });
    expect(ad.status).toBe(201);
  });

  test('a wrong bind password: 400 authentication_failed, nothing stored, the password in no answer or log', async () => {
    const wrong = 'Wrong-Bind-Pa55-77';
    await refused('Wrong password', config({ bindPassword: wrong }), 'authentication_failed', /refused the bind DN or password \(invalid credentials\)/);
    await refused('Wrong password AD', config({ bindPassword: wrong }), 'authentication_failed', /invalid credentials/, 'active_directory');
    expect(svc.logs()).not.toContain(wrong);
    expect(svc.logs()).not.toContain(SYNC_PASSWORD);
  });

  test('an unknown bind DN: 400 authentication_failed', async () => {
    await refused('Unknown bind DN', config({ bindDN: `uid=nobody,ou=people,${slapd.suffix}` }), 'authentication_failed', /invalid credentials/);
  });

  test('nothing listening on the port: 400 connection_failed', async () => {
    await refused('Closed port', config({ port: await freePort() }), 'connection_failed', /cannot reach the directory \(ECONNREFUSED\)/);
  });

  test('a certificate the service does not trust (no caCertificate, ldaps and starttls): 400 connection_failed naming caCertificate', async () => {
    const { caCertificate: _ca, ...untrusted } = config();
    await refused('Untrusted ldaps', untrusted, 'connection_failed', /certificate is not trusted .*caCertificate/);
    await refused(
      'Untrusted starttls',
      { ...untrusted, security: 'starttls', port: slapd.port },
      'connection_failed',
      /certificate is not trusted .*caCertificate/,
    );
  });

  test('a baseDN or an included container that does not exist: 400 configuration_invalid naming it', async () => {
    await refused('No base', config({ baseDN: `ou=nowhere,${slapd.suffix}` }), 'configuration_invalid', /baseDN 'ou=nowhere,dc=example,dc=com' was not found/);
    await refused(
      'No container',
      config({ containers: { include: [`ou=people,${slapd.suffix}`, `ou=missing,${slapd.suffix}`] } }),
      'configuration_invalid',
      /containers\.include 'ou=missing,dc=example,dc=com' was not found/,
    );
    const both = await svc.call('POST', 'connectors', {
      body: { name: 'Containers OK', type: 'ldap', config: config({ containers: { include: [`ou=people,${slapd.suffix}`, `ou=groups,${slapd.suffix}`] } }) },
    });
    expect(both.status).toBe(201);
  });

  test('a server that never answers: 400 once timeoutSeconds is reached, the request does not hang', async () => {
    const started = Date.now();
    await refused(
      'Silent',
      config({ host: '127.0.0.1', port: silentPort, timeoutSeconds: 2 }),
      '(timeout|connection_failed)',
      /within 2 s|did not answer in time|timed out|timeout/i,
    );
    expect(Date.now() - started).toBeLessThan(9_000);
  });

  describe('update', () => {
    let id = '';
    const get = async () => (await svc.call('GET', `connectors/${id}`)).body;

    beforeAll(async () => {
      const res = await svc.call('POST', 'connectors', { body: { name: 'Updated LDAP', type: 'ldap', config: config() } });
      expect(res.status).toBe(201);
      id = res.body.id;
    });

    /** PUT that must be refused: 400 naming `code`, the stored connector unchanged. */
    async function refusedPut(cfg: Record<string, unknown>, code: string, detail: RegExp) {
      const before = await storage();
      const stored = await get();
      const res = await svc.call('PUT', `connectors/${id}`, { body: { name: 'Updated LDAP', config: cfg } });
      expect(res.status).toBe(400);
      expect(res.body.code).toBe('validation_failed');
      expect(res.body.detail).toMatch(detail);
      expect(res.body.errors).toEqual([{ path: '/config', message: expect.stringMatching(new RegExp(`^${code}: `)) }]);
      expect(await storage()).toEqual(before);
      expect(await get()).toEqual(stored);
    }

    test('a wrong password, or a baseDN that does not exist with the stored password: 400, the connector unchanged', async () => {
      await refusedPut(config({ bindPassword: 'Wrong-Again-99' }), 'authentication_failed', /invalid credentials/);
      await refusedPut(
        config({ bindPassword: '********', baseDN: `ou=gone,${slapd.suffix}` }),
        'configuration_invalid',
        /baseDN 'ou=gone,dc=example,dc=com' was not found/,
      );
    });

    test('a good change with the placeholder: 200, tested with the stored password', async () => {
      const res = await svc.call('PUT', `connectors/${id}`, {
        body: { name: 'Updated LDAP', config: config({ bindPassword: '********', baseDN: `ou=people,${slapd.suffix}` }) },
      });
      expect(res.status).toBe(200);
      expect(res.body.config).toMatchObject({ baseDN: `ou=people,${slapd.suffix}`, bindPassword: '********' });
    });
  });
});
