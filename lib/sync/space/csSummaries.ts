/** What a slot's flags say (bits of {@link CsSummaries.flags}). */
const DELETED = 1;
const EXPORTED = 2;
const FAILED = 4;
const PROVISIONED = 8;
/** Bits 4-5: the deprovisioning state (0 none given). */
const DEPROV_SHIFT = 4;
const DEPROVS = [undefined, 'pending', 'disabled', 'none'] as const;
/** The hash is 32 bytes in {@link CsSummaries.hashes}; else it is '' or in `odd`. */
const HASH_BYTES = 64;
const MESH_BYTES = 128;
const CID_BYTES = 256;
const EO_TIME = 512;

/** The fields a slot keeps as they are, because their text is not one the compact forms give back exactly. */
interface Odd {
  hash?: string;
  meshId?: string;
  cid?: string;
  eo?: string;
  due?: string;
  joinKeys?: string[];
}

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
const SHA256_B64URL = /^[A-Za-z0-9_-]{42}[AEIMQUYcgkosw048]$/;

/** The light part of a row that the engine keeps in memory for a whole connector (hash comparison, joins). */
export interface CsSummary {
  hash: string;
  rulesHash: string;
  meshId: string | null;
  deleted: boolean;
  /** True when the row carries exported values awaiting confirmation or a pending export. */
  exported: boolean;
  /** The object's DN (directories): references by DN are resolved through it. */
  dn?: string;
  /** A disconnector's join keys (`CsObject.joinKeys` (./model.ts)). */
  joinKeys?: string[];
  /** The object's rules failed in its last run (kept with its imported state, tried again by every run). */
  failed?: true;
  /** Its deprovisioning state (`CsObject.deprovisioned` (./model.ts)) and, when pending, when it is due. */
  deprov?: 'pending' | 'disabled' | 'none';
  due?: string;
  /** `CsObject.provisioned` (./model.ts). */
  provisioned?: true;
  /** `CsObject.csObjectId` (./model.ts) (kept through imports, which rewrite rows from their summaries). */
  cid?: string;
  /** `CsObject.exportedOn` (./model.ts) (kept through imports likewise). */
  eo?: string;
}

/**
 * One connector's connector-space summaries (anchor -> {@link CsSummary}), laid out compactly: an anchor -> slot
 * map and one typed array per field. A content hash (a sha256 in base64url) is kept as its 32 bytes, mesh ids
 * and object ids (UUIDs) as their 16, an export time as a number, the rules hash as an index into the few
 * distinct ones; only the DN stays a string. A value whose text those forms would not give back exactly (a
 * hash of another shape, an upper-case id) is kept as it is, apart. At 100,000 objects this is about a third
 * of a Map of summary objects.
 *
 * Reads as a `ReadonlyMap`: {@link get} and the iterators make the summary objects when asked (a fresh object
 * each time: not to be changed, and {@link set} is how a row's summary changes).
 */
export class CsSummaries implements ReadonlyMap<string, CsSummary> {
  private readonly slots = new Map<string, number>();
  private anchors: string[] = [];
  private cap = 0;
  private flags = new Uint16Array(0);
  private hashes = new Uint8Array(0);
  private meshIds = new Uint8Array(0);
  private cids = new Uint8Array(0);
  private eos = new Float64Array(0);
  private rules = new Uint16Array(0);
  private dns: (string | undefined)[] = [];
  private readonly odd = new Map<number, Odd>();
  /** The distinct rules hashes (a connector's rules change rarely). */
  private readonly rulesHashes: string[] = [];
  private readonly rulesIndex = new Map<string, number>();

  get size(): number {
    return this.slots.size;
  }

  has(anchor: string): boolean {
    return this.slots.has(anchor);
  }

  get(anchor: string): CsSummary | undefined {
    const slot = this.slots.get(anchor);
    return slot === undefined ? undefined : this.at(slot);
  }

  /** A row's mesh id, DN and whether it is deleted, without making its whole summary (references resolve with these). */
  brief(anchor: string): { meshId: string | null; dn?: string; deleted: boolean } | undefined {
    const slot = this.slots.get(anchor);
    if (slot === undefined) return undefined;
    const f = this.flags[slot];
    const meshId = this.meshIdAt(slot, f);
    const dn = this.dns[slot];
    return dn === undefined ? { meshId, deleted: (f & DELETED) !== 0 } : { meshId, dn, deleted: (f & DELETED) !== 0 };
  }

