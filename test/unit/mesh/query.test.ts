import { compileCriterion, queryMesh, toDetail, toListItem, type Criterion, type MeshQuery } from '../../../lib/mesh/query';
import type { AttributeValue } from '../../../lib/connectors/sdk';
import { MeshReadModel } from '../../../lib/mesh/readModel';
import { SortedIndex } from '../../../lib/mesh/readModelIndexes';
import { gid, meshObject, rng } from './meshSupport';

const SRC = 'c0000000-0000-4000-8000-000000000001';

function model(): MeshReadModel {
  const m = new MeshReadModel();
  m.loadPage([
    meshObject(gid(1), 'alice', { Department: 'Sales', mail: 'Alice@Corp.test', active: 'TRUE', groups: ['g1', 'G2'], level: 3 }),
    meshObject(gid(2), 'Alice', { department: 'support', mail: 'alice2@corp.test', active: 'no', groups: [], flag: true }),
    meshObject(gid(3), 'bob', { department: 'R&D', active: '1', note: '', flag: false, level: 10 }),
    meshObject(gid(4), 'Émile', { department: 'SALES', active: 'Yes', groups: ['g3', null] }),
    meshObject(gid(5), '山田太郎', { department: '営業', active: '0' }),
    meshObject(gid(6), 'carol', { active: 'maybe' }, { objectType: 'Contact', src: null }),
  ]);
  return m;
}

const run = (m: MeshReadModel, q: Partial<MeshQuery>) => queryMesh(m, { skip: 0, take: 50, ...q });
const anchors = (m: MeshReadModel, q: Partial<MeshQuery>) => run(m, q).items.map((r) => r.anchorValue);
const c = (attributeName: string, operator: Criterion['operator'], value?: string): Criterion => ({ attributeName, operator, value });

