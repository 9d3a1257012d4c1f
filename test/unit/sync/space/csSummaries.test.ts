import { createHash, randomUUID } from 'node:crypto';
import type { CsSummary } from '../../../../lib/sync/space/connectorSpace';
import { liveObjects } from '../../../../lib/sync/space/csCache';
import { CsSummaries } from '../../../../lib/sync/space/csSummaries';

const sha = (s: string) => createHash('sha256').update(s).digest('base64url');
const UUID_A = '0f1e2d3c-4b5a-4968-8776-655443322110';
const UUID_B = 'a0b1c2d3-e4f5-4a6b-9c8d-7e6f50413223';

describe('CsSummaries: connector-space summaries kept compactly, read back exactly', () => {
  const shapes: Record<string, CsSummary> = {
    joined: { hash: sha('x'), rulesHash: sha('rules'), meshId: UUID_A, deleted: false, exported: false },
    everything: {
      hash: sha('y'),
      rulesHash: 'rules-2',
      meshId: UUID_B,
      deleted: false,
      exported: true,
      dn: 'CN=Ann Lee,OU=People,DC=example,DC=com',
      failed: true,
      deprov: 'pending',
      due: '2026-12-01T00:00:00.000Z',
      provisioned: true,
      cid: UUID_A,
      eo: '2026-11-26T05:00:01.123Z',
    },
    disconnector: { hash: sha('z'), rulesHash: 'rules-2', meshId: null, deleted: false, exported: false, joinKeys: ['e123', 'ann@example.com'] },
    deleted: { hash: '', rulesHash: '', meshId: null, deleted: true, exported: false, deprov: 'none' },
    // Texts the compact forms would not give back exactly are kept as they are.
    odd: {
      hash: 'not-a-sha',
      rulesHash: 'r',
      meshId: UUID_A.toUpperCase(),
      deleted: false,
      exported: false,
      cid: 'legacy-id',
      eo: '2026-11-26T05:00:01Z',
      deprov: 'disabled',
    },
    hashLike: { hash: sha('w').slice(0, 42) + 'B', rulesHash: 'r', meshId: `${UUID_A}x`, deleted: false, exported: false, eo: 'soon' },
  };

  it('gives back every field of every shape as it was set', () => {
    const m = new CsSummaries();
    for (const [anchor, s] of Object.entries(shapes)) m.set(anchor, s);
    expect(m.size).toBe(6);
    for (const [anchor, s] of Object.entries(shapes)) expect(m.get(anchor)).toStrictEqual(s);
    expect(m.get('absent')).toBeUndefined();
    expect(m.has('joined')).toBe(true);
    expect(m.has('absent')).toBe(false);
  });

  it('iterates in insertion order, like a Map, and a set replaces a row in its place', () => {
    const m = new CsSummaries();
    const ref = new Map<string, CsSummary>();
    for (const [anchor, s] of Object.entries(shapes)) {
      m.set(anchor, s);
      ref.set(anchor, s);
    }
    const changed: CsSummary = { ...shapes.everything, meshId: null, dn: undefined, exported: false };
    delete changed.dn;
    delete changed.eo;
    m.set('joined', changed);
    ref.set('joined', changed);
    expect([...m]).toStrictEqual([...ref]);
    expect([...m.keys()]).toStrictEqual([...ref.keys()]);
    expect([...m.values()]).toStrictEqual([...ref.values()]);
    const seen: string[] = [];
    m.forEach((_v, k) => seen.push(k));
    expect(seen).toStrictEqual([...ref.keys()]);
    // The odd fields of the row's former summary do not stay with it.
    m.set('odd', shapes.joined);
    expect(m.get('odd')).toStrictEqual(shapes.joined);
  });

  it('gives back any sha256 hash and lower-case UUID exactly (2,000 random ones)', () => {
    const m = new CsSummaries();
    const want = Array.from({ length: 2000 }, (_, i): CsSummary => ({
      hash: createHash('sha256').update(randomUUID()).digest('base64url'),
      rulesHash: 'r',
      meshId: randomUUID(),
      deleted: false,
      exported: false,
      cid: randomUUID(),
      eo: new Date(1.7e12 + i * 7919).toISOString(),
    }));
    want.forEach((s, i) => m.set(`a${i}`, s));
    want.forEach((s, i) => expect(m.get(`a${i}`)).toStrictEqual(s));
  });

  it('grows past its first capacity and counts the live rows; the DN list skips rows without one', () => {
    const m = new CsSummaries();
    for (let i = 0; i < 5000; i++)
      m.set(`a${i}`, {
        hash: sha(`h${i}`),
        rulesHash: 'r',
        meshId: i % 3 ? UUID_A : null,
        deleted: i % 10 === 0,
        exported: false,
        ...(i % 2 ? { dn: `uid=u${i}` } : {}),
      });
    expect(m.size).toBe(5000);
    expect(m.get('a4999')).toStrictEqual({ hash: sha('h4999'), rulesHash: 'r', meshId: UUID_A, deleted: false, exported: false, dn: 'uid=u4999' });
    expect(m.get('a0')?.hash).toBe(sha('h0'));
    expect(liveObjects(m)).toBe(4500);
    expect(liveObjects(new Map([...m]))).toBe(4500);
    const dns = [...m.dnsOf()];
    expect(dns).toHaveLength(2500);
    expect(dns[0]).toStrictEqual(['a1', 'uid=u1', false]);
    // The rows not deleted that name a mesh object, as the summaries say: i % 3 and not i % 10.
    const links = [...m.meshLinks()];
    const expected = [...m].filter(([, s]) => !s.deleted && s.meshId).map(([a, s]) => [a, s.meshId]);
    expect(links).toStrictEqual(expected);
    expect(links).toHaveLength(Array.from({ length: 5000 }, (_, i) => i).filter((i) => i % 3 && i % 10).length);
    // Fitted to its rows (as a load leaves it), it still takes more and gives every row back.
    m.fit();
    m.set('more', shapes.everything);
    m.set('a3', shapes.odd);
    expect(m.size).toBe(5001);
    expect(m.get('more')).toStrictEqual(shapes.everything);
    expect(m.get('a3')).toStrictEqual(shapes.odd);
    // The brief form: the mesh id, DN and deleted flag as the whole summary has them.
    for (const a of ['a0', 'a1', 'a3', 'a4999', 'more']) {
      const whole = m.get(a)!;
      expect(m.brief(a)).toStrictEqual({ meshId: whole.meshId, ...(whole.dn !== undefined ? { dn: whole.dn } : {}), deleted: whole.deleted });
    }
    expect(m.brief('absent')).toBeUndefined();
    // A mesh id kept apart (not a lower-case UUID) is given as it was set.
    expect([...m.meshLinks()].find(([a]) => a === 'a3')).toStrictEqual(['a3', UUID_A.toUpperCase()]);
    expect(m.get('a4999')?.dn).toBe('uid=u4999');
    expect(m.get('a4998')?.hash).toBe(sha('h4998'));
    expect(new CsSummaries().fit().set('x', shapes.joined).get('x')).toStrictEqual(shapes.joined);
  });
});
