import { MeshIndex } from '../../../lib/mesh/joinIndex';
import type { AttributeValue } from '../../../lib/connectors/sdk';
import { dnKey, indexKeys, type MeshObject } from '../../../lib/mesh/model';

const NOW = '2026-11-26T05:00:00.000Z';

/** A small deterministic random source (the sequence is the same every run). */
function random(seed: number): () => number {
  let s = seed;
  return () => {
    s = (s * 1103515245 + 12345) % 2147483648;
    return s / 2147483648;
  };
}

/**
 * The join index's answers computed from the objects' latest states by a scan: the ids that have the key, in
 * the order of the apply that last recorded each (an object's keys are recorded again by each apply).
 */
class ScanModel {
  readonly states = new Map<string, { doc: MeshObject; at: number }>();
  private seq = 0;
  constructor(private readonly attributes: string[]) {}
  apply(id: string, doc: MeshObject | null): void {
    if (doc) this.states.set(id, { doc, at: this.seq++ });
    else this.states.delete(id);
  }
  private ids(has: (doc: MeshObject) => boolean): string[] {
    return [...this.states]
      .filter(([, s]) => has(s.doc))
      .sort((a, b) => a[1].at - b[1].at)
      .map(([id]) => id);
  }
  find(by: string | undefined, key: string): string[] {
    if (by !== undefined && !this.attributes.includes(by)) return [];
    return this.ids((d) => (by === undefined ? indexKeys(d.anchorValue) : indexKeys(d.attributes[by]?.value)).includes(key));
  }
  waiting(by: string | undefined, key: string): string[] {
    return this.ids((d) => d.pendingReferences.some((p) => p.by === by && p.value.toLowerCase() === key));
  }
  incoming(target: string): string[] {
    return this.ids((d) => d.relationships.some((r) => r.targetId === target));
  }
}

const doc = (id: string, anchorValue: string, attributes: Record<string, AttributeValue>, over: Partial<MeshObject> = {}): MeshObject => ({
  id,
  objectType: 'User',
  anchorValue,
  createdOn: NOW,
  updatedOn: NOW,
  attributes: Object.fromEntries(Object.entries(attributes).map(([k, value]) => [k, { value, sourceConnectorId: 'c', confidence: 1, updatedOn: NOW }])),
  contributions: {},
  links: {},
  relationships: [],
  pendingReferences: [],
  ...over,
});

describe('MeshIndex: integer slots, exactly the answers of a scan of the latest states', () => {
  it('answers find, waiting, incoming, info and size like a scan, through 3,000 random changes', () => {
    const attrs = ['employeeId', 'mail'];
    const ix = new MeshIndex(new Set(attrs));
    const model = new ScanModel(attrs);
    const rnd = random(21);
    const pick = <T>(xs: readonly T[]): T => xs[Math.floor(rnd() * xs.length)];
    const ids = Array.from({ length: 40 }, (_, i) => `id-${i}`);
    const values = ['A', 'a', 'B', 'b2', 'C', '', 'Dd', 'dD', '7'];
    for (let step = 0; step < 3000; step++) {
      const id = pick(ids);
      if (rnd() < 0.15) {
        ix.apply(id, null);
        model.apply(id, null);
      } else {
        const multi = rnd() < 0.3;
        const d = doc(
          id,
          pick(values),
          {
            ...(rnd() < 0.7 ? { employeeId: multi ? [pick(values), pick(values), 7] : pick(values) } : {}),
            ...(rnd() < 0.5 ? { mail: pick(values) } : {}),
            other: pick(values),
          },
          {
            objectType: pick(['User', 'Group']),
            relationships:
              rnd() < 0.5
                ? [
                    { type: 'manager', targetId: pick(ids), targetAnchor: 'x', targetType: 'User' },
                    ...(rnd() < 0.3 ? [{ type: 'peer', targetId: `gone-${step % 3}`, targetAnchor: 'y', targetType: 'User' }] : []),
                  ]
                : [],
            pendingReferences: rnd() < 0.3 ? [{ type: 'manager', value: pick(values), ...(rnd() < 0.5 ? { by: 'employeeId' } : {}) }] : [],
          },
        );
        ix.apply(id, d);
        model.apply(id, d);
      }
      if (step % 25 !== 0) continue;
      expect(ix.size).toBe(model.states.size);
      for (const v of values.map((x) => x.toLowerCase()).concat('7', 'zz')) {
        for (const by of [undefined, 'employeeId', 'mail', 'other']) {
          expect([by, v, ix.find(by, v)]).toEqual([by, v, model.find(by, v)]);
          expect(ix.waiting(by, v)).toEqual(model.waiting(by, v));
        }
      }
      for (const t of [...ids, 'gone-0', 'gone-1', 'gone-2']) {
        expect(ix.incoming(t)).toEqual(model.incoming(t));
        const s = model.states.get(t);
        expect(ix.info(t)).toEqual(s ? { objectType: s.doc.objectType, anchorValue: s.doc.anchorValue } : undefined);
      }
    }
  });

  it('a deleted object leaves no trace, and its slot serves the next object', () => {
    const ix = new MeshIndex(new Set(['mail']));
    ix.apply('a', doc('a', 'Ann', { mail: 'ann@x' }, { relationships: [{ type: 'manager', targetId: 'b', targetAnchor: 'B', targetType: 'User' }] }));
    ix.apply('b', doc('b', 'Bob', { mail: 'bob@x' }));
    ix.apply('a', null);
    ix.apply('a', null);
    expect(ix.size).toBe(1);
    expect(ix.find(undefined, 'ann')).toEqual([]);
    expect(ix.incoming('b')).toEqual([]);
    expect(ix.info('a')).toBeUndefined();
    ix.apply('c', doc('c', 'Cy', { mail: 'bob@x' }));
    expect(ix.find('mail', 'bob@x')).toEqual(['b', 'c']);
    expect(ix.info('c')).toEqual({ objectType: 'User', anchorValue: 'Cy' });
    ix.apply('b', doc('b', 'Bob', { mail: 'bob@x' }));
    expect(ix.find('mail', 'bob@x')).toEqual(['c', 'b']);
    expect(ix.size).toBe(2);
  });

  it("a connector's DN reference waits under the DN's key, however it was stored (escapes as an earlier version kept them)", () => {
    const ix = new MeshIndex(new Set());
    const by = '@dn:c1';
    ix.apply('a', doc('a', 'Ann', {}, { pendingReferences: [{ type: 'manager', value: 'uid=e1,ou=sales\\, emea,dc=x', by, c: 'c1' }] }));
    ix.apply('b', doc('b', 'Bob', {}, { pendingReferences: [{ type: 'manager', value: 'uid=e1,ou=sales\\2c emea,dc=x', by, c: 'c1' }] }));
    ix.apply('c', doc('c', 'Cy', {}, { pendingReferences: [{ type: 'manager', value: 'UID=E1,OU=Sales', by: 'employeeId' }] }));
    expect(ix.waiting(by, dnKey('uid=E1,ou=Sales\\2C EMEA,dc=x'))).toEqual(['a', 'b']);
    expect(ix.waiting('employeeId', 'uid=e1,ou=sales')).toEqual(['c']);
    ix.apply('a', null);
    expect(ix.waiting(by, 'uid=e1,ou=sales\\2c emea,dc=x')).toEqual(['b']);
  });
});
