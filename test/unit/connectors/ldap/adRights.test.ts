import { daclOf, dirSyncMissesDeletes, granted, isSambaDc, REPLICATING_DIRECTORY_CHANGES } from '../../../../lib/connectors/ldap/adRights';
import type { DirectorySession, LdapEntry } from '../../../../lib/connectors/ldap/session';
import { guidToBytes } from '../../../../lib/connectors/ldap/values';

/** The DACL walk of adRights.ts on security descriptors built here byte by byte (as AD returns them with the SD flags control). */
function sidBytes(sid: string): Buffer {
  const [, , authority, ...subs] = sid.split('-');
  const b = Buffer.alloc(8 + subs.length * 4);
  b[0] = 1;
  b[1] = subs.length;
  b.writeUIntBE(Number(authority), 2, 6);
  subs.forEach((p, i) => b.writeUInt32LE(Number(p), 8 + i * 4));
  return b;
}
function ace(type: number, mask: number, sid: string, opts: { objectType?: string; inheritOnly?: boolean } = {}): Buffer {
  const s = sidBytes(sid);
  const obj = type === 5 || type === 6;
  const body = obj
    ? Buffer.concat([Buffer.alloc(8), opts.objectType ? guidToBytes(opts.objectType) : Buffer.alloc(0), s])
    : Buffer.concat([Buffer.alloc(4), s]);
  body.writeUInt32LE(mask, 0);
  if (obj) body.writeUInt32LE(opts.objectType ? 1 : 0, 4);
  const head = Buffer.from([type, opts.inheritOnly ? 0x08 : 0, 0, 0]);
  head.writeUInt16LE(4 + body.length, 2);
  return Buffer.concat([head, body]);
}
function sd(aces: Buffer[]): Buffer {
  const body = Buffer.concat(aces);
  const acl = Buffer.concat([Buffer.from([2, 0, 0, 0, 0, 0, 0, 0]), body]);
  acl.writeUInt16LE(acl.length, 2);
  acl.writeUInt16LE(aces.length, 4);
  const header = Buffer.alloc(20);
  header[0] = 1;
  header.writeUInt16LE(0x8004, 2);
  header.writeUInt32LE(20, 16);
  return Buffer.concat([header, acl]);
}

const USER = 'S-1-5-21-1-2-3-1105';
const GROUP = 'S-1-5-21-1-2-3-1200';
const LCRP = 0x14;

describe('DACL access check', () => {
  test('List Contents and Read Property granted through a group the account is in', () => {
    const aces = daclOf(sd([ace(0, 0x10, 'S-1-5-18'), ace(0, LCRP, GROUP)]));
    expect(aces.map((a) => a.sid)).toEqual(['S-1-5-18', GROUP]);
    expect(granted(aces, new Set([USER, GROUP]), LCRP)).toBe(true);
    expect(granted(aces, new Set([USER]), LCRP)).toBe(false);
  });
  test('a deny before the allow refuses; half the rights is not enough; inherit-only ACEs do not count', () => {
    expect(granted(daclOf(sd([ace(1, 0x4, USER), ace(0, LCRP, GROUP)])), new Set([USER, GROUP]), LCRP)).toBe(false);
    expect(granted(daclOf(sd([ace(0, 0x4, USER)])), new Set([USER]), LCRP)).toBe(false);
    expect(granted(daclOf(sd([ace(0, LCRP, USER, { inheritOnly: true })])), new Set([USER]), LCRP)).toBe(false);
  });
  test('an extended right: an object ACE with its GUID (or none) grants it; another GUID does not', () => {
    const right = (o?: string) => daclOf(sd([ace(5, 0x100, USER, o ? { objectType: o } : {})]));
    expect(granted(right(REPLICATING_DIRECTORY_CHANGES), new Set([USER]), 0x100, REPLICATING_DIRECTORY_CHANGES)).toBe(true);
    expect(granted(right('1131f6ad-9c07-11d1-f79f-00c04fc2dcd2'), new Set([USER]), 0x100, REPLICATING_DIRECTORY_CHANGES)).toBe(false);
    expect(granted(right(), new Set([USER]), 0x100, REPLICATING_DIRECTORY_CHANGES)).toBe(true);
  });
});

describe("Samba's DirSync and deletes", () => {
  /** A session whose root DSE is `root` (the only read these checks make when the rights are given). */
  const session = (root: LdapEntry) => ({ search: async () => [root] }) as unknown as DirectorySession;
  const samba = session({ dn: '', vendorVersion: '4.17.12-Debian' } as LdapEntry);
  const windows = session({ dn: '', supportedCapabilities: ['1.2.840.113556.1.4.800'] } as LdapEntry);
  const rights = (administrator: boolean) => ({ seesDeletedObjects: administrator, replicatingDirectoryChanges: true, administrator });

  test('Samba is told by the vendorVersion of its root DSE; Windows publishes none', async () => {
    expect(await isSambaDc(samba)).toBe(true);
    expect(await isSambaDc(windows)).toBe(false);
  });

  test('a non-administrator on Samba would miss deletes: the message names the account, the missing right and the fixes', async () => {
    const message = await dirSyncMissesDeletes(samba, 'CN=svc,CN=Users,DC=corp,DC=test', 'DC=corp,DC=test', rights(false));
    expect(message).toMatch(/^deltaStrategy dirsync: the DC is Samba, whose DirSync returns deleted objects to administrators only/);
    expect(message).toMatch(/the bind account CN=svc,CN=Users,DC=corp,DC=test lacks that right \(it is not a member of Domain Admins/);
    expect(message).toMatch(/Bind as a member of Domain Admins, or use deltaStrategy timestamp/);
    expect(await dirSyncMissesDeletes(samba, 'CN=Administrator,CN=Users,DC=corp,DC=test', 'DC=corp,DC=test', rights(true))).toBeUndefined();
    expect(await dirSyncMissesDeletes(windows, 'CN=svc,CN=Users,DC=corp,DC=test', 'DC=corp,DC=test', rights(false))).toBeUndefined();
  });
});
