/**
 * The person key: every caller resolves to one principal, whatever the scheme. A principal is a set of aliases,
 * each a normalised string naming the same person (or application) in one namespace:
 * - `upn:alice@contoso.com`: a user principal name, lower-cased (tokens: `upn`, `preferred_username`,
 *   `unique_name`, `email`; Windows callers: the directory's UPN, or the Kerberos principal of a realm mapped by
 *   `Authentication:Negotiate:UpnRealms`);
 * - `oid:<guid>`: the token's `oid` (the directory object id), lower-cased;
 * - `sid:S-1-5-21-...`: the Windows SID (the directory's `objectSid`), upper-cased;
 * - `krb:alice@REALM`: the Kerberos principal as GSSAPI names it (realm upper-case, user lower-case);
 * - `app:<id>`: an application (`appid`, `azp` or `client_id`; else `sub` with its issuer), lower-cased.
 *
 * Two principals are the same person when they share any alias ({@link samePrincipal}): a Bearer token and a
 * Negotiate ticket of one person meet on the UPN; two tokens with one UPN and different `oid`s are one person.
 */
export type PrincipalKind = 'person' | 'application';

export interface Principal {
  /** The alias that names it in records: the UPN when known, else the first stable one. */
  key: string;
  kind: PrincipalKind;
  /** The scheme it authenticated with (absent on principals rebuilt from stored records). */
  scheme?: 'Bearer' | 'Negotiate';
  aliases: string[];
  /** How people read it: the UPN, the application id, or the Kerberos principal. */
  display: string;
}

/** What a record keeps of a principal (runs, schedule runs, configuration versions). */
export type PrincipalRecord = Pick<Principal, 'key' | 'kind' | 'aliases' | 'display'>;

const str = (v: unknown): string | null => (typeof v === 'string' && v.trim() ? v.trim() : null);
const looksLikeUpn = (v: string | null): v is string => !!v && /^[^@\s]+@[^@\s]+$/.test(v);
const SID = /^S-1-\d+(-\d+)+$/i;

export const upnAlias = (upn: string) => `upn:${upn.toLowerCase()}`;
export const oidAlias = (oid: string) => `oid:${oid.toLowerCase()}`;
export const sidAlias = (sid: string) => `sid:${sid.toUpperCase()}`;
export const appAlias = (id: string) => `app:${id.toLowerCase()}`;

/** `alice@EXAMPLE.COM`: the user part lower-cased (Windows names are case-insensitive), the realm upper-cased. */
export function krbAlias(principal: string): string {
  const at = principal.lastIndexOf('@');
  return at < 0 ? `krb:${principal.toLowerCase()}` : `krb:${principal.slice(0, at).toLowerCase()}@${principal.slice(at + 1).toUpperCase()}`;
}

function build(kind: PrincipalKind, aliases: (string | null)[], display: string, scheme?: Principal['scheme']): Principal {
  const unique = [...new Set(aliases.filter((a): a is string => !!a))];
  const key = unique.find((a) => a.startsWith(kind === 'person' ? 'upn:' : 'app:')) ?? unique[0] ?? `unknown:${display.toLowerCase()}`;
  return { key, kind, ...(scheme ? { scheme } : {}), aliases: unique.length ? unique : [key], display };
}

/**
 * A Bearer caller's principal from its validated claims. A token is an application's (app-only) when it says so
 * (`idtyp: app`, Entra ID's optional claim) or carries no person claim (no `upn`, `preferred_username`,
 * `unique_name` or `email`): then `app:<appid | azp | client_id>` and, with neither, `app:<iss>#<sub>`.
 */
export function bearerPrincipal(claims: Record<string, unknown>): Principal {
  // Any name claim names a person (a directory's preferred_username need not look like user@domain).
  const personNames = [claims.upn, claims.preferred_username, claims.unique_name, claims.email].map(str).filter((v): v is string => !!v);
  const oid = str(claims.oid);
  const appId = str(claims.appid) ?? str(claims.azp) ?? str(claims.client_id);
  const sub = str(claims.sub);
  const iss = str(claims.iss);
  const appOnly = claims.idtyp === 'app' || !personNames.length;
  if (appOnly) {
    const subAlias = sub ? appAlias(`${iss ?? ''}#${sub}`) : null;
    const aliases = [appId ? appAlias(appId) : null, subAlias, oid ? oidAlias(oid) : null];
    return build('application', aliases, appId ?? sub ?? oid ?? 'unknown application', 'Bearer');
  }
  return build('person', [...personNames.map(upnAlias), oid ? oidAlias(oid) : null], personNames[0], 'Bearer');
}

