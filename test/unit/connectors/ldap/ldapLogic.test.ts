import { capSeen, MAX_SEEN, type DeltaContext } from '../../../../lib/connectors/ldap/delta';
import { DnFates } from '../../../../lib/connectors/ldap/deltaAccesslog';
import { deltaStrategyFor } from '../../../../lib/connectors/ldap/strategies';
import { LdapConnector } from '../../../../lib/connectors/ldap/ldapConnector';
import { completeRanges, toConnectorObject, type Scope } from '../../../../lib/connectors/ldap/objects';
import type { DirectorySession, LdapEntry, SearchRequest } from '../../../../lib/connectors/ldap/session';
import { guidToBytes, guidToString, isUnder, normalizeDn, plainDnLower, sidToString } from '../../../../lib/connectors/ldap/values';
import { dnKey } from '../../../../lib/mesh/model';
import type { DeltaPage } from '../../../../lib/connectors/sdk';

/**
 * Active Directory logic with recorded server responses (no AD here): the answers below are what a DC returns
 * for these requests (values shortened). A session replays them by matching the request's filter.
 */
class RecordedSession implements DirectorySession {
  readonly requests: SearchRequest[] = [];
  constructor(private readonly answers: Array<{ match: (r: SearchRequest) => boolean; entries: LdapEntry[] }>) {}
  async search(req: SearchRequest): Promise<LdapEntry[]> {
    this.requests.push(req);
    return this.answers.find((a) => a.match(req))?.entries ?? [];
  }
  async *searchPages(req: SearchRequest): AsyncGenerator<LdapEntry[]> {
    yield await this.search(req);
  }
  async add(): Promise<undefined> {
    return undefined;
  }
  async modify(): Promise<void> {}
  async del(): Promise<void> {}
  async modifyDN(): Promise<void> {}
  async close(): Promise<void> {}
}

const GUID = '3f2504e0-4f89-11d3-9a0c-0305e82c3301';
const GUID2 = '6b29fc40-ca47-1067-b31d-00dd010662da';
const SID = Buffer.from('010500000000000515000000a065cf7e784b9b5fe77c8770f4010000', 'hex');
const adScope: Scope = {
  classes: new Map([
    ['user', 'User'],
    ['group', 'Group'],
  ]),
  anchorAttribute: 'objectGUID',
  include: ['DC=corp,DC=test'],
  exclude: [],
  isAd: true,
};

