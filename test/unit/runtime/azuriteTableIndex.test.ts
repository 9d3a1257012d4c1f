import { keyConstraints, TableIndex, type StoredEntity } from '../../../lib/runtime/azuriteTableIndex';

const e = (PartitionKey: string, RowKey: string): StoredEntity => ({ PartitionKey, RowKey });
const keys = (it: Iterable<StoredEntity>) => [...it].map((x) => `${x.PartitionKey}/${x.RowKey}`);
const any = { partitionKey: {}, rowKey: {} };

describe('keyConstraints: what a filter says about the keys it can match', () => {
  it('reads equality and ranges of a conjunction', () => {
    expect(keyConstraints("PartitionKey eq 'p1' and RowKey ge 'a' and RowKey lt 'b'")).toEqual({
      partitionKey: { lo: 'p1', loInclusive: true, hi: 'p1', hiInclusive: true },
      rowKey: { lo: 'a', loInclusive: true, hi: 'b', hiInclusive: false },
    });
    expect(keyConstraints("(PartitionKey gt 'a') and (x eq 1) and PartitionKey le 'c'")).toEqual({
      partitionKey: { lo: 'a', loInclusive: false, hi: 'c', hiInclusive: true },
      rowKey: {},
    });
  });

  it('keeps the tighter of two bounds, and unescapes doubled quotes', () => {
    expect(keyConstraints("RowKey ge 'a' and RowKey gt 'b' and RowKey le 'z' and RowKey lt 'y'").rowKey).toEqual({
      lo: 'b',
      loInclusive: false,
      hi: 'y',
      hiInclusive: false,
    });
    expect(keyConstraints("PartitionKey eq 'o''k'").partitionKey.lo).toBe("o'k");
  });

  it('constrains nothing when the filter is not a plain conjunction or names another property', () => {
    for (const f of [
      undefined,
      '',
      "PartitionKey eq 'a' or PartitionKey eq 'b'",
      "not (PartitionKey eq 'a')",
      'PartitionKey eq "a"',
      "PartitionKey eq guid'00112233-4455-6677-8899-aabbccddeeff'",
      "partitionkey eq 'a'",
      "MyPartitionKey eq 'a'",
      "'a' eq PartitionKey",
      "PartitionKey ne 'a'",
      "name eq 'PartitionKey eq ''a'''",
    ])
      expect(keyConstraints(f)).toEqual(any);
  });

  it('reads a term that is a disjunction of equalities of one key as the only values it can take', () => {
    expect(keyConstraints("PartitionKey eq 'p' and (RowKey eq 'b' or RowKey eq 'a' or RowKey eq 'b')")).toEqual({
      partitionKey: { lo: 'p', loInclusive: true, hi: 'p', hiInclusive: true },
      rowKey: {},
      rowKeyIn: ['a', 'b'],
    });
    expect(keyConstraints("((PartitionKey eq 'y') or (PartitionKey eq 'x')) and n lt 3")).toEqual({ partitionKey: {}, rowKey: {}, partitionKeyIn: ['x', 'y'] });
    // Two such terms: the values both allow.
    expect(keyConstraints("(RowKey eq 'a' or RowKey eq 'b') and (RowKey eq 'b' or RowKey eq 'c')").rowKeyIn).toEqual(['b']);
    // Parentheses around the conjunction, and around its terms.
    expect(keyConstraints("((PartitionKey eq 'p') and (RowKey ge 'a'))")).toEqual({
      partitionKey: { lo: 'p', loInclusive: true, hi: 'p', hiInclusive: true },
      rowKey: { lo: 'a', loInclusive: true },
    });
  });

  it('keeps the other terms of a conjunction when one has `not` or a mixed `or`', () => {
    const p = { lo: 'p', loInclusive: true, hi: 'p', hiInclusive: true };
    expect(keyConstraints("PartitionKey eq 'p' and not (RowKey eq 'a')")).toEqual({ partitionKey: p, rowKey: {} });
    expect(keyConstraints("PartitionKey eq 'p' and (RowKey eq 'a' or n eq 1)")).toEqual({ partitionKey: p, rowKey: {} });
    expect(keyConstraints("PartitionKey eq 'p' and (RowKey eq 'a' or PartitionKey eq 'b')")).toEqual({ partitionKey: p, rowKey: {} });
    expect(keyConstraints("PartitionKey eq 'p' and (RowKey gt 'a' or RowKey eq 'b')")).toEqual({ partitionKey: p, rowKey: {} });
  });

  it('constrains nothing with `or` at the top level (`and` binds tighter), or unbalanced parentheses', () => {
    for (const f of [
      "PartitionKey eq 'p' and RowKey eq 'a' or RowKey eq 'b'",
      "(PartitionKey eq 'p' and RowKey eq 'a') or (PartitionKey eq 'q')",
      "PartitionKey eq 'p' and (RowKey eq 'a'",
      "PartitionKey eq 'p') and (RowKey eq 'a'",
    ])
      expect(keyConstraints(f)).toEqual(any);
  });

  it("does not mistake a string value's words for operators", () => {
    expect(keyConstraints("PartitionKey eq 'p' and name eq 'this or that'").partitionKey).toEqual({ lo: 'p', loInclusive: true, hi: 'p', hiInclusive: true });
  });
});

