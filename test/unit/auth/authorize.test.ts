import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { HttpRequest, InvocationContext, type HttpResponseInit } from '@azure/functions';
import { ConfigError, SettingsReader } from '../../../lib/core/config';
import { AppError } from '../../../lib/core/errors';
import { readAuthConfig } from '../../../lib/auth/authConfig';
import { anonymous, authorize } from '../../../lib/auth/authorize';
import { challenges, installAuth, type AuthRuntime } from '../../../lib/auth/authenticate';
import { DevIssuer } from '../../../lib/auth/devIssuer';
import { NegotiateAuthenticator } from '../../../lib/auth/negotiate';

const request = (headers: Record<string, string> = {}) => new HttpRequest({ method: 'GET', url: 'http://localhost/api/things/1', headers });
const context = () => new InvocationContext({ invocationId: 'inv-1' });
const bodyOf = (res: HttpResponseInit) => JSON.parse(String(res.body));
const headerOf = (res: HttpResponseInit, name: string) => (res.headers as Record<string, string>)[name];

function runtime(over: Partial<AuthRuntime> = {}): AuthRuntime {
  return { config: readAuthConfig(new SettingsReader({})), log: () => undefined, ...over };
}

afterEach(() => installAuth(undefined));

describe('authorize() and anonymous(): the contract', () => {
  it('carries permission and rateLimit on the returned handler', () => {
    const h = authorize('connectors.write', async () => ({ status: 204 }), { rateLimit: 'sensitive' });
    expect(h.permission).toBe('connectors.write');
    expect(h.rateLimit).toBe('sensitive');
    expect(authorize('runs.read', async () => ({})).rateLimit).toBeUndefined();
    expect(anonymous(async () => ({})).permission).toBe('anonymous');
  });

  it('answers 503 problem+json before the service has started authentication', async () => {
    const res = await authorize('runs.read', async () => ({ status: 200 }))(request(), context());
    expect(res.status).toBe(503);
    expect(headerOf(res, 'content-type')).toBe('application/problem+json');
    expect(bodyOf(res)).toMatchObject({ code: 'service_unavailable', instance: '/api/things/1', traceId: 'inv-1' });
  });

  it('answers 503 when no scheme is available at all', async () => {
    installAuth(runtime());
    const res = await authorize('runs.read', async () => ({ status: 200 }))(request(), context());
    expect(res.status).toBe(503);
  });

  it('renders errors of an anonymous handler as problem+json; unexpected ones as a generic 500', async () => {
    const known = await anonymous(async () => {
      throw new AppError('not_found', 'No such thing.');
    })(request(), context());
    expect(known.status).toBe(404);
    expect(bodyOf(known)).toMatchObject({ code: 'not_found', detail: 'No such thing.' });
    const ctx = context();
    const logged: unknown[] = [];
    jest.spyOn(ctx, 'error').mockImplementation((...args: unknown[]) => void logged.push(args));
    const unknown = await anonymous(async () => {
      throw new Error('connection string AccountKey=abc leaked?');
    })(request(), ctx);
    expect(unknown.status).toBe(500);
    expect(String(unknown.body)).not.toContain('AccountKey');
    expect(logged.length).toBe(1);
  });
});

describe('challenges', () => {
  const jwtStub = {} as NonNullable<AuthRuntime['jwt']>;
  const negotiateStub = {} as NonNullable<AuthRuntime['negotiate']>;

  it('names every enabled scheme, Bearer with invalid_token only when a token was refused', () => {
    expect(challenges(runtime({ jwt: jwtStub, negotiate: negotiateStub }))).toBe('Negotiate, Bearer');
    expect(challenges(runtime({ negotiate: negotiateStub }))).toBe('Negotiate');
    expect(challenges(runtime({ jwt: jwtStub }), 'The token expired "now"')).toBe(`Bearer error="invalid_token", error_description="The token expired 'now'"`);
  });

  it('challenges a Bearer token with Negotiate only when the token scheme is off', async () => {
    installAuth(runtime({ negotiate: negotiateStub }));
    const res = await authorize('runs.read', async () => ({ status: 200 }))(request({ authorization: 'Bearer abc.def.ghi' }), context());
    expect(res.status).toBe(401);
    expect(headerOf(res, 'www-authenticate')).toBe('Negotiate');
  });
});

describe('Negotiate availability', () => {
  it('reports itself unavailable in one log line when there is no keytab', () => {
    const lines: string[] = [];
    const config = readAuthConfig(new SettingsReader({ Authentication__Negotiate__Keytab: '/nonexistent/http.keytab' })).negotiate;
    const env: NodeJS.ProcessEnv = {};
    const result = NegotiateAuthenticator.create(config, (level, m) => lines.push(`${level}: ${m}`), env);
    expect(result).toEqual({ unavailable: expect.stringContaining('/nonexistent/http.keytab') });
    expect(lines).toHaveLength(1);
    expect(lines[0]).toMatch(/^warn: Negotiate: unavailable/);
  });

  it('is available with the kerberos package and a keytab file', () => {
    const dir = mkdtempSync(path.join(os.tmpdir(), 'kt-'));
    try {
      writeFileSync(path.join(dir, 'http.keytab'), Buffer.from([5, 2]));
      const config = readAuthConfig(new SettingsReader({ Authentication__Negotiate__Keytab: path.join(dir, 'http.keytab') })).negotiate;
      const env: NodeJS.ProcessEnv = {};
      expect(NegotiateAuthenticator.create(config, () => undefined, env)).toBeInstanceOf(NegotiateAuthenticator);
      expect(env.KRB5_KTNAME).toBe(`FILE:${path.join(dir, 'http.keytab')}`);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe('DevIssuer', () => {
  it('refuses to run outside Development', () => {
    for (const environment of ['Production', 'Staging', '']) {
      expect(
        () =>
          new DevIssuer({
            environment,
            dataDir: os.tmpdir(),
            audience: 'api://x',
            port: 0,
            roles: { Admin: ['A'], Operator: ['O'], Viewer: ['V'] },
            log: () => undefined,
          }),
      ).toThrow(ConfigError);
    }
  });
});