describe('values', () => {
  test('objectGUID and objectSid as canonical strings', () => {
    expect(guidToString(guidToBytes(GUID))).toBe(GUID);
    expect(guidToBytes(GUID).subarray(0, 4).toString('hex')).toBe('e004253f');
    expect(sidToString(SID)).toBe('S-1-5-21-2127521184-1604012920-1887927527-500');
  });
  test('DNs compare case- and space-insensitively', () => {
    expect(normalizeDn('CN=A, OU=People ,DC=Corp')).toBe('cn=a,ou=people,dc=corp');
    expect(isUnder('uid=x,ou=People,dc=corp', 'OU=people,DC=corp')).toBe(true);
    expect(isUnder('uid=x,ou=peoplex,dc=corp', 'ou=people,dc=corp')).toBe(false);
  });
  test('a plain DN is only lower-cased; any other goes through the parser, with the same result as before', () => {
    expect(plainDnLower('CN=Ann Lee,OU=People,DC=Corp')).toBe('cn=ann lee,ou=people,dc=corp');
    for (const dn of [
      'CN=A, OU=People',
      ' cn=a,ou=b',
      'cn=a ,ou=b',
      'cn =a',
      'cn= a',
      'cn=a+ sn=b',
      'cn=a\\,b,ou=c',
      'cn="a,b",ou=c',
      'cn=a\u00a0,ou=b',
      'cn=a\t',
    ]) {
      expect(plainDnLower(dn)).toBeUndefined();
    }
    // The fast path gives what the parser and the key's blank rule give for plain DNs.
    for (const dn of [
      'CN=Ann Lee,OU=People,DC=Corp',
      'uid=u000001,ou=people,dc=example,dc=com',
      'cn=a=b,ou=c',
      'cn=ΟΔΟΣ,ou=x',
      'cn=a,,ou=b',
      'cn=a+sn=B,ou=c',
    ]) {
      expect(normalizeDn(dn)).toBe(dn.toLowerCase());
      expect(dnKey(dn)).toBe(dn.toLowerCase());
    }
    // The connector's key and the mesh's are one (lib/core/ldapName.ts): a blank inside a value is kept.
    expect(normalizeDn('cn=a =b,ou=c')).toBe('cn=a =b,ou=c');
    expect(dnKey('cn=a =b,ou=c')).toBe('cn=a =b,ou=c');
  });
  test('DNs spelled with different escapes have one key in the connector and in the mesh', () => {
    for (const [a, b] of [
      ['uid=E1,ou=Sales\\, EMEA,ou=people,dc=example,dc=com', 'uid=E1,ou=Sales\\2C EMEA,ou=people,dc=example,dc=com'],
      ['CN=Smith\\, John,OU=Users,DC=corp', 'cn="Smith, John",ou=users,dc=corp'],
      ['cn=Jos\\c3\\a9 Admins,dc=x', 'cn=José Admins,dc=x'],
      ['cn=a+uid=b,dc=x', 'uid=b+cn=a,dc=x'],
    ]) {
      expect(normalizeDn(a)).toBe(normalizeDn(b));
      expect(dnKey(a)).toBe(dnKey(b));
      expect(dnKey(a)).toBe(normalizeDn(a));
    }
    expect(isUnder('uid=E1,ou=Sales\\2C EMEA,dc=corp', 'OU=Sales\\, EMEA,DC=corp')).toBe(true);
    // An escaped comma is not a separator: `cn=a\,dc=corp` is one RDN, not an entry below dc=corp.
    expect(isUnder('cn=a\\,dc=corp', 'dc=corp')).toBe(false);
    expect(isUnder('cn=a\\2Cdc=corp', 'dc=corp')).toBe(false);
  });
});

