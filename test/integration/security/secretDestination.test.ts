import net from 'node:net';
import path from 'node:path';
import { startPostgres, type Postgres } from '../../support/postgres';
import { serverAvailable } from '../../support/servers';
import { dumpTable, startService, type ServiceUnderTest } from '../../support/service';
import { startSlapd, type Slapd } from '../../support/slapd';

/**
 * A stored secret cannot be pulled out by changing where it is sent. A PUT that keeps a secret as `********`
 * but changes where or as whom the connector connects must send the secret again: 400 naming the secret
 * field, and nothing is sent anywhere with the stored secret (the test on save does not run).
 *
 * The "attacker's server" is a TCP listener on loopback that this test starts and that records every
 * connection and every byte it receives. Each refused PUT must leave it untouched; the same PUT with the
 * secret sent again does reach it (the control that shows the listener would have caught the secret).
 * Sources are real: PostgreSQL, slapd, and a custom connector (test/fixtures/connectors/probe-connectors.js)
 * whose test sends its `apiKey` to the host and port of its settings.
 */
jest.setTimeout(180_000);

const PROBES = path.join(__dirname, '..', '..', 'fixtures', 'connectors', 'probe-connectors.js');
const PG_PASSWORD = 'Pg-Stored-Secret-4411';
const API_KEY = 'Probe-Api-Key-8812';

/** A loopback TCP server that records who connected and what they sent, and answers as `reply` says. */
class Listener {
  port = 0;
  connections = 0;
  received = '';
  private readonly sockets = new Set<net.Socket>();
  private readonly server: net.Server;
  constructor(reply: (socket: net.Socket, data: string) => void = (s) => s.destroy()) {
    this.server = net.createServer((socket) => {
      this.connections++;
      this.sockets.add(socket);
      socket.on('close', () => this.sockets.delete(socket));
      socket.on('error', () => undefined);
      socket.on('data', (d) => {
        this.received += d.toString('latin1');
        reply(socket, d.toString('latin1'));
      });
    });
  }
  async start(): Promise<this> {
    await new Promise<void>((resolve) => this.server.listen(0, '127.0.0.1', resolve));
    this.port = (this.server.address() as net.AddressInfo).port;
    return this;
  }
  reset(): void {
    this.connections = 0;
    this.received = '';
  }
  async stop(): Promise<void> {
    for (const s of this.sockets) s.destroy();
    await new Promise((resolve) => this.server.close(resolve));
  }
}

let svc: ServiceUnderTest;
let listener: Listener;

beforeAll(async () => {
  svc = await startService({ env: { NODE_OPTIONS: `${process.env.NODE_OPTIONS ?? ''} --require "${PROBES}"`.trim() } });
  listener = await new Listener().start();
});

afterAll(async () => {
  await listener?.stop();
  await svc?.dispose();
});

/**
 * PUT `config` (a secret kept as the placeholder, an endpoint changed): 400 naming exactly the secret fields,
 * the stored connector unchanged, and the listener reached by nobody.
 */
async function refusedPut(id: string, name: string, config: Record<string, unknown>, secretPaths: string[], changed: RegExp) {
  listener.reset();
  const before = await dumpTable('Connectors');
  const res = await svc.call('PUT', `connectors/${id}`, { body: { name, config } });
  expect(res.status).toBe(400);
  expect(res.headers.get('content-type')).toBe('application/problem+json');
  expect(res.body.code).toBe('validation_failed');
  expect(res.body.errors).toEqual(
    secretPaths.map((p) => ({
      path: p,
      message: expect.stringMatching(/^must be sent again, not as the placeholder \*{8}: the change of .* changes where or as whom the connector connects/),
    })),
  );
  expect(res.body.errors[0].message).toMatch(changed);
  expect(await dumpTable('Connectors')).toEqual(before);
  // Give a connection that the service might have started a moment to arrive.
  await new Promise((r) => setTimeout(r, 300));
  expect({ connections: listener.connections, received: listener.received }).toEqual({ connections: 0, received: '' });
}

const describeIf = (ok: boolean) => (ok ? describe : describe.skip);

