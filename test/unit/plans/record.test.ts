import type { MeshObject } from '../../../lib/mesh/model';
import { PlanIndex } from '../../../lib/plans/planIndex';
import { attributeChanges, shownValue } from '../../../lib/mesh/history';
import {
  changedAttributes,
  connectorItems,
  exportFingerprint,
  importFingerprint,
  meshItems,
  meshStateHash,
  operationCounts,
  storedFingerprint,
  type MeshPair,
  type PlannedObject,
} from '../../../lib/plans/record';

const doc = (id: string, values: Record<string, unknown>, anchorValue = id): MeshObject => ({
  id,
  objectType: 'User',
  anchorValue,
  createdOn: '2026-01-01T00:00:00.000Z',
  updatedOn: '2026-01-01T00:00:00.000Z',
  attributes: Object.fromEntries(
    Object.entries(values).map(([k, v]) => [k, { value: v, source: 'c', confidence: 100, updatedOn: '2026-01-01T00:00:00.000Z' }]),
  ) as unknown as MeshObject['attributes'],
  contributions: {},
  links: {},
  relationships: [],
  pendingReferences: [],
});

const obj = (anchor: string, meshBefore: string | null, meshAfter: string | null, extra: Partial<PlannedObject> = {}): PlannedObject => ({
  anchor,
  csObjectId: null,
  meshBefore,
  meshAfter,
  dnBefore: null,
  dnAfter: null,
  fp: `fp-${anchor}`,
  ...extra,
});

describe('change items of an import page', () => {
  test('adds, updates, deletes, renames and failures, one per mesh object, with old and new values', () => {
    const mesh = new Map<string, MeshPair>([
      ['m1', { before: null, after: doc('m1', { mail: 'a@x' }) }],
      ['m2', { before: doc('m2', { mail: 'b@x', title: 'Eng' }), after: doc('m2', { mail: 'b@x', title: null }) }],
      ['m3', { before: doc('m3', { mail: 'c@x' }), after: null }],
      ['m4', { before: doc('m4', { mail: 'd@x' }), after: doc('m4', { mail: 'd@x' }) }],
      ['m5', { before: doc('m5', { mail: 'e@x' }), after: doc('m5', { mail: 'e@x' }) }],
    ]);
    const items = meshItems(
      [
        obj('1', null, 'm1'),
        obj('2', 'm2', 'm2'),
        obj('3', 'm3', null),
        obj('4', 'm4', 'm4', { dnBefore: 'uid=d,ou=a', dnAfter: 'uid=d,ou=b' }),
        obj('9', null, null, { error: 'bad script' }),
      ],
      mesh,
      'applied',
    );
    const byAnchor = Object.fromEntries(items.map((i) => [i.anchor, i]));
    expect(byAnchor['1']).toMatchObject({
      target: 'mesh',
      operation: 'Add',
      meshObjectId: 'm1',
      attributes: { mail: { old: null, new: 'a@x' } },
      outcome: 'applied',
      key: '1',
      fp: 'fp-1',
    });
    expect(byAnchor['2']).toMatchObject({ operation: 'Update', attributes: { title: { old: 'Eng', new: null } } });
    expect(byAnchor['3']).toMatchObject({ operation: 'Delete', attributes: { mail: { old: 'c@x', new: null } } });
    expect(byAnchor['4']).toMatchObject({ operation: 'Rename', dn: 'uid=d,ou=b' });
    expect(byAnchor['9']).toMatchObject({ outcome: 'failed', error: 'bad script' });
    // m5 changed nothing a reader sees: no item
    expect(items.find((i) => i.meshObjectId === 'm5')).toBeUndefined();
    expect(operationCounts(items)).toEqual({ adds: 1, updates: 1, deletes: 1, renames: 1, blanks: 1 });
  });

  test('an add or a delete lists every attribute with a value, sorted, as the attribute-level diff does', () => {
    const full = doc('m1', { sn: 'X', mail: 'a@x', empty: [], none: null, memberOf: ['b', 'a'], password: 'hunter2', n: 0 });
    const viaDiff = (b: MeshObject | null, a: MeshObject | null) =>
      Object.fromEntries(attributeChanges(b, a).map((c) => [c.attribute, { old: shownValue(c.attribute, c.old), new: shownValue(c.attribute, c.new) }]));
    for (const [b, a] of [
      [null, full],
      [full, null],
    ] as const) {
      const got = changedAttributes(b, a);
      expect(got).toEqual(viaDiff(b, a));
      expect(Object.keys(got)).toEqual(['mail', 'memberOf', 'n', 'password', 'sn']);
    }
    expect(changedAttributes(null, full).password).toEqual({ old: null, new: '********' });
    expect(changedAttributes(full, null).memberOf).toEqual({ old: ['b', 'a'], new: null });
  });

  test('secret attributes are masked', () => {
    const items = meshItems([obj('1', null, 'm1')], new Map([['m1', { before: null, after: doc('m1', { password: 'hunter2' }) }]]), 'planned');
    expect(items[0].attributes.password).toEqual({ old: null, new: '********' });
  });

  test('export items: add, update (a move is a Rename), delete', () => {
    const items = connectorItems([
      {
        kind: 'add',
        key: 'm1',
        meshObjectId: 'm1',
        csObjectId: null,
        anchor: null,
        dnBefore: null,
        dnAfter: 'uid=a',
        shown: {},
        values: { cn: 'A' },
        outcome: 'planned',
        fp: 'f1',
      },
      {
        kind: 'update',
        key: 'm2',
        meshObjectId: 'm2',
        csObjectId: 'c2',
        anchor: 'a2',
        dnBefore: 'uid=b,ou=x',
        dnAfter: 'uid=b,ou=y',
        shown: { cn: 'B' },
        values: { cn: 'B2' },
        outcome: 'applied',
        fp: 'f2',
      },
      {
        kind: 'delete',
        key: 'm3',
        meshObjectId: 'm3',
        csObjectId: 'c3',
        anchor: 'a3',
        dnBefore: 'uid=c',
        dnAfter: null,
        shown: { cn: 'C' },
        values: {},
        outcome: 'failed',
        error: 'refused',
        fp: 'f3',
      },
    ]);
    expect(items.map((i) => [i.target, i.operation, i.outcome])).toEqual([
      ['connector', 'Add', 'planned'],
      ['connector', 'Rename', 'applied'],
      ['connector', 'Delete', 'failed'],
    ]);
    expect(items[1].attributes).toEqual({ cn: { old: 'B', new: 'B2' } });
    expect(items[2].attributes).toEqual({ cn: { old: 'C', new: null } });
  });
});

