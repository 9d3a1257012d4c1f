import { ConfigError } from '../../../lib/core/config';
import { startAuth, stopAuth } from '../../../lib/auth/authService';
import { startMintingIssuer, startOidcProvider, type MintingIssuer, type OidcProviderIssuer } from '../../support/oidcIssuer';
import { bearer, call, memoryLog, settings } from './helpers';

const AUDIENCE = 'api://test-api';
const alice = {
  preferred_username: 'alice@example.test',
  upn: 'alice.upn@example.test',
  oid: '11111111-1111-4111-8111-111111111111',
  roles: ['Service.Admin'],
};

function env(issuer: string, extra: Record<string, string> = {}): Record<string, string> {
  return {
    AZURE_FUNCTIONS_ENVIRONMENT: 'Development',
    Authentication__Jwt__Enabled: 'true',
    Authentication__Jwt__Authority: issuer,
    Authentication__Jwt__Audience: AUDIENCE,
    Authentication__Negotiate__Enabled: 'false',
    ...extra,
  };
}

const kidOf = (token: string): string => JSON.parse(Buffer.from(token.split('.')[0], 'base64url').toString()).kid;

let jose: MintingIssuer;
let real: OidcProviderIssuer;

beforeAll(async () => {
  [jose, real] = await Promise.all([
    startMintingIssuer(),
    startOidcProvider({
      audience: AUDIENCE,
      otherAudiences: ['api://another-api'],
      clients: {
        'admin-app': {
          roles: ['Service.Admin'],
          preferred_username: 'svc-admin@example.test',
          upn: 'svc-admin@example.test',
          oid: '22222222-2222-4222-8222-222222222222',
        },
        'reader-app': { roles: ['Reader'], preferred_username: 'svc-reader@example.test', oid: '33333333-3333-4333-8333-333333333333' },
      },
    }),
  ]);
});

afterAll(async () => {
  await stopAuth();
  await Promise.all([jose?.stop(), real?.stop()]);
});

describe('Bearer with a real oidc-provider issuer (client credentials, JWT access tokens)', () => {
  beforeAll(async () => {
    await startAuth(settings(env(real.issuer)), memoryLog());
  });

  it('accepts its access token and resolves role and audit identity from the claims', async () => {
    const res = await call('connectors.write', bearer(await real.token('admin-app')));
    expect(res.status).toBe(200);
    expect(res.body).toEqual({
      scheme: 'Bearer',
      name: 'svc-admin@example.test',
      upn: 'svc-admin@example.test',
      sid: '22222222-2222-4222-8222-222222222222',
      roles: ['Admin'],
      // The role values of the token as they came (the SCIM endpoint's Scim__Role is checked against them).
      roleClaims: ['Service.Admin'],
      // The client's token names a person (its UPN claims): one principal with the UPN and the oid as aliases.
      principal: {
        key: 'upn:svc-admin@example.test',
        kind: 'person',
        scheme: 'Bearer',
        aliases: ['upn:svc-admin@example.test', 'oid:22222222-2222-4222-8222-222222222222'],
        display: 'svc-admin@example.test',
      },
    });
  });

  it('makes a caller with no mapped role a Viewer: reads pass, writes get 403', async () => {
    const token = await real.token('reader-app');
    const read = await call('connectors.read', bearer(token));
    expect(read.status).toBe(200);
    expect(read.body).toMatchObject({ roles: ['Viewer'], upn: 'svc-reader@example.test' });
    const write = await call('connectors.write', bearer(token));
    expect(write.status).toBe(403);
    expect(write.headers['content-type']).toBe('application/problem+json');
    expect(write.body).toMatchObject({ status: 403, code: 'forbidden', instance: '/api/probe' });
  });

  it('refuses its token for another audience (401 invalid_token)', async () => {
    const res = await call('connectors.read', bearer(await real.token('admin-app', 'api://another-api')));
    expect(res.status).toBe(401);
    expect(res.headers['www-authenticate']).toMatch(/^Bearer error="invalid_token"/);
    expect(res.body.detail).toMatch(/^SecurityTokenInvalidAudience/);
  });
});

