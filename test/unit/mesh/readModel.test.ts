import { MeshReadModel } from '../../../lib/mesh/readModel';
import { compareRecords, INTERN_ENTRIES_MAX, MERGE_AT_LEAST, MeshRecord, SortedIndex, ValueInterner } from '../../../lib/mesh/readModelIndexes';
import { gid, meshObject, rng } from './meshSupport';

const rec = (id: string, anchor: string) => new MeshRecord(id, 'User', anchor, anchor.toLowerCase(), '', '', 0, [], []);
const order = (ix: SortedIndex) => ix.all.map((r) => `${r.anchorLower}|${r.id}`);
const sorted = (recs: MeshRecord[]) =>
  recs
    .slice()
    .sort(compareRecords)
    .map((r) => `${r.anchorLower}|${r.id}`);

describe('SortedIndex', () => {
  test('single inserts and removes keep (anchor lower-cased, id) order', () => {
    const ix = new SortedIndex();
    const recs = ['b', 'B', 'a', 'c', 'A', 'b'].map((a, i) => rec(gid(10 - i), a));
    for (const r of recs) ix.insert(r);
    expect(order(ix)).toEqual(sorted(recs));
    expect(ix.remove(recs[1])).toBe(true);
    expect(ix.remove(recs[1])).toBe(false);
    expect(order(ix)).toEqual(sorted(recs.filter((r) => r !== recs[1])));
  });

  test('random batches (small: splices, large: filter + merge) match a full sort', () => {
    const r = rng(7);
    const ix = new SortedIndex();
    let live: MeshRecord[] = [];
    let n = 0;
    for (let round = 0; round < 60; round++) {
      const size = round % 3 === 0 ? 200 : 1 + Math.floor(r() * 20);
      const removed = new Set(live.filter(() => r() < 0.1).slice(0, size));
      const added = Array.from({ length: size }, () => rec(gid(n++), String.fromCharCode(65 + Math.floor(r() * 52)) + Math.floor(r() * 5)));
      ix.bulk(removed, added);
      live = [...live.filter((x) => !removed.has(x)), ...added];
      expect(order(ix)).toEqual(sorted(live));
    }
  });

  test('changes noted over many batches with no read between them (added then removed, removed then added back) read as a full sort, and size counts them', () => {
    const r = rng(11);
    const ix = new SortedIndex();
    let live: MeshRecord[] = [];
    let n = 0;
    const anchor = () => String.fromCharCode(65 + Math.floor(r() * 52)) + Math.floor(r() * 9);
    for (let read = 0; read < 8; read++) {
      for (let round = 0; round < 25; round++) {
        const removed = new Set(live.filter(() => r() < 0.08));
        const added = Array.from({ length: 1 + Math.floor(r() * 60) }, () => rec(gid(n++), anchor()));
        // Now and then a record removed in this batch comes back in it (the same record object).
        const back = [...removed].filter(() => r() < 0.2);
        ix.bulk(removed, [...added, ...back]);
        live = [...live.filter((x) => !removed.has(x) || back.includes(x)), ...added];
        if (round % 5 === 0 && live.length) {
          const one = live[Math.floor(r() * live.length)];
          expect(ix.remove(one)).toBe(true);
          expect(ix.remove(one)).toBe(false);
          live = live.filter((x) => x !== one);
          const ins = rec(gid(n++), anchor());
          ix.insert(ins);
          live.push(ins);
        }
        expect(ix.size).toBe(live.length);
      }
      expect(order(ix)).toEqual(sorted(live));
    }
  });

  test(`past ${MERGE_AT_LEAST} noted changes and a quarter of the records, batches merge without a read, and the order holds`, () => {
    const r = rng(13);
    const ix = new SortedIndex();
    let live: MeshRecord[] = [];
    let n = 0;
    for (let page = 0; page < 60; page++) {
      const removed = new Set(live.filter(() => r() < 0.02));
      const added = Array.from({ length: 1000 }, () => rec(gid(n++), `u${Math.floor(r() * 1e6)}`));
      ix.bulk(removed, added);
      live = [...live.filter((x) => !removed.has(x)), ...added];
    }
    expect(ix.size).toBe(live.length);
    expect(order(ix)).toEqual(sorted(live));
  });

  test('appended records (any order) are sorted in before any read or other change', () => {
    const r = rng(9);
    const recs = Array.from({ length: 400 }, (_, i) => rec(gid(i), String.fromCharCode(65 + Math.floor(r() * 52)) + Math.floor(r() * 5)));
    const ix = new SortedIndex();
    for (const x of recs) ix.append(x);
    expect(ix.size).toBe(400);
    expect(order(ix)).toEqual(sorted(recs));
    expect(ix.at(0)).toBe(ix.all[0]);
    expect([...ix.slots()]).toEqual(ix.all.map((x) => x.slot));
    // A change after more appends sees them sorted in first.
    const more = Array.from({ length: 50 }, (_, i) => rec(gid(1000 + i), 'm' + (i % 7)));
    for (const x of more) ix.append(x);
    expect(ix.remove(more[3])).toBe(true);
    const later = Array.from({ length: 10 }, (_, i) => rec(gid(2000 + i), 'b' + (i % 3)));
    for (const x of later) ix.append(x);
    ix.bulk(new Set([recs[0], recs[1]]), []);
    const inserted = rec(gid(5000), 'b2');
    ix.insert(inserted);
    const live = [...recs.slice(2), ...more.filter((x) => x !== more[3]), ...later, inserted];
    expect(order(ix)).toEqual(sorted(live));
    for (let i = 0; i < 10; i++) ix.append(rec(gid(3000 + i), 'zm1' + i));
    expect(ix.searchPositions('m1')).toEqual(ix.all.flatMap((x, i) => (x.anchorLower.includes('m1') ? [i] : [])));
  });

  test('searchPositions equals a per-record scan, before and after changes', () => {
    const r = rng(3);
    const ix = new SortedIndex();
    const words = ['alpha', 'Beta', 'gamma', 'ALPHABET', 'délta', 'ΣΙΓΜΑ', '山田', 'a', ''];
    const recs = Array.from({ length: 500 }, (_, i) => rec(gid(i), words[Math.floor(r() * words.length)] + words[Math.floor(r() * words.length)]));
    ix.bulk(new Set(), recs);
    const naive = (needle: string) => ix.all.flatMap((x, i) => (x.anchorLower.includes(needle) ? [i] : []));
    for (const needle of ['alpha', 'a', 'ab', 'étad', 'σιγμα', '田', 'zz', 'lphab', 'aa']) expect(ix.searchPositions(needle)).toEqual(naive(needle));
    ix.remove(ix.at(0));
    ix.insert(rec(gid(9999), 'aaaa-alpha'));
    for (const needle of ['alpha', 'aaa', 'a']) expect(ix.searchPositions(needle)).toEqual(naive(needle));
    expect(ix.searchPositions('\u0000x')).toEqual([]);
  });
});

