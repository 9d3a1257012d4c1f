import type { AttributeValue, ScalarValue } from '../connectors/sdk';
import { AppError } from '../core/errors';
import type { ServiceStep } from '../core/service';
import type { MeshObject, Relationship } from './model';
import { MeshFeedReader } from './feed';
import type { FeedEntry } from './store';
import { areaLog } from '../core/log';

const log = areaLog('mesh');

/**
 * The mesh read model: a per-process, in-memory copy of the mesh that answers the Admin API's mesh queries
 * (lib/mesh/query.ts), loaded from the `Mesh` table at start and kept current by tailing `MeshFeed`
 * (lib/mesh/feed.ts). Table Storage offers no substring filter, offset or count, so the queries run here.
 * See docs/mesh-queries.md for the design, its figures and its trade-offs.
 *
 * Shape, chosen for memory and scan speed at 100,000 objects x 20 attributes (figures in the doc):
 * - one {@link MeshRecord} per object (a fixed-shape class): identity fields, relationships, a slot number and
 *   the list of its attribute names (shared by every object with the same set of names);
 * - attributes are columns, one per attribute name ({@link AttributeColumn}), indexed by slot: the
 *   consolidated value, its folded (lower-cased string) form for criteria, and source / confidence /
 *   updatedOn packed in an Int32Array. A criterion reads one array cell per object instead of searching
 *   the object's attributes, and the scan touches no per-object attribute structure. Names, connector ids,
 *   object types and timestamps are interned; short string values are shared through an intern map
 *   (departments, titles, flags repeat; unique values such as mail addresses are kept as they are).
 *   Contributions are not kept: the detail shows the consolidated attribute's source and confidence.
 * - ordered indexes by (anchorValue lower-cased, id): one over every object and one per object type
 *   (case-insensitive), each a sorted array maintained incrementally (binary-search insert/remove for small
 *   batches, filter + merge for large ones: never a full re-sort).
 */

/** A string <-> small integer table (attribute names, connector ids, object types, timestamps). */
export class Interner {
  private readonly ids = new Map<string, number>();
  readonly values: string[] = [];

  id(s: string): number {
    let n = this.ids.get(s);
    if (n === undefined) {
      n = this.values.length;
      this.values.push(s);
      this.ids.set(s, n);
    }
    return n;
  }

  lookup(s: string): number | undefined {
    return this.ids.get(s);
  }

  get size(): number {
    return this.values.length;
  }
}

/** Strings up to this length are shared through the value intern map; longer ones are mostly unique. */
const INTERN_MAX = 24;
/**
 * The value intern map starts over at this many entries. Most short values are unique too (anchors, employee
 * ids), and an entry costs more than the string it would share; values that do repeat (departments, titles)
 * are shared again right after a restart, so at most one extra copy per restart survives.
 */
const INTERN_ENTRIES_MAX = 65_536;
/** No source connector (a mesh-composer value). */
export const NO_SOURCE = -1;

const EMPTY_RELS: readonly Relationship[] = Object.freeze([]);

export type FoldedValue = string | readonly string[] | null;

/** One mesh object as the read model holds it (its attribute values live in the columns, at `slot`). */
export class MeshRecord {
  constructor(
    readonly id: string,
    readonly objectType: string,
    readonly anchorValue: string,
    /** anchorValue.toLowerCase(): the sort key and what substring search scans. */
    readonly anchorLower: string,
    readonly createdOn: string,
    readonly updatedOn: string,
    readonly slot: number,
    /** Ids of its attribute names, in name order (shared between objects with the same names). */
    readonly names: readonly number[],
    readonly relationships: readonly Relationship[],
  ) {}
}

/** How a value operator matches a folded value. */
export type MatchMode = 'equals' | 'startswith' | 'endswith' | 'contains';

/**
 * The values of one attribute name for every object, by slot. `folded` is the value's string form
 * lower-cased (a multi-valued attribute: its non-empty values), null for no value, folded once at write time.
 * `present` (1 byte per slot) answers ispresent without touching the values; `meta` holds source id,
 * confidence and updatedOn id per slot.
 *
 * Value operators run like the anchor search: on the first match after a change, every folded value is
 * joined into one text (`\u0000v0\u0000v1\u0000...\u0000`, one segment per value, so a multi-valued
 * attribute has several segments for its slot) with each segment's start and slot. One native indexOf loop
 * then finds `\u0000want\u0000` (equals), `\u0000want` (startswith), `want\u0000` (endswith) or `want`
 * (contains) and marks the slots hit, instead of dereferencing one string per object.
 */