describe('attack suite: hand-minted tokens (jose)', () => {
  let log: ReturnType<typeof memoryLog>;
  beforeAll(async () => {
    log = memoryLog();
    await startAuth(settings(env(jose.issuer)), log);
  });

  it('accepts a well-formed token (the control case)', async () => {
    const res = await call('connectors.read', bearer(await jose.mint(alice)));
    expect(res.status).toBe(200);
    expect(res.body).toEqual({
      scheme: 'Bearer',
      name: 'alice@example.test',
      upn: 'alice.upn@example.test',
      sid: alice.oid,
      roles: ['Admin'],
      roleClaims: ['Service.Admin'],
      principal: {
        key: 'upn:alice.upn@example.test',
        kind: 'person',
        scheme: 'Bearer',
        aliases: ['upn:alice.upn@example.test', 'upn:alice@example.test', `oid:${alice.oid}`],
        display: 'alice.upn@example.test',
      },
    });
  });

  it('makes a token with no person claim (client credentials: sub and azp only) an application, named by its client id', async () => {
    const res = await call('connectors.read', bearer(await jose.mint({ sub: 'svc-1', azp: 'nightly-job', roles: alice.roles })));
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({
      upn: 'nightly-job',
      principal: { key: 'app:nightly-job', kind: 'application', scheme: 'Bearer', display: 'nightly-job' },
    });
  });

  it('accepts tokens within the 300 s clock skew, both ways', async () => {
    expect((await call('connectors.read', bearer(await jose.mint(alice, { exp: -200 })))).status).toBe(200);
    expect((await call('connectors.read', bearer(await jose.mint(alice, { nbf: 200 })))).status).toBe(200);
  });

  const tamper = (token: string) => {
    const [h, p, s] = token.split('.');
    const claims = JSON.parse(Buffer.from(p, 'base64url').toString());
    claims.roles = ['Service.Admin'];
    claims.preferred_username = 'mallory@example.test';
    return `${h}.${Buffer.from(JSON.stringify(claims)).toString('base64url')}.${s}`;
  };

  const cases: [string, () => Promise<string>, RegExp][] = [
    ['expired beyond the skew', () => jose.mint(alice, { exp: -400 }), /^SecurityTokenExpired/],
    ['not yet valid beyond the skew (nbf)', () => jose.mint(alice, { nbf: 400 }), /^SecurityTokenNotYetValid/],
    ['from another issuer', () => jose.mint(alice, { iss: 'https://evil.example.test' }), /^SecurityTokenInvalidIssuer/],
    ['for the wrong audience', () => jose.mint(alice, { aud: 'api://wrong' }), /^SecurityTokenInvalidAudience/],
    ['with alg none', () => jose.mint(alice, { alg: 'none' }), /^SecurityTokenInvalidAlgorithm/],
    ['HS256 signed with the public key', () => jose.mint(alice, { alg: 'HS256-public-key' }), /^SecurityTokenInvalidAlgorithm/],
    ['signed by a key with an unknown kid', () => jose.mint(alice, { key: 'foreign' }), /^SecurityTokenSignatureKeyNotFound/],
    [
      'signed by another key under the published kid',
      async () => jose.mint(alice, { key: 'foreign', kid: kidOf(await jose.mint(alice)) }),
      /^SecurityTokenInvalidSignature/,
    ],
    ['with a tampered payload', async () => tamper(await jose.mint({ ...alice, roles: ['Service.Viewer'] })), /^SecurityTokenInvalidSignature/],
    ['without exp', () => jose.mint(alice, { exp: null }), /^SecurityTokenNoExpiration/],
    ['garbage', async () => 'not-a-token', /^SecurityTokenMalformed/],
    ['garbage in three parts', async () => 'aaaa.bbbb.cccc', /^SecurityTokenMalformed/],
    [
      'a JSON header with a non-JSON payload',
      async () => `${Buffer.from('{"alg":"RS256"}').toString('base64url')}.${Buffer.from('hello').toString('base64url')}.sig`,
      /^SecurityToken/,
    ],
  ];

  it.each(cases)('refuses a token %s: 401 invalid_token, never 500', async (_name, make, failure) => {
    const res = await call('connectors.read', bearer(await make()));
    expect(res.status).toBe(401);
    expect(res.body).toMatchObject({ status: 401, code: 'unauthenticated', title: 'Authentication failed' });
    expect(res.body.detail).toMatch(failure);
    expect(res.headers['content-type']).toBe('application/problem+json');
    expect(res.headers['www-authenticate']).toMatch(/^Bearer error="invalid_token", error_description="[^"]+"$/);
  });

  it('logs the refusal reason by name (SecurityTokenNotYetValid)', async () => {
    await call('connectors.read', bearer(await jose.mint(alice, { nbf: 1000 })));
    expect(log.lines.some((l) => l.includes('SecurityTokenNotYetValid'))).toBe(true);
  });

  it('challenges a request without credentials with every enabled scheme and no error', async () => {
    const res = await call('connectors.read', {});
    expect(res.status).toBe(401);
    expect(res.headers['www-authenticate']).toBe('Bearer');
    const basic = await call('connectors.read', { authorization: 'Basic YWxpY2U6cHc=' });
    expect(basic.status).toBe(401);
    expect(basic.headers['www-authenticate']).toBe('Bearer');
  });
});