describe('MeshReadModel', () => {
  test('load, ordering ties by id, type indexes (case-insensitive)', () => {
    const m = new MeshReadModel();
    m.loadPage([meshObject(gid(2), 'alice'), meshObject(gid(1), 'Alice'), meshObject(gid(3), 'bob', {}, { objectType: 'Group' })]);
    expect(m.size).toBe(3);
    expect(m.all.all.map((r) => r.id)).toEqual([gid(1), gid(2), gid(3)]);
    expect(m.ofType('user')!.size).toBe(2);
    expect(m.ofType('GROUP')!.all.map((r) => r.anchorValue)).toEqual(['bob']);
    expect(m.ofType('Contact')).toBeUndefined();
    expect(m.get(gid(3).toUpperCase())!.anchorValue).toBe('bob');
  });

  test('a rename moves the object; a type change moves it between type indexes; a delete removes it everywhere', () => {
    const m = new MeshReadModel();
    m.loadPage([meshObject(gid(1), 'a'), meshObject(gid(2), 'm'), meshObject(gid(3), 'z')]);
    m.applyEntries([{ id: gid(1), objectType: 'User', state: meshObject(gid(1), 'zz') }]);
    expect(m.all.all.map((r) => r.anchorValue)).toEqual(['m', 'z', 'zz']);
    m.applyEntries([{ id: gid(2), objectType: 'Contact', state: meshObject(gid(2), 'm', {}, { objectType: 'Contact' }) }]);
    expect(m.ofType('User')!.all.map((r) => r.anchorValue)).toEqual(['z', 'zz']);
    expect(m.ofType('Contact')!.all.map((r) => r.anchorValue)).toEqual(['m']);
    m.applyEntries([{ id: gid(2), objectType: 'Contact', deleted: true }]);
    expect(m.ofType('Contact')).toBeUndefined();
    expect(m.get(gid(2))).toBeUndefined();
    expect(m.size).toBe(2);
  });

  test('the last state of a batch wins; a delete for an unknown id is harmless', () => {
    const m = new MeshReadModel();
    m.applyEntries([
      { id: gid(1), objectType: 'User', state: meshObject(gid(1), 'one') },
      { id: gid(1), objectType: 'User', state: meshObject(gid(1), 'uno') },
      { id: gid(2), objectType: 'User', state: meshObject(gid(2), 'two') },
      { id: gid(2), objectType: 'User', deleted: true },
      { id: gid(9), objectType: 'User', deleted: true },
    ]);
    expect(m.all.all.map((r) => r.anchorValue)).toEqual(['uno']);
  });

  test("an export's link entry keeps the object and takes its updatedOn; a later state in the batch supersedes it; an unknown id is harmless", () => {
    const m = new MeshReadModel();
    m.loadPage([meshObject(gid(1), 'a', { mail: 'a@x' }), meshObject(gid(2), 'b')]);
    const link = (id: string, updatedOn: string) => ({ id, objectType: 'User', x: 'c1', link: { links: { c1: 'uid=x' }, updatedOn } });
    m.applyEntries([link(gid(1), '2026-03-01T00:00:00.000Z'), link(gid(9), '2026-03-01T00:00:00.000Z')]);
    expect(m.get(gid(1))!.updatedOn).toBe('2026-03-01T00:00:00.000Z');
    expect(m.get(gid(1))!.anchorValue).toBe('a');
    expect(m.size).toBe(2);
    const later = { ...meshObject(gid(2), 'b2'), updatedOn: '2026-03-03T00:00:00.000Z' };
    m.applyEntries([link(gid(2), '2026-03-02T00:00:00.000Z'), { id: gid(2), objectType: 'User', state: later }]);
    expect(m.get(gid(2))!.updatedOn).toBe('2026-03-03T00:00:00.000Z');
    expect(m.get(gid(2))!.anchorValue).toBe('b2');
    m.applyEntries([{ id: gid(1), objectType: 'User', deleted: true }, link(gid(1), '2026-03-04T00:00:00.000Z')]);
    expect(m.get(gid(1))).toBeUndefined();
  });

  test('an updated object reuses its slot without keeping attributes it lost; a freed slot starts clean', () => {
    const m = new MeshReadModel();
    m.loadPage([meshObject(gid(1), 'a', { mail: 'a@x', dept: 'Sales' })]);
    const slot = m.get(gid(1))!.slot;
    m.applyEntries([{ id: gid(1), objectType: 'User', state: meshObject(gid(1), 'a', { mail: 'a@y' }) }]);
    const r = m.get(gid(1))!;
    expect(r.slot).toBe(slot);
    expect(m.columns[m.nameIds('dept')[0]].values[slot]).toBeUndefined();
    expect(m.columns[m.nameIds('mail')[0]].values[slot]).toBe('a@y');
    m.applyEntries([{ id: gid(1), objectType: 'User', deleted: true }]);
    m.applyEntries([{ id: gid(2), objectType: 'User', state: meshObject(gid(2), 'b', { other: 1 }) }]);
    expect(m.get(gid(2))!.slot).toBe(slot);
    expect(m.columns[m.nameIds('mail')[0]].values[slot]).toBeUndefined();
  });

  test('values are folded once (lower case, numbers and booleans as text, empty values dropped)', () => {
    const m = new MeshReadModel();
    m.loadPage([meshObject(gid(1), 'a', { s: 'MiXeD', n: 1, b: false, e: '', z: null, l: ['X', '', null, 2], le: ['', null] })]);
    const f = (name: string) => m.columns[m.nameIds(name)[0]].folded[0];
    expect([f('s'), f('n'), f('b'), f('e'), f('z'), f('l'), f('le')]).toEqual(['mixed', '1', 'false', null, null, ['x', '2'], null]);
  });

  test('values stay right past the point where the value intern map starts over (70,000 distinct values)', () => {
    const m = new MeshReadModel();
    const n = 70_000;
    for (let i = 0; i < n; i += 5000) {
      m.loadPage(Array.from({ length: 5000 }, (_, k) => meshObject(gid(i + k), `A${i + k}`, { emp: `E${i + k}`, dept: `Dept ${(i + k) % 7}` })));
    }
    expect(m.size).toBe(n);
    const col = (name: string) => m.columns[m.nameIds(name)[0]];
    for (const i of [0, 65_535, 65_536, 69_999]) {
      const slot = m.get(gid(i))!.slot;
      expect(col('emp').values[slot]).toBe(`E${i}`);
      expect(col('emp').folded[slot]).toBe(`e${i}`);
      expect(col('dept').folded[slot]).toBe(`dept ${i % 7}`);
    }
  });
});

