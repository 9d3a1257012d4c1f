import { decodeMeshObject, encodeMeshObject, fromStoredMeshObject } from '../../../lib/mesh/codec';
import { cloneMeshObject, COMPOSER, consolidate, type MeshObject } from '../../../lib/sync/model';
import { gid, rng } from './meshSupport';

const HR = 'c0000000-0000-4000-8000-0000000000aa';
const AD = 'c0000000-0000-4000-8000-0000000000bb';
const T1 = '2026-01-01T00:00:00.000Z';
const T2 = '2026-02-01T00:00:00.000Z';

function doc(extra: Partial<MeshObject> = {}): MeshObject {
  const o: MeshObject = {
    id: gid(1),
    objectType: 'User',
    anchorValue: 'E000001',
    createdOn: T1,
    updatedOn: T2,
    attributes: {},
    contributions: {
      mail: [
        { c: HR, r: 'rule-hr-mail', conf: 50, pri: 100, v: 'ada@example.test', at: T1 },
        { c: AD, r: 'rule-ad-mail', conf: 80, pri: 100, v: 'ada@ad.example.test', at: T2 },
      ],
      proxyAddresses: [{ c: AD, r: 'rule-ad-proxy', conf: 50, pri: 10, v: ['smtp:a@x.test', 'SMTP:A@X.TEST'], at: T2 }],
      employeeNumber: [{ c: HR, r: 'rule-hr-emp', conf: 50, pri: 100, v: 42, at: T1 }],
      enabled: [{ c: HR, r: 'rule-hr-enabled', conf: 50, pri: 100, v: false, at: T1 }],
      displayName: [{ c: COMPOSER, r: 'rule-composer', conf: 100, pri: 1, v: 'Ada Lovelace', at: T2 }],
      nothing: [{ c: HR, r: 'rule-hr-nothing', conf: 50, pri: 100, v: null, at: T1 }],
    },
    links: { [HR]: 'E000001', [AD]: '{guid}' },
    relationships: [
      { type: 'manager', targetId: gid(2), targetAnchor: 'E000002', targetType: 'User' },
      { type: 'member', targetId: gid(3), targetAnchor: 'Admins', targetType: 'Group' },
    ],
    pendingReferences: [{ type: 'manager', value: 'E000009' }, { type: 'secretary', value: 'e000010', by: 'employeeId' }],
    ...extra,
  };
  consolidate(o);
  return o;
}

describe('mesh object stored form', () => {
  it('reads back exactly the object it stored, consolidated attributes included', () => {
    const o = doc();
    const back = decodeMeshObject(encodeMeshObject(o));
    expect(back).toEqual(o);
    expect(back.attributes.mail).toEqual({ value: 'ada@ad.example.test', sourceConnectorId: AD, confidence: 80, updatedOn: T2 });
    expect(back.attributes.displayName.sourceConnectorId).toBeNull();
    expect(Object.keys(back.attributes)).toEqual(Object.keys(o.attributes));
  });

  it('keeps provisioned connectors, and leaves the field absent when there are none', () => {
    const withProvisioned = doc({ provisioned: [AD] });
    expect(decodeMeshObject(encodeMeshObject(withProvisioned))).toEqual(withProvisioned);
    const without = decodeMeshObject(encodeMeshObject(doc()));
    expect('provisioned' in without).toBe(false);
    expect('by' in without.pendingReferences[0]).toBe(false);
  });

  it('stores each connector id, rule id and time once, and no consolidated attributes', () => {
    const o = doc();
    const text = encodeMeshObject(o);
    expect(text.split(HR).length - 1).toBe(1);
    expect(text.split(AD).length - 1).toBe(1);
    expect(text.split(T1).length - 1).toBe(1);
    expect(text).not.toContain('sourceConnectorId');
    expect(text.length).toBeLessThan(JSON.stringify(o).length / 2);
  });

  it('survives values that look like its own structure (strings with quotes, keys named like fields)', () => {
    const o = doc({ anchorValue: 'O\'Brien "quoted" \\ back', contributions: { v: [{ c: HR, r: 'k', conf: 1, pri: 2, v: '{"v":2}', at: T1 }], k: [{ c: HR, r: 'c', conf: 1, pri: 2, v: ['k', 'c'], at: T1 }] } });
    consolidate(o);
    expect(decodeMeshObject(encodeMeshObject(o))).toEqual(o);
  });

  it('reads the first stored form (the whole object as JSON) unchanged', () => {
    const o = doc();
    expect(decodeMeshObject(JSON.stringify(o))).toEqual(o);
    expect(fromStoredMeshObject(JSON.parse(JSON.stringify(o)))).toEqual(o);
  });

  it('round-trips random objects', () => {
    const r = rng(7);
    const pick = <T>(xs: T[]) => xs[Math.floor(r() * xs.length)];
    for (let n = 0; n < 200; n++) {
      const contributions: MeshObject['contributions'] = {};
      for (let a = 0; a < Math.floor(r() * 6); a++) {
        contributions[`attr${a}`] = Array.from({ length: 1 + Math.floor(r() * 3) }, () => ({
          c: pick([HR, AD, COMPOSER]),
          r: pick(['r1', 'r2', 'r3']),
          conf: Math.floor(r() * 100),
          pri: Math.floor(r() * 10),
          v: pick(['x', 7, true, null, ['a', 'b'], 'ü ✓']),
          at: pick([T1, T2]),
        }));
      }
      const o = doc({ id: gid(n), contributions, relationships: r() < 0.5 ? [] : doc().relationships, pendingReferences: r() < 0.5 ? [] : doc().pendingReferences });
      consolidate(o);
      expect(decodeMeshObject(encodeMeshObject(o))).toEqual(o);
    }
  });
});

describe('cloneMeshObject', () => {
  it('is a deep copy equal to structuredClone, sharing no object or array', () => {
    const o = doc({
      links: { [HR]: 'E000001', [AD]: 'guid-1' },
      provisioned: [AD],
      relationships: [{ type: 'manager', targetId: gid(2), targetAnchor: 'E2', targetType: 'User', c: AD, ca: 'g2', v: 'cn=b', by: '@dn:' + AD }],
      pendingReferences: [{ type: 'manager', value: 'cn=c', by: '@dn:' + AD, c: AD }],
    });
    o.contributions.proxy = [{ c: AD, r: 'r2', conf: 50, pri: 1, v: ['a', 'b'], at: T2 }];
    consolidate(o);
    const c = cloneMeshObject(o);
    expect(c).toEqual(structuredClone(o));
    expect(c).not.toBe(o);
    for (const k of ['attributes', 'contributions', 'links', 'relationships', 'pendingReferences', 'provisioned'] as const) expect(c[k]).not.toBe(o[k]);
    expect(c.contributions.proxy[0]).not.toBe(o.contributions.proxy[0]);
    expect(c.contributions.proxy[0].v).not.toBe(o.contributions.proxy[0].v);
    expect(c.attributes.proxy.value).not.toBe(o.attributes.proxy.value);
    expect(c.relationships[0]).not.toBe(o.relationships[0]);
    // Changing the copy leaves the original as it was.
    (c.contributions.proxy[0].v as string[]).push('c');
    c.links.x = 'y';
    expect(o.contributions.proxy[0].v).toEqual(['a', 'b']);
    expect(o.links.x).toBeUndefined();
  });
});
