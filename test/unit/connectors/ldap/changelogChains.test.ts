import { is389 } from '../../../../lib/connectors/ldap/anchor';
import type { DeltaContext } from '../../../../lib/connectors/ldap/delta';
import { changelogChains } from '../../../../lib/connectors/ldap/deltaChangelog';
import { deltaStrategyFor } from '../../../../lib/connectors/ldap/strategies';
import { toConnectorObject, type Scope } from '../../../../lib/connectors/ldap/objects';
import type { DirectorySession, LdapEntry, SearchRequest } from '../../../../lib/connectors/ldap/session';
import type { DeltaPage } from '../../../../lib/connectors/sdk';

/**
 * The changelog strategy's reading of cn=changelog as 389 Directory Server writes it (targetDn, changeType,
 * newRdn, newSuperior; no entry UUID unless targetUniqueId is configured). Pure logic over in-memory entries;
 * the same paths run against a real 389 DS in test/integration/ldap/ds389.test.ts.
 */
const BASE = 'dc=example,dc=com';
let n = 0;
const log = (changeType: string, targetDn: string, extra: Record<string, string> = {}): LdapEntry => {
  n += 1;
  return { dn: `changenumber=${n},cn=changelog`, changeNumber: String(n), changeType, targetDn, ...extra };
};
beforeEach(() => {
  n = 100;
});

describe('changelogChains', () => {
  test('a rename then a delete gives the DN the entry had at the watermark', () => {
    const { chains } = changelogChains(
      [
        log('modify', 'uid=ann,ou=people,dc=example,dc=com'),
        log('modrdn', 'uid=ann,ou=people,dc=example,dc=com', { newRdn: 'uid=anne', newSuperior: 'ou=staff,dc=example,dc=com' }),
        log('modrdn', 'uid=anne,ou=staff,dc=example,dc=com', { newRdn: 'uid=anna' }),
        log('delete', 'uid=anna,ou=staff,dc=example,dc=com'),
      ],
      BASE,
      'nsUniqueId',
    );
    expect(chains).toHaveLength(1);
    expect(chains[0]).toMatchObject({
      origin: 'uid=ann,ou=people,dc=example,dc=com',
      renamed: true,
      deleted: true,
      deletedDn: 'uid=anna,ou=staff,dc=example,dc=com',
    });
  });

  test('an add then a delete is nothing the connector space knows (origin null)', () => {
    const { chains } = changelogChains(
      [
        log('add', 'uid=tmp,ou=people,dc=example,dc=com'),
        log('modify', 'uid=tmp,ou=people,dc=example,dc=com'),
        log('delete', 'uid=tmp,ou=people,dc=example,dc=com'),
      ],
      BASE,
      'entryUUID',
    );
    expect(chains).toEqual([expect.objectContaining({ origin: null, deleted: true })]);
  });

  test('a DN reused after a delete or a rename away starts a new entry', () => {
    const { chains, current } = changelogChains(
      [
        log('delete', 'uid=bob,ou=people,dc=example,dc=com'),
        log('add', 'uid=bob,ou=people,dc=example,dc=com'),
        log('modrdn', 'uid=cat,ou=people,dc=example,dc=com', { newRdn: 'uid=kat' }),
        log('add', 'uid=cat,ou=people,dc=example,dc=com'),
        log('modify', 'uid=cat,ou=people,dc=example,dc=com'),
      ],
      BASE,
      'entryUUID',
    );
    expect(chains.map((c) => [c.origin, c.deleted, c.renamed])).toEqual([
      ['uid=bob,ou=people,dc=example,dc=com', true, false],
      [null, false, false],
      ['uid=cat,ou=people,dc=example,dc=com', false, true],
      [null, false, false],
    ]);
    expect(current.get(chains[2])).toBe('uid=kat,ou=people,dc=example,dc=com');
    expect(current.get(chains[3])).toBe('uid=cat,ou=people,dc=example,dc=com');
  });

  test('DNs compare without regard to case or spaces; changes outside the base are left out; log order by changeNumber', () => {
    const ren = log('modrdn', 'uid=dan,ou=people,dc=example,dc=com', { newRdn: 'uid=dan2' });
    const del = log('delete', 'UID=Dan2, OU=People, DC=example, DC=com');
    const outside = log('modify', 'cn=config');
    // Given out of order: read in changeNumber order, the delete follows the rename of the same entry.
    const { chains } = changelogChains([outside, del, ren], BASE, 'entryUUID');
    expect(chains.map((c) => [c.origin, c.deleted, c.renamed])).toEqual([['uid=dan,ou=people,dc=example,dc=com', true, true]]);
  });

  test('the logged anchor: targetUniqueId with nsUniqueId, targetEntryUUID with entryUUID, neither with another anchor', () => {
    const entries = [
      log('delete', 'uid=eve,ou=people,dc=example,dc=com', { targetUniqueId: 'a1b2c3d4-11111111-22222222-33333333', targetEntryUUID: 'e-uuid' }),
    ];
    expect(changelogChains(entries, BASE, 'nsUniqueId').chains[0].anchor).toBe('a1b2c3d4-11111111-22222222-33333333');
    expect(changelogChains(entries, BASE, 'entryUUID').chains[0].anchor).toBe('e-uuid');
    expect(changelogChains(entries, BASE, 'employeeNumber').chains[0].anchor).toBeUndefined();
  });
});

