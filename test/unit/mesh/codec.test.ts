import { decodeMeshObject, encodeMeshObject, fromStoredMeshObject, fromStoredMeshObjectConsolidated, encodeMeshTexts } from '../../../lib/mesh/codec';
import { cloneMeshObject, COMPOSER, consolidate, type MeshObject } from '../../../lib/mesh/model';
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
    pendingReferences: [
      { type: 'manager', value: 'E000009' },
      { type: 'secretary', value: 'e000010', by: 'employeeId' },
    ],
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

  it('keeps the run and connector that created the object in a few bytes (both already in k), in the row and the feed', () => {
    const run = 'a0000000-0000-4000-8000-0000000000cc';
    const base = doc({ contributions: { mail: [{ c: HR, r: 'rule-hr-mail', conf: 50, pri: 100, v: 'a@x.test', at: T1, u: run }] } });
    const created = { ...base, createdRun: run, createdBy: HR };
    expect(decodeMeshObject(encodeMeshObject(created))).toEqual(created);
    expect(encodeMeshObject(created).length - encodeMeshObject(base).length).toBeLessThanOrEqual(14);
    const withRef = {
      ...created,
      relationships: [{ type: 'manager', targetId: gid(2), targetAnchor: 'E2', targetType: 'User', c: HR, ca: 'E2', v: 'E2', by: '@a:' + HR }],
    };
    expect(fromStoredMeshObject(JSON.parse(encodeMeshTexts(withRef).feed))).toMatchObject({ createdRun: run, createdBy: HR });
    const without = decodeMeshObject(encodeMeshObject(base));
    expect('createdRun' in without || 'createdBy' in without).toBe(false);
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
    const o = doc({
      anchorValue: 'O\'Brien "quoted" \\ back',
      contributions: { v: [{ c: HR, r: 'k', conf: 1, pri: 2, v: '{"v":2}', at: T1 }], k: [{ c: HR, r: 'c', conf: 1, pri: 2, v: ['k', 'c'], at: T1 }] },
    });
    consolidate(o);
    expect(decodeMeshObject(encodeMeshObject(o))).toEqual(o);
  });

  it("stores a connector reference's key space without repeating the connector, and reads it back whole", () => {
    const o = doc({
      relationships: [
        { type: 'manager', targetId: gid(2), targetAnchor: 'E000002', targetType: 'User', c: AD, ca: '{g2}', v: 'cn=b,ou=people', by: `@dn:${AD}` },
        { type: 'member', targetId: gid(3), targetAnchor: 'E000003', targetType: 'User', c: AD, ca: 'a3', v: 'a3', by: `@a:${AD}` },
        // Not the connector's own key space: stored as it is.
        { type: 'owner', targetId: gid(4), targetAnchor: 'E000004', targetType: 'User', c: AD, ca: '{g4}', v: 'cn=d', by: `@dn:${HR}` },
      ],
      pendingReferences: [
        { type: 'manager', value: 'cn=x,ou=people', by: `@dn:${AD}`, c: AD },
        { type: 'member', value: 'a9', by: `@a:${HR}`, c: HR },
        { type: 'secretary', value: 'e000010', by: 'employeeId' },
      ],
    });
    const text = encodeMeshObject(o);
    expect(decodeMeshObject(text)).toEqual(o);
    expect(text).not.toContain(`@dn:${AD}`);
    // A reference by anchor: its value is the referenced anchor, stored once.
    expect(text.split('"a3"').length - 1).toBe(1);
    expect(text).toContain(`@dn:${HR}`);
    // Rows written before, with the whole key space, read the same.
    const stored = JSON.parse(text) as { k: string[]; q: unknown[][] };
    const old = {
      ...stored,
      k: stored.k.map((x) => (x === '@dn:' ? `@dn:${AD}` : x === '@a:' ? `@a:${AD}` : x)),
      q: stored.q.map((x) => (x.length === 4 && (x[2] === '@dn:' || x[2] === '@a:') ? [x[0], x[1], `${x[2]}${stored.k[x[3] as number]}`, x[3]] : x)),
    };
    expect(fromStoredMeshObject(old)).toEqual(o);
  });

  it("writes a feed entry's connector relationships without how the connector resolved them, the row whole", () => {
    const composed = { type: 'manager', targetId: gid(5), targetAnchor: 'E000005', targetType: 'User' };
    const o = doc({
      provisioned: [HR],
      relationships: [
        { type: 'manager', targetId: gid(2), targetAnchor: 'E000002', targetType: 'User', c: AD, ca: '{g2}', v: 'cn=b,ou=people', by: `@dn:${AD}` },
        composed,
      ],
      pendingReferences: [{ type: 'member', value: 'cn=x,ou=people', by: `@dn:${AD}`, c: AD }],
    });
    const { row, feed } = encodeMeshTexts(o);
    expect(row).toBe(encodeMeshObject(o));
    expect(encodeMeshTexts({ ...o, provisioned: undefined }).row).toBe(encodeMeshObject({ ...o, provisioned: undefined }));
    expect(decodeMeshObject(row)).toEqual(o);
    const light = decodeMeshObject(feed);
    expect(light.relationships).toEqual([{ type: 'manager', targetId: gid(2), targetAnchor: 'E000002', targetType: 'User' }, composed]);
    expect(feed).not.toContain('cn=b,ou=people');
    // Everything else is the row's: pending references (the join index needs their key space), links, attributes.
    expect({ ...light, relationships: o.relationships }).toEqual(o);
    const plain = doc();
    expect(encodeMeshTexts(plain)).toEqual({ row: encodeMeshObject(plain), feed: encodeMeshObject(plain) });
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
      const o = doc({
        id: gid(n),
        contributions,
        relationships: r() < 0.5 ? [] : doc().relationships,
        pendingReferences: r() < 0.5 ? [] : doc().pendingReferences,
      });
      consolidate(o);
      expect(decodeMeshObject(encodeMeshObject(o))).toEqual(o);
    }
  });
});

