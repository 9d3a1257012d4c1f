import type { AttributeValue } from '../core/values';
import { COMPOSER, consolidate, type ConsolidatedAttribute, type Contribution, type MeshObject, type PendingReference, type Relationship } from './model';

/**
 * The stored form of a mesh object: what a mesh row and a change-feed entry hold (lib/mesh/store.ts).
 *
 * A mesh object in memory repeats itself: every attribute appears once consolidated and once per contribution,
 * and each contribution names its connector, rule and time in full (three GUID-sized strings). Stored like
 * that, an object with five attributes is about 2 KB, written twice (mesh row and feed), and Azurite's work per
 * row grows with its size. The stored form (version 2) is about a third of that:
 *
 * - the consolidated attributes are not stored: they are a function of the contributions ({@link consolidate})
 *   and are recomputed when the object is read;
 * - connector ids, rule ids, times (created, updated, contributed), relationship and target types are stored
 *   once per object in a list `k`
 *   and referred to by position;
 * - contributions, relationships and pending references are arrays, not objects with named fields.
 *
 * `{"v":2,"id","t":objectType,"a":anchorValue,"co":createdOn,"up":updatedOn,"k":[strings],
 *   "c":{attribute:[[connector,rule,confidence,priority,value,at(,run)?]]},"l":[[connector,anchor]],"p":[connector],
 *   "r":[[type,targetId,targetAnchor,targetType(,connector,csAnchor,value,by)?]],"q":[[type,value,by?(,connector)?]],
 *   "cb":[createdRun,createdBy]}`
 * (co, up, cb and the numbers in c, l, p, r, q other than confidence and priority are positions in `k`; `p` is
 * absent when nothing was provisioned; `cb` (the run and connector that created the object, about 12 bytes: both
 * are usually in `k` already) is absent on objects created before it was recorded; a contribution's run is a seventh element when known, and a run's id is
 * one entry of `k` shared by the contributions of that run, about 40 bytes per object; the four more fields of `r` and the fourth of `q` are there for a
 * relationship or pending reference made from a connector's reference attribute). Such a reference's key space
 * `by` is that connector's (`@dn:<connector>`, `@a:<connector>`): it is stored as `@dn:` or `@a:` alone, the
 * connector being in the same entry (about 40 characters less per object that has references); a value equal to
 * the referenced anchor (a reference by anchor: an SQL or CSV reference column) is stored as `0`.
 *
 * Reading accepts the first form too (the whole object as JSON), so rows written before stay readable.
 */
export const STORED_VERSION = 2;

interface StoredV2 {
  v: 2;
  id: string;
  t: string;
  a: string;
  co: number;
  up: number;
  k: string[];
  c: Record<string, ([number, number, number, number, AttributeValue, number] | [number, number, number, number, AttributeValue, number, number])[]>;
  l: [number, string][];
  p?: number[];
  /** The run and connector that created the object (positions in `k`). */
  cb?: [number, number];
  /** Relationships; a connector's reference adds `[connector, referenced anchor, value, by]` (positions c, by). */
  r: ([number, string, string, number] | [number, string, string, number, number, string, string | 0, number])[];
  /** Pending references; a connector's adds the connector's position (then `by` is always there). */
  q: ([number, string] | [number, string, string] | [number, string, string, number])[];
}

/** A connector reference's key space as stored: `@dn:` or `@a:` when it is the connector's own ({@link csReferenceBy}). */
function shortBy(by: string | undefined, c: string): string {
  if (by === undefined) return '';
  if (by.length === c.length + 4 && by.startsWith('@dn:') && by.endsWith(c)) return '@dn:';
  if (by.length === c.length + 3 && by.startsWith('@a:') && by.endsWith(c)) return '@a:';
  return by;
}

/** The key space `by` of a connector reference from its stored form (see {@link shortBy}). */
function fullBy(stored: string, c: string): string {
  return stored === '@dn:' || stored === '@a:' ? stored + c : stored;
}

/** The stored JSON text of a mesh object. */
export function encodeMeshObject(o: MeshObject): string {
  return JSON.stringify(storedForm(o));
}