class ScriptedSession implements DirectorySession {
  constructor(
    private readonly root: LdapEntry,
    private readonly changelog: LdapEntry[],
    private readonly entries: LdapEntry[],
  ) {}
  async search(req: SearchRequest): Promise<LdapEntry[]> {
    if (req.base === '') return [this.root];
    if (req.base === 'cn=changelog') return this.changelog;
    return this.entries.filter((e) => e.dn.toLowerCase() === req.base.toLowerCase());
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

async function collect(g: AsyncGenerator<DeltaPage>): Promise<DeltaPage[]> {
  const out: DeltaPage[] = [];
  for await (const p of g) out.push(p);
  return out;
}

describe('changelog strategy on a log that names targets by DN only', () => {
  const scope: Scope = {
    classes: new Map([
      ['inetorgperson', 'User'],
      ['groupofnames', 'Group'],
    ]),
    anchorAttribute: 'nsUniqueId',
    include: [BASE],
    exclude: [],
    isAd: false,
  };
  const strategyOn = (changelog: LdapEntry[], entries: LdapEntry[]) => {
    const s = new ScriptedSession({ dn: '', changelog: 'cn=changelog', firstChangeNumber: '1', lastChangeNumber: String(n) }, changelog, entries);
    const ctx: DeltaContext = {
      session: s,
      scope,
      baseDN: BASE,
      configured: 'changelog',
      readAttributes: ['*', 'nsUniqueId'],
      toObject: (e) => toConnectorObject(s, e, scope),
      lookup: async () => new Map(),
    };
    return deltaStrategyFor(ctx);
  };

  test('deletes, renamed deletes, add-then-delete, a rename and a modify of an entry the log names only by DN', async () => {
    const changelog = [
      log('delete', 'uid=gone,ou=people,dc=example,dc=com'),
      log('modrdn', 'uid=ann,ou=people,dc=example,dc=com', { newRdn: 'uid=anne', newSuperior: 'ou=staff,dc=example,dc=com' }),
      log('delete', 'uid=anne,ou=staff,dc=example,dc=com'),
      log('add', 'uid=tmp,ou=people,dc=example,dc=com'),
      log('delete', 'uid=tmp,ou=people,dc=example,dc=com'),
      log('modrdn', 'uid=bob,ou=people,dc=example,dc=com', { newRdn: 'uid=rob' }),
      log('modify', 'cn=staff,ou=groups,dc=example,dc=com'),
      log('modify', 'ou=people,dc=example,dc=com'),
    ];
    const entries: LdapEntry[] = [
      { dn: 'uid=rob,ou=people,dc=example,dc=com', objectClass: ['top', 'inetOrgPerson'], nsUniqueId: 'u-bob', uid: 'rob', cn: 'Bob', sn: 'B' },
      {
        dn: 'cn=staff,ou=groups,dc=example,dc=com',
        objectClass: ['top', 'groupOfNames'],
        nsUniqueId: 'u-staff',
        cn: 'staff',
        member: 'uid=rob,ou=people,dc=example,dc=com',
      },
      // A container the connector does not map: not an error.
      { dn: 'ou=people,dc=example,dc=com', objectClass: ['top', 'organizationalUnit'], ou: 'people' },
    ];
    const strategy = await strategyOn(changelog, entries);
    const pages = await collect(strategy.delta(JSON.stringify({ s: 'changelog', n: 100 }), { pageSize: 50 }));
    const changes = pages.flatMap((p) => p.changes);
    expect(pages.flatMap((p) => p.errors)).toEqual([]);
    expect(changes.map((c) => ({ kind: c.kind, anchor: c.anchor, dn: c.dn ?? c.object?.dn, previousDn: c.previousDn }))).toEqual([
      { kind: 'delete', anchor: '', dn: 'uid=gone,ou=people,dc=example,dc=com', previousDn: undefined },
      { kind: 'delete', anchor: '', dn: 'uid=ann,ou=people,dc=example,dc=com', previousDn: undefined },
      { kind: 'rename', anchor: 'u-bob', dn: 'uid=rob,ou=people,dc=example,dc=com', previousDn: 'uid=bob,ou=people,dc=example,dc=com' },
      { kind: 'update', anchor: 'u-staff', dn: 'cn=staff,ou=groups,dc=example,dc=com', previousDn: undefined },
    ]);
    expect(JSON.parse(pages[pages.length - 1].nextWatermark!)).toEqual({ s: 'changelog', n });
  });

  test('a mapped entry without the anchor attribute is an error naming it; a logged targetUniqueId is used as is', async () => {
    const changelog = [log('modify', 'uid=old,ou=people,dc=example,dc=com'), log('delete', 'uid=x,ou=people,dc=example,dc=com', { targetUniqueId: 'u-x' })];
    const strategy = await strategyOn(changelog, [{ dn: 'uid=old,ou=people,dc=example,dc=com', objectClass: ['inetOrgPerson'], uid: 'old' }]);
    const pages = await collect(strategy.delta(JSON.stringify({ s: 'changelog', n: 100 }), { pageSize: 50 }));
    expect(pages.flatMap((p) => p.changes).map((c) => [c.kind, c.anchor])).toEqual([['delete', 'u-x']]);
    expect(pages.flatMap((p) => p.errors)).toEqual([
      expect.objectContaining({ location: 'uid=old,ou=people,dc=example,dc=com', message: expect.stringMatching(/has no nsUniqueId/) }),
    ]);
  });
});

describe('389 Directory Server by its root DSE', () => {
  test('vendorName and vendorVersion', () => {
    expect(is389('389 Project', '389-Directory/2.3.1 B2025.016.1616')).toBe(true);
    expect(is389('Red Hat, Inc.', 'Red Hat-Directory/11.7')).toBe(true);
    expect(is389('', '')).toBe(false);
    expect(is389('OpenLDAP', '')).toBe(false);
    expect(is389('ForgeRock AS.', 'OpenDJ 4.4.11')).toBe(false);
  });
});
