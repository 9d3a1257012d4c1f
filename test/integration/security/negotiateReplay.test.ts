import { execFile } from 'node:child_process';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { startKdc, type Kdc } from '../../support/kdc';
import { serverAvailable } from '../../support/servers';
import { startService, type ServiceUnderTest } from '../../support/service';

/**
 * A captured SPNEGO token must not authenticate twice. The token is a real one: curl --negotiate, holding a
 * ticket from the test KDC, sends it to a small local server that records the Authorization header; the test
 * then sends that same header to the service (over HTTP, with fetch) twice.
 *
 * MIT Kerberos refuses replays itself while its replay cache is on (the default); an environment with
 * KRB5RCACHETYPE=none turns it off, and the service must still refuse them.
 */

/** The Authorization header curl --negotiate sends to http://localhost:<port>/ (the SPN is HTTP/localhost). */
async function captureNegotiateHeader(clientEnv: Record<string, string>): Promise<string> {
  let captured: string | undefined;
  const server = http.createServer((req, res) => {
    if (req.headers.authorization) {
      captured = req.headers.authorization;
      res.writeHead(200).end();
    } else {
      res.writeHead(401, { 'www-authenticate': 'Negotiate' }).end();
    }
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  try {
    await new Promise<void>((resolve, reject) => {
      execFile(
        'curl',
        ['-s', '-o', '/dev/null', '--negotiate', '-u', ':', `http://localhost:${port}/`],
        { env: { ...process.env, ...clientEnv }, timeout: 20_000 },
        (err, _out, stderr) => (err ? reject(new Error(`curl failed: ${stderr || err.message}`)) : resolve()),
      );
    });
  } finally {
    await new Promise((resolve) => server.close(resolve));
  }
  if (!captured || !/^Negotiate \S+$/.test(captured)) throw new Error(`curl sent no Negotiate token (got ${captured ?? 'nothing'})`);
  return captured;
}

/**
 * The bare Kerberos GSS-API token (RFC 4121: [APPLICATION 0] { OID 1.2.840.113554.1.2.2, 01 00, AP-REQ })
 * that SPNEGO carries as its mechToken: the same AP-REQ, other bytes. GSSAPI accepts it as it is.
 */
function unwrapSpnego(authorization: string): string {
  const token = Buffer.from(authorization.replace(/^Negotiate /, ''), 'base64');
  const krb5Oid = Buffer.from('06092a864886f712010202', 'hex');
  for (let at = token.indexOf(krb5Oid); at >= 0; at = token.indexOf(krb5Oid, at + 1)) {
    // The inner token starts with 0x60 and a two-byte long-form length (tokens of 256..65535 bytes).
    if (at >= 4 && token[at - 4] === 0x60 && token[at - 3] === 0x82) {
      const length = token.readUInt16BE(at - 2);
      return `Negotiate ${token.subarray(at - 4, at + length).toString('base64')}`;
    }
  }
  throw new Error('no Kerberos mechToken in the SPNEGO token');
}

const describeKdc = serverAvailable('kdc') ? describe : describe.skip;

async function startNegotiateService(kdc: Kdc, env: Record<string, string> = {}): Promise<ServiceUnderTest> {
  return startService({
    env: { ...kdc.env, Authentication__Negotiate__Enabled: 'true', Authentication__Negotiate__ServicePrincipal: 'HTTP@localhost', ...env },
  });
}

describeKdc('Negotiate replay (real KDC, curl --negotiate, the service over HTTP)', () => {
  let kdc: Kdc;
  let alice: Record<string, string>;

  beforeAll(async () => {
    kdc = await startKdc();
    await kdc.addUser('alice', 'alice-pw');
    alice = await kdc.kinit('alice', 'alice-pw');
  }, 60_000);

  afterAll(async () => {
    await kdc?.stop();
  });

  async function expectRefused(svc: ServiceUnderTest, authorization: string): Promise<void> {
    const replay = await svc.call('GET', 'connectors', { role: null, headers: { authorization } });
    expect(replay.status).toBe(401);
    expect(replay.headers.get('content-type')).toBe('application/problem+json');
    expect(replay.body).toMatchObject({ status: 401, code: 'unauthenticated' });
    expect(replay.headers.get('www-authenticate')).toContain('Negotiate');
  }

  describe("with GSSAPI's replay cache on (the default)", () => {
    let svc: ServiceUnderTest;
    beforeAll(async () => {
      svc = await startNegotiateService(kdc);
    }, 120_000);
    afterAll(async () => {
      await svc?.dispose();
    });

    it('accepts a captured token once (200), then answers its replay 401 with the challenges', async () => {
      const authorization = await captureNegotiateHeader(alice);
      const first = await svc.call('GET', 'connectors', { role: null, headers: { authorization } });
      expect(first.status).toBe(200);
      await expectRefused(svc, authorization);
    });
  });

  describe("with GSSAPI's replay cache off (KRB5RCACHETYPE=none in the service's environment)", () => {
    let svc: ServiceUnderTest;
    beforeAll(async () => {
      svc = await startNegotiateService(kdc, { KRB5RCACHETYPE: 'none' });
    }, 120_000);
    afterAll(async () => {
      await svc?.dispose();
    });

    it('accepts a captured token once (200), then answers its replay 401', async () => {
      const authorization = await captureNegotiateHeader(alice);
      const first = await svc.call('GET', 'connectors', { role: null, headers: { authorization } });
      expect(first.status).toBe(200);
      await expectRefused(svc, authorization);
      expect(await svc.untilLogged('already used')).toContain('already used');
    });

    it('refuses the same AP-REQ sent again unwrapped from SPNEGO (other bytes, same authenticator)', async () => {
      const authorization = await captureNegotiateHeader(alice);
      const first = await svc.call('GET', 'connectors', { role: null, headers: { authorization } });
      expect(first.status).toBe(200);
      await expectRefused(svc, unwrapSpnego(authorization));
    });

    it('still accepts every fresh token (each curl run makes a new authenticator)', async () => {
      for (let i = 0; i < 3; i++) {
        const res = await svc.call('GET', 'connectors', { role: null, headers: { authorization: await captureNegotiateHeader(alice) } });
        expect(res.status).toBe(200);
      }
    });
  });
});