describe('the consolidated-only decoding (start-up load)', () => {
  test('equals the whole decoding without contributions and links, on random contribution lists', () => {
    const r = rng(11);
    const pick = <T>(xs: readonly T[]) => xs[Math.floor(r() * xs.length)];
    const times = [T1, T2, '2026-03-01T00:00:00.000Z'];
    for (let i = 0; i < 300; i++) {
      const contributions: MeshObject['contributions'] = {};
      for (let a = 0; a < 1 + Math.floor(r() * 6); a++)
        contributions[pick(['mail', 'Mail', 'sn', '42', 'title', 'b'])] = Array.from({ length: Math.floor(r() * 4) }, () => ({
          c: pick([HR, AD, COMPOSER]),
          r: 'rule',
          conf: pick([50, 80, 80, 100]),
          pri: pick([1, 10, 10]),
          v: pick<MeshObject['contributions'][string][number]['v']>(['x', 'Y', 3, true, null, ['a', 'b']]),
          at: pick(times),
          ...(r() < 0.5 ? { u: 'run-1' } : {}),
        }));
      const o = doc({ contributions, provisioned: r() < 0.3 ? [AD] : undefined });
      if (r() < 0.5)
        o.relationships.push({ type: 'manager', targetId: gid(4), targetAnchor: 'E4', targetType: 'User', c: AD, ca: 'cn=e4', v: 'cn=e4', by: '@dn:' + AD });
      consolidate(o);
      const whole = fromStoredMeshObject(JSON.parse(encodeMeshObject(o)));
      const lean = fromStoredMeshObjectConsolidated(JSON.parse(encodeMeshObject(o)));
      // Relationships without the connector's resolution, as a feed entry has them.
      const fed = fromStoredMeshObject(JSON.parse(encodeMeshTexts(o).feed));
      expect(lean).toEqual({ ...whole, contributions: {}, links: {}, relationships: fed.relationships });
      expect(Object.keys(lean.attributes)).toEqual(Object.keys(whole.attributes));
    }
  });

  test('a stored form of the first version comes whole', () => {
    const o = doc();
    expect(fromStoredMeshObjectConsolidated(JSON.parse(JSON.stringify(o)))).toEqual(o);
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
