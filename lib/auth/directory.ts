import { readFileSync } from 'node:fs';
import { Client, EqualityFilter, ExtensibleFilter, NoSuchObjectError, OrFilter, type Filter } from 'ldapts';
import { escapeFilterValue, firstRdnValue as rdnValue, normalizeDn } from '../core/ldapName';
import type { DirectoryConfig, NestedGroupsMode } from './authConfig';
import type { AuthLogger } from './log';

/** What the directory says about a Windows caller: its group names (spec 5.3) and SID (spec 5.4). */
export interface DirectoryIdentity {
  /**
   * For each group the caller is in, directly or through nesting: the group's name (the value of its DN's first
   * RDN, e.g. its CN) and its DN; with `tokenGroups`, each group's SID (`S-1-5-21-...`) too.
   */
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

/** The supportedCapabilities OID of an Active Directory domain controller (LDAP_CAP_ACTIVE_DIRECTORY_OID). */
export const AD_CAPABILITY = '1.2.840.113556.1.4.800';
/** LDAP_MATCHING_RULE_IN_CHAIN: Active Directory evaluates `member` transitively. */
export const IN_CHAIN_RULE = '1.2.840.113556.1.4.1941';
/** SIDs per search when tokenGroups are resolved to groups (one OR filter each). */
const SIDS_PER_SEARCH = 100;
/** Group entries read at once by the memberOf walk, over the one connection. */
const WALK_CONCURRENCY = 8;

type Strategy = Exclude<NestedGroupsMode, 'auto'>;

/**
 * Looks up a Kerberos principal's groups over LDAP, cached for `cacheMinutes`: the groups of the entry's
 * `memberOf` and, by `nestedGroups`, those held through nesting (Active Directory: `tokenGroups` by default, or
 * the in-chain matching rule; other directories: a walk up `memberOf` with a depth bound). When the directory
 * is unreachable a cached answer is used even past its age, so a directory outage does not lock out callers
 * seen before.
 */
export class DirectoryGroups {
  private readonly cache = new Map<string, { at: number; identity: DirectoryIdentity }>();
  private readonly ca: string | undefined;
  /** What `auto` resolved to, once the root DSE has been read. */
  private detected: Strategy | undefined;

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
        attributes: ['memberOf', 'objectSid', c.upnAttribute],
        explicitBufferAttributes: ['objectSid'],
        sizeLimit: 2,
      });
      if (searchEntries.length !== 1) {
        if (searchEntries.length > 1) this.log('warn', `Negotiate: more than one directory entry matches ${principal}; no groups used.`);
        return { groups: [], sid: null, upn: null };
      }
      const entry = searchEntries[0];
      const memberOf = values(entry.memberOf).map(String);
      const strategy = await this.strategy(client);
      const names = new Set<string>();
      const addGroup = (dn: string) => {
        const name = firstRdnValue(dn);
        if (name) names.add(name);
        names.add(dn);
      };
      memberOf.forEach(addGroup);
      let useInChain = strategy === 'inChain';
      if (strategy === 'tokenGroups') {
        const { dns, sids } = await this.tokenGroups(client, entry.dn);
        dns.forEach(addGroup);
        sids.forEach((sid) => names.add(sid));
        // A user's tokenGroups always holds its primary group: none at all means the bind account may not read it.
        if (!sids.length) {
          this.log(
            'warn',
            `Negotiate: the tokenGroups of ${entry.dn} could not be read (the bind account may not read it); its nested groups come from the in-chain rule instead.`,
          );
          useInChain = true;
        }
      }
      if (useInChain) {
        (await this.inChain(client, entry.dn)).forEach(addGroup);
      } else if (strategy === 'memberOf') {
        const walk = await walkGroups(memberOf, (dns) => this.parentsOf(client, dns), c.maxNestingDepth);
        walk.groups.forEach(addGroup);
        if (walk.truncated) {
          this.log(
            'warn',
            `Negotiate: ${principal} is in groups nested deeper than ${c.maxNestingDepth} levels (Authentication:Negotiate:Ldap:MaxNestingDepth); the groups above that depth were not used.`,
          );
        }
      }
      const sidRaw = values(entry.objectSid)[0];
      // Attribute names are case-insensitive; the server answers with its own spelling.
      const upnKey = Object.keys(entry).find((k) => k.toLowerCase() === c.upnAttribute.toLowerCase());
      const upn = upnKey ? values(entry[upnKey])[0] : undefined;
      return { groups: [...names], sid: Buffer.isBuffer(sidRaw) ? sidToString(sidRaw) : null, upn: typeof upn === 'string' ? upn : null };
    } finally {
      await client.unbind().catch(() => undefined);
    }
  }

  /** The configured strategy; `auto` asks the root DSE once whether the directory is Active Directory. */
  private async strategy(client: Client): Promise<Strategy> {
    if (this.config.nestedGroups !== 'auto') return this.config.nestedGroups;
    if (this.detected) return this.detected;
    const { searchEntries } = await client.search('', { scope: 'base', filter: '(objectClass=*)', attributes: ['supportedCapabilities'] });
    const capabilities = values(searchEntries[0]?.supportedCapabilities).map(String);
    this.detected = capabilities.includes(AD_CAPABILITY) ? 'tokenGroups' : 'memberOf';
    this.log(
      'info',
      this.detected === 'tokenGroups'
        ? 'Negotiate: the directory is Active Directory; nested groups come from tokenGroups.'
        : `Negotiate: nested groups come from a walk up memberOf (at most ${this.config.maxNestingDepth} levels).`,
    );
    return this.detected;
  }

  /**
   * Active Directory: the user's `tokenGroups` (a constructed attribute, read with a base search of the entry:
   * the SIDs of every security group it is in, directly, through nesting or as its primary group), then one
   * search per 100 SIDs finds those groups by `objectSid` under the base DN. The filters carry the SIDs as
   * binary values: a string filter of `\xx` escapes does not survive bytes of 0x80 and above in the client.
   */
  private async tokenGroups(client: Client, userDN: string): Promise<{ dns: string[]; sids: string[] }> {
    const { searchEntries } = await client.search(userDN, {
      scope: 'base',
      filter: '(objectClass=*)',
      attributes: ['tokenGroups'],
      explicitBufferAttributes: ['tokenGroups'],
    });
    const raw = values(searchEntries[0]?.tokenGroups).filter((v): v is Buffer => Buffer.isBuffer(v));
    const sids = raw.map(sidToString).filter((s): s is string => s !== null);
    const dns: string[] = [];
    for (let i = 0; i < raw.length; i += SIDS_PER_SEARCH) {
      const found = await client.search(this.config.baseDN!, {
        scope: 'sub',
        filter: sidFilter(raw.slice(i, i + SIDS_PER_SEARCH)),
        attributes: ['objectSid'],
        paged: { pageSize: 500 },
      });
      dns.push(...found.searchEntries.map((e) => e.dn));
    }
    return { dns, sids };
  }

  /** Active Directory: every group under the base DN whose `member` holds the user through any chain. */
  private async inChain(client: Client, userDN: string): Promise<string[]> {
    const { searchEntries } = await client.search(this.config.baseDN!, {
      scope: 'sub',
      filter: inChainFilter(userDN),
      attributes: ['objectClass'],
      paged: { pageSize: 500 },
    });
    return searchEntries.map((e) => e.dn);
  }

  /** The `memberOf` of each group entry (a base read each, a few at a time); a group that is gone has none. */
  private async parentsOf(client: Client, dns: readonly string[]): Promise<Map<string, string[]>> {
    const out = new Map<string, string[]>();
    let next = 0;
    const worker = async () => {
      while (next < dns.length) {
        const dn = dns[next++];
        try {
          const { searchEntries } = await client.search(dn, { scope: 'base', filter: '(objectClass=*)', attributes: ['memberOf'] });
          out.set(dn, values(searchEntries[0]?.memberOf).map(String));
        } catch (err) {
          if (!(err instanceof NoSuchObjectError)) throw err;
          out.set(dn, []);
        }
      }
    };
    await Promise.all(Array.from({ length: Math.min(WALK_CONCURRENCY, dns.length) }, worker));
    return out;
  }
}