describe('fingerprints and the drift rule', () => {
  test('a fingerprint follows the source content and the linked mesh values, not bookkeeping', () => {
    const a = doc('m1', { mail: 'a@x' });
    const b = { ...doc('m1', { mail: 'a@x' }), updatedOn: '2027-01-01T00:00:00.000Z' };
    expect(meshStateHash(a)).toBe(meshStateHash(b));
    expect(meshStateHash(a)).not.toBe(meshStateHash(doc('m1', { mail: 'b@x' })));
    expect(importFingerprint('h1', a)).not.toBe(importFingerprint('h2', a));
    expect(exportFingerprint(a, 'update', { cn: 'A' })).not.toBe(exportFingerprint(a, 'update', { cn: 'B' }));
  });

  test('apply, drifted or outside', () => {
    const index = new PlanIndex();
    index.add({
      target: 'mesh',
      operation: 'Update',
      csObjectId: null,
      meshObjectId: 'm1',
      anchor: '1',
      dn: null,
      attributes: {},
      outcome: 'planned',
      error: null,
      key: '1',
      fp: 'x',
    });
    expect(index.verdict('1', 'x')).toBe('apply');
    expect(index.verdict('1', 'y')).toBe('drifted');
    expect(index.verdict('2', 'x')).toBe('outside');
    expect(index.drifted('1', 'changed')).toMatchObject({ outcome: 'drifted', operation: 'Update', anchor: '1', error: 'changed' });
  });

  test('an import fingerprint keeps 16 characters of the source hash; one stored whole by an older plan reads the same', () => {
    const source = 'AbCdEfGhIjKlMnOpQrStUvWxYz0123456789-_abcde';
    const linked = doc('m1', { mail: 'a@x' });
    const fp = importFingerprint(source, linked);
    expect(fp).toBe(`${source.slice(0, 16)}|${meshStateHash(linked)}`);
    expect(importFingerprint(source, null)).toBe(`${source.slice(0, 16)}|`);
    // A deleted source object (no hash) and export fingerprints are as they were.
    expect(importFingerprint('', linked)).toBe(`|${meshStateHash(linked)}`);
    const exported = exportFingerprint(linked, 'update', { cn: 'A' });
    expect(storedFingerprint(exported)).toBe(exported);
    expect(storedFingerprint('gone|AbCdEfGhIjKlMnOpQrStUvWxYz0123456789|m1')).toBe('gone|AbCdEfGhIjKlMnOpQrStUvWxYz0123456789|m1');
    expect(storedFingerprint(fp)).toBe(fp);
    // What an older plan stored for the same inputs: the whole source hash.
    expect(storedFingerprint(`${source}|${meshStateHash(linked)}`)).toBe(fp);
    expect(storedFingerprint(`${source}|`)).toBe(importFingerprint(source, null));

    const index = new PlanIndex();
    const planned = (key: string, stored: string) => ({
      target: 'mesh' as const,
      operation: 'Add' as const,
      csObjectId: null,
      meshObjectId: null,
      anchor: key,
      dn: null,
      attributes: {},
      outcome: 'planned' as const,
      error: null,
      key,
      fp: stored,
    });
    index.add(planned('old', `${source}|${meshStateHash(linked)}`));
    index.add(planned('new', fp));
    expect(index.verdict('old', importFingerprint(source, linked))).toBe('apply');
    expect(index.verdict('new', importFingerprint(source, linked))).toBe('apply');
    expect(index.verdict('old', importFingerprint(`x${source.slice(1)}`, linked))).toBe('drifted');
    expect(index.verdict('old', importFingerprint(source, doc('m1', { mail: 'b@x' })))).toBe('drifted');
  });
});
