import { BerWriter, FilterParser, type Filter } from 'ldapts';
import { IN_CHAIN_RULE, inChainFilter, sidFilter, walkGroups } from '../../../lib/auth/directory';

/**
 * An in-memory group graph: `memberOf[dn]` lists the groups `dn` is a member of. It records every DN it is
 * asked about, so the tests can see that each group is read once.
 */
function graph(memberOf: Record<string, string[]>) {
  const asked: string[] = [];
  const parentsOf = async (dns: readonly string[]) => {
    asked.push(...dns);
    return new Map(dns.map((dn) => [dn, memberOf[dn.toLowerCase()] ?? []] as const));
  };
  return { parentsOf, asked };
}

const encode = (filter: Filter): Buffer => {
  const writer = new BerWriter();
  filter.write(writer);
  return writer.buffer;
};

describe('walkGroups: nested groups by following memberOf', () => {
  it('finds groups held through nesting (Helpdesk Leads inside Sync Operators inside Staff)', async () => {
    const g = graph({
      'cn=helpdesk leads,ou=g': ['cn=Sync Operators,ou=g'],
      'cn=sync operators,ou=g': ['cn=Staff,ou=g'],
    });
    const walk = await walkGroups(['cn=Helpdesk Leads,ou=g'], g.parentsOf, 10);
    expect(walk).toEqual({ groups: ['cn=Helpdesk Leads,ou=g', 'cn=Sync Operators,ou=g', 'cn=Staff,ou=g'], truncated: false });
  });

  it('ends on a cycle (A in B, B in A; a group in itself) and reads each group once', async () => {
    const g = graph({
      'cn=a,ou=g': ['cn=B,ou=g'],
      'cn=b,ou=g': ['cn=A,ou=g', 'cn=C,ou=g'],
      'cn=c,ou=g': ['cn=C,ou=g', 'cn=a,ou=g'],
    });
    const walk = await walkGroups(['cn=A,ou=g'], g.parentsOf, 100);
    expect(walk.groups).toEqual(['cn=A,ou=g', 'cn=B,ou=g', 'cn=C,ou=g']);
    expect(walk.truncated).toBe(false);
    expect(g.asked.map((d) => d.toLowerCase()).sort()).toEqual(['cn=a,ou=g', 'cn=b,ou=g', 'cn=c,ou=g']);
  });

  it('compares DNs case-insensitively and ignores spaces around separators (a diamond is one group)', async () => {
    const g = graph({
      'cn=left,ou=g': ['CN=Top, OU=g'],
      'cn=right,ou=g': ['cn=top,ou=g'],
    });
    const walk = await walkGroups(['cn=left,ou=g', 'cn=right,ou=g', 'CN=Left,OU=g'], g.parentsOf, 10);
    expect(walk.groups).toEqual(['cn=left,ou=g', 'cn=right,ou=g', 'CN=Top, OU=g']);
    expect(g.asked.filter((d) => /top/i.test(d))).toHaveLength(1);
  });

  it('one group however its DN is escaped (`\\,`, `\\2C`, quotes)', async () => {
    const g = graph({
      'cn=a,ou=g': ['cn=Sales\\, EMEA,ou=g'],
      'cn=b,ou=g': ['cn=Sales\\2C EMEA,ou=g', 'cn="sales, emea",ou=g'],
    });
    const walk = await walkGroups(['cn=a,ou=g', 'cn=b,ou=g'], g.parentsOf, 10);
    expect(walk.groups).toEqual(['cn=a,ou=g', 'cn=b,ou=g', 'cn=Sales\\, EMEA,ou=g']);
  });

  it('keeps groups up to the depth bound and says when it cut some off', async () => {
    // u -> g0 -> g1 -> g2 -> g3 -> g4: g1 is at depth 1, g4 at depth 4.
    const chain: Record<string, string[]> = {};
    for (let i = 0; i < 4; i++) chain[`cn=g${i},ou=g`] = [`cn=g${i + 1},ou=g`];
    const two = await walkGroups(['cn=g0,ou=g'], graph(chain).parentsOf, 2);
    expect(two).toEqual({ groups: ['cn=g0,ou=g', 'cn=g1,ou=g', 'cn=g2,ou=g'], truncated: true });
    // Exactly deep enough: nothing cut off.
    const four = await walkGroups(['cn=g0,ou=g'], graph(chain).parentsOf, 4);
    expect(four).toEqual({ groups: ['cn=g0,ou=g', 'cn=g1,ou=g', 'cn=g2,ou=g', 'cn=g3,ou=g', 'cn=g4,ou=g'], truncated: false });
    // A cycle at the bound is not a cut: its groups were all reached.
    const loop = await walkGroups(['cn=g0,ou=g'], graph({ 'cn=g0,ou=g': ['cn=g1,ou=g'], 'cn=g1,ou=g': ['cn=g0,ou=g'] }).parentsOf, 1);
    expect(loop).toEqual({ groups: ['cn=g0,ou=g', 'cn=g1,ou=g'], truncated: false });
  });

  it('reads nothing for a caller in no group', async () => {
    const g = graph({});
    expect(await walkGroups([], g.parentsOf, 10)).toEqual({ groups: [], truncated: false });
    expect(g.asked).toEqual([]);
  });

  it('asks level by level: one parentsOf call per depth, with that level only', async () => {
    const calls: string[][] = [];
    const memberOf: Record<string, string[]> = { 'cn=a': ['cn=c'], 'cn=b': ['cn=c', 'cn=d'], 'cn=c': ['cn=e'] };
    await walkGroups(['cn=a', 'cn=b'], async (dns) => (calls.push([...dns]), new Map(dns.map((d) => [d, memberOf[d] ?? []]))), 10);
    expect(calls).toEqual([['cn=a', 'cn=b'], ['cn=c', 'cn=d'], ['cn=e']]);
  });
});

