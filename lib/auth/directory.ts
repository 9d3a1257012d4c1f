import { readFileSync } from 'node:fs';
import { Client } from 'ldapts';
import type { DirectoryConfig } from './authConfig';
import type { AuthLogger } from './log';

/** What the directory says about a Windows caller: its group names (spec 5.3) and SID (spec 5.4). */
export interface DirectoryIdentity {
  /** For each `memberOf` value: the group's name (the value of its DN's first RDN, e.g. its CN) and the DN. */
  groups: string[];
  /** `objectSid` rendered as `S-1-5-21-...`, when the directory has one (Active Directory). */
  sid: string | null;
  /** `userPrincipalName` when the directory has one. */
  upn: string | null;
}

/** The directory could not be asked and nothing is cached: the caller gets 503 rather than a wrong role. */
export class DirectoryUnavailableError extends Error {
  constructor(cause: string) {
    super(`The directory could not be searched for the caller's groups: ${cause}`);
    this.name = 'DirectoryUnavailableError';
  }
}

/**
 * Looks up a Kerberos principal's groups over LDAP (`memberOf`, as Active Directory and OpenLDAP's memberof
 * overlay maintain it), cached for `cacheMinutes`. When the directory is unreachable a cached answer is used
 * even past its age, so a directory outage does not lock out callers seen before.
 */
export class DirectoryGroups {
  private readonly cache = new Map<string, { at: number; identity: DirectoryIdentity }>();
  private readonly ca: string | undefined;

  constructor(
    private readonly config: DirectoryConfig,
    private readonly log: AuthLogger,
  ) {
    this.ca = config.caCertificateFile ? readFileSync(config.caCertificateFile, 'utf8') : undefined;
  }

  get configured(): boolean {
    return Boolean(this.config.url);
  }

  async lookup(principal: string): Promise<DirectoryIdentity> {
    if (!this.config.url) return { groups: [], sid: null, upn: null };
    const key = principal.toLowerCase();
    const hit = this.cache.get(key);
    if (hit && Date.now() - hit.at < this.config.cacheMinutes * 60_000) return hit.identity;
    try {
      const identity = await this.search(principal);
      if (this.config.cacheMinutes > 0) this.cache.set(key, { at: Date.now(), identity });
      return identity;
    } catch (err) {
      const why = err instanceof Error ? err.message : String(err);
      if (hit) {
        this.log('warn', `Negotiate: directory lookup failed (${why}); using the groups cached for ${principal}.`);
        return hit.identity;
      }
      throw new DirectoryUnavailableError(why);
    }
  }

  private async search(principal: string): Promise<DirectoryIdentity> {
    const c = this.config;
    const url = new URL(c.url!);
    const tlsOptions = { ca: this.ca, servername: url.hostname };
    const client = new Client({
      url: c.url!,
      timeout: c.timeoutSeconds * 1000,
      connectTimeout: c.timeoutSeconds * 1000,
      tlsOptions: url.protocol === 'ldaps:' ? tlsOptions : undefined,
    });
    try {
      if (c.startTls) await client.startTLS(tlsOptions);
      if (c.bindDN) await client.bind(c.bindDN, c.bindPassword ?? '');
      const user = principal.split('@')[0];
      const filter = c.userFilter.replace(/\{user\}/g, escapeFilter(user)).replace(/\{principal\}/g, escapeFilter(principal));
      const { searchEntries } = await client.search(c.baseDN!, {
        scope: 'sub',
        filter,
        attributes: ['memberOf', 'objectSid', 'userPrincipalName'],
        explicitBufferAttributes: ['objectSid'],
        sizeLimit: 2,
      });
      if (searchEntries.length !== 1) {
        if (searchEntries.length > 1) this.log('warn', `Negotiate: more than one directory entry matches ${principal}; no groups used.`);
        return { groups: [], sid: null, upn: null };
      }
      const entry = searchEntries[0];
      const memberOf = ([] as unknown[]).concat(entry.memberOf ?? []).map(String);
      const groups = new Set<string>();
      for (const dn of memberOf) {
        const name = firstRdnValue(dn);
        if (name) groups.add(name);
        groups.add(dn);
      }
      const sidRaw = ([] as unknown[]).concat(entry.objectSid ?? [])[0];
      const upn = ([] as unknown[]).concat(entry.userPrincipalName ?? [])[0];
      return { groups: [...groups], sid: Buffer.isBuffer(sidRaw) ? sidToString(sidRaw) : null, upn: typeof upn === 'string' ? upn : null };
    } finally {
      await client.unbind().catch(() => undefined);
    }
  }
}

/** RFC 4515 escaping of a value placed in a search filter. */
export function escapeFilter(value: string): string {
  return value.replace(/[\\*()\0]/g, (ch) => `\\${ch.charCodeAt(0).toString(16).padStart(2, '0')}`);
}

/** `cn=Sync Admins,ou=Groups,dc=example,dc=com` -> `Sync Admins` (RFC 4514 escapes undone). */
export function firstRdnValue(dn: string): string | null {
  let i = 0;
  let rdn = '';
  for (; i < dn.length; i++) {
    const ch = dn[i];
    if (ch === '\\' && i + 1 < dn.length) {
      rdn += ch + dn[++i];
      continue;
    }
    if (ch === ',' || ch === '+') break;
    rdn += ch;
  }
  const eq = rdn.indexOf('=');
  if (eq < 0) return null;
  const raw = rdn.slice(eq + 1).trim();
  const value = raw.replace(/\\([0-9a-fA-F]{2})|\\(.)/g, (_m, hex: string | undefined, ch: string | undefined) => (hex ? String.fromCharCode(parseInt(hex, 16)) : ch!));
  return value || null;
}

/** Binary `objectSid` -> `S-1-5-21-...` (MS-DTYP 2.4.2). */
export function sidToString(buf: Buffer): string | null {
  if (buf.length < 8) return null;
  const revision = buf[0];
  const count = buf[1];
  if (buf.length !== 8 + count * 4) return null;
  const authority = buf.readUIntBE(2, 6);
  const subs: number[] = [];
  for (let i = 0; i < count; i++) subs.push(buf.readUInt32LE(8 + i * 4));
  return ['S', revision, authority, ...subs].join('-');
}
