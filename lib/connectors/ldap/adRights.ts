import { ConnectorError } from '../sdk';
import { Control, type DirectorySession, type LdapEntry } from './session';
import { escapeFilterValue, guidToString, sidToString } from './values';

/**
 * What an Active Directory bind account may see, from the directory's own security descriptors: whether it can
 * list the tombstones of deleted objects (the `usn` delta strategy reads deletes from them). A USN delta run
 * by an account that cannot list `CN=Deleted Objects` reads no tombstone and so misses every delete without
 * an error: the connection test refuses it. And whether it holds "Replicating Directory Changes" on the
 * domain, the right the DirSync control (the `dirsync` strategy) needs.
 *
 * The check follows Windows' access check on the DACL: the account's SIDs (its objectSid, its tokenGroups,
 * Everyone and Authenticated Users), the ACEs in order, a deny of a right not yet granted refuses it.
 */

const SHOW_DELETED_OID = '1.2.840.113556.1.4.417';
const SD_FLAGS_OID = '1.2.840.113556.1.4.801';

/** LDAP_SERVER_SD_FLAGS_OID asking for the DACL only (readable by accounts that may not read the SACL or owner). */
class SdFlagsControl extends Control {
  constructor() {
    super(SD_FLAGS_OID, { critical: true });
  }
  protected override writeControl(writer: Parameters<Control['write']>[0]): void {
    // controlValue ::= SEQUENCE { Flags INTEGER } with DACL_SECURITY_INFORMATION (4).
    writer.writeBuffer(Buffer.from([0x30, 0x03, 0x02, 0x01, 0x04]), 0x04);
  }
}

export const RIGHT_LIST_CHILDREN = 0x4;
export const RIGHT_READ_PROPERTY = 0x10;
export const RIGHT_CONTROL_ACCESS = 0x100;
/** The extended right "Replicating Directory Changes" (DS-Replication-Get-Changes). */
export const REPLICATING_DIRECTORY_CHANGES = '1131f6aa-9c07-11d1-f79f-00c04fc2dcd2';

export interface Ace {
  allow: boolean;
  mask: number;
  /** The object type GUID of an object ACE (an extended right, a property set), lower-case. */
  objectType?: string;
  /** Inherit-only ACEs do not apply to the object itself. */
  inheritOnly: boolean;
  sid: string;
}

/** The ACEs of a self-relative security descriptor's DACL (empty when it has none). */
export function daclOf(sd: Buffer): Ace[] {
  if (sd.length < 20 || sd[0] !== 1) throw new Error('not a self-relative security descriptor');
  const offset = sd.readUInt32LE(16);
  if (!offset) return [];
  const count = sd.readUInt16LE(offset + 4);
  const out: Ace[] = [];
  let at = offset + 8;
  for (let i = 0; i < count && at + 4 <= sd.length; i++) {
    const type = sd[at];
    const flags = sd[at + 1];
    const size = sd.readUInt16LE(at + 2);
    const body = sd.subarray(at + 4, at + size);
    at += size;
    if (type === 0x00 || type === 0x01) {
      out.push({ allow: type === 0x00, mask: body.readUInt32LE(0), inheritOnly: (flags & 0x08) !== 0, sid: sidToString(body.subarray(4)) });
    } else if (type === 0x05 || type === 0x06) {
      const mask = body.readUInt32LE(0);
      const objFlags = body.readUInt32LE(4);
      let p = 8;
      let objectType: string | undefined;
      if (objFlags & 0x1) {
        objectType = guidToString(body.subarray(p, p + 16));
        p += 16;
      }
      if (objFlags & 0x2) p += 16;
      out.push({ allow: type === 0x05, mask, ...(objectType ? { objectType } : {}), inheritOnly: (flags & 0x08) !== 0, sid: sidToString(body.subarray(p)) });
    }
  }
  return out;
}

/**
 * Whether the SIDs hold every bit of `mask` on the object (for an extended right: CONTROL_ACCESS with that
 * GUID, or an ACE without object type). The ACEs are walked in order; a deny of a bit not yet granted refuses.
 */
export function granted(aces: Ace[], sids: ReadonlySet<string>, mask: number, objectType?: string): boolean {
  let have = 0;
  for (const ace of aces) {
    if (ace.inheritOnly || !sids.has(ace.sid)) continue;
    if (ace.objectType && ace.objectType !== objectType) continue;
    const bits = ace.mask & mask & ~have;
    if (!bits) continue;
    if (!ace.allow) return false;
    have |= bits;
    if (have === mask) return true;
  }
  return have === mask;
}

/** The bind account's entry (a DN, a userPrincipalName or DOMAIN\\name as AD accepts them). */
async function accountEntry(session: DirectorySession, bindDN: string, nc: string): Promise<LdapEntry | undefined> {
  if (bindDN.includes('=')) {
    const [e] = await session.search({ base: bindDN, scope: 'base', filter: '(objectClass=*)', attributes: ['objectSid', 'tokenGroups'] });
    return e;
  }
  const name = bindDN.includes('\\') ? bindDN.slice(bindDN.indexOf('\\') + 1) : bindDN;
  const attr = bindDN.includes('@') ? 'userPrincipalName' : 'sAMAccountName';
  const [found] = await session.search({ base: nc, scope: 'sub', filter: `(${attr}=${escapeFilterValue(name)})`, attributes: ['1.1'] });
  if (!found) return undefined;
  const [e] = await session.search({ base: found.dn, scope: 'base', filter: '(objectClass=*)', attributes: ['objectSid', 'tokenGroups'] });
  return e;
}