/**
 * `JSON.stringify(s)` with `r` as given, in three parts (the fields before `r`, `r`, the fields after it), so the
 * row's and the feed's texts share the first and last parts. Same field order as {@link storedForm}'s object.
 */
function storedText(head: string, r: StoredV2['r'], tail: string): string {
  return head + JSON.stringify(r) + tail;
}

/**
 * The texts of a mesh object for its row (whole, {@link encodeMeshObject}) and for its change-feed entry: the
 * same, except that a relationship made from a connector's reference attribute is written without how the
 * connector resolved it (the connector, the referenced connector-space anchor, the value and its key space):
 * only the engine uses those, and it reads them from the mesh row. Feed readers (the read model, the join
 * indexes of other processes, exports) use a relationship's type and target only. So the DN values of a
 * directory's references are not written a third time (connector-space row, mesh row). The same text when the
 * object has no such relationship.
 */
export function encodeMeshTexts(o: MeshObject): { row: string; feed: string } {
  const stored = storedForm(o);
  if (!stored.r.some((x) => x.length > 4)) {
    const row = JSON.stringify(stored);
    return { row, feed: row };
  }
  const { v, id, t, a, co, up, k, c, l } = stored;
  const head = JSON.stringify({ v, id, t, a, co, up, k, c, l }).slice(0, -1) + ',"r":';
  const tail =
    ',"q":' + JSON.stringify(stored.q) + (stored.p ? ',"p":' + JSON.stringify(stored.p) : '') + (stored.cb ? ',"cb":' + JSON.stringify(stored.cb) : '') + '}';
  return {
    row: storedText(head, stored.r, tail),
    feed: storedText(
      head,
      stored.r.map((x) => (x.length > 4 ? [x[0], x[1], x[2], x[3]] : x)),
      tail,
    ),
  };
}

function storedForm(o: MeshObject): StoredV2 {
  const k: string[] = [];
  const at = new Map<string, number>();
  const ref = (s: string): number => {
    let i = at.get(s);
    if (i === undefined) {
      i = k.length;
      k.push(s);
      at.set(s, i);
    }
    return i;
  };
  const c: StoredV2['c'] = {};
  for (const [name, list] of Object.entries(o.contributions))
    c[name] = list.map((x) =>
      x.u === undefined ? [ref(x.c), ref(x.r), x.conf, x.pri, x.v, ref(x.at)] : [ref(x.c), ref(x.r), x.conf, x.pri, x.v, ref(x.at), ref(x.u)],
    );
  const stored: StoredV2 = {
    v: 2,
    id: o.id,
    t: o.objectType,
    a: o.anchorValue,
    co: 0,
    up: 0,
    k,
    c,
    l: Object.entries(o.links).map(([connector, anchor]) => [ref(connector), anchor]),
    r: o.relationships.map((r) =>
      r.c === undefined
        ? [ref(r.type), r.targetId, r.targetAnchor, ref(r.targetType)]
        : [
            ref(r.type),
            r.targetId,
            r.targetAnchor,
            ref(r.targetType),
            ref(r.c),
            r.ca ?? '',
            r.v !== undefined && r.v === r.ca ? 0 : (r.v ?? ''),
            ref(shortBy(r.by, r.c)),
          ],
    ),
    q: o.pendingReferences.map((p) =>
      p.c !== undefined ? [ref(p.type), p.value, shortBy(p.by, p.c), ref(p.c)] : p.by === undefined ? [ref(p.type), p.value] : [ref(p.type), p.value, p.by],
    ),
  };
  stored.co = ref(o.createdOn);
  stored.up = ref(o.updatedOn);
  if (o.provisioned) stored.p = o.provisioned.map(ref);
  if (o.createdRun !== undefined && o.createdBy !== undefined) stored.cb = [ref(o.createdRun), ref(o.createdBy)];
  return stored;
}

/** A mesh object from its stored JSON text. */
export function decodeMeshObject(json: string): MeshObject {
  return fromStoredMeshObject(JSON.parse(json));
}