describe('queryMesh', () => {
  const m = model();

  test('no filter: the ordered index, paged, with the full count', () => {
    expect(anchors(m, {})).toEqual(['alice', 'Alice', 'bob', 'carol', 'Émile', '山田太郎']);
    expect(run(m, { skip: 4, take: 10 }).items.map((r) => r.anchorValue)).toEqual(['Émile', '山田太郎']);
    expect(run(m, { skip: 10 })).toEqual({ items: [], totalCount: 6 });
    expect(run(m, { take: 0 })).toEqual({ items: [], totalCount: 6 });
  });

  test('object type and anchor substring, case-insensitive', () => {
    expect(anchors(m, { objectType: 'contact' })).toEqual(['carol']);
    expect(run(m, { objectType: 'Nope' })).toEqual({ items: [], totalCount: 0 });
    expect(anchors(m, { search: 'LIC' })).toEqual(['alice', 'Alice']);
    expect(anchors(m, { search: 'émi' })).toEqual(['Émile']);
    expect(anchors(m, { search: 'ÉMI' })).toEqual(['Émile']);
    expect(anchors(m, { search: '太' })).toEqual(['山田太郎']);
    expect(run(m, { search: 'l', skip: 1, take: 1 })).toMatchObject({ totalCount: 4, items: [{ anchorValue: 'Alice' }] });
  });

  test.each<[string, Criterion[], string[]]>([
    ['equals ignores case of value and attribute name (both name variants)', [c('DEPARTMENT', 'equals', 'sales')], ['alice', 'Émile']],
    ['equals on multi-valued: any value', [c('groups', 'equals', 'g2')], ['alice']],
    ['equals on numbers and booleans compares their text', [c('level', 'equals', '10')], ['bob']],
    ['contains', [c('mail', 'contains', 'CORP')], ['alice', 'Alice']],
    ['startswith', [c('mail', 'startswith', 'alice2')], ['Alice']],
    ['endswith', [c('department', 'endswith', 'D')], ['bob']],
    ['non-ASCII equals', [c('department', 'equals', '営業')], ['山田太郎']],
    ['ispresent: an empty list and an empty string are no value', [c('groups', 'ispresent')], ['alice', 'Émile']],
    ['ispresent on a single empty string', [c('note', 'ispresent')], []],
    ['isnotpresent includes objects without the attribute', [c('groups', 'isnotpresent')], ['Alice', 'bob', 'carol', '山田太郎']],
    ['istrue: true/1/yes any case, boolean true', [c('active', 'istrue')], ['alice', 'bob', 'Émile']],
    ['isfalse: false/0/no any case', [c('active', 'isfalse')], ['Alice', '山田太郎']],
    ['istrue and isfalse on booleans', [c('flag', 'istrue')], ['Alice']],
    ['isfalse on a boolean false', [c('flag', 'isfalse')], ['bob']],
    ['unknown attribute: nothing present', [c('nope', 'ispresent')], []],
    ['unknown attribute: isnotpresent is everything', [c('nope', 'isnotpresent')], ['alice', 'Alice', 'bob', 'carol', 'Émile', '山田太郎']],
    ['AND of several', [c('department', 'equals', 'sales'), c('active', 'istrue'), c('groups', 'ispresent'), c('mail', 'contains', 'corp')], ['alice']],
  ])('%s', (_name, criteria, expected) => {
    const page = run(m, { criteria });
    expect(page.items.map((r) => r.anchorValue)).toEqual(expected);
    expect(page.totalCount).toBe(expected.length);
  });

  test('criteria with search and type, paged: the count stays exact', () => {
    const page = run(m, { objectType: 'User', search: 'e', criteria: [c('active', 'ispresent')], skip: 1, take: 1 });
    expect(page.totalCount).toBe(3);
    expect(page.items.map((r) => r.anchorValue)).toEqual(['Alice']);
  });

  test('a value operator without a value is refused (the schema answers 400 before this)', () => {
    expect(() => compileCriterion(m, { attributeName: 'mail', operator: 'contains' })).toThrow(/needs a value/);
  });

  test('random data: results equal a naive filter over sorted objects', () => {
    const r = rng(11);
    const big = new MeshReadModel();
    const objects = Array.from({ length: 2000 }, (_, i) =>
      meshObject(
        gid(i),
        `N${Math.floor(r() * 300)}x${i % 7}`,
        { dept: `D${Math.floor(r() * 5)}`, ...(r() < 0.5 ? { opt: 'Yes' } : {}) },
        { objectType: i % 4 ? 'User' : 'Group' },
      ),
    );
    big.loadPage(objects);
    const q: MeshQuery = { objectType: 'user', search: 'x3', criteria: [c('dept', 'equals', 'd2'), c('opt', 'istrue')], skip: 5, take: 7 };
    const naive = objects
      .filter((o) => o.objectType === 'User' && o.anchorValue.toLowerCase().includes('x3') && o.attributes.dept.value === 'D2' && o.attributes.opt)
      .sort((a, b) =>
        a.anchorValue.toLowerCase() < b.anchorValue.toLowerCase() ? -1 : a.anchorValue.toLowerCase() > b.anchorValue.toLowerCase() ? 1 : a.id < b.id ? -1 : 1,
      );
    const page = queryMesh(big, q);
    expect(page.totalCount).toBe(naive.length);
    expect(page.items.map((x) => x.id)).toEqual(naive.slice(5, 12).map((o) => o.id));
  });

  test('random queries, few or many matches, before and after changes: equal to a naive filter, by both paths (a pass over the index, or from one criterion`s few matches)', () => {
    const r = rng(29);
    const big = new MeshReadModel();
    type Obj = ReturnType<typeof meshObject>;
    const make = (i: number, gen: number): Obj => {
      const values: Record<string, AttributeValue> = { code: `C${Math.floor(r() * 400)}`, dept: `D${Math.floor(r() * 6)}` };
      if (r() < 0.6) values.mail = `m${Math.floor(r() * 5000)}@x.test`;
      if (r() < 0.3) values.tags = [`t${Math.floor(r() * 50)}`, `T${Math.floor(r() * 50)}`];
      // The same attribute under a name of another case on some objects: both columns are searched.
      if (r() < 0.1) values.DEPT = `d${Math.floor(r() * 6)}`;
      return meshObject(gid(i), `A${Math.floor(r() * 3000)}-${gen}`, values, { objectType: r() < 0.8 ? 'User' : 'Group' });
    };
    const objects = new Map<number, Obj>();
    for (let i = 0; i < 3000; i++) objects.set(i, make(i, 0));
    big.loadPage([...objects.values()]);
    const folded = (v: AttributeValue | undefined): string[] =>
      v === undefined || v === null
        ? []
        : Array.isArray(v)
          ? v.filter((x) => x !== null && x !== '').map((x) => String(x).toLowerCase())
          : v === ''
            ? []
            : [String(v).toLowerCase()];
    const valuesOf = (o: Obj, name: string) =>
      Object.entries(o.attributes)
        .filter(([k]) => k.toLowerCase() === name.toLowerCase())
        .flatMap(([, a]) => folded(a.value));
    const ok = (o: Obj, k: Criterion) => {
      const vs = valuesOf(o, k.attributeName);
      const w = (k.value ?? '').toLowerCase();
      if (k.operator === 'equals') return vs.some((v) => v === w);
      if (k.operator === 'contains') return vs.some((v) => v.includes(w));
      if (k.operator === 'startswith') return vs.some((v) => v.startsWith(w));
      if (k.operator === 'endswith') return vs.some((v) => v.endsWith(w));
      return vs.length > 0;
    };
    const before = (a: Obj, b: Obj) => {
      const [x, y] = [a.anchorValue.toLowerCase(), b.anchorValue.toLowerCase()];
      return x < y ? -1 : x > y ? 1 : a.id < b.id ? -1 : a.id > b.id ? 1 : 0;
    };
    const criteria = (): Criterion[] =>
      [
        c('code', 'equals', `c${Math.floor(r() * 400)}`),
        c('dept', 'equals', `D${Math.floor(r() * 6)}`),
        c('mail', 'contains', `m${Math.floor(r() * 60)}`),
        c('MAIL', 'endswith', `${Math.floor(r() * 10)}@x.test`),
        c('tags', 'startswith', `t${Math.floor(r() * 9)}`),
        c('mail', 'ispresent'),
        c('tags', 'ispresent'),
      ].filter(() => r() < 0.4);
    // ranks() is read only on the path from a criterion's matches.
    const ranks = jest.spyOn(SortedIndex.prototype, 'ranks');
    let byMatches = 0;
    let byPass = 0;
    for (let round = 0; round < 3; round++) {
      for (let k = 0; k < 150; k++) {
        const q: MeshQuery = {
          objectType: r() < 0.7 ? (r() < 0.5 ? 'user' : 'Group') : undefined,
          criteria: criteria(),
          skip: Math.floor(r() * 30),
          take: Math.floor(r() * 40),
        };
        const naive = [...objects.values()]
          .filter((o) => (q.objectType === undefined || o.objectType.toLowerCase() === q.objectType.toLowerCase()) && q.criteria!.every((k2) => ok(o, k2)))
          .sort(before);
        const calls = ranks.mock.calls.length;
        const page = queryMesh(big, q);
        expect({ q, count: page.totalCount }).toEqual({ q, count: naive.length });
        expect(page.items.map((x) => x.id)).toEqual(naive.slice(q.skip, q.skip + q.take).map((o) => o.id));
        if (ranks.mock.calls.length > calls) byMatches++;
        else if (q.criteria!.length) byPass++;
      }
      // A third of the objects change (new anchors, types and values), some go, some come: ranks and texts are rebuilt.
      const changes: { id: string; state: Obj | null }[] = [];
      for (const [i, o] of objects) {
        if (i % 3 !== round) continue;
        if (r() < 0.2) {
          objects.delete(i);
          changes.push({ id: o.id, state: null });
        } else {
          const n = make(i, round + 1);
          objects.set(i, n);
          changes.push({ id: n.id, state: n });
        }
      }
      for (let i = 0; i < 200; i++) {
        const j = 10_000 + round * 1000 + i;
        const n = make(j, round + 1);
        objects.set(j, n);
        changes.push({ id: n.id, state: n });
      }
      big.applyStates(changes);
    }
    ranks.mockRestore();
    expect(byMatches).toBeGreaterThan(50);
    expect(byPass).toBeGreaterThan(50);
  });
});

