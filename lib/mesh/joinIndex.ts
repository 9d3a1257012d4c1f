import { indexKeys, type MeshObject } from './model';
import { tapNextMeshLoad } from './feed';
import { PROCESS_WRITER, currentFeedSeq, iterateMesh, readFeed } from './store';
import { noteForeignChanges } from './tombstoneIndex';

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
 * the change feed ({@link sync}) for writes of other processes. It holds ids and keys, not whole objects,
 * so 100,000 objects stay in tens of megabytes. A key that maps to one id (nearly all of them: anchors,
 * employee ids) holds the id itself, not a one-element Set (a Set costs about 150 bytes).
 */
interface Entry {
  t: string;
  a: string;
  keys: string[];
  pend: string[];
  rels: string[];
}

const ANCHOR = '';
/** The one empty list every entry without pending references or relationships shares (most of them). */
const NONE: string[] = Object.freeze([]) as unknown as string[];
const k2 = (by: string, key: string) => by + '\u0000' + key;

export class MeshIndex {
  private readonly entries = new Map<string, Entry>();
  private readonly byKey = new Map<string, Ids>();
  private readonly pending = new Map<string, Ids>();
  private readonly incomingRel = new Map<string, Ids>();
  private lastSeq = 0;

  /** How it was built: its own scan of the mesh, or the read model's scan at process start. */
  builtFrom: 'scan' | 'read model scan' = 'scan';

  constructor(readonly attributes: ReadonlySet<string>) {}

  get size(): number {
    return this.entries.size;
  }

  /** Mesh ids whose anchor (`by` undefined) or attribute `by` has `key` (already case-folded). */
  find(by: string | undefined, key: string): string[] {
    return list(this.byKey.get(k2(by ?? ANCHOR, key)));
  }

  info(id: string): { objectType: string; anchorValue: string } | undefined {
    const e = this.entries.get(id);
    return e ? { objectType: e.t, anchorValue: e.a } : undefined;
  }

  /** Objects waiting for an object whose anchor (`by` undefined) or attribute `by` is `key`. */
  waiting(by: string | undefined, key: string): string[] {
    return list(this.pending.get(k2(by ?? ANCHOR, key)));
  }

  /** Objects with a relationship to `targetId`. */
  incoming(targetId: string): string[] {
    return list(this.incomingRel.get(targetId));
  }

  /** Record the committed state of an object (null: deleted). */
  apply(id: string, state: MeshObject | null): void {
    const old = this.entries.get(id);
    if (old) {
      for (const k of old.keys) remove(this.byKey, k, id);
      for (const k of old.pend) remove(this.pending, k, id);
      for (const t of old.rels) remove(this.incomingRel, t, id);
      this.entries.delete(id);
    }
    if (!state) return;
    const keys = new Set<string>();
    for (const k of indexKeys(state.anchorValue)) keys.add(k2(ANCHOR, k));
    for (const attr of this.attributes) {
      const a = state.attributes[attr];
      if (a) for (const k of indexKeys(a.value)) keys.add(k2(attr, k));
    }
    const pend = state.pendingReferences.length ? [...new Set(state.pendingReferences.map((p) => k2(p.by ?? ANCHOR, p.value.toLowerCase())))] : NONE;
    const rels = state.relationships.length ? [...new Set(state.relationships.map((r) => r.targetId))] : NONE;
    const e: Entry = { t: internType(state.objectType), a: state.anchorValue, keys: [...keys], pend, rels };
    this.entries.set(id, e);
    for (const k of e.keys) add(this.byKey, k, id);
    for (const k of e.pend) add(this.pending, k, id);
    for (const t of e.rels) add(this.incomingRel, t, id);
  }

  /** Called with the id of every object another process changed (caches of whole objects drop it). */
  onForeignChange: ((id: string) => void) | undefined;

  /** The feed position a scan began at (the next {@link sync} reads the rows after it). */
  startAt(seq: number): void {
    this.lastSeq = seq;
  }

  /** Apply the feed rows other processes appended since the last sync. */
  async sync(): Promise<void> {
    for (;;) {
      const rows = await readFeed(this.lastSeq, { limit: 500, skipWriter: PROCESS_WRITER });
      const deleted: string[] = [];
      const written: string[] = [];
      for (const r of rows) {
        for (const en of r.entries) {
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
}

const types = new Map<string, string>();
/** One string per object type for the whole index (each state parsed from storage has its own copy). */
function internType(t: string): string {
  const known = types.get(t);
  if (known !== undefined) return known;
  types.set(t, t);
  return t;
}

/** One id, or several. */
type Ids = string | Set<string>;

const list = (ids: Ids | undefined): string[] => (ids === undefined ? [] : typeof ids === 'string' ? [ids] : [...ids]);

function add(map: Map<string, Ids>, key: string, id: string): void {
  const s = map.get(key);
  if (s === undefined) map.set(key, id);
  else if (typeof s === 'string') {
    if (s !== id) map.set(key, new Set([s, id]));
  } else s.add(id);
}

function remove(map: Map<string, Ids>, key: string, id: string): void {
  const s = map.get(key);
  if (s === undefined) return;
  if (typeof s === 'string') {
    if (s === id) map.delete(key);
    return;
  }
  s.delete(id);
  if (s.size === 1) map.set(key, s.values().next().value as string);
  else if (!s.size) map.delete(key);
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
  if (shared && [...want].every((a) => shared!.index.attributes.has(a))) {
    await shared.index.sync();
    return shared.index;
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
