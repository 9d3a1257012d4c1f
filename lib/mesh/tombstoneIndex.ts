import { indexKeys, type MeshObject } from './model';
import { getTombstones, iterateTombstones } from './tombstones';

/**
 * The in-memory index of tombstones of a process (lib/mesh/tombstones.ts): what the sync engine looks up when
 * an object it would project may be one that came back (a rehire). Keys: each connector link the object had
 * (`connector id` + its anchor, case-folded), its anchor value and the values of its attributes (case-folded,
 * as the join index keys them). Ids only: the engine reads the tombstones the keys name before planning, so
 * the table decides; a key left behind (a tombstone purged or restored by another process) finds nothing.
 *
 * Loaded by one scan of the table on first use, then kept current by this process's mesh commits (which write
 * and delete tombstones), its purge, and the change feed for other processes' deletions
 * ({@link noteForeignChanges}, called by the join index's sync). Empty (the common case) it costs a map
 * lookup per projected object.
 */
const LINK = '\u0001';
const ANCHOR = '';
/** Values longer than this are not keys (no join rule matches on a photo or a long description). */
const MAX_KEY = 256;
const k2 = (by: string, key: string) => by + '\u0000' + key;

export class TombstoneIndex {
  private readonly keysOf = new Map<string, string[]>();
  private readonly byKey = new Map<string, Set<string>>();

  get size(): number {
    return this.keysOf.size;
  }

  has(id: string): boolean {
    return this.keysOf.has(id);
  }

  /** Tombstones that were linked to `anchor` of `connectorId`. */
  byLink(connectorId: string, anchor: string): string[] {
    return this.list(k2(LINK + connectorId, anchor.toLowerCase()));
  }

  /** Tombstones whose anchor (`by` undefined) or attribute `by` had `key` (already case-folded). */
  find(by: string | undefined, key: string): string[] {
    return this.list(k2(by ?? ANCHOR, key));
  }

  add(state: MeshObject): void {
    this.remove(state.id);
    const keys = new Set<string>();
    for (const [c, a] of Object.entries(state.links)) keys.add(k2(LINK + c, a.toLowerCase()));
    for (const k of indexKeys(state.anchorValue)) keys.add(k2(ANCHOR, k));
    for (const [name, attr] of Object.entries(state.attributes)) for (const k of indexKeys(attr.value)) if (k.length <= MAX_KEY) keys.add(k2(name, k));
    const list = [...keys];
    this.keysOf.set(state.id, list);
    for (const k of list) {
      const s = this.byKey.get(k);
      if (s) s.add(state.id);
      else this.byKey.set(k, new Set([state.id]));
    }
  }

  remove(id: string): void {
    const keys = this.keysOf.get(id);
    if (!keys) return;
    this.keysOf.delete(id);
    for (const k of keys) {
      const s = this.byKey.get(k);
      if (!s) continue;
      s.delete(id);
      if (!s.size) this.byKey.delete(k);
    }
  }

  private list(k: string): string[] {
    const s = this.byKey.get(k);
    return s ? [...s] : [];
  }
}

let shared: TombstoneIndex | undefined;
let loading: Promise<TombstoneIndex> | undefined;

/** The process's tombstone index (loaded by one scan of the table on first use). */
export function sharedTombstoneIndex(): Promise<TombstoneIndex> {
  if (shared) return Promise.resolve(shared);
  loading ??= (async () => {
    const ix = new TombstoneIndex();
    for await (const page of iterateTombstones()) for (const t of page) ix.add(t.state);
    shared = ix;
    return ix;
  })().finally(() => (loading = undefined));
  return loading;
}

/** This process wrote tombstones (states) and brought back or purged others (ids): a loaded index follows. */
export function noteTombstones(added: readonly MeshObject[], removed: readonly string[]): void {
  const apply = (ix: TombstoneIndex) => {
    for (const id of removed) ix.remove(id);
    for (const s of added) ix.add(s);
  };
  if (shared) apply(shared);
  // A scan under way may have passed these rows already: applied after it.
  else if (loading) void loading.then(apply, () => undefined);
}

/**
 * Changes another process committed, from the change feed: its deletions may have left tombstones (read from
 * the table), and an object written again is no tombstone any more.
 */
export async function noteForeignChanges(deleted: readonly string[], written: readonly string[]): Promise<void> {
  if (!shared) return;
  for (const id of written) shared.remove(id);
  if (!deleted.length) return;
  const found = await getTombstones(deleted);
  for (const t of found.values()) shared?.add(t.state);
}

/** Forget the loaded index (tests that clear the tables). */
export function dropTombstoneIndex(): void {
  shared = undefined;
}