  set(anchor: string, s: CsSummary): this {
    let slot = this.slots.get(anchor);
    if (slot === undefined) {
      slot = this.slots.size;
      if (slot === this.cap) this.grow();
      this.slots.set(anchor, slot);
      this.anchors.push(anchor);
    }
    this.odd.delete(slot);
    const odd: Odd = {};
    let f = (s.deleted ? DELETED : 0) | (s.exported ? EXPORTED : 0) | (s.failed ? FAILED : 0) | (s.provisioned ? PROVISIONED : 0);
    if (s.deprov) f |= DEPROVS.indexOf(s.deprov) << DEPROV_SHIFT;
    if (s.hash && SHA256_B64URL.test(s.hash)) {
      putBase64url(this.hashes, slot * 32, s.hash);
      f |= HASH_BYTES;
    } else if (s.hash) odd.hash = s.hash;
    if (s.meshId && UUID.test(s.meshId)) {
      putUuid(this.meshIds, slot, s.meshId);
      f |= MESH_BYTES;
    } else if (s.meshId) odd.meshId = s.meshId;
    if (s.cid && UUID.test(s.cid)) {
      putUuid(this.cids, slot, s.cid);
      f |= CID_BYTES;
    } else if (s.cid !== undefined) odd.cid = s.cid;
    const eo = s.eo === undefined ? NaN : Date.parse(s.eo);
    if (!Number.isNaN(eo) && new Date(eo).toISOString() === s.eo) {
      this.eos[slot] = eo;
      f |= EO_TIME;
    } else if (s.eo !== undefined) odd.eo = s.eo;
    if (s.due !== undefined) odd.due = s.due;
    if (s.joinKeys !== undefined) odd.joinKeys = s.joinKeys;
    this.flags[slot] = f;
    this.rules[slot] = this.rulesOf(s.rulesHash);
    this.dns[slot] = s.dn;
    if (odd.hash !== undefined || odd.meshId !== undefined || odd.cid !== undefined || odd.eo !== undefined || odd.due !== undefined || odd.joinKeys)
      this.odd.set(slot, odd);
    return this;
  }

  /** How many rows are not deleted. */
  liveCount(): number {
    let n = 0;
    for (let i = 0; i < this.anchors.length; i++) if (!(this.flags[i] & DELETED)) n++;
    return n;
  }

  /** Each row's anchor and mesh id, of the rows not deleted that name a mesh object, without making the summaries. */
  *meshLinks(): IterableIterator<[string, string]> {
    for (let i = 0; i < this.anchors.length; i++) {
      const f = this.flags[i];
      if (f & DELETED) continue;
      const meshId = this.meshIdAt(i, f);
      if (meshId) yield [this.anchors[i], meshId];
    }
  }

  /** Each anchor's DN and whether its row is deleted, without making the summaries (the DN index). */
  *dnsOf(): IterableIterator<[string, string, boolean]> {
    for (let i = 0; i < this.anchors.length; i++) {
      const dn = this.dns[i];
      if (dn) yield [this.anchors[i], dn, (this.flags[i] & DELETED) !== 0];
    }
  }

  *entries(): MapIterator<[string, CsSummary]> {
    for (let i = 0; i < this.anchors.length; i++) yield [this.anchors[i], this.at(i)];
  }

  *keys(): MapIterator<string> {
    yield* this.anchors;
  }

  *values(): MapIterator<CsSummary> {
    for (let i = 0; i < this.anchors.length; i++) yield this.at(i);
  }

  [Symbol.iterator](): MapIterator<[string, CsSummary]> {
    return this.entries();
  }

  forEach(fn: (value: CsSummary, key: string, map: ReadonlyMap<string, CsSummary>) => void, thisArg?: unknown): void {
    for (const [k, v] of this.entries()) fn.call(thisArg, v, k, this);
  }

  /** A slot's mesh id: packed when it is a UUID, else kept with the slot's odd values (`flags`: the slot's flags). */
  private meshIdAt(slot: number, flags: number, odd = this.odd.get(slot)): string | null {
    return flags & MESH_BYTES ? uuidAt(this.meshIds, slot) : (odd?.meshId ?? null);
  }