describe('roles (spec 5.3) and audit identity (spec 5.4)', () => {
  beforeAll(async () => {
    await startAuth(
      settings(
        env(jose.issuer, {
          Service__Roles__Admin: 'Sync Admins, 0b7f7c3e-9a57-4c36-9b8f-2f1a4f2d3c11',
          Service__Roles__Operator: 'Service.Operator',
        }),
      ),
      memoryLog(),
    );
  });

  const rolesOf = async (claims: Record<string, unknown>) => (await call('connectors.read', bearer(await jose.mint(claims)))).body.roles;

  it('matches configured values exactly against every roles claim value', async () => {
    expect(await rolesOf({ preferred_username: 'a@x', roles: ['Other', 'Sync Admins'] })).toEqual(['Admin']);
    expect(await rolesOf({ preferred_username: 'a@x', roles: ['Service.Operator', 'Sync Admins'] })).toEqual(['Admin', 'Operator']);
    expect(await rolesOf({ preferred_username: 'a@x', roles: 'Service.Operator' })).toEqual(['Operator']);
    expect(await rolesOf({ preferred_username: 'a@x', roles: ['sync admins', 'Sync Admins '] })).toEqual(['Viewer']);
    // Service.Admin is only the default: once Service__Roles__Admin is configured it no longer maps.
    expect(await rolesOf({ preferred_username: 'a@x', roles: ['Service.Admin'] })).toEqual(['Viewer']);
  });

  it('matches a groups claim GUID only against an identical configured value', async () => {
    expect(await rolesOf({ preferred_username: 'a@x', groups: ['0b7f7c3e-9a57-4c36-9b8f-2f1a4f2d3c11'] })).toEqual(['Admin']);
    expect(await rolesOf({ preferred_username: 'a@x', groups: ['0B7F7C3E-9A57-4C36-9B8F-2F1A4F2D3C11'] })).toEqual(['Viewer']);
    expect(await rolesOf({ preferred_username: 'a@x', groups: ['Sync Admins-not-a-guid'] })).toEqual(['Viewer']);
  });

  it('takes ActorUpn from upn, else preferred_username, and ActorSid from oid', async () => {
    const a = (await call('connectors.read', bearer(await jose.mint({ preferred_username: 'p@x', upn: 'u@x', oid: 'o-1' })))).body;
    expect(a).toMatchObject({ name: 'p@x', upn: 'u@x', sid: 'o-1' });
    const b = (await call('connectors.read', bearer(await jose.mint({ preferred_username: 'p@x' })))).body;
    expect(b).toMatchObject({ name: 'p@x', upn: 'p@x', sid: null });
  });
});