describeIf(serverAvailable('postgres'))('sql: the stored password is not sent to a new server, database or account (PostgreSQL)', () => {
  let pg: Postgres;
  let id = '';
  const config = (extra: Record<string, unknown> = {}) => ({
    dialect: 'postgres',
    host: pg.host,
    port: pg.port,
    database: 'hr',
    user: pg.user,
    password: PG_PASSWORD,
    anchorColumn: 'id',
    fullImportQuery: 'SELECT id, name FROM people',
    timeoutSeconds: 3,
    ...extra,
  });

  beforeAll(async () => {
    pg = await startPostgres({ password: PG_PASSWORD });
    await pg.createDatabase('hr');
    await pg.query('CREATE TABLE people (id int PRIMARY KEY, name text)', [], 'hr');
    const res = await svc.call('POST', 'connectors', { body: { name: 'HR database', type: 'sql', config: config() } });
    expect(res.status).toBe(201);
    id = res.body.id;
  });
  afterAll(async () => {
    await pg?.stop();
  });

  test.each([
    ['port', { host: '127.0.0.1', port: 0 }, /port/],
    ['host', { host: 'localhost' }, /host/],
    ['user', { user: 'someone_else' }, /user/],
    ['database', { database: 'postgres' }, /database/],
    ['ssl', { ssl: { rejectUnauthorized: false } }, /ssl/],
    ['dialect', { dialect: 'mysql', port: 0 }, /dialect/],
  ] as const)('a change of %s with the placeholder: 400 naming /config/password, nothing connected', async (_what, change, changed) => {
    const extra: Record<string, unknown> = { ...change, password: '********' };
    if (extra.port === 0) extra.port = listener.port;
    await refusedPut(id, 'HR database', config(extra), ['/config/password'], changed);
  });

  test('control: the same port change with the password sent again does reach the listener (and is refused by the test)', async () => {
    listener.reset();
    const res = await svc.call('PUT', `connectors/${id}`, { body: { name: 'HR database', config: config({ host: '127.0.0.1', port: listener.port }) } });
    expect(res.status).toBe(400);
    expect(res.body.errors).toEqual([{ path: '/config', message: expect.stringMatching(/^(connection_failed|timeout): /) }]);
    expect(listener.connections).toBeGreaterThan(0);
    // The PostgreSQL startup message names the user and the database.
    expect(listener.received).toContain(pg.user);
  });

  test('a change that moves nothing (the query) keeps the placeholder: 200, tested against the same server with the stored password', async () => {
    listener.reset();
    const res = await svc.call('PUT', `connectors/${id}`, {
      body: { name: 'HR database', config: config({ password: '********', fullImportQuery: 'SELECT id FROM people' }) },
    });
    expect(res.status).toBe(200);
    expect(res.body.config).toMatchObject({ fullImportQuery: 'SELECT id FROM people', password: '********' });
    expect(listener.connections).toBe(0);
  });
});

describeIf(serverAvailable('slapd'))('directory: the stored bind password is not sent to a new server or used as another account (slapd)', () => {
  let slapd: Slapd;
  let other: Slapd;
  let id = '';
  const config = (extra: Record<string, unknown> = {}) => ({
    host: 'localhost',
    port: slapd.ldapsPort,
    security: 'ldaps',
    caCertificate: slapd.caCertificate,
    baseDN: slapd.suffix,
    bindDN: slapd.rootDN,
    bindPassword: slapd.rootPassword,
    timeoutSeconds: 3,
    ...extra,
  });

  beforeAll(async () => {
    slapd = await startSlapd({ rootPassword: 'Ldap-Stored-Secret-2290' });
    other = await startSlapd();
    const res = await svc.call('POST', 'connectors', { body: { name: 'Directory', type: 'ldap', config: config() } });
    expect(res.status).toBe(201);
    id = res.body.id;
  });
  afterAll(async () => {
    await other?.stop();
    await slapd?.stop();
  });

  test('to the listener in clear text (host, port, security none): 400 naming /config/bindPassword, nothing connected', async () => {
    await refusedPut(
      id,
      'Directory',
      config({ host: '127.0.0.1', port: listener.port, security: 'none', allowInsecure: true, caCertificate: undefined, bindPassword: '********' }),
      ['/config/bindPassword'],
      /host, port, security/,
    );
  });

  test.each([
    ['port', () => ({ port: listener.port }), /port/],
    ['host', () => ({ host: '127.0.0.1' }), /host/],
    ['bindDN', () => ({ bindDN: `uid=someone,ou=people,${slapd.suffix}` }), /bindDN/],
    ['security', () => ({ security: 'starttls', port: slapd.port }), /port, security/],
    ['caCertificate', () => ({ caCertificate: other.caCertificate }), /caCertificate/],
  ] as const)('a change of %s with the placeholder: 400 naming /config/bindPassword, nothing connected', async (_what, change, changed) => {
    await refusedPut(id, 'Directory', config({ ...change(), bindPassword: '********' }), ['/config/bindPassword'], changed);
  });

  test('control: the clear-text change with the password sent again does reach the listener, password included', async () => {
    listener.reset();
    const res = await svc.call('PUT', `connectors/${id}`, {
      body: { name: 'Directory', config: config({ host: '127.0.0.1', port: listener.port, security: 'none', allowInsecure: true, caCertificate: undefined }) },
    });
    expect(res.status).toBe(400);
    expect(listener.connections).toBeGreaterThan(0);
    expect(listener.received).toContain(slapd.rootPassword);
    expect(res.text).not.toContain(slapd.rootPassword);
  });

  test('a change that moves nothing (pageSize, baseDN) keeps the placeholder: 200', async () => {
    const res = await svc.call('PUT', `connectors/${id}`, {
      body: { name: 'Directory', config: config({ bindPassword: '********', pageSize: 50, baseDN: `ou=people,${slapd.suffix}` }) },
    });
    expect(res.status).toBe(200);
    expect(res.body.config).toMatchObject({ pageSize: 50, bindPassword: '********' });
  });
});