describe('views', () => {
  test('list item: identity, state active (the read model holds live objects) and attributeValues as stored', () => {
    const m = model();
    expect(toListItem(m, m.get(gid(1))!)).toEqual({
      meshObjectId: gid(1),
      objectType: 'User',
      anchorValue: 'alice',
      createdOn: '2026-01-01T00:00:00.000Z',
      updatedOn: '2026-01-01T00:00:00.000Z',
      state: 'active',
      attributeValues: { Department: 'Sales', active: 'TRUE', groups: ['g1', 'G2'], level: 3, mail: 'Alice@Corp.test' },
    });
  });

  test('detail: one attribute entry per value as a string, source null for computed values, current relationship target', () => {
    const m = model();
    m.applyEntries([
      {
        id: gid(7),
        objectType: 'User',
        state: meshObject(
          gid(7),
          'dave',
          { groups: ['a', 'b'], n: 2 },
          { relationships: [{ type: 'manager', targetId: gid(3), targetAnchor: 'old-bob', targetType: 'User' }] },
        ),
      },
    ]);
    const d = toDetail(m, m.get(gid(7))!);
    expect(d.state).toBe('active');
    expect(d.attributes).toEqual([
      { attributeName: 'groups', attributeValue: 'a', source: SRC, confidence: 50, updatedOn: '2026-01-01T00:00:00.000Z' },
      { attributeName: 'groups', attributeValue: 'b', source: SRC, confidence: 50, updatedOn: '2026-01-01T00:00:00.000Z' },
      { attributeName: 'n', attributeValue: '2', source: SRC, confidence: 50, updatedOn: '2026-01-01T00:00:00.000Z' },
    ]);
    expect(d.relationships).toEqual([{ relationshipType: 'manager', targetMeshObjectId: gid(3), targetAnchorValue: 'bob', targetObjectType: 'User' }]);
    expect(toDetail(m, m.get(gid(6))!).attributes).toEqual([
      { attributeName: 'active', attributeValue: 'maybe', source: null, confidence: 50, updatedOn: '2026-01-01T00:00:00.000Z' },
    ]);
  });
});