  private at(slot: number): CsSummary {
    const f = this.flags[slot];
    const odd = this.odd.get(slot);
    const s: CsSummary = {
      hash: f & HASH_BYTES ? Buffer.from(this.hashes.buffer, this.hashes.byteOffset + slot * 32, 32).toString('base64url') : (odd?.hash ?? ''),
      rulesHash: this.rulesHashes[this.rules[slot]],
      meshId: this.meshIdAt(slot, f, odd),
      deleted: (f & DELETED) !== 0,
      exported: (f & EXPORTED) !== 0,
    };
    const dn = this.dns[slot];
    if (dn !== undefined) s.dn = dn;
    if (odd?.joinKeys !== undefined) s.joinKeys = odd.joinKeys;
    if (f & FAILED) s.failed = true;
    const deprov = DEPROVS[(f >> DEPROV_SHIFT) & 3];
    if (deprov) s.deprov = deprov;
    if (odd?.due !== undefined) s.due = odd.due;
    if (f & PROVISIONED) s.provisioned = true;
    if (f & CID_BYTES) s.cid = uuidAt(this.cids, slot);
    else if (odd?.cid !== undefined) s.cid = odd.cid;
    if (f & EO_TIME) s.eo = new Date(this.eos[slot]).toISOString();
    else if (odd?.eo !== undefined) s.eo = odd.eo;
    return s;
  }

  private rulesOf(hash: string): number {
    let i = this.rulesIndex.get(hash);
    if (i === undefined) {
      if (this.rulesHashes.length === 0xffff) throw new Error('More than 65,535 distinct rules hashes in one connector space.');
      i = this.rulesHashes.push(hash) - 1;
      this.rulesIndex.set(hash, i);
    }
    return i;
  }

  /** Let go of the room kept for more rows (after a load: a run adds few rows to a loaded space). */
  fit(): this {
    this.resize(this.slots.size);
    return this;
  }

  private grow(): void {
    // By half again (not double): a space of a million rows leaves less unused behind its last row.
    this.resize(Math.max(1024, this.cap + (this.cap >> 1)));
  }

  private resize(cap: number): void {
    this.flags = grown(this.flags, new Uint16Array(cap));
    this.rules = grown(this.rules, new Uint16Array(cap));
    this.eos = grown(this.eos, new Float64Array(cap));
    this.hashes = grown(this.hashes, new Uint8Array(cap * 32));
    this.meshIds = grown(this.meshIds, new Uint8Array(cap * 16));
    this.cids = grown(this.cids, new Uint8Array(cap * 16));
    this.cap = cap;
  }

  get [Symbol.toStringTag](): string {
    return 'CsSummaries';
  }
}

function grown<T extends Uint8Array | Uint16Array | Float64Array>(old: T, into: T): T {
  into.set((old.length > into.length ? old.subarray(0, into.length) : old) as never);
  return into;
}

/** Character code -> its value in hex and in base64url (decoded in place: no buffer made per row). */
const HEX = new Int8Array(128).fill(-1);
for (let i = 0; i < 16; i++) HEX['0123456789abcdef'.charCodeAt(i)] = i;
const B64 = new Int8Array(128).fill(-1);
for (let i = 0; i < 64; i++) B64['ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_'.charCodeAt(i)] = i;

/** A lower-case UUID (checked by the caller) as its 16 bytes. */
function putUuid(into: Uint8Array, slot: number, id: string): void {
  let at = slot * 16;
  for (let i = 0; i < 36; i += 2) {
    if (id.charCodeAt(i) === 45) i++;
    into[at++] = (HEX[id.charCodeAt(i)] << 4) | HEX[id.charCodeAt(i + 1)];
  }
}

/** A sha256 in base64url (43 characters, checked by the caller) as its 32 bytes. */
function putBase64url(into: Uint8Array, at: number, s: string): void {
  let bits = 0;
  let n = 0;
  for (let i = 0; i < 43; i++) {
    bits = (bits << 6) | B64[s.charCodeAt(i)];
    n += 6;
    if (n >= 8) {
      n -= 8;
      into[at++] = (bits >> n) & 0xff;
      bits &= (1 << n) - 1;
    }
  }
}

function uuidAt(from: Uint8Array, slot: number): string {
  const h = Buffer.from(from.buffer, from.byteOffset + slot * 16, 16).toString('hex');
  return `${h.slice(0, 8)}-${h.slice(8, 12)}-${h.slice(12, 16)}-${h.slice(16, 20)}-${h.slice(20)}`;
}
