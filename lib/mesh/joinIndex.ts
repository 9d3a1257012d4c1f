import { dnKey, indexKeys, type MeshObject, type PendingReference } from './model';
import { tapNextMeshLoad } from './feed';
import { FeedGapError, PROCESS_WRITER, currentFeedSeq, iterateMesh, ownRowsThrough, readFeed } from './store';
import { noteForeignChanges } from './tombstoneIndex';
import { areaLog } from '../core/log';

const log = areaLog('mesh');

/**
 * The in-memory join index of a process: what the sync engine looks up per object without a storage read.
 *
 * - by anchor value (case-folded) and by the values of the indexed attributes (join targets and the
 *   attributes relationship rules match on), to mesh ids;
 * - pending references (value -> the objects waiting for an object with that anchor/attribute value);
 * - incoming relationships (target id -> source ids), to re-point or drop relationships when a target goes;
 * - per id the object type and anchor value (relationship targets need them).
 *
 * Built once from a scan of the mesh, then kept current by the engine's own commits ({@link apply}) and by
 * the change feed ({@link sync}) for writes of other processes. It holds ids and keys, not whole objects.
 *
 * Layout (issue 21: a million identities in memory): each object has an integer slot (id -> slot), and its
 * type (an index into the few distinct types), anchor value and keys are kept by slot. The lookups map a key to
 * the slot of the one object that has it (nearly all keys: anchors, employee ids, mail) or to a list of slots,
 * never to a Set; one map per indexed attribute, keyed by the case-folded value itself. An object's anchor
 * keys are computed again from its anchor value when it changes, so only its attribute keys are kept with it.
 */
const ANCHOR = '';
/** The one empty list every slot without attribute keys, pending references or relationships shares (most of them). */
const NONE: never[] = Object.freeze([]) as unknown as never[];
const k2 = (by: string, key: string) => by + '\u0000' + key;
/**
 * The key a pending reference waits under: its value, case-folded. A connector's DN reference (`@dn:`) whose value
 * has an escape, a quote or a `+` is keyed by {@link dnKey} again: a value stored by an earlier version kept a
 * DN's escapes as written (`\,`) and the values of a multi-valued RDN in their order, and waits under the key the
 * connector space now gives that DN (`\2c`). Any other stored value is a key already.
 */
const pendingKey = (p: PendingReference): string => {
  const v = p.value;
  const rekey = p.by !== undefined && p.by.startsWith('@dn:') && (v.includes('\\') || v.includes('"') || v.includes('+'));
  return k2(p.by ?? ANCHOR, rekey ? dnKey(v) : v.toLowerCase());
};

/** One slot, or several (in the order they were added). */
type Slots = number | number[];

export class MeshIndex {
  /** Id -> slot; `ids[slot]` the id ('' for a free slot). */
  private readonly slotOf = new Map<string, number>();
  private readonly ids: string[] = [];
  private readonly free: number[] = [];
  private types = new Uint16Array(1024);
  private readonly anchors: string[] = [];
  /** Per slot: its attribute keys as pairs (attribute number in {@link names}, key). */
  private readonly keysOf: (string | number)[][] = [];
  private readonly pendOf: string[][] = [];
  private readonly relsOf: string[][] = [];
  /** Attribute name ('' the anchor) -> case-folded key -> slots. */
  private readonly byKey = new Map<string, Map<string, Slots>>();
  private readonly names: string[];
  private readonly pending = new Map<string, Slots>();
  private readonly incomingRel = new Map<string, Slots>();
  private lastSeq = 0;

  /** How it was built: its own scan of the mesh, or the read model's load at process start (a scan or its snapshot). */
  builtFrom: 'scan' | 'read model scan' = 'scan';

  constructor(readonly attributes: ReadonlySet<string>) {
    this.names = [...attributes];
    for (const by of [ANCHOR, ...this.names]) this.byKey.set(by, new Map());
  }

  get size(): number {
    return this.slotOf.size;
  }

  /** Mesh ids whose anchor (`by` undefined) or attribute `by` has `key` (already case-folded). */
  find(by: string | undefined, key: string): string[] {
    return this.list(this.byKey.get(by ?? ANCHOR)?.get(key));
  }

  info(id: string): { objectType: string; anchorValue: string } | undefined {
    const slot = this.slotOf.get(id);
    return slot === undefined ? undefined : { objectType: typeNames[this.types[slot]], anchorValue: this.anchors[slot] };
  }

  /** Objects waiting for an object whose anchor (`by` undefined) or attribute `by` is `key`. */
  waiting(by: string | undefined, key: string): string[] {
    return this.list(this.pending.get(k2(by ?? ANCHOR, key)));
  }

  /** Objects with a relationship to `targetId`. */
  incoming(targetId: string): string[] {
    return this.list(this.incomingRel.get(targetId));
  }

  /** Counts {@link apply} calls: an index derived from this one (lib/sync/correlation) knows when it is behind. */
  generation = 0;

  /** Every key of attribute `by` with its ids (the correlation index of normalised and fuzzy join rules reads them). */
  *entries(by: string): IterableIterator<[string, string[]]> {
    const map = this.byKey.get(by);
    if (map) for (const [key, slots] of map) yield [key, this.list(slots)];
  }