const binaries = (e: LdapEntry, name: string): Buffer[] => {
  const key = Object.keys(e).find((k) => k.toLowerCase() === name.toLowerCase());
  const v = key ? e[key] : undefined;
  return (Array.isArray(v) ? v : v === undefined ? [] : [v]).filter((x): x is Buffer => Buffer.isBuffer(x));
};

/** The SIDs the account acts with: its own, its groups' (transitively, tokenGroups), Everyone, Authenticated Users. */
export async function accountSids(session: DirectorySession, bindDN: string, nc: string): Promise<Set<string>> {
  const e = await accountEntry(session, bindDN, nc);
  const sids = new Set(['S-1-1-0', 'S-1-5-11']);
  if (e) for (const b of [...binaries(e, 'objectSid'), ...binaries(e, 'tokenGroups')]) sids.add(sidToString(b));
  return sids;
}

/** The DACL of an entry, or undefined when this account may not read it. */
async function daclAt(session: DirectorySession, dn: string, showDeleted = false): Promise<Ace[] | undefined> {
  const controls = [new SdFlagsControl(), ...(showDeleted ? [new Control(SHOW_DELETED_OID, { critical: true })] : [])];
  const [e] = await session
    .search({ base: dn, scope: 'base', filter: '(objectClass=*)', attributes: ['nTSecurityDescriptor'], controls })
    .catch((err: unknown) => {
      if (err instanceof ConnectorError && err.code === 'configuration_invalid') return [];
      throw err;
    });
  const [sd] = e ? binaries(e, 'nTSecurityDescriptor') : [];
  return sd ? daclOf(sd) : undefined;
}

/** Well-known SIDs of the groups that list deleted objects in every domain: Administrators, Domain and Enterprise Admins. */
function isAdministrator(sids: ReadonlySet<string>): boolean {
  if (sids.has('S-1-5-32-544')) return true;
  return [...sids].some((s) => /^S-1-5-21-\d+-\d+-\d+-(512|519)$/.test(s));
}

export interface AdRights {
  /** The account can list the tombstones in CN=Deleted Objects (List Contents and Read Property there). */
  seesDeletedObjects: boolean;
  /** The account holds "Replicating Directory Changes" on the naming context (what DirSync needs). */
  replicatingDirectoryChanges: boolean;
  /** The account is an administrator (a member of Administrators, Domain Admins or Enterprise Admins). */
  administrator: boolean;
}

/**
 * The rights of the bind account that the delta strategies depend on, on naming context `nc`. When the
 * account may not read the Deleted Objects container's permissions (Samba keeps none), a tombstone it can list
 * shows the right; with none listed it is taken to see them only as an administrator (the container's default
 * permissions). "Replicating Directory Changes" is read from the domain's DACL (readable by authenticated users).
 */
export async function adRights(session: DirectorySession, bindDN: string, nc: string): Promise<AdRights> {
  const sids = await accountSids(session, bindDN, nc);
  const administrator = isAdministrator(sids);
  const ncDacl = await daclAt(session, nc);
  const replicatingDirectoryChanges = ncDacl ? granted(ncDacl, sids, RIGHT_CONTROL_ACCESS, REPLICATING_DIRECTORY_CHANGES) : false;
  const container = `CN=Deleted Objects,${nc}`;
  const dacl = await daclAt(session, container, true);
  if (dacl) return { seesDeletedObjects: granted(dacl, sids, RIGHT_LIST_CHILDREN | RIGHT_READ_PROPERTY), replicatingDirectoryChanges, administrator };
  if (administrator) return { seesDeletedObjects: true, replicatingDirectoryChanges, administrator };
  const [tombstone] = await session
    .search({
      base: container,
      scope: 'one',
      filter: '(isDeleted=TRUE)',
      attributes: ['1.1'],
      sizeLimit: 1,
      controls: [new Control(SHOW_DELETED_OID, { critical: true })],
    })
    .catch(() => []);
  return { seesDeletedObjects: tombstone !== undefined, replicatingDirectoryChanges, administrator };
}

/**
 * Samba's AD DC, by its root DSE: Samba publishes `vendorVersion` (its version, e.g. `4.17.12-Debian`); Windows
 * domain controllers publish no vendor attribute.
 */
export async function isSambaDc(session: DirectorySession): Promise<boolean> {
  const [root] = await session
    .search({ base: '', scope: 'base', filter: '(objectClass=*)', attributes: ['vendorVersion', 'vendorName'] })
    .catch((): LdapEntry[] => []);
  const key = Object.keys(root ?? {}).find((k) => /^vendor(version|name)$/i.test(k));
  const v = key ? root![key] : undefined;
  return Array.isArray(v) ? v.length > 0 : v !== undefined && String(v) !== '';
}

/**
 * Whether a DirSync delta as this account would miss deletes: on a Samba DC, DirSync returns deleted objects to
 * administrators only (Windows returns them to any account holding Replicating Directory Changes). The
 * message, when it would: what is missing and the fix (the connection test and a delta import both say it).
 */
export async function dirSyncMissesDeletes(session: DirectorySession, bindDN: string, nc: string, rights?: AdRights): Promise<string | undefined> {
  if (!(await isSambaDc(session))) return undefined;
  const r = rights ?? (await adRights(session, bindDN, nc));
  if (r.administrator) return undefined;
  return (
    `deltaStrategy dirsync: the DC is Samba, whose DirSync returns deleted objects to administrators only, and the bind account ${bindDN} ` +
    `lacks that right (it is not a member of Domain Admins, Enterprise Admins or Administrators), so a DirSync delta would miss every delete ` +
    `without an error. Bind as a member of Domain Admins, or use deltaStrategy timestamp (modifyTimestamp polling; every 10th delta ` +
    `compares the full anchor set and so finds the deletes), or auto, which picks it for this account.`
  );
}