/** A mesh object from its stored form already parsed (a feed row parses all its entries at once). */
export function fromStoredMeshObject(x: unknown): MeshObject {
  const s = x as StoredV2 | MeshObject;
  if (!('v' in s) || s.v !== STORED_VERSION) return s as MeshObject;
  const k = s.k;
  const contributions: Record<string, Contribution[]> = {};
  for (const [name, list] of Object.entries(s.c))
    contributions[name] = list.map(([c, r, conf, pri, v, at, u]) =>
      u === undefined ? { c: k[c], r: k[r], conf, pri, v, at: k[at] } : { c: k[c], r: k[r], conf, pri, v, at: k[at], u: k[u] },
    );
  const links: Record<string, string> = {};
  for (const [connector, anchor] of s.l) links[k[connector]] = anchor;
  const o = decodeRest(s, contributions, links, true);
  consolidate(o);
  return o;
}

/**
 * A mesh object from its stored form, for readers that need only its consolidated attributes (the read
 * model's load and the join index's scan, lib/mesh/feed.ts): `contributions` and `links` are left empty,
 * relationships come without a connector's resolution of them (as in a feed entry, {@link encodeMeshTexts}),
 * and the attributes are the winners computed straight from the stored contributions, the same as
 * {@link consolidate} picks (lib/mesh/model.ts `winner`: highest confidence, then lower priority, then newer;
 * the first of full ties). About a third less work and garbage per object than {@link fromStoredMeshObject}
 * on a start-up load. A stored form of the first version comes whole.
 */
export function fromStoredMeshObjectConsolidated(x: unknown): MeshObject {
  const s = x as StoredV2 | MeshObject;
  if (!('v' in s) || s.v !== STORED_VERSION) return s as MeshObject;
  const k = s.k;
  const attributes: Record<string, ConsolidatedAttribute> = {};
  for (const name in s.c) {
    const list = s.c[name];
    let best: StoredV2['c'][string][number] | undefined;
    let bestAt = '';
    for (const c of list) {
      const at = k[c[5]];
      if (!best || c[2] > best[2] || (c[2] === best[2] && (c[3] < best[3] || (c[3] === best[3] && at > bestAt)))) {
        best = c;
        bestAt = at;
      }
    }
    if (!best) continue;
    const connector = k[best[0]];
    attributes[name] = { value: best[4], sourceConnectorId: connector === COMPOSER ? null : connector, confidence: best[2], updatedOn: bestAt };
  }
  const o = decodeRest(s, {}, {}, false);
  o.attributes = attributes;
  return o;
}

/**
 * The fields of a stored form other than contributions and links (attributes left empty); `resolution`: with
 * the connector's resolution of a relationship made from its reference attribute (`c`, `ca`, `v`, `by`).
 */
function decodeRest(s: StoredV2, contributions: Record<string, Contribution[]>, links: Record<string, string>, resolution: boolean): MeshObject {
  const k = s.k;
  const o: MeshObject = {
    id: s.id,
    objectType: s.t,
    anchorValue: s.a,
    createdOn: k[s.co],
    updatedOn: k[s.up],
    attributes: {},
    contributions,
    links,
    relationships: s.r.map((x): Relationship => {
      const r: Relationship = { type: k[x[0]], targetId: x[1], targetAnchor: x[2], targetType: k[x[3]] };
      if (resolution && x.length > 4) {
        const y = x as [number, string, string, number, number, string, string | 0, number];
        r.c = k[y[4]];
        r.ca = y[5];
        r.v = y[6] === 0 ? y[5] : y[6];
        r.by = fullBy(k[y[7]], r.c);
      }
      return r;
    }),
    pendingReferences: s.q.map((x): PendingReference => {
      if (x.length === 2) return { type: k[x[0]], value: x[1] };
      if (x.length === 3) return { type: k[x[0]], value: x[1], by: x[2] };
      const c = k[x[3]];
      return { type: k[x[0]], value: x[1], by: fullBy(x[2], c), c };
    }),
  };
  if (s.p) o.provisioned = s.p.map((i) => k[i]);
  if (s.cb) {
    o.createdRun = k[s.cb[0]];
    o.createdBy = k[s.cb[1]];
  }
  return o;
}