describe('rate limiting', () => {
  beforeAll(async () => {
    await startAuth(settings(env(jose.issuer, { RateLimiting__Sensitive__PermitLimit: '3', RateLimiting__Sensitive__WindowSeconds: '60' })), memoryLog());
  });

  it('the sensitive policy answers 429 with Retry-After once the identity used its permits', async () => {
    const token = await jose.mint({ ...alice, preferred_username: 'ratelimited@example.test' });
    for (let i = 0; i < 3; i++) expect((await call('connectors.write', bearer(token), { rateLimit: 'sensitive' })).status).toBe(200);
    const res = await call('connectors.write', bearer(token), { rateLimit: 'sensitive' });
    expect(res.status).toBe(429);
    expect(res.headers['content-type']).toBe('application/problem+json');
    expect(res.body).toMatchObject({ status: 429, code: 'rate_limited' });
    const retryAfter = Number(res.headers['retry-after']);
    expect(Number.isInteger(retryAfter) && retryAfter >= 1 && retryAfter <= 60).toBe(true);
    // Another token of the same identity (other oid, other roles, other key) shares the count.
    await jose.rotate(true);
    const other = await jose.mint({ preferred_username: 'RateLimited@Example.Test', oid: 'another-oid', roles: ['Service.Admin'] });
    expect((await call('connectors.write', bearer(other), { rateLimit: 'sensitive' })).status).toBe(429);
    // Another identity does not.
    const bob = await jose.mint({ ...alice, preferred_username: 'bob@example.test' });
    expect((await call('connectors.write', bearer(bob), { rateLimit: 'sensitive' })).status).toBe(200);
  });

  it('does not limit routes outside the sensitive policy while the general limit is off (the default)', async () => {
    const token = await jose.mint({ ...alice, preferred_username: 'busy@example.test' });
    for (let i = 0; i < 10; i++) expect((await call('connectors.read', bearer(token))).status).toBe(200);
  });

  it('limits every other route when the general limit is enabled', async () => {
    await startAuth(settings(env(jose.issuer, { RateLimiting__General__Enabled: 'true', RateLimiting__General__PermitLimit: '2' })), memoryLog());
    const token = await jose.mint({ ...alice, preferred_username: 'general@example.test' });
    expect((await call('connectors.read', bearer(token))).status).toBe(200);
    expect((await call('runs.read', bearer(token))).status).toBe(200);
    const res = await call('connectors.read', bearer(token));
    expect(res.status).toBe(429);
    expect(res.headers['retry-after']).toMatch(/^\d+$/);
  });
});

describe('keys: rotation, JWKS outage, no keys at all', () => {
  it('picks up a rotated key from the unknown kid and stops trusting the retired one', async () => {
    await startAuth(settings(env(jose.issuer)), memoryLog());
    const before = await jose.mint(alice);
    expect((await call('connectors.read', bearer(before))).status).toBe(200);
    const kid = await jose.rotate(false);
    const after = await jose.mint(alice);
    expect(kidOf(after)).toBe(kid);
    expect((await call('connectors.read', bearer(after))).status).toBe(200);
    const old = await call('connectors.read', bearer(before));
    expect(old.status).toBe(401);
    expect(old.body.detail).toMatch(/^SecurityTokenSignatureKeyNotFound/);
  });

  it('keeps validating with cached keys while the JWKS endpoint is down', async () => {
    await startAuth(settings(env(jose.issuer)), memoryLog());
    await jose.set({ jwksDown: true });
    try {
      expect((await call('connectors.read', bearer(await jose.mint(alice)))).status).toBe(200);
      const unknown = await call('connectors.read', bearer(await jose.mint(alice, { key: 'foreign' })));
      expect(unknown.status).toBe(401);
      expect((await call('connectors.read', bearer(await jose.mint(alice)))).status).toBe(200);
    } finally {
      await jose.set({ jwksDown: false });
    }
  });

  it('answers 503 (not 500) while no key was ever obtained, then recovers', async () => {
    await jose.set({ jwksDown: true });
    const log = memoryLog();
    try {
      await startAuth(settings(env(jose.issuer)), log);
      expect(log.lines.some((l) => l.startsWith('warn: Bearer:'))).toBe(true);
      const res = await call('connectors.read', bearer(await jose.mint(alice)));
      expect(res.status).toBe(503);
      expect(res.body).toMatchObject({ code: 'service_unavailable' });
      expect(res.headers['retry-after']).toBe('30');
    } finally {
      await jose.set({ jwksDown: false });
    }
    expect((await call('connectors.read', bearer(await jose.mint(alice)))).status).toBe(200);
  });
});