  /** Record the committed state of an object (null: deleted). */
  apply(id: string, state: MeshObject | null): void {
    this.generation++;
    let slot = this.slotOf.get(id);
    if (slot !== undefined) {
      const anchorKeys = this.byKey.get(ANCHOR)!;
      for (const k of indexKeys(this.anchors[slot])) remove(anchorKeys, k, slot);
      const keys = this.keysOf[slot];
      for (let i = 0; i < keys.length; i += 2) remove(this.byKey.get(this.names[keys[i] as number])!, keys[i + 1] as string, slot);
      for (const k of this.pendOf[slot]) remove(this.pending, k, slot);
      for (const t of this.relsOf[slot]) remove(this.incomingRel, t, slot);
      if (!state) {
        this.slotOf.delete(id);
        this.ids[slot] = '';
        this.anchors[slot] = '';
        this.keysOf[slot] = this.pendOf[slot] = this.relsOf[slot] = NONE;
        this.free.push(slot);
        return;
      }
    }
    if (!state) return;
    if (slot === undefined) {
      slot = this.free.pop() ?? this.ids.length;
      if (slot === this.ids.length) {
        this.ids.push(id);
        this.anchors.push('');
        this.keysOf.push(NONE);
        this.pendOf.push(NONE);
        this.relsOf.push(NONE);
        if (slot === this.types.length) {
          const more = new Uint16Array(this.types.length * 2);
          more.set(this.types);
          this.types = more;
        }
      } else this.ids[slot] = id;
      this.slotOf.set(id, slot);
    }
    this.types[slot] = typeNumber(state.objectType);
    this.anchors[slot] = state.anchorValue;
    const anchorKeys = this.byKey.get(ANCHOR)!;
    for (const k of new Set(indexKeys(state.anchorValue))) add(anchorKeys, k, slot);
    let keys: (string | number)[] = NONE;
    for (let n = 0; n < this.names.length; n++) {
      const a = state.attributes[this.names[n]];
      if (!a) continue;
      const map = this.byKey.get(this.names[n])!;
      for (const k of new Set(indexKeys(a.value))) {
        if (keys === NONE) keys = [];
        keys.push(n, k);
        add(map, k, slot);
      }
    }
    this.keysOf[slot] = keys;
    const pend = state.pendingReferences.length ? [...new Set(state.pendingReferences.map(pendingKey))] : NONE;
    this.pendOf[slot] = pend;
    for (const k of pend) add(this.pending, k, slot);
    // A target's id string is the one the index already holds for it, when it does (one copy, not one per source).
    const rels = state.relationships.length ? [...new Set(state.relationships.map((r) => this.canonical(r.targetId)))] : NONE;
    this.relsOf[slot] = rels;
    for (const t of rels) add(this.incomingRel, t, slot);
  }
  /** Called with the id of every object another process changed (caches of whole objects drop it). */
  onForeignChange: ((id: string) => void) | undefined;

  /**
   * The feed position this index needs rows after: where it has applied the feed, moved past the rows this
   * process wrote after it (it has those already). The feed's trim keeps the rows after it.
   */
  get position(): number {
    return ownRowsThrough(this.lastSeq);
  }

  /** Where the last sync (or the scan) left it. */
  get applied(): number {
    return this.lastSeq;
  }

  /** The feed position a scan began at (the next {@link sync} reads the rows after it). */
  startAt(seq: number): void {
    this.lastSeq = seq;
  }

  /** Apply the feed rows other processes appended since the last sync. */
  async sync(): Promise<void> {
    for (;;) {
      const rows = await readFeed(this.lastSeq, { limit: 500, skipWriter: PROCESS_WRITER });
      // Rows missing right after the position were trimmed (lib/sync/run/feedTrim.ts): harmless when this process
      // wrote them all (its own writes are in the index already), else the index must be built again.
      if (rows.length && rows[0].seq > this.lastSeq + 1 && ownRowsThrough(this.lastSeq) < rows[0].seq - 1) {
        throw new FeedGapError(this.lastSeq, rows[0].seq);
      }
      const deleted: string[] = [];
      const written: string[] = [];
      for (const r of rows) {
        for (const en of r.entries) {
          // A link entry (an export linked the object) changes nothing this index keeps.
          if ('link' in en) {
            this.onForeignChange?.(en.id);
            continue;
          }
          this.apply(en.id, 'state' in en ? en.state : null);
          ('state' in en ? written : deleted).push(en.id);
          this.onForeignChange?.(en.id);
        }
        this.lastSeq = r.seq;
      }
      // Another process's deletions left tombstones, and its writes brought objects back (lib/mesh/tombstoneIndex.ts).
      if (deleted.length || written.length) await noteForeignChanges(deleted, written);
      if (rows.length < 500) return;
    }
  }