describe('AD ranged retrieval (member;range=)', () => {
  test('reads every slice until the range ends in *', async () => {
    const first = Array.from({ length: 1500 }, (_, i) => `CN=U${i},DC=corp,DC=test`);
    const second = Array.from({ length: 1500 }, (_, i) => `CN=U${1500 + i},DC=corp,DC=test`);
    const last = ['CN=U3000,DC=corp,DC=test'];
    const s = new RecordedSession([
      { match: (r) => r.attributes[0] === 'member;range=1500-*', entries: [{ dn: 'CN=Big,DC=corp,DC=test', 'member;range=1500-2999': second }] },
      { match: (r) => r.attributes[0] === 'member;range=3000-*', entries: [{ dn: 'CN=Big,DC=corp,DC=test', 'member;range=3000-*': last }] },
    ]);
    const entry: LdapEntry = {
      dn: 'CN=Big,DC=corp,DC=test',
      objectClass: ['top', 'group'],
      objectGUID: guidToBytes(GUID),
      cn: 'Big',
      'member;range=0-1499': first,
      member: [],
    };
    const whole = await completeRanges(s, entry);
    expect(whole.member).toHaveLength(3001);
    expect(Object.keys(whole).filter((k) => k.startsWith('member'))).toEqual(['member']);
    const o = await toConnectorObject(s, entry, adScope);
    expect(o).toMatchObject({ anchor: GUID, objectType: 'Group', container: 'DC=corp,DC=test' });
    expect((o as { references: Record<string, string[]> }).references.member).toHaveLength(3001);
  });
  test('with a range size, each follow-up asks for one slice; the last answer ends in *', async () => {
    const dn = 'CN=Big,DC=corp,DC=test';
    const values = Array.from({ length: 2500 }, (_, i) => `CN=U${i},DC=corp,DC=test`);
    // As Samba answers an explicit range: the slice asked for, or `from-*` when it reaches the last value.
    // ldapts also lists the attribute asked for, with no values, when the DC answered another name.
    const s = new RecordedSession([
      { match: (r) => r.attributes[0] === 'member;range=1000-1999', entries: [{ dn, 'member;range=1000-1999': values.slice(1000, 2000) }] },
      {
        match: (r) => r.attributes[0] === 'member;range=2000-2999',
        entries: [{ dn, 'member;range=2000-2999': [], 'member;range=2000-*': values.slice(2000) }],
      },
    ]);
    const o = await toConnectorObject(
      s,
      { dn, objectClass: ['top', 'group'], objectGUID: guidToBytes(GUID), 'member;range=0-999': values.slice(0, 1000) },
      { ...adScope, rangeSize: 1000 },
    );
    expect(s.requests.map((r) => [r.base, r.scope, r.attributes])).toEqual([
      [dn, 'base', ['member;range=1000-1999']],
      [dn, 'base', ['member;range=2000-2999']],
    ]);
    expect((o as { attributes: Record<string, string[]> }).attributes.member).toEqual(values);
    expect(Object.keys((o as { attributes: Record<string, unknown> }).attributes).filter((k) => /member/i.test(k))).toEqual(['member']);
  });
  test('an entry without the attribute (ldapts lists it with no values) is read once, and has no member', async () => {
    const s = new RecordedSession([]);
    const u = await toConnectorObject(
      s,
      { dn: 'CN=Ann,DC=corp,DC=test', objectClass: ['top', 'person', 'user'], objectGUID: guidToBytes(GUID), 'member;range=0-999': [] },
      { ...adScope, rangeSize: 1000 },
    );
    expect(s.requests).toEqual([]);
    expect(Object.keys((u as { attributes: Record<string, unknown> }).attributes).filter((k) => /member/i.test(k))).toEqual([]);
  });
  test('values that end exactly at a slice end: a follow-up without the attribute ends the read', async () => {
    const dn = 'CN=Even,DC=corp,DC=test';
    const values = Array.from({ length: 1000 }, (_, i) => `CN=U${i},DC=corp,DC=test`);
    const s = new RecordedSession([{ match: () => true, entries: [{ dn, 'member;range=1000-1999': [] }] }]);
    const whole = await completeRanges(s, { dn, 'member;range=0-999': values }, 1000);
    expect(s.requests.map((r) => r.attributes)).toEqual([['member;range=1000-1999']]);
    expect(whole.member).toEqual(values);
  });
  test('a slice that does not start where it was asked, or an entry gone in between: an object error, never a partial member', async () => {
    const dn = 'CN=Odd,DC=corp,DC=test';
    const entry: LdapEntry = { dn, objectClass: ['top', 'group'], objectGUID: guidToBytes(GUID), 'member;range=0-9': ['CN=A,DC=corp,DC=test'] };
    const shifted = new RecordedSession([{ match: () => true, entries: [{ dn, 'member;range=5-*': ['CN=B,DC=corp,DC=test'] }] }]);
    expect(await toConnectorObject(shifted, entry, adScope)).toMatchObject({
      code: 'object_error',
      anchor: GUID,
      location: dn,
      message: expect.stringContaining('member;range=5-*'),
    });
    const gone = new RecordedSession([]);
    expect(await toConnectorObject(gone, entry, adScope)).toMatchObject({ code: 'object_error', message: expect.stringContaining('was gone') });
  });
  test('the attributes a search asks for: active_directory asks for the first slice of member', () => {
    const config = { host: 'dc1', baseDN: 'DC=corp,DC=test', bindDN: 'CN=svc,DC=corp,DC=test', bindPassword: 'x' };
    expect(new LdapConnector('active_directory', config).readAttributes).toEqual(['*', 'objectClass', 'objectGUID', 'member;range=0-1499']);
    expect(new LdapConnector('active_directory', { ...config, memberRangeSize: 1000, attributes: ['cn', 'Member'] }).readAttributes).toEqual([
      'cn',
      'member;range=0-999',
      'objectClass',
      'objectGUID',
    ]);
    expect(new LdapConnector('active_directory', { ...config, attributes: ['cn'] }).readAttributes).toEqual(['cn', 'objectClass', 'objectGUID']);
    expect(new LdapConnector('ldap', { ...config, anchorAttribute: 'entryUUID' }).readAttributes).toEqual(['*', 'objectClass', 'entryUUID']);
  });
  test("the rules' attributes (an import's connector): those, the anchor, objectClass and the reference attributes; configured attributes win", () => {
    const config = { host: 'dc1', baseDN: 'DC=corp,DC=test', bindDN: 'CN=svc,DC=corp,DC=test', bindPassword: 'x' };
    // Before the directory's schema is read: the well-known reference attributes, as directories spell them.
    expect(new LdapConnector('active_directory', config, ['sn', 'title', 'Manager']).readAttributes).toEqual([
      'sn',
      'title',
      'Manager',
      'objectClass',
      'objectGUID',
      'secretary',
      'member;range=0-1499',
      'uniqueMember',
      'owner',
      'managedBy',
    ]);
    expect(new LdapConnector('ldap', { ...config, anchorAttribute: 'entryUUID' }, ['mail']).readAttributes).toEqual([
      'mail',
      'objectClass',
      'entryUUID',
      'manager',
      'secretary',
      'member',
      'uniqueMember',
      'owner',
      'managedBy',
    ]);
    // Configured attributes (a list, or `*`) are read as they are, whatever the rules use.
    expect(new LdapConnector('active_directory', { ...config, attributes: ['cn'] }, ['sn']).readAttributes).toEqual(['cn', 'objectClass', 'objectGUID']);
    expect(new LdapConnector('active_directory', { ...config, attributes: ['*'] }, ['sn']).readAttributes).toEqual([
      '*',
      'objectClass',
      'objectGUID',
      'member;range=0-1499',
    ]);
  });
  test('a computer is not a User; objectSid is a string', async () => {
    const s = new RecordedSession([]);
    expect(
      await toConnectorObject(s, { dn: 'CN=PC1,DC=corp,DC=test', objectClass: ['top', 'person', 'user', 'computer'], objectGUID: guidToBytes(GUID) }, adScope),
    ).toBeUndefined();
    const u = await toConnectorObject(
      s,
      { dn: 'CN=Ann,OU=Staff,DC=corp,DC=test', objectClass: ['top', 'person', 'user'], objectGUID: guidToBytes(GUID), objectSid: SID },
      adScope,
    );
    expect(u).toMatchObject({
      objectType: 'User',
      attributes: { objectSid: 'S-1-5-21-2127521184-1604012920-1887927527-500', objectGUID: GUID },
      container: 'OU=Staff,DC=corp,DC=test',
    });
  });
});