export class AttributeColumn {
  values: (AttributeValue | undefined)[] = [];
  folded: (FoldedValue | undefined)[] = [];
  meta = new Int32Array(0);
  present = new Uint8Array(0);
  private version = 0;
  private textVersion = -1;
  private text = '';
  private segStart = new Int32Array(0);
  private segSlot = new Int32Array(0);

  set(slot: number, value: AttributeValue, folded: FoldedValue, source: number, confidence: number, stamp: number): void {
    // Grow by appending: an assignment far past the end would turn the arrays into slow dictionaries.
    while (this.values.length < slot) {
      this.values.push(undefined);
      this.folded.push(undefined);
    }
    this.values[slot] = value;
    this.folded[slot] = folded;
    if (this.meta.length < (slot + 1) * 3) {
      const capacity = Math.max(1024, (slot + 1) * 2);
      const meta = new Int32Array(capacity * 3);
      meta.set(this.meta);
      this.meta = meta;
      const present = new Uint8Array(capacity);
      present.set(this.present);
      this.present = present;
    }
    this.meta[slot * 3] = source;
    this.meta[slot * 3 + 1] = confidence;
    this.meta[slot * 3 + 2] = stamp;
    this.present[slot] = folded === null ? 0 : 1;
    this.version++;
  }

  clear(slot: number): void {
    this.values[slot] = undefined;
    this.folded[slot] = undefined;
    if (slot < this.present.length) this.present[slot] = 0;
    this.version++;
  }

  /** Set `hits[slot] = 1` for every slot with a folded value that matches `want` (already lower-cased). */
  match(mode: MatchMode, want: string, hits: Uint8Array): void {
    if (want === '' || want.includes(SEP)) return this.matchSlowly(mode, want, hits);
    if (this.textVersion !== this.version) this.buildText();
    const text = this.text;
    const starts = this.segStart;
    const slots = this.segSlot;
    const n = starts.length;
    const lead = mode === 'equals' || mode === 'startswith';
    const pattern = mode === 'equals' ? SEP + want + SEP : mode === 'startswith' ? SEP + want : mode === 'endswith' ? want + SEP : want;
    let p = text.indexOf(pattern);
    let lo = 0;
    while (p >= 0) {
      const q = lead ? p + 1 : p;
      let hi = n - 1;
      while (lo < hi) {
        const mid = (lo + hi + 1) >>> 1;
        if (starts[mid] <= q) lo = mid;
        else hi = mid - 1;
      }
      hits[slots[lo]] = 1;
      if (lo + 1 >= n) break;
      lo++;
      p = text.indexOf(pattern, lead ? starts[lo] - 1 : starts[lo]);
    }
  }

  private matchSlowly(mode: MatchMode, want: string, hits: Uint8Array): void {
    const test = (s: string) => (mode === 'equals' ? s === want : mode === 'startswith' ? s.startsWith(want) : mode === 'endswith' ? s.endsWith(want) : s.includes(want));
    this.folded.forEach((v, slot) => {
      if (v == null) return;
      if (typeof v === 'string' ? test(v) : v.some(test)) hits[slot] = 1;
    });
  }

  private buildText(): void {
    const parts: string[] = [];
    const slotsOf: number[] = [];
    for (let slot = 0; slot < this.folded.length; slot++) {
      const v = this.folded[slot];
      if (v == null) continue;
      if (typeof v === 'string') {
        parts.push(v);
        slotsOf.push(slot);
      } else {
        for (const x of v) {
          parts.push(x);
          slotsOf.push(slot);
        }
      }
    }
    const starts = new Int32Array(parts.length);
    let at = 1;
    for (let i = 0; i < parts.length; i++) {
      starts[i] = at;
      at += parts[i].length + 1;
    }
    this.text = SEP + parts.join(SEP) + SEP;
    this.segStart = starts;
    this.segSlot = Int32Array.from(slotsOf);
    this.textVersion = this.version;
  }
}

/** Separates anchors in the joined search text (cannot occur in a needle that uses the fast path). */
const SEP = '\u0000';