describe('tokenGroups: SIDs to groups with binary-safe filters', () => {
  // S-1-5-21-3281944062-4294934656-... : subauthority bytes of 0x80 and above.
  const sid = Buffer.from([
    1, 5, 0, 0, 0, 0, 0, 5, 21, 0, 0, 0, 0xfe, 0x81, 0x9a, 0xc3, 0x80, 0xff, 0xff, 0xff, 0x90, 0xa0, 0xb0, 0xc0, 0x51, 0x04, 0x00, 0x00,
  ]);
  const other = Buffer.from([1, 2, 0, 0, 0, 0, 0, 5, 32, 0, 0, 0, 0x21, 0x02, 0x00, 0x00]);

  it('puts the SID bytes into the request as they are', () => {
    const ber = encode(sidFilter([sid]));
    expect(ber.includes(sid)).toBe(true);
    expect(ber.subarray(ber.length - sid.length)).toEqual(sid);
  });

  it('ORs several SIDs, each unchanged', () => {
    const ber = encode(sidFilter([sid, other]));
    expect(ber[0]).toBe(0xa1); // the OR choice of Filter
    expect(ber.includes(sid)).toBe(true);
    expect(ber.includes(other)).toBe(true);
  });

  it('(why filter objects) a string filter of \\xx escapes does not carry the same bytes', () => {
    const escaped = [...sid].map((b) => `\\${b.toString(16).padStart(2, '0')}`).join('');
    const ber = encode(FilterParser.parseString(`(objectSid=${escaped})`));
    expect(ber.includes(sid)).toBe(false);
  });
});

describe('in-chain filter', () => {
  it('is an extensible match on member with the in-chain rule and the DN as is', () => {
    const dn = 'CN=Ærin (Test)\\, Jr,OU=Users,DC=samdom,DC=test';
    const filter = inChainFilter(dn);
    expect(filter.toString()).toContain(`member:${IN_CHAIN_RULE}:=`);
    const ber = encode(filter);
    expect(ber[0]).toBe(0xa9); // extensibleMatch
    expect(ber.includes(Buffer.from(dn, 'utf8'))).toBe(true);
    expect(ber.includes(Buffer.from(IN_CHAIN_RULE))).toBe(true);
  });
});