describe('TableIndex: entities in (PartitionKey, RowKey) order', () => {
  function filled(): TableIndex {
    const ix = new TableIndex();
    for (const [p, r] of [
      ['b', '2'],
      ['a', '3'],
      ['b', '1'],
      ['a', '1'],
      ['c', '1'],
      ['a', '2'],
    ])
      ix.add(e(p, r));
    return ix;
  }

  it('scans in key order, within ranges, from a continuation', () => {
    const ix = filled();
    expect(keys(ix.scan(any))).toEqual(['a/1', 'a/2', 'a/3', 'b/1', 'b/2', 'c/1']);
    expect(keys(ix.scan({ partitionKey: { lo: 'b', loInclusive: true, hi: 'b', hiInclusive: true }, rowKey: {} }))).toEqual(['b/1', 'b/2']);
    expect(keys(ix.scan({ partitionKey: {}, rowKey: { lo: '1', loInclusive: false, hi: '3', hiInclusive: false } }))).toEqual(['a/2', 'b/2']);
    expect(keys(ix.scan(any, { partitionKey: 'a', rowKey: '2' }))).toEqual(['a/2', 'a/3', 'b/1', 'b/2', 'c/1']);
    expect(keys(ix.scan(any, { partitionKey: 'b' }))).toEqual(['b/1', 'b/2', 'c/1']);
    expect(keys(ix.scan(any, { partitionKey: 'bb', rowKey: '0' }))).toEqual(['c/1']);
  });

  it('visits only the listed keys, in order, from a continuation', () => {
    const ix = filled();
    expect(keys(ix.scan({ ...any, rowKeyIn: ['1', '3', '7'] }))).toEqual(['a/1', 'a/3', 'b/1', 'c/1']);
    expect(keys(ix.scan({ ...any, partitionKeyIn: ['a', 'c', 'z'], rowKeyIn: ['1', '2'] }))).toEqual(['a/1', 'a/2', 'c/1']);
    expect(keys(ix.scan({ ...any, rowKeyIn: ['1', '3'] }, { partitionKey: 'a', rowKey: '2' }))).toEqual(['a/3', 'b/1', 'c/1']);
    expect(keys(ix.scan({ partitionKey: { lo: 'b', loInclusive: true }, rowKey: { hi: '2', hiInclusive: false }, partitionKeyIn: ['a', 'b', 'c'] }))).toEqual([
      'b/1',
      'c/1',
    ]);
  });

  it('keeps the order through inserts and removals after a scan, and ignores a stale object', () => {
    const ix = filled();
    expect(keys(ix.scan(any))).toHaveLength(6);
    ix.add(e('a', '0'));
    ix.add(e('a', '9'));
    ix.add(e('d', '1'));
    const b1 = ix.get('b', '1')!;
    ix.remove(e('b', '1'));
    expect(ix.get('b', '1')).toBe(b1);
    ix.remove(b1);
    ix.remove(ix.get('c', '1')!);
    expect(keys(ix.scan(any))).toEqual(['a/0', 'a/1', 'a/2', 'a/3', 'a/9', 'b/2', 'd/1']);
    const next = e('a', '2');
    ix.replace(next, ix.get('a', '2')!);
    expect(ix.get('a', '2')).toBe(next);
    expect(ix.size).toBe(7);
  });

  it('keeps the order through many inserts and removals between scans (keys removed and added back, added and removed), as a full sort', () => {
    let seed = 5;
    const rnd = () => (seed = (seed * 1103515245 + 12345) % 2147483648) / 2147483648;
    const ix = new TableIndex();
    const live = new Map<string, StoredEntity>();
    const key = () =>
      `p${Math.floor(rnd() * 3)}/${Math.floor(rnd() * 5000)
        .toString(36)
        .padStart(3, '0')}`;
    const scanned = () => keys(ix.scan(any));
    const expected = () => [...live.keys()].sort((a, b) => (a < b ? -1 : a > b ? 1 : 0));
    for (let round = 0; round < 40; round++) {
      // Rounds of 1 to 300 writes between two scans: some merges splice, most merge in one pass.
      const writes = round % 4 === 0 ? 1 + Math.floor(rnd() * 5) : 1 + Math.floor(rnd() * 300);
      for (let w = 0; w < writes; w++) {
        const k = key();
        const [pk, rk] = k.split('/');
        const held = live.get(k);
        if (held && rnd() < 0.5) {
          ix.remove(held);
          live.delete(k);
        } else if (!held) {
          const x = e(pk, rk);
          ix.add(x);
          live.set(k, x);
        }
      }
      expect(scanned()).toEqual(expected());
      expect(ix.size).toBe(live.size);
    }
  });
});
