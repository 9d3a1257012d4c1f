import type { DeltaContext } from '../../../../lib/connectors/ldap/delta';
import { placeChangedSince, tombstoneDn } from '../../../../lib/connectors/ldap/deltaUsn';
import { deltaStrategyFor } from '../../../../lib/connectors/ldap/strategies';
import { toConnectorObject, type Scope } from '../../../../lib/connectors/ldap/objects';
import type { DirectorySession, LdapEntry, SearchRequest } from '../../../../lib/connectors/ldap/session';
import { guidToBytes } from '../../../../lib/connectors/ldap/values';
import type { DeltaChange } from '../../../../lib/connectors/sdk';

/**
 * The usn strategy's handling of what Active Directory changes without moving the referring entries' uSNChanged
 * (pure logic with a scripted session; the same behaviour is tested against a Samba AD DC in
 * test/integration/ldap/adDelta.test.ts).
 */
class ScriptedSession implements DirectorySession {
  readonly requests: SearchRequest[] = [];
  constructor(private readonly answer: (r: SearchRequest) => LdapEntry[]) {}
  async search(req: SearchRequest): Promise<LdapEntry[]> {
    this.requests.push(req);
    return this.answer(req);
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

/** replPropertyMetaData version 1 with the given (attid, local USN) pairs. */
function metadata(entries: Array<[number, number]>): Buffer {
  const b = Buffer.alloc(16 + entries.length * 48);
  b.writeUInt32LE(1, 0);
  b.writeUInt32LE(entries.length, 8);
  entries.forEach(([attid, usn], i) => {
    const at = 16 + i * 48;
    b.writeUInt32LE(attid, at);
    b.writeUInt32LE(1, at + 4);
    b.writeBigUInt64LE(BigInt(usn), at + 32);
    b.writeBigUInt64LE(BigInt(usn), at + 40);
  });
  return b;
}
const NAME = 0x00090001;
const CN = 0x00000003;

const G = (n: number) => `0000000${n}-0000-4000-8000-000000000000`;
const scope = (include: string[], exclude: string[] = []): Scope => ({
  classes: new Map([
    ['user', 'User'],
    ['group', 'Group'],
  ]),
  anchorAttribute: 'objectGUID',
  include,
  exclude,
  isAd: true,
});
const ROOT: LdapEntry = {
  dn: '',
  supportedCapabilities: ['1.2.840.113556.1.4.800'],
  highestCommittedUSN: '200',
  dsServiceName: 'CN=NTDS Settings,CN=DC1',
  currentTime: '20260101120000.0Z',
  namingContexts: ['DC=corp,DC=test', 'CN=Configuration,DC=corp,DC=test'],
  defaultNamingContext: 'DC=corp,DC=test',
};
const WM = JSON.stringify({ s: 'usn', u: 100, ds: 'CN=NTDS Settings,CN=DC1', t: '20260101110000.0Z' });

function ctx(s: DirectorySession, sc: Scope): DeltaContext {
  return {
    session: s,
    scope: sc,
    baseDN: 'DC=corp,DC=test',
    configured: 'usn',
    readAttributes: ['*', 'objectGUID'],
    toObject: (e) => toConnectorObject(s, e, sc),
    lookup: async () => new Map(),
  };
}
async function changes(s: DirectorySession, sc: Scope): Promise<DeltaChange[]> {
  const out: DeltaChange[] = [];
  for await (const p of (await deltaStrategyFor(ctx(s, sc))).delta(WM, { pageSize: 100 })) out.push(...p.changes);
  return out;
}
const user = (n: number, dn: string, extra: Partial<LdapEntry> = {}): LdapEntry => ({
  dn,
  objectClass: ['top', 'person', 'user'],
  objectGUID: guidToBytes(G(n)),
  cn: dn.slice(3, dn.indexOf(',')),
  ...extra,
});

describe('replication metadata and tombstones', () => {
  test("a rename or move shows in the name attribute's local USN", () => {
    const e = {
      dn: 'x',
      replPropertyMetaData: metadata([
        [CN, 150],
        [NAME, 150],
      ]),
    };
    expect(placeChangedSince(e, 100)).toBe(true);
    expect(
      placeChangedSince(
        {
          dn: 'x',
          replPropertyMetaData: metadata([
            [CN, 150],
            [NAME, 90],
          ]),
        },
        100,
      ),
    ).toBe(false);
    expect(placeChangedSince({ dn: 'x' }, 100)).toBeUndefined();
    expect(placeChangedSince({ dn: 'x', replPropertyMetaData: Buffer.from('garbage') }, 100)).toBeUndefined();
  });
  test("a tombstone's former DN from its mangled name (or msDS-LastKnownRDN) and lastKnownParent", () => {
    const t = { dn: 'CN=Ann\\0ADEL:1234,CN=Deleted Objects,DC=corp,DC=test', name: 'Ann\nDEL:1234', lastKnownParent: 'OU=Staff,DC=corp,DC=test' };
    expect(tombstoneDn(t)).toBe('CN=Ann,OU=Staff,DC=corp,DC=test');
    expect(tombstoneDn({ ...t, 'msDS-LastKnownRDN': 'Smith, Ann' })).toBe('CN=Smith\\, Ann,OU=Staff,DC=corp,DC=test');
    expect(tombstoneDn({ dn: t.dn })).toBeUndefined();
  });
});

describe('usn delta: linked values and moves out of scope', () => {
  test('the entries naming a moved member or manager are read by its new DN and returned as updates; an only-modified entry costs no such search', async () => {
    const moved = user(1, 'CN=Ann,OU=B,DC=corp,DC=test', { replPropertyMetaData: metadata([[NAME, 150]]), uSNCreated: '10' });
    const edited = user(2, 'CN=Bob,OU=A,DC=corp,DC=test', { replPropertyMetaData: metadata([[NAME, 20]]), uSNCreated: '10', title: 'x' });
    const group: LdapEntry = {
      dn: 'CN=G,OU=A,DC=corp,DC=test',
      objectClass: ['top', 'group'],
      objectGUID: guidToBytes(G(3)),
      member: ['CN=Ann,OU=B,DC=corp,DC=test', 'CN=Bob,OU=A,DC=corp,DC=test'],
    };
    const report = user(4, 'CN=Cy,OU=A,DC=corp,DC=test', { manager: 'CN=Ann,OU=B,DC=corp,DC=test' });
    const s = new ScriptedSession((r) => {
      if (r.base === '') return [ROOT];
      if (r.filter.includes('isDeleted')) return [];
      if (r.filter.includes('uSNChanged>=101')) return [moved, edited];
      if (r.filter.includes('(member=CN=Ann,OU=B,DC=corp,DC=test)')) return [group, report];
      return [];
    });
    const out = await changes(s, scope(['DC=corp,DC=test']));
    expect(out.map((c) => [c.kind, c.anchor])).toEqual([
      ['update', G(1)],
      ['update', G(2)],
      ['update', G(3)],
      ['update', G(4)],
    ]);
    expect(out[0].object!.attributes).not.toHaveProperty('replPropertyMetaData');
    expect(out[2].object!.references!.member).toEqual(['CN=Ann,OU=B,DC=corp,DC=test', 'CN=Bob,OU=A,DC=corp,DC=test']);
    expect(out[3].object!.references!.manager).toEqual(['CN=Ann,OU=B,DC=corp,DC=test']);
    const refSearches = s.requests.filter((r) => r.filter.includes('(member='));
    expect(refSearches).toHaveLength(1);
    expect(refSearches[0].filter).toContain('(manager=CN=Ann,OU=B,DC=corp,DC=test)');
    expect(refSearches[0].filter).not.toContain('Bob');
  });

  test('an entry moved out of the included containers is a delete; one only modified out there is not; the search of the domain asks for no attribute values', async () => {
    const gone = user(5, 'CN=Dee,OU=Elsewhere,DC=corp,DC=test', { replPropertyMetaData: metadata([[NAME, 160]]), uSNCreated: '10' });
    const neverIn = user(6, 'CN=Eve,OU=Elsewhere,DC=corp,DC=test', { replPropertyMetaData: metadata([[NAME, 50]]), uSNCreated: '10' });
    const inside = user(7, 'CN=Fay,OU=Staff,DC=corp,DC=test', { replPropertyMetaData: metadata([[NAME, 30]]), uSNCreated: '10' });
    const s = new ScriptedSession((r) => {
      if (r.base === '') return [ROOT];
      if (r.filter.includes('isDeleted')) return [];
      if (r.filter.includes('uSNChanged>=101') && r.base === 'OU=Staff,DC=corp,DC=test') return [inside];
      if (r.filter.includes('uSNChanged>=101') && r.base === 'DC=corp,DC=test') return [gone, neverIn, inside];
      return [];
    });
    const out = await changes(s, scope(['OU=Staff,DC=corp,DC=test']));
    expect(out.map((c) => [c.kind, c.anchor, c.objectType])).toEqual([
      ['update', G(7), 'User'],
      ['delete', G(5), 'User'],
    ]);
    const outer = s.requests.find((r) => r.base === 'DC=corp,DC=test' && r.filter.includes('uSNChanged'))!;
    expect(outer.attributes).not.toContain('*');
  });

  test('a moved-out entry in an excluded container is a delete too', async () => {
    const gone = user(8, 'CN=Gil,OU=Disabled,OU=Staff,DC=corp,DC=test', { replPropertyMetaData: metadata([[NAME, 160]]), uSNCreated: '10' });
    const s = new ScriptedSession((r) => {
      if (r.base === '') return [ROOT];
      if (r.filter.includes('isDeleted')) return [];
      if (r.filter.includes('uSNChanged>=101')) return [gone];
      return [];
    });
    const out = await changes(s, scope(['DC=corp,DC=test'], ['OU=Disabled,OU=Staff,DC=corp,DC=test']));
    expect(out.map((c) => [c.kind, c.anchor])).toEqual([['delete', G(8)]]);
  });

  test('a delete names the DN the object had (not its tombstone DN)', async () => {
    const s = new ScriptedSession((r) => {
      if (r.base === '') return [ROOT];
      if (r.filter.includes('isDeleted'))
        return [
          {
            dn: 'CN=Hal\\0ADEL:99,CN=Deleted Objects,DC=corp,DC=test',
            objectClass: ['top', 'group'],
            objectGUID: guidToBytes(G(9)),
            name: 'Hal\nDEL:99',
            lastKnownParent: 'OU=A,DC=corp,DC=test',
          },
        ];
      return [];
    });
    const out = await changes(s, scope(['DC=corp,DC=test']));
    expect(out).toEqual([
      {
        kind: 'delete',
        anchor: G(9),
        objectType: 'Group',
        previousDn: 'CN=Hal,OU=A,DC=corp,DC=test',
        previousContainer: 'OU=A,DC=corp,DC=test',
        referencesDropped: true,
      },
    ]);
  });

  test('tombstones of classes the connector does not map (an OU, a computer) are not deletes', async () => {
    const s = new ScriptedSession((r) => {
      if (r.base === '') return [ROOT];
      if (r.filter.includes('isDeleted'))
        return [
          {
            dn: 'OU=Old\\0ADEL:1,CN=Deleted Objects,DC=corp,DC=test',
            objectClass: ['top', 'organizationalUnit'],
            objectGUID: guidToBytes(G(1)),
            name: 'Old\nDEL:1',
            lastKnownParent: 'DC=corp,DC=test',
          },
          {
            dn: 'CN=PC\\0ADEL:2,CN=Deleted Objects,DC=corp,DC=test',
            objectClass: ['top', 'person', 'user', 'computer'],
            objectGUID: guidToBytes(G(2)),
            name: 'PC\nDEL:2',
            lastKnownParent: 'DC=corp,DC=test',
          },
          {
            dn: 'CN=Ann\\0ADEL:3,CN=Deleted Objects,DC=corp,DC=test',
            objectClass: ['top', 'person', 'user'],
            objectGUID: guidToBytes(G(3)),
            name: 'Ann\nDEL:3',
            lastKnownParent: 'DC=corp,DC=test',
          },
        ];
      return [];
    });
    const out = await changes(s, scope(['DC=corp,DC=test']));
    expect(out.map((c) => [c.kind, c.anchor, c.previousDn])).toEqual([['delete', G(3), 'CN=Ann,DC=corp,DC=test']]);
  });
});
