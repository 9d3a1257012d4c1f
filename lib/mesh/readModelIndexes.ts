import type { AttributeValue } from '../core/values';
import type { PendingReference, Relationship } from './model';

/**
 * The building blocks of the mesh read model (readModel.ts): interned names, one record per object, attribute
 * columns indexed by slot, and the ordered anchor indexes. Pure data structures: no storage, no feed.
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

/** Strings up to this length are shared through the value intern maps; longer ones are mostly unique. */
export const INTERN_MAX = 24;
/**
 * A value intern map ({@link ValueInterner}) is checked at this many entries: it starts over when most of
 * its lookups found a value already there (departments, titles, flags), and is switched off for good when
 * most did not (anchors, employee ids, mail addresses: an entry costs more than the string it would share,
 * and filling and clearing a map with values that never repeat cost a tenth of the start-up load).
 */
export const INTERN_ENTRIES_MAX = 16_384;

/**
 * Shares equal short strings of one kind of value (one attribute's values, the anchors, the relationship
 * types): each kind repeats (a department) or does not (an employee id) on its own, so each has its own map
 * and its own verdict (see {@link INTERN_ENTRIES_MAX}). Only memory depends on it: the strings are equal.
 */
export class ValueInterner {
  private map: Map<string, string> | undefined = new Map();
  private lookups = 0;
  private hits = 0;

  get on(): boolean {
    return this.map !== undefined;
  }

  get size(): number {
    return this.map?.size ?? 0;
  }

  intern(s: string): string {
    const map = this.map;
    if (map === undefined || s.length > INTERN_MAX) return s;
    this.lookups++;
    const v = map.get(s);
    if (v !== undefined) {
      this.hits++;
      return v;
    }
    if (map.size >= INTERN_ENTRIES_MAX) {
      if (this.hits * 2 < this.lookups) {
        this.map = undefined;
        return s;
      }
      map.clear();
      this.lookups = this.hits = 0;
    }
    map.set(s, s);
    return s;
  }
}

/** No source connector (a mesh-composer value). */
export const NO_SOURCE = -1;