describe('custom: the settings its implementation marks as endpoints, or any setting when it marks none', () => {
  let accepting: Listener;
  let id = '';
  const config = (settings: Record<string, unknown>, apiKey = API_KEY) => ({
    implementation: 'probe-tcp',
    settings: { host: '127.0.0.1', port: accepting.port, ...settings },
    secrets: { apiKey },
  });

  beforeAll(async () => {
    // The probe's real server: answers OK to the right key.
    accepting = await new Listener((socket, data) => socket.end(data.trim() === API_KEY ? 'OK\n' : 'NO\n')).start();
    const res = await svc.call('POST', 'connectors', { body: { name: 'Probe', type: 'custom', config: config({ label: 'first' }) } });
    expect(res.status).toBe(201);
    id = res.body.id;
  });
  afterAll(async () => {
    await accepting?.stop();
  });

  test('a change of an x-endpoint setting with the placeholder: 400 naming /config/secrets/apiKey; the connector still tests against its own server', async () => {
    await refusedPut(id, 'Probe', config({ port: listener.port }, '********'), ['/config/secrets/apiKey'], /settings\.port/);
    const test = await svc.call('POST', `connectors/${id}/test`, { role: 'Operator' });
    expect(test.body).toMatchObject({ ok: true, message: expect.stringContaining(`127.0.0.1:${accepting.port}`) });
    expect(listener.connections).toBe(0);
  });

  test('a change of another setting keeps the placeholder: 200; the key sent again may go anywhere', async () => {
    const kept = await svc.call('PUT', `connectors/${id}`, { body: { name: 'Probe', config: config({ label: 'second' }, '********') } });
    expect(kept.status).toBe(200);
    expect((await svc.call('POST', `connectors/${id}/test`)).body.ok).toBe(true);
    listener.reset();
    const moved = await svc.call('PUT', `connectors/${id}`, { body: { name: 'Probe', config: config({ port: listener.port }) } });
    expect(moved.status).toBe(200);
    expect((await svc.call('POST', `connectors/${id}/test`)).body.ok).toBe(false);
    expect(listener.received).toContain(API_KEY);
  });

  test('an implementation that marks no endpoint: any settings change needs the secrets again', async () => {
    const res = await svc.call('POST', 'connectors', {
      body: {
        name: 'No marks',
        type: 'custom',
        config: { implementation: 'probe-no-test', settings: { url: 'https://a.example.test' }, secrets: { token: 'Token-1', other: 'Token-2' } },
      },
    });
    expect(res.status).toBe(201);
    const placeholders = { token: '********', other: '********' };
    await refusedPut(
      res.body.id,
      'No marks',
      { implementation: 'probe-no-test', settings: { url: 'https://b.example.test' }, secrets: placeholders },
      ['/config/secrets/token', '/config/secrets/other'],
      /settings/,
    );
    const same = await svc.call('PUT', `connectors/${res.body.id}`, {
      body: { name: 'No marks renamed', config: { implementation: 'probe-no-test', settings: { url: 'https://a.example.test' }, secrets: placeholders } },
    });
    expect(same.status).toBe(200);
  });
});
