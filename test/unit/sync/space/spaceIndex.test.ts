import { compareEntries, entryOfRow, inState, queryEntries, SPACE_STATES, SpaceView, type SpaceEntry } from '../../../../lib/sync/space/spaceIndex';
import { anchoredCsObjectId } from '../../../../lib/sync/space/csIds';
import { encodeKey } from '../../../../lib/storage/tables';
import { anchorAttributeOf, anchorToBe, pendingAttributes, SECRET_MASK } from '../../../../lib/api/connectorSpace';

const C = '6f1c2d3e-4a5b-4c6d-8e7f-901234567890';
const entry = (anchor: string | null, over: Partial<SpaceEntry> = {}): SpaceEntry => ({
  csObjectId: over.csObjectId ?? (anchor ? anchoredCsObjectId(C, anchor) : '00000000-0000-5000-8000-000000000001'),
  anchor,
  dn: null,
  objectType: 'User',
  meshObjectId: null,
  pendingExport: null,
  awaitingConfirmation: false,
  error: null,
  lastImportedOn: null,
  lastExportedOn: null,
  folded: `${anchor ?? ''}\n${over.dn ?? ''}`.toLowerCase(),
  ...over,
});

describe('connector space index (pure parts)', () => {
  test('a row becomes an entry with its states; a deleted row none', () => {
    const row = {
      rowKey: encodeKey('a/1'),
      objectType: 'User',
      meshId: 'm1',
      dn: 'uid=A,ou=X',
      hash: 'h',
      updatedOn: '2026-01-01T00:00:00.000Z',
      eo: '2026-01-02T00:00:00.000Z',
      xn: 1,
      x0: '{}',
      pn: 1,
      p0: JSON.stringify({ kind: 'update', attributes: { sn: 'B', cn: 'B' }, stagedOn: '2026-01-03T00:00:00.000Z' }),
      xe: JSON.stringify({ message: 'no', runId: 'r', occurredOn: 'o', attempts: 2 }),
    };
    const e = entryOfRow(C, row)!;
    expect(e).toMatchObject({
      anchor: 'a/1',
      csObjectId: anchoredCsObjectId(C, 'a/1'),
      dn: 'uid=A,ou=X',
      meshObjectId: 'm1',
      awaitingConfirmation: true,
      lastImportedOn: '2026-01-01T00:00:00.000Z',
      lastExportedOn: '2026-01-02T00:00:00.000Z',
    });
    expect(e.pendingExport).toEqual({ operation: 'Update', attributeCount: 2, stagedOn: '2026-01-03T00:00:00.000Z' });
    expect(e.error).toEqual({ message: 'no', runId: 'r', occurredOn: 'o', attempts: 2 });
    for (const s of SPACE_STATES) expect(inState(e, s)).toBe(s !== 'disconnector');
    expect(entryOfRow(C, { ...row, deleted: true })).toBeNull();
    expect(entryOfRow(C, { ...row, cid: 'kept-id' })!.csObjectId).toBe('kept-id');
  });

  test('order: anchors by code unit, staged adds last by id', () => {
    const list = [entry(null, { csObjectId: 'b' }), entry('b'), entry(null, { csObjectId: 'a' }), entry('B'), entry('a')].sort(compareEntries);
    expect(list.map((e) => e.anchor ?? e.csObjectId)).toEqual(['B', 'a', 'b', 'a', 'b']);
  });

  test('filters, search (case-insensitive, anchor or dn), paging and counts', () => {
    const list = [
      entry('a1', { meshObjectId: 'm', dn: 'uid=Alice,ou=People', folded: 'a1\nuid=alice,ou=people' }),
      entry('a2', { error: { message: 'x', runId: 'r', occurredOn: 'o', attempts: 1 }, meshObjectId: 'm2' }),
      entry('a3', { objectType: 'Group' }),
      entry(null, { meshObjectId: 'm4', pendingExport: { operation: 'Add', attributeCount: 3, stagedOn: 'o' } }),
    ];
    expect(queryEntries(list, { skip: 0, take: 50 }).totalCount).toBe(4);
    expect(queryEntries(list, { state: 'joined', skip: 0, take: 50 }).items.map((e) => e.anchor)).toEqual(['a1', 'a2', null]);
    expect(queryEntries(list, { state: 'disconnector', skip: 0, take: 50 }).items.map((e) => e.anchor)).toEqual(['a3']);
    expect(queryEntries(list, { state: 'error', skip: 0, take: 50 }).items.map((e) => e.anchor)).toEqual(['a2']);
    expect(queryEntries(list, { state: 'pendingExport', skip: 0, take: 50 }).items.map((e) => e.anchor)).toEqual([null]);
    expect(queryEntries(list, { objectType: 'group', skip: 0, take: 50 }).items.map((e) => e.anchor)).toEqual(['a3']);
    expect(queryEntries(list, { search: 'ALICE', skip: 0, take: 50 }).items.map((e) => e.anchor)).toEqual(['a1']);
    expect(queryEntries(list, { search: 'A', skip: 0, take: 50 }).totalCount).toBe(3);
    expect(queryEntries(list, { skip: 1, take: 2 })).toMatchObject({ totalCount: 4, items: [{ anchor: 'a2' }, { anchor: 'a3' }] });
    expect(queryEntries(list, { skip: 9, take: 2 })).toEqual({ totalCount: 4, items: [] });
  });

  test('pending change per attribute: old from exported, else imported; an add has no old; passwords masked', () => {
    const p = { kind: 'update' as const, attributes: { sn: 'New', Mail: 'n@x', title: 'T', unicodePwd: 'secret' } };
    expect(pendingAttributes(p, { sn: 'Imported', mail: 'o@x' }, { sn: 'Exported' })).toEqual({
      sn: { old: 'Exported', new: 'New' },
      Mail: { old: 'o@x', new: 'n@x' },
      title: { old: null, new: 'T' },
      unicodePwd: { old: null, new: SECRET_MASK },
    });
    expect(pendingAttributes({ kind: 'add', attributes: { sn: 'S' } }, { sn: 'X' }, undefined)).toEqual({ sn: { old: null, new: 'S' } });
  });

  test('the view (per-state lists, joined search text) answers as the plain pass does', () => {
    let seed = 7;
    const rnd = (n: number) => ((seed = (seed * 1103515245 + 12345) % 2 ** 31), seed % n);
    const list: SpaceEntry[] = [];
    for (let i = 0; i < 2000; i++) {
      const anchor = rnd(50) === 0 ? null : `A${String(i).padStart(5, '0')}x${rnd(100)}`;
      const dn = rnd(3) ? `uid=U${rnd(500)},ou=Dept${rnd(7)},dc=example` : null;
      list.push(
        entry(anchor, {
          csObjectId: `id-${i}`,
          dn,
          folded: `${anchor ?? ''}\n${dn ?? ''}`.toLowerCase(),
          objectType: rnd(5) ? 'User' : 'Group',
          meshObjectId: rnd(4) ? `m${i}` : null,
          awaitingConfirmation: rnd(10) === 0,
          error: rnd(20) === 0 ? { message: 'm', runId: 'r', occurredOn: 'o', attempts: 1 } : null,
          pendingExport: rnd(15) === 0 ? { operation: 'Update', attributeCount: 1, stagedOn: 'o' } : null,
        }),
      );
    }
    list.sort(compareEntries);
    const view = new SpaceView(list);
    const searches = [undefined, 'u1', 'DEPT3', 'x9', 'a0001', '\nuid=u4', 'zzz', ',dc=example', '\u0001'];
    for (const search of searches) {
      for (const state of [undefined, ...SPACE_STATES]) {
        for (const objectType of [undefined, 'group']) {
          for (const [skip, take] of [
            [0, 50],
            [30, 7],
            [1990, 200],
          ]) {
            const q = { search, state, objectType, skip, take };
            expect(view.query(q)).toEqual(queryEntries(list, q));
          }
        }
      }
    }
  });

  test("a staged add's anchor-to-be: the value its add gives the connector's anchor column, else null", () => {
    expect(anchorAttributeOf({ anchorColumn: 'id' })).toBe('id');
    expect(anchorAttributeOf({ implementation: 'file', settings: { anchorColumn: 'EmpId' } })).toBe('EmpId');
    expect(anchorAttributeOf({ host: 'ldap' })).toBeUndefined();
    expect(anchorToBe({ empid: 'E7', sn: 'S' }, 'EmpId')).toBe('E7');
    expect(anchorToBe({ id: 42 }, 'id')).toBe('42');
    expect(anchorToBe({ sn: 'S' }, 'id')).toBeNull();
    expect(anchorToBe({ id: ['a', 'b'] }, 'id')).toBeNull();
    expect(anchorToBe({ uid: 'E1' }, undefined)).toBeNull();
  });
});