describe('loadPage', () => {
  test('an id seen again (same page or a later one) ends as the feed would leave it: its last state', () => {
    const m = new MeshReadModel();
    m.loadPage([meshObject(gid(1), 'one', { mail: 'a@x' }), meshObject(gid(2), 'two'), meshObject(gid(1).toUpperCase(), 'uno', { dept: 'Sales' })]);
    m.loadPage([meshObject(gid(2), 'deux', {}, { objectType: 'Group' }), meshObject(gid(3), 'three')]);
    expect(m.size).toBe(3);
    expect(m.all.all.map((r) => r.anchorValue)).toEqual(['deux', 'three', 'uno']);
    expect(m.ofType('user')!.all.map((r) => r.anchorValue)).toEqual(['three', 'uno']);
    expect(m.ofType('group')!.all.map((r) => r.anchorValue)).toEqual(['deux']);
    const slot = m.get(gid(1))!.slot;
    expect(m.columns[m.nameIds('mail')[0]].values[slot]).toBeUndefined();
    expect(m.columns[m.nameIds('dept')[0]].values[slot]).toBe('Sales');
    expect(m.slotCount).toBe(3);
  });
});

describe('ValueInterner', () => {
  test('keeps sharing values that repeat, and stops for values that do not; values come back unchanged', () => {
    const repeating = new ValueInterner();
    const unique = new ValueInterner();
    for (let i = 0; i < INTERN_ENTRIES_MAX * 3; i++) {
      expect(repeating.intern(`Dept ${i % 20}`)).toBe(`Dept ${i % 20}`);
      expect(unique.intern(`E${i}`)).toBe(`E${i}`);
    }
    expect(repeating.on).toBe(true);
    expect(repeating.size).toBe(20);
    expect(unique.on).toBe(false);
    expect(unique.intern('x'.repeat(30))).toBe('x'.repeat(30));
  });
});

