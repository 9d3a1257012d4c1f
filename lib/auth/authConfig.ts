import { ConfigError, SettingsReader } from '../core/config';
import type { Role } from './permissions';

/**
 * Configuration of caller authentication (spec sections 5 and 8). Read once at start by the authentication
 * service step; every bad value fails the start with a ConfigError that names the exact setting.
 */
export interface JwtConfig {
  enabled: boolean;
  /** The OIDC issuer URL; its metadata lives at `{authority}/.well-known/openid-configuration`. */
  authority: string | undefined;
  /** Accepted `aud` values (the application id or its `api://` URI; a comma-separated list is allowed). */
  audiences: string[];
  metadataRefreshHours: number;
  clockSkewSeconds: number;
  /** Upper bound of JWKS refetches triggered by unknown `kid`s, per minute. */
  jwksRefetchPerMinute: number;
  /** HTTP timeout of metadata and JWKS requests. */
  httpTimeoutSeconds: number;
}

export interface DirectoryConfig {
  /** `ldap://host:389` or `ldaps://host:636`; unset: Windows callers get no groups (and are Viewers). */
  url: string | undefined;
  bindDN: string | undefined;
  bindPassword: string | undefined;
  baseDN: string | undefined;
  /** LDAP filter finding the caller; `{user}` is the principal's user part, `{principal}` the full name. */
  userFilter: string;
  cacheMinutes: number;
  startTls: boolean;
  /** PEM file trusted for ldaps/StartTLS in addition to the system store. */
  caCertificateFile: string | undefined;
  timeoutSeconds: number;
  /**
   * How groups held through nesting are found (docs/authentication.md, "Nested groups"): `auto` (Active
   * Directory: `tokenGroups`; any other directory: a `memberOf` walk), `tokenGroups`, `inChain` (AD's
   * LDAP_MATCHING_RULE_IN_CHAIN), `memberOf` (walk), or `direct` (the entry's own `memberOf` only).
   */
  nestedGroups: NestedGroupsMode;
  /** Most levels of nesting the `memberOf` walk follows above the caller's direct groups. */
  maxNestingDepth: number;
  /** The attribute holding the caller's UPN (`userPrincipalName` in Active Directory; e.g. `mail` elsewhere). */
  upnAttribute: string;
}

export const NESTED_GROUPS_MODES = ['auto', 'tokenGroups', 'inChain', 'memberOf', 'direct'] as const;
export type NestedGroupsMode = (typeof NESTED_GROUPS_MODES)[number];

export interface NegotiateConfig {
  enabled: boolean;
  /** Keytab holding the service key; unset: `KRB5_KTNAME`, else the system default keytab. */
  keytab: string | undefined;
  /** GSSAPI host-based name such as `HTTP@server.example.com`; empty: any key in the keytab. */
  servicePrincipal: string;
  /** The Kerberos clock skew (krb5.conf `clockskew`): how far an authenticator's time may be from ours. */
  clockSkewSeconds: number;
  /** Most authenticators the replay cache holds; when full, new Negotiate tokens are refused until some age out. */
  replayCacheMaxEntries: number;
  /**
   * Realms whose Kerberos principals are UPNs (`REALM` or `REALM=upn.suffix`), for callers the directory gives
   * no UPN: the four-eyes rule then knows `alice@REALM` and the token of `alice@upn.suffix` are one person.
   */
  upnRealms: string[];
  directory: DirectoryConfig;
}

export interface RateLimitPolicy {
  enabled: boolean;
  permitLimit: number;
  windowSeconds: number;
}

export interface DevIssuerConfig {
  /** True when the embedded development issuer runs (Development and no Authority configured). */
  enabled: boolean;
  audience: string;
  /** Loopback port to listen on; 0: the port used last time (kept in dev-issuer.json), else a free one. */
  port: number;
}

export interface AuthConfig {
  environment: string;
  isDevelopment: boolean;
  dataDir: string;
  jwt: JwtConfig;
  negotiate: NegotiateConfig;
  /** Configured role values per built-in role (spec 5.3), each matched exactly. */
  roles: Record<Role, string[]>;
  rateLimiting: { sensitive: RateLimitPolicy; general: RateLimitPolicy };
  devIssuer: DevIssuerConfig;
}

/** The audience of tokens issued by the embedded development issuer. */
export const DEV_AUDIENCE = 'api://identity-mesh-sync';

/** Suggested token role values (spec 5.3), used when `Service:Roles:<Role>` is not configured. */
export const DEFAULT_ROLE_VALUES: Record<Role, string> = {
  Admin: 'Service.Admin',
  Operator: 'Service.Operator',
  Viewer: 'Service.Viewer',
};