/** Order of the indexes: anchor lower-cased (ordinal, by UTF-16 code units), then the id. */
export function compareRecords(a: MeshRecord, b: MeshRecord): number {
  if (a.anchorLower !== b.anchorLower) return a.anchorLower < b.anchorLower ? -1 : 1;
  if (a.id !== b.id) return a.id < b.id ? -1 : 1;
  return 0;
}

/**
 * Records in {@link compareRecords} order. A record is removed by the record object it was inserted with
 * (its sort key is immutable), so a renamed anchor is a remove of the old record and an insert of the new.
 */
export class SortedIndex {
  private items: MeshRecord[] = [];
  /** Every anchorLower joined by SEP, and where each starts: built on the first search after a change. */
  private text: string | undefined;
  private starts: Int32Array | undefined;
  /** The records' slots in order: built on the first criteria scan after a change. */
  private slotList: Int32Array | undefined;

  get size(): number {
    return this.items.length;
  }

  get all(): readonly MeshRecord[] {
    return this.items;
  }

  at(i: number): MeshRecord {
    return this.items[i];
  }

  private invalidate(): void {
    this.text = undefined;
    this.starts = undefined;
    this.slotList = undefined;
  }

  /** Slots of the records, in order (a scan reads columns by slot without touching the records). */
  slots(): Int32Array {
    if (!this.slotList) {
      const out = new Int32Array(this.items.length);
      for (let i = 0; i < out.length; i++) out[i] = this.items[i].slot;
      this.slotList = out;
    }
    return this.slotList;
  }

  /** The first position whose record sorts at or after `r`. */
  private lowerBound(r: MeshRecord): number {
    let lo = 0;
    let hi = this.items.length;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      if (compareRecords(this.items[mid], r) < 0) lo = mid + 1;
      else hi = mid;
    }
    return lo;
  }

  insert(r: MeshRecord): void {
    this.items.splice(this.lowerBound(r), 0, r);
    this.invalidate();
  }

  remove(r: MeshRecord): boolean {
    const i = this.lowerBound(r);
    if (this.items[i] !== r) return false;
    this.items.splice(i, 1);
    this.invalidate();
    return true;
  }

  /**
   * Remove `removed` and add `added` in one pass: filter, sort the additions, merge. O(n + k log k), for
   * batches where k splices (each O(n)) would cost more. The merge finds each addition's place by binary
   * search and copies the records before it without comparing them (an import adds 2,000 records to 100,000
   * per page: 2,000 x 17 comparisons instead of 102,000).
   */
  bulk(removed: ReadonlySet<MeshRecord>, added: MeshRecord[]): void {
    if (added.length + removed.size <= 32) {
      for (const r of removed) this.remove(r);
      for (const r of added) this.insert(r);
      return;
    }
    const kept = removed.size ? this.items.filter((r) => !removed.has(r)) : this.items;
    const add = added.slice().sort(compareRecords);
    const out: MeshRecord[] = new Array(kept.length + add.length);
    let i = 0;
    let k = 0;
    for (const a of add) {
      // The first kept record after `a` (kept records equal to it go first).
      let lo = i;
      let hi = kept.length;
      while (lo < hi) {
        const mid = (lo + hi) >>> 1;
        if (compareRecords(kept[mid], a) <= 0) lo = mid + 1;
        else hi = mid;
      }
      while (i < lo) out[k++] = kept[i++];
      out[k++] = a;
    }
    while (i < kept.length) out[k++] = kept[i++];
    this.items = out;
    this.invalidate();
  }

  /**
   * Positions, in order, of the records whose anchorLower contains `needle` (already lower-cased). One
   * native indexOf over the joined anchors instead of a call per record: it does not touch the records and
   * runs several times faster. A needle holding the separator falls back to a scan.
   */
  searchPositions(needle: string): number[] {
    const out: number[] = [];
    if (needle.includes(SEP)) {
      for (let i = 0; i < this.items.length; i++) if (this.items[i].anchorLower.includes(needle)) out.push(i);
      return out;
    }
    if (this.text === undefined || !this.starts) this.buildText();
    const text = this.text!;
    const starts = this.starts!;
    const n = starts.length;
    let p = text.indexOf(needle);
    let lo = 0;
    while (p >= 0) {
      // The record holding position p: the last start <= p (hits come in increasing order: search from lo).
      let hi = n - 1;
      while (lo < hi) {
        const mid = (lo + hi + 1) >>> 1;
        if (starts[mid] <= p) lo = mid;
        else hi = mid - 1;
      }
      out.push(lo);
      if (lo + 1 >= n) break;
      p = text.indexOf(needle, starts[lo + 1]);
      lo++;
    }
    return out;
  }

  private buildText(): void {
    const starts = new Int32Array(this.items.length);
    let at = 0;
    const parts: string[] = new Array(this.items.length);
    for (let i = 0; i < this.items.length; i++) {
      starts[i] = at;
      parts[i] = this.items[i].anchorLower;
      at += parts[i].length + 1;
    }
    this.text = parts.join(SEP);
    this.starts = starts;
  }
}