function adContext(s: DirectorySession): DeltaContext {
  return {
    session: s,
    scope: adScope,
    baseDN: 'DC=corp,DC=test',
    configured: 'auto',
    readAttributes: ['*', 'objectGUID'],
    toObject: (e) => toConnectorObject(s, e, adScope),
    lookup: async () => new Map(),
  };
}
const ROOT = (
  usn: string,
  ds = 'CN=NTDS Settings,CN=DC1,CN=Servers,CN=Site,CN=Sites,CN=Configuration,DC=corp,DC=test',
  time = '20250301120000.0Z',
): LdapEntry => ({
  dn: '',
  supportedCapabilities: ['1.2.840.113556.1.4.800', '1.2.840.113556.1.4.1670'],
  highestCommittedUSN: usn,
  dsServiceName: ds,
  currentTime: time,
  configurationNamingContext: 'CN=Configuration,DC=corp,DC=test',
});
async function collect(it: AsyncIterable<DeltaPage>): Promise<DeltaPage[]> {
  const out: DeltaPage[] = [];
  for await (const p of it) out.push(p);
  return out;
}

describe('usn strategy (Active Directory, recorded responses)', () => {
  test('auto picks usn from the root DSE; capture stores highestCommittedUSN and the DC', async () => {
    const s = new RecordedSession([{ match: (r) => r.base === '', entries: [ROOT('12000')] }]);
    const strategy = await deltaStrategyFor(adContext(s));
    expect(strategy.name).toBe('usn');
    expect(JSON.parse(await strategy.capture())).toMatchObject({ s: 'usn', u: 12000 });
  });

  test('changes by uSNChanged (add vs update by uSNCreated), deletes from tombstones with Show Deleted', async () => {
    const s = new RecordedSession([
      { match: (r) => r.base === '', entries: [ROOT('12050')] },
      { match: (r) => r.base.startsWith('CN=Directory Service'), entries: [{ dn: 'x', tombstoneLifetime: '180' }] },
      {
        match: (r) => r.filter.includes('uSNChanged>=12001') && !r.filter.includes('isDeleted'),
        entries: [
          { dn: 'CN=New,OU=Staff,DC=corp,DC=test', objectClass: ['top', 'person', 'user'], objectGUID: guidToBytes(GUID), uSNCreated: '12010', cn: 'New' },
          {
            dn: 'CN=Grp,OU=Groups,DC=corp,DC=test',
            objectClass: ['top', 'group'],
            objectGUID: guidToBytes(GUID2),
            uSNCreated: '500',
            cn: 'Grp',
            member: 'CN=New,OU=Staff,DC=corp,DC=test',
          },
        ],
      },
      {
        match: (r) => r.filter.includes('isDeleted=TRUE'),
        entries: [
          {
            dn: 'CN=Old\\0ADEL:1234,CN=Deleted Objects,DC=corp,DC=test',
            objectGUID: guidToBytes('11111111-2222-3333-4444-555555555555'),
            lastKnownParent: 'OU=Staff,DC=corp,DC=test',
          },
        ],
      },
    ]);
    const strategy = await deltaStrategyFor(adContext(s));
    const pages = await collect(strategy.delta(JSON.stringify({ s: 'usn', u: 12000, ds: ROOT('0').dsServiceName, t: '20250301110000.0Z' }), { pageSize: 100 }));
    const changes = pages.flatMap((p) => p.changes);
    expect(changes.map((c) => [c.kind, c.anchor])).toEqual([
      ['add', GUID],
      ['update', GUID2],
      ['delete', '11111111-2222-3333-4444-555555555555'],
    ]);
    expect(changes[1].object!.references!.member).toEqual(['CN=New,OU=Staff,DC=corp,DC=test']);
    expect(JSON.parse(pages[pages.length - 1].nextWatermark!)).toMatchObject({ s: 'usn', u: 12050 });
    const tomb = s.requests.find((r) => r.filter.includes('isDeleted'))!;
    expect(tomb.controls![0].type).toBe('1.2.840.113556.1.4.417');
  });

  test('another DC, a restored DC, or a watermark past the tombstone lifetime: full import with a reason', async () => {
    const wm = (o: object) => JSON.stringify({ s: 'usn', u: 12000, ds: ROOT('0').dsServiceName, t: '20250301110000.0Z', ...o });
    const run = async (root: LdapEntry, w: string) => {
      const s = new RecordedSession([
        { match: (r) => r.base === '', entries: [root] },
        { match: (r) => r.base.startsWith('CN=Directory Service'), entries: [{ dn: 'x', tombstoneLifetime: '60' }] },
      ]);
      return (await collect((await deltaStrategyFor(adContext(s))).delta(w, { pageSize: 10 })))[0].fullImportRequired?.reason;
    };
    expect(await run(ROOT('12050', 'CN=NTDS Settings,CN=DC2'), wm({}))).toMatch(/another domain controller/);
    expect(await run(ROOT('11000'), wm({}))).toMatch(/restored/);
    expect(await run(ROOT('12050', undefined, '20250601110000.0Z'), wm({}))).toMatch(/tombstone lifetime/);
    expect(await run(ROOT('12050'), JSON.stringify({ s: 'accesslog' }))).toMatch(/accesslog/);
  });
});