describe('AttributeColumn.match', () => {
  test('equals, startswith, endswith and contains over the joined values equal a per-value check, each match listed once (multi-valued, updates, clears)', () => {
    const r = rng(5);
    const m = new MeshReadModel();
    const words = ['sales', 'salesforce', 'pre-sales', 'Sales', 'a', 'ab', 'b', 'ba', 'é', 'ÉA', '山田', ''];
    const value = () =>
      r() < 0.3 ? [words[Math.floor(r() * words.length)], words[Math.floor(r() * words.length)]] : r() < 0.1 ? null : words[Math.floor(r() * words.length)];
    const objects = Array.from({ length: 300 }, (_, i) => meshObject(gid(i), `o${i}`, { v: value() }));
    m.loadPage(objects);
    for (let i = 0; i < 40; i++) {
      const id = gid(Math.floor(r() * 300));
      m.applyEntries([r() < 0.2 ? { id, objectType: 'User', deleted: true } : { id, objectType: 'User', state: meshObject(id, 'x', { v: value() }) }]);
    }
    const col = m.columns[m.nameIds('v')[0]];
    for (const mode of ['equals', 'startswith', 'endswith', 'contains'] as const) {
      for (const want of ['sales', 'sal', 'es', 'a', 'b', 'ab', 'é', 'éa', '山', 'zz', 'a\u0000b']) {
        const hits = new Uint8Array(m.slotCount);
        const found: number[] = [];
        col.match(mode, want, hits, found);
        const test = (s: string) =>
          mode === 'equals' ? s === want : mode === 'startswith' ? s.startsWith(want) : mode === 'endswith' ? s.endsWith(want) : s.includes(want);
        const expected = new Uint8Array(m.slotCount);
        col.folded.forEach((v, slot) => {
          if (v != null && (typeof v === 'string' ? test(v) : v.some(test))) expected[slot] = 1;
        });
        expect([mode, want, [...hits].join('')]).toEqual([mode, want, [...expected].join('')]);
        // Every slot marked is listed once.
        expect([mode, want, [...found].sort((a, b) => a - b)]).toEqual([mode, want, [...expected.keys()].filter((slot) => expected[slot] === 1)]);
      }
    }
  });
});