/** The mesh in memory, with its ordered indexes. Fed by {@link MeshFeedReader}. */
export class MeshReadModel {
  readonly names = new Interner();
  readonly sources = new Interner();
  readonly stamps = new Interner();
  /** Columns by attribute name id. */
  readonly columns: AttributeColumn[] = [];
  private readonly types = new Map<string, string>();
  private readonly strings = new Map<string, string>();
  private readonly nameLists = new Map<string, readonly number[]>();
  private readonly byId = new Map<string, MeshRecord>();
  private readonly freeSlots: number[] = [];
  private nextSlot = 0;
  readonly all = new SortedIndex();
  private readonly byType = new Map<string, SortedIndex>();
  /** Attribute names by lower-cased name (criteria match names case-insensitively). */
  private readonly namesLower = new Map<string, number[]>();

  get size(): number {
    return this.byId.size;
  }

  /** One more than the highest slot in use (the size of a per-slot bitmap). */
  get slotCount(): number {
    return this.nextSlot;
  }

  private readonly bitmaps: Uint8Array[] = [];

  /**
   * The `i`th scratch bitmap (slotCount bytes, zeroed) for the query being evaluated. Reused across
   * queries: a query runs synchronously from start to end, and allocating fresh 100 KB buffers per request
   * adds external-memory pressure that triggers full collections of a large heap.
   */
  scratch(i: number): Uint8Array {
    let b = this.bitmaps[i];
    if (!b || b.length < this.nextSlot) this.bitmaps[i] = b = new Uint8Array(Math.max(1024, this.nextSlot * 2));
    else b.fill(0, 0, this.nextSlot);
    return b;
  }

  get(id: string): MeshRecord | undefined {
    return this.byId.get(id.toLowerCase());
  }

  /** The index of one object type (case-insensitive), or undefined when no object has that type. */
  ofType(objectType: string): SortedIndex | undefined {
    return this.byType.get(objectType.toLowerCase());
  }

  /** Objects per object type (as the first object of each type spells it): the indexes' sizes, no scan. */
  typeCounts(): Map<string, number> {
    const out = new Map<string, number>();
    for (const ix of this.byType.values()) if (ix.size) out.set(ix.at(0).objectType, ix.size);
    return out;
  }

  /** Ids of every attribute name equal to `name` ignoring case. */
  nameIds(name: string): readonly number[] {
    return this.namesLower.get(name.toLowerCase()) ?? [];
  }

  /** Scan pages: objects not seen yet (any order). */
  loadPage(objects: MeshObject[]): void {
    this.applyStates(objects.map((o) => ({ id: o.id, state: o })));
  }

  applyEntries(entries: FeedEntry[]): void {
    this.applyStates(entries.map((e) => ({ id: e.id, state: 'state' in e ? e.state : null })));
  }