describe('changelog strategy (recorded cn=changelog)', () => {
  test('changes after the stored number; a trimmed log asks for a full import', async () => {
    const scope: Scope = { classes: new Map([['inetorgperson', 'User']]), anchorAttribute: 'entryUUID', include: ['dc=x'], exclude: [], isAd: false };
    const root = (firstN: string, lastN: string): LdapEntry => ({ dn: '', changelog: 'cn=changelog', firstChangeNumber: firstN, lastChangeNumber: lastN });
    const user = { dn: 'uid=a,ou=p,dc=x', objectClass: 'inetOrgPerson', entryUUID: 'u-a', uid: 'a' };
    const s = new RecordedSession([
      { match: (r) => r.base === '', entries: [root('5', '9')] },
      {
        match: (r) => r.base === 'cn=changelog',
        entries: [
          { dn: 'changenumber=8,cn=changelog', changeNumber: '8', changeType: 'modify', targetDN: 'uid=a,ou=p,dc=x', targetEntryUUID: 'u-a' },
          { dn: 'changenumber=9,cn=changelog', changeNumber: '9', changeType: 'delete', targetDN: 'uid=b,ou=p,dc=x', targetEntryUUID: 'u-b' },
        ],
      },
    ]);
    const ctx: DeltaContext = {
      session: s,
      scope,
      baseDN: 'dc=x',
      configured: 'auto',
      readAttributes: ['*'],
      toObject: (e) => toConnectorObject(s, e, scope),
      lookup: async () => new Map([['u-a', user]]),
    };
    const strategy = await deltaStrategyFor(ctx);
    expect(strategy.name).toBe('changelog');
    const pages = await collect(strategy.delta(JSON.stringify({ s: 'changelog', n: 7 }), { pageSize: 10 }));
    expect(pages.flatMap((p) => p.changes).map((c) => [c.kind, c.anchor])).toEqual([
      ['update', 'u-a'],
      ['delete', 'u-b'],
    ]);
    expect(JSON.parse(pages[pages.length - 1].nextWatermark!)).toEqual({ s: 'changelog', n: 9 });
    const trimmed = await collect(strategy.delta(JSON.stringify({ s: 'changelog', n: 2 }), { pageSize: 10 }));
    expect(trimmed[0].fullImportRequired?.reason).toMatch(/trimmed/);
  });
});