/**
 * Realms whose Kerberos principals are UPNs: `EXAMPLE.COM` (alice@EXAMPLE.COM is alice@example.com) or
 * `EXAMPLE.COM=contoso.com` (alice@EXAMPLE.COM is alice@contoso.com). Keys upper-case, suffixes lower-case.
 */
export type UpnRealms = ReadonlyMap<string, string>;

export function parseUpnRealms(list: readonly string[]): Map<string, string> {
  const out = new Map<string, string>();
  for (const item of list) {
    const [realm, suffix] = item.split('=').map((s) => s.trim());
    if (realm) out.set(realm.toUpperCase(), (suffix || realm).toLowerCase());
  }
  return out;
}

/**
 * A Windows caller's principal: its Kerberos principal, the SID and UPN the directory gave, and the Kerberos
 * principal as a UPN only when its realm is mapped (a realm is not a UPN suffix unless an admin says so).
 */
export function negotiatePrincipal(kerberosPrincipal: string, directory: { sid: string | null; upn: string | null }, realms: UpnRealms = new Map()): Principal {
  const at = kerberosPrincipal.lastIndexOf('@');
  const suffix = at < 0 ? undefined : realms.get(kerberosPrincipal.slice(at + 1).toUpperCase());
  const mapped = suffix ? `${kerberosPrincipal.slice(0, at)}@${suffix}` : null;
  const upn = looksLikeUpn(directory.upn) ? directory.upn : null;
  const aliases = [upn ? upnAlias(upn) : null, mapped ? upnAlias(mapped) : null, directory.sid ? sidAlias(directory.sid) : null, krbAlias(kerberosPrincipal)];
  return build('person', aliases, upn ?? mapped ?? kerberosPrincipal, 'Negotiate');
}

/**
 * A principal rebuilt from what older records kept (a UPN or principal name, and a stable id that is a token's
 * `oid` or a SID): used for runs and configuration versions written before principals were recorded.
 */
export function legacyPrincipal(upn: string | null, stableId: string | null): PrincipalRecord | null {
  const aliases: string[] = [];
  // `schedule:<name>` and `system:...` are engine actors, not people.
  if (upn && upn !== 'system' && !upn.includes(':')) aliases.push(upnAlias(upn), ...(looksLikeUpn(upn) ? [krbAlias(upn)] : []));
  if (stableId) aliases.push(SID.test(stableId) ? sidAlias(stableId) : oidAlias(stableId));
  if (!aliases.length) return null;
  return build('person', aliases, upn ?? stableId!);
}

/** Whether two principals are one: any shared alias. */
export function samePrincipal(a: Pick<Principal, 'aliases'>, b: Pick<Principal, 'aliases'>): boolean {
  const mine = new Set(a.aliases);
  return b.aliases.some((x) => mine.has(x));
}

/** The record kept of a principal (no scheme: a record outlives the request). */
export function principalRecord(p: Principal | PrincipalRecord): PrincipalRecord {
  return { key: p.key, kind: p.kind, aliases: [...p.aliases], display: p.display };
}

/** A stored principal record read back (JSON), or null when it is not one. */
export function parsePrincipalRecord(json: unknown): PrincipalRecord | null {
  if (typeof json !== 'string' || !json) return null;
  try {
    const v = JSON.parse(json) as Partial<PrincipalRecord>;
    if (typeof v.key !== 'string' || (v.kind !== 'person' && v.kind !== 'application') || !Array.isArray(v.aliases) || typeof v.display !== 'string')
      return null;
    return { key: v.key, kind: v.kind, aliases: v.aliases.filter((a): a is string => typeof a === 'string'), display: v.display };
  } catch {
    return null;
  }
}