export const EMPTY_RELS: readonly Relationship[] = Object.freeze([]);
export const EMPTY_PENDING: readonly PendingReference[] = Object.freeze([]);

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
    /** References not resolved yet (kept for the sync engine's join index, which a snapshot rebuilds: lib/mesh/readModelSnapshot.ts). */
    readonly pending: readonly PendingReference[] = EMPTY_PENDING,
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
  /** Shares this attribute's short values and their folded forms. */
  readonly strings = new ValueInterner();
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

  /**
   * Set `hits[slot] = 1` for every slot with a folded value that matches `want` (already lower-cased), and
   * push each slot newly marked to `found` (so `found` lists each slot once, across the columns and patterns
   * that share `hits`).
   */
  match(mode: MatchMode, want: string, hits: Uint8Array, found: number[]): void {
    if (want === '' || want.includes(SEP)) return this.matchSlowly(mode, want, hits, found);
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
      lo = lastAtOrBefore(starts, lead ? p + 1 : p, lo);
      const slot = slots[lo];
      if (hits[slot] === 0) {
        hits[slot] = 1;
        found.push(slot);
      }
      if (lo + 1 >= n) break;
      lo++;
      p = text.indexOf(pattern, lead ? starts[lo] - 1 : starts[lo]);
    }
  }

  private matchSlowly(mode: MatchMode, want: string, hits: Uint8Array, found: number[]): void {
    const test = (s: string) =>
      mode === 'equals' ? s === want : mode === 'startswith' ? s.startsWith(want) : mode === 'endswith' ? s.endsWith(want) : s.includes(want);
    this.folded.forEach((v, slot) => {
      if (v == null || hits[slot] === 1) return;
      if (typeof v === 'string' ? test(v) : v.some(test)) {
        hits[slot] = 1;
        found.push(slot);
      }
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

/**
 * The last index `i >= from` with `starts[i] <= q` (`starts` ascending, `starts[from] <= q`): galloping from
 * `from`, then a binary search. Hits come in increasing order, so each costs the log of its distance from the
 * previous one, not of the whole column (a criterion matching 100,000 of a million values made 100,000
 * searches of 20 steps each).
 */
function lastAtOrBefore(starts: Int32Array, q: number, from: number): number {
  const n = starts.length;
  let lo = from;
  let step = 1;
  let hi = from + 1;
  while (hi < n && starts[hi] <= q) {
    lo = hi;
    step <<= 1;
    hi = lo + step;
  }
  if (hi > n - 1) hi = n - 1;
  while (lo < hi) {
    const mid = (lo + hi + 1) >>> 1;
    if (starts[mid] <= q) lo = mid;
    else hi = mid - 1;
  }
  return lo;
}

/** Separates anchors in the joined search text (cannot occur in a needle that uses the fast path). */
const SEP = '\u0000';

/** Order of the indexes: anchor lower-cased (ordinal, by UTF-16 code units), then the id. */
export function compareRecords(a: MeshRecord, b: MeshRecord): number {
  if (a.anchorLower !== b.anchorLower) return a.anchorLower < b.anchorLower ? -1 : 1;
  if (a.id !== b.id) return a.id < b.id ? -1 : 1;
  return 0;
}

/** Noted changes below this many are never merged before a read ({@link SortedIndex}). */
export const MERGE_AT_LEAST = 20_000;

/**
 * Records in {@link compareRecords} order. A record is removed by the record object it was inserted with
 * (its sort key is immutable), so a renamed anchor is a remove of the old record and an insert of the new.
 *
 * Changes wait until the index is next read: {@link bulk} (a feed page), {@link insert} and {@link remove}
 * only note them, and the first read merges everything noted since the last one in one pass. An import or an
 * export applies a feed page of about 1,000 changes after each of its pages; merging each into the ordered
 * array cost O(n) per page, so O(n^2 / 1,000) for a run: 39 s of a 300,000-user import's CPU, and growing
 * with the square of the mesh. Now a run with nobody reading the mesh merges once, and a reader merges what
 * changed since the previous read (one pass, O(n + k log k)).
 */
export class SortedIndex {
  private items: MeshRecord[] = [];
  /** Records appended by {@link append} and not sorted in yet: every other method sorts first. */
  private unsorted = false;
  /** Records noted as added and not merged in yet (none of them is in `items`). */
  private readonly pendingAdded = new Set<MeshRecord>();
  /** Records of `items` noted as removed and not taken out yet. */
  private readonly pendingRemoved = new Set<MeshRecord>();
  /** Every anchorLower joined by SEP, and where each starts: built on the first search after a change. */
  private text: string | undefined;
  private starts: Int32Array | undefined;
  /** The records' slots in order: built on the first criteria scan after a change. */
  private slotList: Int32Array | undefined;
  /** Each slot's position in the order (-1: not in this index), by slot: built with `slotList`. */
  private rankList: Int32Array | undefined;

  /** How many records it holds (changes noted and not merged yet counted; nothing merged). */
  get size(): number {
    return this.items.length + this.pendingAdded.size - this.pendingRemoved.size;
  }

  get all(): readonly MeshRecord[] {
    this.settle();
    return this.items;
  }

  at(i: number): MeshRecord {
    this.settle();
    return this.items[i];
  }

  /**
   * Add records in any order, sorted in once when the index is next read or changed otherwise: the initial
   * load appends 100 pages of 1,000 records and sorts once (O(n log n)), instead of merging every page into
   * an ever larger array (O(n) per page, and an array of garbage each time).
   */
  append(r: MeshRecord): void {
    this.items.push(r);
    this.unsorted = true;
    this.invalidate();
  }

  /** Sort what {@link append} added, then merge the noted changes. */
  private settle(): void {
    if (this.unsorted) {
      this.unsorted = false;
      this.items.sort(compareRecords);
    }
    if (this.pendingAdded.size || this.pendingRemoved.size) this.merge();
  }

  private invalidate(): void {
    this.text = undefined;
    this.starts = undefined;
    this.slotList = undefined;
    this.rankList = undefined;
  }

  /** Slots of the records, in order (a scan reads columns by slot without touching the records). */
  slots(): Int32Array {
    this.settle();
    if (!this.slotList) {
      const out = new Int32Array(this.items.length);
      for (let i = 0; i < out.length; i++) out[i] = this.items[i].slot;
      this.slotList = out;
    }
    return this.slotList;
  }

  /**
   * Each slot's position in the order, by slot (-1, or past the end: not in this index). Lets a query that
   * found a few matching slots order them without a pass over the whole index.
   */
  ranks(): Int32Array {
    const slots = this.slots();
    if (!this.rankList) {
      let max = -1;
      for (let i = 0; i < slots.length; i++) if (slots[i] > max) max = slots[i];
      const out = new Int32Array(max + 1).fill(-1);
      for (let i = 0; i < slots.length; i++) out[slots[i]] = i;
      this.rankList = out;
    }
    return this.rankList;
  }

  /** The first position whose record sorts at or after `r` (in `items` as they are). */
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
    // Removed and added back before a merge: it is still in `items`.
    if (!this.pendingRemoved.delete(r)) this.pendingAdded.add(r);
    this.invalidate();
    this.mergeWhenMany();
  }

  /** Note `r`'s removal; false when the index does not hold it. */
  remove(r: MeshRecord): boolean {
    if (this.pendingAdded.delete(r)) {
      this.invalidate();
      return true;
    }
    if (this.pendingRemoved.has(r)) return false;
    if (this.unsorted) this.settle();
    const i = this.lowerBound(r);
    if (this.items[i] !== r) return false;
    this.pendingRemoved.add(r);
    this.invalidate();
    return true;
  }

  /**
   * Remove `removed` (records the index holds) and add `added` (records it does not), merged in when the
   * index is next read.
   */
  bulk(removed: ReadonlySet<MeshRecord>, added: readonly MeshRecord[]): void {
    for (const r of removed) if (!this.pendingAdded.delete(r)) this.pendingRemoved.add(r);
    for (const r of added) if (!this.pendingRemoved.delete(r)) this.pendingAdded.add(r);
    this.invalidate();
    this.mergeWhenMany();
  }

  /**
   * Merge when the noted changes pass a quarter of the records (and {@link MERGE_AT_LEAST}): a removed record
   * is held until the merge, so a million-object run with nobody reading keeps at most a quarter of the
   * records twice, and the merges (O(n) each) stay linear over the run.
   */
  private mergeWhenMany(): void {
    const noted = this.pendingAdded.size + this.pendingRemoved.size;
    if (noted > MERGE_AT_LEAST && noted > this.items.length >> 2) this.settle();
  }

  /**
   * Take out the noted removals and merge in the noted additions: a few by splicing (each O(n), a native
   * move), more in one pass: filter, sort the additions, merge. O(n + k log k). The merge finds each
   * addition's place by binary search and copies the records before it without comparing them (2,000
   * additions to 100,000 records: 2,000 x 17 comparisons instead of 102,000).
   */
  private merge(): void {
    const removed = this.pendingRemoved;
    const added = [...this.pendingAdded].sort(compareRecords);
    if (added.length + removed.size <= 32) {
      for (const r of removed) {
        const i = this.lowerBound(r);
        if (this.items[i] === r) this.items.splice(i, 1);
      }
      removed.clear();
      this.pendingAdded.clear();
      for (const r of added) this.items.splice(this.lowerBound(r), 0, r);
      return;
    }
    const kept = removed.size ? this.items.filter((r) => !removed.has(r)) : this.items;
    removed.clear();
    this.pendingAdded.clear();
    const out: MeshRecord[] = new Array(kept.length + added.length);
    let i = 0;
    let k = 0;
    for (const a of added) {
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
  }

  /**
   * Positions, in order, of the records whose anchorLower contains `needle` (already lower-cased). One
   * native indexOf over the joined anchors instead of a call per record: it does not touch the records and
   * runs several times faster. A needle holding the separator falls back to a scan.
   */
  searchPositions(needle: string): number[] {
    this.settle();
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
      lo = lastAtOrBefore(starts, p, lo);
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