describe('startup refusals', () => {
  const refusal = async (e: Record<string, string>) => {
    const err = await startAuth(settings(e), memoryLog()).then(
      () => undefined,
      (x: unknown) => x,
    );
    expect(err).toBeInstanceOf(ConfigError);
    return err as ConfigError;
  };

  it('refuses Enabled without Authority or Audience, naming the setting', async () => {
    const noAuthority = await refusal({
      AZURE_FUNCTIONS_ENVIRONMENT: 'Production',
      Authentication__Jwt__Enabled: 'true',
      Authentication__Jwt__Audience: AUDIENCE,
    });
    expect(noAuthority.setting).toBe('Authentication:Jwt:Authority');
    expect(noAuthority.message).toContain("'Authentication:Jwt:Authority'");
    const noAudience = await refusal({
      AZURE_FUNCTIONS_ENVIRONMENT: 'Production',
      Authentication__Jwt__Enabled: 'true',
      Authentication__Jwt__Authority: 'https://login.example.test/t/v2.0',
    });
    expect(noAudience.setting).toBe('Authentication:Jwt:Audience');
  });

  it('refuses values that do not parse, naming the setting', async () => {
    expect((await refusal({ Authentication__Jwt__Enabled: 'maybe' })).setting).toBe('Authentication:Jwt:Enabled');
    expect((await refusal({ ...env(jose.issuer), Authentication__Jwt__ClockSkewSeconds: 'five' })).setting).toBe('Authentication:Jwt:ClockSkewSeconds');
    expect((await refusal({ ...env(jose.issuer), RateLimiting__Sensitive__PermitLimit: '0' })).setting).toBe('RateLimiting:Sensitive:PermitLimit');
  });

  it('requires HTTPS for the metadata outside Development', async () => {
    const err = await refusal(env(jose.issuer, { AZURE_FUNCTIONS_ENVIRONMENT: 'Production' }));
    expect(err.setting).toBe('Authentication:Jwt:Authority');
    expect(err.message).toMatch(/HTTPS/);
  });

  it('allows plain http in Development on loopback only, and checks the jwks_uri too', async () => {
    const remote = await refusal(env('http://idp.example.test/tenant/v2.0'));
    expect(remote.message).toMatch(/loopback/);
    await jose.set({ jwksUri: 'http://keys.example.test/jwks' });
    try {
      const jwks = await refusal(env(jose.issuer));
      expect(jwks.setting).toBe('Authentication:Jwt:Authority');
      expect(jwks.message).toMatch(/jwks_uri/);
    } finally {
      await jose.set({ jwksUri: undefined });
    }
  });

  it('refuses metadata whose issuer is not the Authority', async () => {
    await jose.set({ metadataIssuer: 'https://other-tenant.example.test/v2.0' });
    try {
      const err = await refusal(env(jose.issuer));
      expect(err.setting).toBe('Authentication:Jwt:Authority');
      expect(err.message).toMatch(/issuer/);
    } finally {
      await jose.set({ metadataIssuer: undefined });
    }
  });
});