const list = (v: string | undefined): string[] =>
  (v ?? '')
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean);

export function readAuthConfig(settings = new SettingsReader()): AuthConfig {
  const environment = settings.string('AZURE_FUNCTIONS_ENVIRONMENT', 'Production');
  const isDevelopment = environment.toLowerCase() === 'development';
  const dataDir = settings.string('Service:DataDir', '.data');

  const authorityUrl = settings.url('Authentication:Jwt:Authority');
  const devIssuerWanted = isDevelopment && !authorityUrl && settings.bool('Authentication:DevIssuer:Enabled', true);
  const jwtEnabled = settings.bool('Authentication:Jwt:Enabled', false) || devIssuerWanted;
  const audiences = list(settings.raw('Authentication:Jwt:Audience'));

  if (jwtEnabled && !devIssuerWanted) {
    if (!authorityUrl) throw new ConfigError('Authentication:Jwt:Authority', 'is required when Authentication:Jwt:Enabled is true.');
    if (!audiences.length) throw new ConfigError('Authentication:Jwt:Audience', 'is required when Authentication:Jwt:Enabled is true.');
  }
  if (authorityUrl && jwtEnabled) checkTransport('Authentication:Jwt:Authority', authorityUrl, isDevelopment);

  const jwt: JwtConfig = {
    enabled: jwtEnabled,
    authority: authorityUrl?.toString(),
    audiences: devIssuerWanted && !audiences.length ? [DEV_AUDIENCE] : audiences,
    metadataRefreshHours: settings.int('Authentication:Jwt:MetadataRefreshHours', 24, { min: 1, max: 24 * 30 }),
    clockSkewSeconds: settings.int('Authentication:Jwt:ClockSkewSeconds', 300, { min: 0, max: 3600 }),
    jwksRefetchPerMinute: settings.int('Authentication:Jwt:JwksRefetchPerMinute', 10, { min: 1, max: 600 }),
    httpTimeoutSeconds: settings.int('Authentication:Jwt:HttpTimeoutSeconds', 10, { min: 1, max: 120 }),
  };
  // The authority is kept as written (URL.toString() adds a slash to a bare origin, which would break issuer equality).
  if (jwt.authority) jwt.authority = settings.raw('Authentication:Jwt:Authority');

  const ldapUrl = settings.url('Authentication:Negotiate:Ldap:Url');
  if (ldapUrl && !/^ldaps?:$/.test(ldapUrl.protocol)) {
    throw new ConfigError('Authentication:Negotiate:Ldap:Url', `must be an ldap:// or ldaps:// URL, not '${ldapUrl.protocol}//...'.`);
  }
  const directory: DirectoryConfig = {
    url: ldapUrl ? settings.raw('Authentication:Negotiate:Ldap:Url') : undefined,
    bindDN: settings.string('Authentication:Negotiate:Ldap:BindDN'),
    bindPassword: settings.string('Authentication:Negotiate:Ldap:BindPassword'),
    baseDN: settings.string('Authentication:Negotiate:Ldap:BaseDN'),
    userFilter: settings.string(
      'Authentication:Negotiate:Ldap:UserFilter',
      '(|(userPrincipalName={principal})(sAMAccountName={user})(uid={user})(krbPrincipalName={principal}))',
    ),
    cacheMinutes: settings.int('Authentication:Negotiate:Ldap:CacheMinutes', 10, { min: 0, max: 24 * 60 }),
    startTls: settings.bool('Authentication:Negotiate:Ldap:StartTls', false),
    caCertificateFile: settings.string('Authentication:Negotiate:Ldap:CaCertificateFile'),
    timeoutSeconds: settings.int('Authentication:Negotiate:Ldap:TimeoutSeconds', 10, { min: 1, max: 120 }),
    nestedGroups: settings.oneOf('Authentication:Negotiate:Ldap:NestedGroups', NESTED_GROUPS_MODES, 'auto'),
    maxNestingDepth: settings.int('Authentication:Negotiate:Ldap:MaxNestingDepth', 10, { min: 1, max: 100 }),
    upnAttribute: settings.string('Authentication:Negotiate:Ldap:UpnAttribute', 'userPrincipalName'),
  };
  if (!/^[A-Za-z][A-Za-z0-9-]*$/.test(directory.upnAttribute)) {
    throw new ConfigError('Authentication:Negotiate:Ldap:UpnAttribute', `must be an LDAP attribute name, not '${directory.upnAttribute}'.`);
  }
  if (directory.url && !directory.baseDN) {
    throw new ConfigError('Authentication:Negotiate:Ldap:BaseDN', 'is required when Authentication:Negotiate:Ldap:Url is set.');
  }
  if (directory.bindDN && !directory.bindPassword) {
    throw new ConfigError('Authentication:Negotiate:Ldap:BindPassword', 'is required when Authentication:Negotiate:Ldap:BindDN is set.');
  }
  if (!directory.userFilter.includes('{user}') && !directory.userFilter.includes('{principal}')) {
    throw new ConfigError('Authentication:Negotiate:Ldap:UserFilter', 'must contain {user} or {principal}.');
  }

  const negotiate: NegotiateConfig = {
    enabled: settings.bool('Authentication:Negotiate:Enabled', true),
    keytab: settings.string('Authentication:Negotiate:Keytab'),
    servicePrincipal: settings.string('Authentication:Negotiate:ServicePrincipal', ''),
    clockSkewSeconds: settings.int('Authentication:Negotiate:ClockSkewSeconds', 300, { min: 1, max: 3600 }),
    replayCacheMaxEntries: settings.int('Authentication:Negotiate:ReplayCacheMaxEntries', 100_000, { min: 100, max: 10_000_000 }),
    upnRealms: list(settings.raw('Authentication:Negotiate:UpnRealms')),
    directory,
  };
  for (const item of negotiate.upnRealms) {
    if (!/^[A-Za-z0-9.-]+(=[A-Za-z0-9.-]+)?$/.test(item)) {
      throw new ConfigError('Authentication:Negotiate:UpnRealms', `must list realms as REALM or REALM=upn.suffix, not '${item}'.`);
    }
  }
  if (negotiate.servicePrincipal && !/^[^@\s/]+[@/][^@\s]+$/.test(negotiate.servicePrincipal)) {
    throw new ConfigError('Authentication:Negotiate:ServicePrincipal', `must look like HTTP@host.example.com, not '${negotiate.servicePrincipal}'.`);
  }

  const roles = {} as Record<Role, string[]>;
  for (const role of ['Admin', 'Operator', 'Viewer'] as const) {
    const configured = list(settings.raw(`Service:Roles:${role}`));
    roles[role] = configured.length ? configured : [DEFAULT_ROLE_VALUES[role]];
  }

  const policy = (name: string, enabledByDefault: boolean, permit: number, window: number): RateLimitPolicy => ({
    enabled: settings.bool(`RateLimiting:${name}:Enabled`, enabledByDefault),
    permitLimit: settings.int(`RateLimiting:${name}:PermitLimit`, permit, { min: 1, max: 1_000_000 }),
    windowSeconds: settings.int(`RateLimiting:${name}:WindowSeconds`, window, { min: 1, max: 86_400 }),
  });

  const devPort = settings.int('Authentication:DevIssuer:Port', 0, { min: 0, max: 65535 });
  return {
    environment,
    isDevelopment,
    dataDir,
    jwt,
    negotiate,
    roles,
    rateLimiting: { sensitive: policy('Sensitive', true, 30, 60), general: policy('General', false, 600, 60) },
    devIssuer: { enabled: devIssuerWanted, audience: jwt.audiences[0] ?? DEV_AUDIENCE, port: devPort },
  };
}

const LOOPBACK = new Set(['localhost', '127.0.0.1', '[::1]', '::1']);

export function isLoopbackHost(hostname: string): boolean {
  return LOOPBACK.has(hostname.toLowerCase()) || /^127\.\d+\.\d+\.\d+$/.test(hostname);
}

/**
 * Spec 5.2 rule 2: metadata and keys travel over HTTPS. Development relaxes it to plain http on loopback only.
 * Throws a ConfigError naming `setting` (the URL came from it, directly or through the metadata it points to).
 */
export function checkTransport(setting: string, url: URL, isDevelopment: boolean, what = 'the OIDC metadata'): void {
  if (url.protocol === 'https:') return;
  if (url.protocol === 'http:' && isDevelopment && isLoopbackHost(url.hostname)) return;
  const why = isDevelopment
    ? 'Development allows plain http only on loopback (localhost, 127.0.0.1, ::1)'
    : 'plain http is allowed only when AZURE_FUNCTIONS_ENVIRONMENT is Development, on loopback';
  throw new ConfigError(setting, `${what} must be fetched over HTTPS (${url.protocol}//${url.host} given; ${why}).`);
}