/** What a walk found: every group reached (direct ones first), and whether the depth bound left some out. */
export interface GroupWalk {
  groups: string[];
  truncated: boolean;
}

/**
 * Breadth-first walk up the group graph from the caller's direct groups (depth 0): a group reached through k
 * nested memberships has depth k, and groups up to `maxDepth` are kept. `parentsOf` gives the groups each DN
 * is a member of. DNs are compared case-insensitively, and each group is expanded once, so a cycle (A in B, B
 * in A) ends the walk instead of looping. The groups of the last level are asked too, only to tell whether the
 * bound cut anything off (`truncated`).
 */
export async function walkGroups(
  direct: readonly string[],
  parentsOf: (dns: readonly string[]) => Promise<Map<string, readonly string[]>>,
  maxDepth: number,
): Promise<GroupWalk> {
  const seen = new Map<string, string>();
  let frontier: string[] = [];
  for (const dn of direct) {
    if (seen.has(dnKey(dn))) continue;
    seen.set(dnKey(dn), dn);
    frontier.push(dn);
  }
  let truncated = false;
  for (let depth = 1; frontier.length; depth++) {
    const parents = await parentsOf(frontier);
    const next: string[] = [];
    for (const dn of frontier) {
      for (const parent of parents.get(dn) ?? []) {
        const key = dnKey(parent);
        if (seen.has(key)) continue;
        if (depth > maxDepth) {
          truncated = true;
          continue;
        }
        seen.set(key, parent);
        next.push(parent);
      }
    }
    if (depth > maxDepth) break;
    frontier = next;
  }
  return { groups: [...seen.values()], truncated };
}

/** A DN as the walk compares it: the same entry however it is spelled (case, blanks, escapes: lib/core/ldapName.ts). */
const dnKey = normalizeDn;

/** `(|(objectSid=<bytes>)...)` as a filter object whose values are the SIDs' bytes, untouched. */
export function sidFilter(sids: readonly Buffer[]): Filter {
  const parts = sids.map((sid) => new EqualityFilter({ attribute: 'objectSid', value: sid }));
  return parts.length === 1 ? parts[0] : new OrFilter({ filters: parts });
}

/** `(member:1.2.840.113556.1.4.1941:=<userDN>)` as a filter object (the DN needs no escaping). */
export function inChainFilter(userDN: string): Filter {
  return new ExtensibleFilter({ matchType: 'member', rule: IN_CHAIN_RULE, value: userDN });
}

function values(v: unknown): unknown[] {
  return v === undefined || v === null ? [] : ([] as unknown[]).concat(v);
}

/** RFC 4515 escaping of a value placed in a search filter. */
export const escapeFilter = escapeFilterValue;

/**
 * `cn=Sync Admins,ou=Groups,dc=example,dc=com` -> `Sync Admins` (RFC 4514 escapes undone, hex pairs as UTF-8:
 * `cn=Jos\c3\a9 Admins` -> `José Admins`); null when the DN has no `type=value` first RDN or its value is empty.
 */
export function firstRdnValue(dn: string): string | null {
  return rdnValue(dn) || null;
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