  /** Build from storage: note the feed position, scan the mesh, then catch up from the noted position. */
  static async load(attributes: ReadonlySet<string>): Promise<MeshIndex> {
    const ix = new MeshIndex(attributes);
    ix.lastSeq = await currentFeedSeq();
    for await (const page of iterateMesh(undefined, undefined, 'consolidated')) for (const o of page) ix.apply(o.id, o);
    await ix.sync();
    return ix;
  }

  private canonical(id: string): string {
    const slot = this.slotOf.get(id);
    return slot === undefined ? id : this.ids[slot];
  }

  private list(slots: Slots | undefined): string[] {
    return slots === undefined ? [] : typeof slots === 'number' ? [this.ids[slots]] : slots.map((s) => this.ids[s]);
  }
}

/** The object types of every index, numbered (a handful: one number per object, not a string). */
const typeNames: string[] = [];
const typeNumbers = new Map<string, number>();
function typeNumber(t: string): number {
  let n = typeNumbers.get(t);
  if (n === undefined) {
    if (typeNames.length === 0xffff) throw new Error('More than 65,535 distinct object types.');
    n = typeNames.push(t) - 1;
    typeNumbers.set(t, n);
  }
  return n;
}

function add(map: Map<string, Slots>, key: string, slot: number): void {
  const s = map.get(key);
  if (s === undefined) map.set(key, slot);
  else if (typeof s === 'number') {
    if (s !== slot) map.set(key, [s, slot]);
  } else if (!s.includes(slot)) s.push(slot);
}

function remove(map: Map<string, Slots>, key: string, slot: number): void {
  const s = map.get(key);
  if (s === undefined) return;
  if (typeof s === 'number') {
    if (s === slot) map.delete(key);
    return;
  }
  const i = s.indexOf(slot);
  if (i < 0) return;
  s.splice(i, 1);
  if (s.length === 1) map.set(key, s[0]);
}

let shared: { index: MeshIndex; attrs: string } | undefined;
/** A build from the read model's first scan, once that scan has begun (see {@link preloadSharedIndex}). */
let preloading: Promise<void> | undefined;
let preloads = 0;

/**
 * The process's index covering `attributes` (rebuilt when a new attribute must be indexed), synced with the
 * feed. {@link dropSharedIndex} after a failed or dry-run page, whose effects were applied but not committed.
 */
export async function sharedIndex(attributes: Iterable<string>): Promise<MeshIndex> {
  if (!shared && preloading) await preloading;
  const want = new Set(attributes);
  // The index this call found: another caller may drop or replace the shared one while this one awaits its
  // sync (a preload that failed after a restart: the cause of a dry run's "reading 'index'" crash).
  const found = shared?.index;
  if (found && [...want].every((a) => found.attributes.has(a))) {
    try {
      await found.sync();
      return found;
    } catch (err) {
      if (!(err instanceof FeedGapError)) throw err;
      log.warn(`The join index is built again from the mesh: ${err.message}`);
    }
  }
  const all = new Set([...(shared?.index.attributes ?? []), ...want]);
  const index = await MeshIndex.load(all);
  shared = { index, attrs: [...all].sort().join(',') };
  return index;
}

/** Whether a run asking for the index now would wait for the read model's scan (tests, diagnostics). */
export function preloadInProgress(): boolean {
  return preloading !== undefined;
}

/**
 * The feed positions of the process's join index (undefined: no index built): `position`, the rows it needs
 * after; `applied`, where its last sync ended (the own rows after it are still looked up there).
 */
export function sharedIndexPosition(): { position: number; applied: number } | undefined {
  return shared && { position: shared.index.position, applied: shared.index.applied };
}

export function dropSharedIndex(): void {
  shared = undefined;
  preloads++;
  preloading = undefined;
}

/**
 * Build the process's index from the mesh read model's first scan (lib/mesh/feed.ts `tapNextMeshLoad`)
 * instead of a scan of its own on the first run: at process start, before the read model starts loading.
 * Without it a process's first import or delta scanned the whole mesh again (11 s at 100,000 objects with 22
 * attributes). A run that starts while the scan is going waits for it; one that starts before the scan has
 * begun, or after it failed, builds the index as before. `attributes` are the ones the rules index now
 * (more later rebuild it, as always).
 */
export function preloadSharedIndex(attributes: Iterable<string>): void {
  if (shared) return;
  const generation = ++preloads;
  const ix = new MeshIndex(new Set(attributes));
  ix.builtFrom = 'read model scan';
  let settle!: () => void;
  const current = () => generation === preloads && !shared;
  tapNextMeshLoad({
    attributes: ix.attributes,
    begin(seq) {
      ix.startAt(seq);
      if (current()) preloading = new Promise<void>((res) => (settle = res));
    },
    page(objects) {
      if (current()) for (const o of objects) ix.apply(o.id, o);
    },
    end(ok) {
      const done = () => {
        if (generation === preloads) preloading = undefined;
        settle?.();
      };
      if (!ok || !current()) return done();
      // Feed rows of other processes appended since the noted position (this process has written nothing
      // meanwhile: its runs wait for this).
      ix.sync().then(() => {
        if (current()) shared = { index: ix, attrs: [...ix.attributes].sort().join(',') };
        done();
      }, done);
    },
  });
}