describe('MeshReadModel: relationships and timestamps kept once, read back as written', () => {
  it('a relationship reads back its own target id, anchor and type whether its target is loaded, renamed or absent', () => {
    const m = new MeshReadModel();
    const rel = (n: number, anchor: string) => ({ type: 'manager', targetId: gid(n), targetAnchor: anchor, targetType: 'User' });
    m.loadPage([meshObject(gid(1), 'Boss')]);
    m.loadPage([
      meshObject(gid(2), 'Ann', {}, { relationships: [rel(1, 'Boss')] }),
      // Written before the target was renamed: its own anchor, not the target's current one.
      meshObject(gid(3), 'Bob', {}, { relationships: [rel(1, 'Old Boss')] }),
      meshObject(gid(4), 'Cy', {}, { relationships: [rel(9, 'Nobody'), rel(2, 'Ann')] }),
    ]);
    expect(m.get(gid(2))!.relationships).toEqual([rel(1, 'Boss')]);
    expect(m.get(gid(3))!.relationships).toEqual([rel(1, 'Old Boss')]);
    expect(m.get(gid(4))!.relationships).toEqual([rel(9, 'Nobody'), rel(2, 'Ann')]);
    expect(m.target(rel(9, 'Nobody'))).toEqual({ targetAnchor: 'Nobody', targetType: 'User' });
  });

  it('createdOn and updatedOn read back as each object has them', () => {
    const m = new MeshReadModel();
    const a = { ...meshObject(gid(1), 'A'), createdOn: '2026-01-01T00:00:00.000Z', updatedOn: '2026-02-01T00:00:00.000Z' };
    const b = { ...meshObject(gid(2), 'B'), createdOn: '2026-02-01T00:00:00.000Z', updatedOn: '2026-02-01T00:00:00.000Z' };
    m.loadPage([a, b]);
    expect([m.get(gid(1))!.createdOn, m.get(gid(1))!.updatedOn, m.get(gid(2))!.createdOn]).toEqual([a.createdOn, a.updatedOn, b.createdOn]);
  });
});