describe('accesslog watermark bounds', () => {
  const csn = (i: number) => `20261122040501.${String(i).padStart(6, '0')}Z#000000#000#000000`;

  it('keeps the floor and every value seen while they are few', () => {
    const seen = Array.from({ length: MAX_SEEN }, (_, i) => csn(i));
    expect(capSeen(csn(0), seen)).toEqual({ floor: csn(0), seen });
  });

  it('after a bulk load inside the overlap window, moves the floor to the newest value and keeps only it', () => {
    const seen = Array.from({ length: 100_000 }, (_, i) => csn(i % 50_000));
    const capped = capSeen(csn(0), seen);
    expect(capped).toEqual({ floor: csn(49_999), seen: [csn(49_999)] });
    expect(JSON.stringify(capped).length).toBeLessThan(200);
  });
});

describe('accesslog: what refint will do, applied to what a delta read (DnFates)', () => {
  const base = 'dc=example,dc=test';
  const u = (k: string, ou = 'People') => `uid=${k},ou=${ou},${base}`;
  const del = (dn: string): LdapEntry => ({ dn: `reqStart=1,cn=accesslog`, reqType: 'delete', reqDN: dn });
  const add = (dn: string): LdapEntry => ({ dn: `reqStart=2,cn=accesslog`, reqType: 'add', reqDN: dn });
  const modrdn = (dn: string, rdn: string, superior?: string): LdapEntry => ({
    dn: `reqStart=3,cn=accesslog`,
    reqType: 'modrdn',
    reqDN: dn,
    reqNewRDN: rdn,
    ...(superior ? { reqNewSuperior: superior } : {}),
  });
  const group = (members: string[], extra: Record<string, string | string[]> = {}): LdapEntry => ({
    dn: `cn=g,ou=Groups,${base}`,
    cn: 'g',
    member: members,
    ...extra,
  });

  it('drops a deleted DN and rewrites a renamed one, last among the values (as refint writes it); other attributes stay', () => {
    const fates = DnFates.of([del(u('E4')), modrdn(u('E1'), 'uid=E1', `ou=Sales,${base}`)]);
    const e = group([u('E1'), u('E2'), u('E4'), u('E3')], { description: u('E4') });
    const out = fates.apply(e);
    expect(out.member).toEqual([u('E2'), u('E3'), u('E1', 'Sales')]);
    expect(out.description).toBe(u('E4'));
    expect(e.member).toEqual([u('E1'), u('E2'), u('E4'), u('E3')]); // the entry read is not changed
  });

  it('matches DNs as the directory compares them (case, spaces after commas), in any reference attribute', () => {
    const fates = DnFates.of([del(u('E4'))]);
    const out = fates.apply({ dn: u('E9'), manager: 'UID=E4, OU=People, DC=example, DC=test', secretary: [u('E5')] });
    expect(out.manager).toBeUndefined();
    expect('manager' in out).toBe(false); // the last value gone removes the attribute, as in the directory
    expect(out.secretary).toEqual([u('E5')]);
  });

  it('leaves entries without affected values as they are (the same object)', () => {
    const fates = DnFates.of([del(u('E4'))]);
    const e = group([u('E1')]);
    expect(fates.apply(e)).toBe(e);
    expect(DnFates.of([]).apply(e)).toBe(e);
  });

  it('follows the log in order: renames chain, a rename then a delete drops, a DN added again is left alone', () => {
    expect(DnFates.of([modrdn(u('A'), 'uid=B'), modrdn(u('B'), 'uid=C')]).apply(group([u('A'), u('B')])).member).toEqual([u('C')]);
    expect(DnFates.of([modrdn(u('A'), 'uid=B'), del(u('B'))]).apply(group([u('A'), u('X')])).member).toEqual([u('X')]);
    // Deleted, then a new entry with the same DN: a value naming it names the new entry.
    expect(DnFates.of([del(u('A')), add(u('A'))]).apply(group([u('A')])).member).toEqual([u('A')]);
    // Renamed away, then another entry renamed into the old DN: a value naming A names an entry (left alone),
    // C's value becomes A (once).
    expect(DnFates.of([modrdn(u('A'), 'uid=B'), modrdn(u('C'), 'uid=A')]).apply(group([u('A'), u('C')])).member).toEqual([u('A')]);
    expect(DnFates.of([modrdn(u('A'), 'uid=B'), modrdn(u('C'), 'uid=A')]).apply(group([u('C'), u('X')])).member).toEqual([u('X'), u('A')]);
    // A case-only rename keeps the value as it is.
    expect(DnFates.of([modrdn(u('abc'), 'uid=ABC')]).apply(group([u('abc')])).member).toEqual([u('abc')]);
  });
});