  /** Apply states in order (null: deleted); the last state of an id wins. */
  applyStates(changes: { id: string; state: MeshObject | null }[]): void {
    const last = new Map<string, MeshObject | null>();
    for (const c of changes) last.set(c.id.toLowerCase(), c.state);
    const removedAll = new Set<MeshRecord>();
    const addedAll: MeshRecord[] = [];
    const perType = new Map<string, { removed: Set<MeshRecord>; added: MeshRecord[] }>();
    const of = (t: string) => {
      const key = t.toLowerCase();
      let c = perType.get(key);
      if (!c) perType.set(key, (c = { removed: new Set(), added: [] }));
      return c;
    };
    for (const [id, state] of last) {
      const old = this.byId.get(id);
      let slot: number | undefined;
      if (old) {
        removedAll.add(old);
        of(old.objectType).removed.add(old);
        this.byId.delete(id);
        for (const n of old.names) this.columns[n].clear(old.slot);
        slot = old.slot;
      }
      if (state) {
        const rec = this.toRecord(id, state, slot ?? this.freeSlots.pop() ?? this.nextSlot++);
        this.byId.set(id, rec);
        addedAll.push(rec);
        of(rec.objectType).added.push(rec);
      } else if (slot !== undefined) {
        this.freeSlots.push(slot);
      }
    }
    this.all.bulk(removedAll, addedAll);
    for (const [key, c] of perType) {
      let ix = this.byType.get(key);
      if (!ix) this.byType.set(key, (ix = new SortedIndex()));
      ix.bulk(c.removed, c.added);
      if (!ix.size) this.byType.delete(key);
    }
  }

  private toRecord(id: string, o: MeshObject, slot: number): MeshRecord {
    const entries = Object.entries(o.attributes).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
    const ids: number[] = new Array(entries.length);
    entries.forEach(([name, attr], i) => {
      const n = this.nameId(name);
      ids[i] = n;
      const value = Array.isArray(attr.value) ? attr.value.map((v) => this.scalar(v)) : this.scalar(attr.value);
      this.columns[n].set(
        slot,
        value,
        this.fold(value),
        attr.sourceConnectorId ? this.sources.id(attr.sourceConnectorId) : NO_SOURCE,
        attr.confidence,
        this.stamps.id(attr.updatedOn),
      );
    });
    const key = ids.join(',');
    let names = this.nameLists.get(key);
    if (!names) this.nameLists.set(key, (names = Object.freeze(ids)));
    const anchor = this.str(o.anchorValue);
    const lower = anchor.toLowerCase();
    const rels = o.relationships.length
      ? o.relationships.map((r) => ({ type: this.str(r.type), targetId: r.targetId, targetAnchor: r.targetAnchor, targetType: this.type(r.targetType) }))
      : EMPTY_RELS;
    return new MeshRecord(id, this.type(o.objectType), anchor, lower === anchor ? anchor : lower, o.createdOn, o.updatedOn, slot, names, rels);
  }

  private nameId(name: string): number {
    const known = this.names.lookup(name);
    if (known !== undefined) return known;
    const id = this.names.id(name);
    this.columns[id] = new AttributeColumn();
    const key = name.toLowerCase();
    const list = this.namesLower.get(key);
    if (list) list.push(id);
    else this.namesLower.set(key, [id]);
    return id;
  }

  private type(t: string): string {
    let s = this.types.get(t);
    if (s === undefined) this.types.set(t, (s = t));
    return s;
  }

  private str(s: string): string {
    if (s.length > INTERN_MAX) return s;
    let v = this.strings.get(s);
    if (v === undefined) {
      if (this.strings.size >= INTERN_ENTRIES_MAX) this.strings.clear();
      this.strings.set(s, (v = s));
    }
    return v;
  }

  private fold(v: AttributeValue): FoldedValue {
    if (Array.isArray(v)) {
      const list: string[] = [];
      for (const x of v) {
        const f = this.foldScalar(x);
        if (f !== null) list.push(f);
      }
      return list.length ? list : null;
    }
    return this.foldScalar(v);
  }

  private foldScalar(v: ScalarValue): string | null {
    if (v === null || v === '') return null;
    if (typeof v !== 'string') return this.str(String(v));
    const lower = v.toLowerCase();
    return lower === v ? v : this.str(lower);
  }

  private scalar(v: ScalarValue): ScalarValue {
    return typeof v === 'string' ? this.str(v) : v;
  }

  /** Current anchor and type of a relationship target (kept current by the engine, refreshed here too). */
  target(r: Relationship): { targetAnchor: string; targetType: string } {
    const t = this.byId.get(r.targetId);
    return t ? { targetAnchor: t.anchorValue, targetType: t.objectType } : { targetAnchor: r.targetAnchor, targetType: r.targetType };
  }
}

// The process's read model, its reader and readiness.

/** How long a query waits for the first load before it answers 503. */
const READY_WAIT_MS = 5_000;
const RETRY_AFTER_SECONDS = 5;
const LOAD_RETRY_MS = 5_000;

