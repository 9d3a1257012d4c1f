import { ConfigError, SettingsReader } from '../../../lib/core/config';
import { DEV_AUDIENCE, checkTransport, readAuthConfig } from '../../../lib/auth/authConfig';

const read = (env: Record<string, string>) => readAuthConfig(new SettingsReader(env));
const settingOf = (env: Record<string, string>) => {
  try {
    read(env);
  } catch (err) {
    expect(err).toBeInstanceOf(ConfigError);
    return (err as ConfigError).setting;
  }
  throw new Error('expected a ConfigError');
};

describe('readAuthConfig', () => {
  it('has the documented defaults', () => {
    const c = read({});
    expect(c.environment).toBe('Production');
    expect(c.jwt).toMatchObject({ enabled: false, metadataRefreshHours: 24, clockSkewSeconds: 300 });
    expect(c.negotiate.enabled).toBe(true);
    expect(c.roles).toEqual({ Admin: ['Service.Admin'], Operator: ['Service.Operator'], Viewer: ['Service.Viewer'] });
    expect(c.rateLimiting.sensitive).toEqual({ enabled: true, permitLimit: 30, windowSeconds: 60 });
    expect(c.rateLimiting.general.enabled).toBe(false);
    expect(c.devIssuer.enabled).toBe(false);
  });

  it('accepts comma-separated role values and audiences', () => {
    const c = read({
      Service__Roles__Admin: 'Sync Admins, Service.Admin',
      'Authentication:Jwt:Enabled': 'true',
      Authentication__Jwt__Authority: 'https://idp.example.test/t/v2.0',
      Authentication__Jwt__Audience: 'api://a,6c0f7e3a-1111-4c1d-8e9f-000000000001',
    });
    expect(c.roles.Admin).toEqual(['Sync Admins', 'Service.Admin']);
    expect(c.jwt.audiences).toEqual(['api://a', '6c0f7e3a-1111-4c1d-8e9f-000000000001']);
    expect(c.jwt.authority).toBe('https://idp.example.test/t/v2.0');
  });

  it('runs the development issuer only in Development without a configured Authority', () => {
    const dev = read({ AZURE_FUNCTIONS_ENVIRONMENT: 'Development' });
    expect(dev.devIssuer).toMatchObject({ enabled: true, audience: DEV_AUDIENCE });
    expect(dev.jwt.enabled).toBe(true);
    expect(read({ AZURE_FUNCTIONS_ENVIRONMENT: 'Development', Authentication__Jwt__Authority: 'http://127.0.0.1:9/x' }).devIssuer.enabled).toBe(false);
    expect(read({ AZURE_FUNCTIONS_ENVIRONMENT: 'Development', Authentication__DevIssuer__Enabled: 'false' }).devIssuer.enabled).toBe(false);
    expect(read({ AZURE_FUNCTIONS_ENVIRONMENT: 'Staging' }).devIssuer.enabled).toBe(false);
  });

  it('names the exact setting of every refusal', () => {
    expect(settingOf({ Authentication__Jwt__Enabled: 'true', Authentication__Jwt__Audience: 'api://a' })).toBe('Authentication:Jwt:Authority');
    expect(settingOf({ Authentication__Jwt__Enabled: 'true', Authentication__Jwt__Authority: 'https://idp.example.test' })).toBe('Authentication:Jwt:Audience');
    expect(settingOf({ Authentication__Jwt__Enabled: 'true', Authentication__Jwt__Authority: 'not a url', Authentication__Jwt__Audience: 'a' })).toBe(
      'Authentication:Jwt:Authority',
    );
    expect(
      settingOf({ Authentication__Jwt__Enabled: 'true', Authentication__Jwt__Authority: 'http://idp.example.test', Authentication__Jwt__Audience: 'a' }),
    ).toBe('Authentication:Jwt:Authority');
    expect(settingOf({ Authentication__Negotiate__Ldap__Url: 'http://dc.example.test' })).toBe('Authentication:Negotiate:Ldap:Url');
    expect(settingOf({ Authentication__Negotiate__Ldap__Url: 'ldap://dc.example.test' })).toBe('Authentication:Negotiate:Ldap:BaseDN');
    expect(
      settingOf({
        Authentication__Negotiate__Ldap__Url: 'ldap://dc',
        Authentication__Negotiate__Ldap__BaseDN: 'dc=x',
        Authentication__Negotiate__Ldap__BindDN: 'cn=a',
      }),
    ).toBe('Authentication:Negotiate:Ldap:BindPassword');
    expect(settingOf({ Authentication__Negotiate__ServicePrincipal: 'not a principal' })).toBe('Authentication:Negotiate:ServicePrincipal');
    expect(settingOf({ RateLimiting__Sensitive__WindowSeconds: '-1' })).toBe('RateLimiting:Sensitive:WindowSeconds');
    expect(settingOf({ RateLimiting__General__Enabled: 'sometimes' })).toBe('RateLimiting:General:Enabled');
  });

  it('reads how nested groups are found: auto by default, one of the named strategies, a bounded depth', () => {
    expect(read({}).negotiate.directory).toMatchObject({ nestedGroups: 'auto', maxNestingDepth: 10 });
    const c = read({ Authentication__Negotiate__Ldap__NestedGroups: 'inchain', Authentication__Negotiate__Ldap__MaxNestingDepth: '3' });
    expect(c.negotiate.directory).toMatchObject({ nestedGroups: 'inChain', maxNestingDepth: 3 });
    expect(settingOf({ Authentication__Negotiate__Ldap__NestedGroups: 'transitive' })).toBe('Authentication:Negotiate:Ldap:NestedGroups');
    expect(settingOf({ Authentication__Negotiate__Ldap__MaxNestingDepth: '0' })).toBe('Authentication:Negotiate:Ldap:MaxNestingDepth');
    expect(settingOf({ Authentication__Negotiate__Ldap__MaxNestingDepth: '101' })).toBe('Authentication:Negotiate:Ldap:MaxNestingDepth');
  });

  it('never puts the LDAP bind password in an error message', () => {
    try {
      read({ Authentication__Negotiate__Ldap__Url: 'ldap://dc', Authentication__Negotiate__Ldap__BindPassword: 'hunter2-secret' });
    } catch (err) {
      expect((err as Error).message).not.toContain('hunter2');
    }
  });
});

describe('checkTransport (spec 5.2 rule 2)', () => {
  it('allows https anywhere, http only on loopback in Development', () => {
    expect(() => checkTransport('S', new URL('https://idp.example.test'), false)).not.toThrow();
    expect(() => checkTransport('S', new URL('http://127.0.0.1:5000'), true)).not.toThrow();
    expect(() => checkTransport('S', new URL('http://localhost:5000'), true)).not.toThrow();
    expect(() => checkTransport('S', new URL('http://[::1]:5000'), true)).not.toThrow();
    expect(() => checkTransport('S', new URL('http://127.0.0.1:5000'), false)).toThrow(ConfigError);
    expect(() => checkTransport('S', new URL('http://idp.example.test'), true)).toThrow(/loopback/);
  });
});