let model: MeshReadModel | undefined;
let reader: MeshFeedReader | undefined;
let ready: Promise<MeshReadModel> | undefined;
let isReady = false;
let stopping = false;
/** Bumped by every start: a load left over from before a stop never installs itself. */
let generations = 0;
let loadedAt: { ms: number; objects: number } | undefined;

/**
 * Start loading the read model in the background and tail the feed. Returns at once: the host starts
 * serving while the mesh loads; mesh queries wait for the load (see {@link readyModel}).
 */
export function startMeshReadModel(options: { pollMs?: number } = {}): void {
  if (ready) return;
  stopping = false;
  const started = Date.now();
  const generation = ++generations;
  ready = (async () => {
    for (;;) {
      // A failed load leaves a partial copy: every attempt starts from an empty model.
      const m = new MeshReadModel();
      const r = new MeshFeedReader(m, {
        pollMs: options.pollMs,
        onError: (err) => log.error(`Reading the mesh change feed failed (${describe(err)}); retrying.`),
      });
      reader = r;
      try {
        await r.load();
      } catch (err) {
        if (stopping || generation !== generations) throw err;
        log.error(`Loading the mesh read model failed (${describe(err)}); retrying in ${LOAD_RETRY_MS / 1000} s.`);
        await new Promise((res) => setTimeout(res, LOAD_RETRY_MS).unref());
        continue;
      }
      if (stopping || generation !== generations) return m;
      model = m;
      isReady = true;
      loadedAt = { ms: Date.now() - started, objects: m.size };
      log.info(`Read model loaded: ${m.size} object(s) in ${loadedAt.ms} ms.`);
      r.startTailing();
      return m;
    }
  })();
  ready.catch(() => undefined);
}

export async function stopMeshReadModel(): Promise<void> {
  stopping = true;
  await reader?.stop();
  model = undefined;
  reader = undefined;
  ready = undefined;
  isReady = false;
}

/**
 * The loaded read model. Before the first load has finished, waits up to 5 s, then answers 503 with
 * `Retry-After` (a process that just started on a large mesh).
 */
export async function readyModel(): Promise<MeshReadModel> {
  if (isReady && model) return model;
  if (!ready) startMeshReadModel();
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<undefined>((res) => (timer = setTimeout(() => res(undefined), READY_WAIT_MS)));
  const m = await Promise.race([ready!, timeout]).finally(() => clearTimeout(timer));
  if (m) return m;
  throw new AppError('service_unavailable', 'The mesh is still loading on this instance. Try again shortly.', {
    headers: { 'retry-after': String(RETRY_AFTER_SECONDS) },
  });
}

/** Mesh objects per object type, or null while this process has not loaded the mesh (metrics). */
export function meshObjectCounts(): Map<string, number> | null {
  return isReady && model ? model.typeCounts() : null;
}

/**
 * Ids of the mesh objects of `objectType` changed after `since` (ISO time; null: all of them), or null while
 * this process has not loaded the mesh. An in-memory pass over one type's index (metrics, every 30 s at most).
 */
export function meshIdsChangedSince(objectType: string, since: string | null): string[] | null {
  if (!isReady || !model) return null;
  const out: string[] = [];
  for (const r of model.ofType(objectType)?.all ?? []) if (since === null || r.updatedOn > since) out.push(r.id);
  return out;
}

/** Load figures of this process (for logs and benchmarks). */
export function meshReadModelStatus(): { ready: boolean; objects: number; loadMs?: number; feedPosition: number } {
  return { ready: isReady, objects: model?.size ?? 0, loadMs: loadedAt?.ms, feedPosition: reader?.position ?? 0 };
}

function describe(err: unknown): string {
  const e = err as { name?: string; statusCode?: number; code?: string };
  return [e?.name ?? 'Error', e?.statusCode ?? e?.code].filter(Boolean).join(' ');
}

/** The mesh read model's load. Listed last in SERVICE_STEPS (lib/api/serviceSteps.ts): steps that tap its first scan of the mesh (the sync engine's join index) must be in place before it starts. */
export const meshReadModelStep: ServiceStep = {
  name: 'meshReadModel',
  async start() {
    startMeshReadModel();
  },
  stop: stopMeshReadModel,
};
