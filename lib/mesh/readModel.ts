import type { AttributeValue, ScalarValue } from '../core/values';
import { AppError } from '../core/errors';
import type { ServiceStep } from '../core/service';
import type { MeshObject, PendingReference, Relationship } from './model';
import { compactObject, compactRelationships, type CompactPage, type CompactRow } from './readModelCompact';
import { MeshFeedReader, type MeshSnapshotPage } from './feed';
import { areaLog } from '../core/log';
import { readReadModelSnapshot, readReadModelSnapshotIdleSeconds, SettingsReader } from '../core/config';
import { snapshotFile, snapshotSource, writeSnapshot } from './readModelSnapshot';
import { FeedGapError, feedRowTag, type FeedEntry } from './store';
import { AttributeColumn, EMPTY_PENDING, EMPTY_RELS, type FoldedValue, Interner, MeshRecord, NO_SOURCE, SortedIndex, ValueInterner } from './readModelIndexes';

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
 *   object types and timestamps are interned; short string values are shared through an intern map per
 *   attribute (departments, titles, flags repeat; an attribute whose values do not, such as employee ids,
 *   stops interning: {@link ValueInterner}).
 *   Contributions are not kept: the detail shows the consolidated attribute's source and confidence.
 * - ordered indexes by (anchorValue lower-cased, id): one over every object and one per object type
 *   (case-insensitive), each a sorted array maintained incrementally (binary-search insert/remove for small
 *   batches, filter + merge for large ones: never a full re-sort). The initial load appends records and
 *   sorts each index once ({@link SortedIndex.append}).
 */
/** The mesh in memory, with its ordered indexes. Fed by {@link MeshFeedReader}. */
export class MeshReadModel {
  readonly names = new Interner();
  readonly sources = new Interner();
  readonly stamps = new Interner();
  /** Columns by attribute name id. */
  readonly columns: AttributeColumn[] = [];
  private readonly types = new Map<string, string>();
  /** Anchors and relationship types (values and their folded forms are interned per column). */
  private readonly anchors = new ValueInterner();
  private readonly relTypes = new ValueInterner();
  private readonly nameLists = new Map<string, readonly number[]>();
  private readonly byId = new Map<string, MeshRecord>();
  private readonly freeSlots: number[] = [];
  private nextSlot = 0;
  readonly all = new SortedIndex();
  private readonly byType = new Map<string, SortedIndex>();
  /** Attribute names by lower-cased name (criteria match names case-insensitively). */
  private readonly namesLower = new Map<string, number[]>();
  /**
   * Incoming relationships: target id -> the ids of the objects whose relationships name it (once per source
   * object, whatever the number of types). A person's list is short (its groups, its direct reports), so a
   * change removes from a small array; only objects with relationships add to it.
   */
  private readonly incoming = new Map<string, string[]>();

  get size(): number {
    return this.byId.size;
  }

  /** Bumped by every change after the load's pages (a snapshot being written gives up when it moves). */
  changes = 0;

  /** Every record, in no particular order. */
  records(): IterableIterator<MeshRecord> {
    return this.byId.values();
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

  /**
   * Scan pages: objects not seen yet (any order). Each record is appended to its indexes, which sort once when
   * next read (a load of 100 pages sorts once, not 100 times); an id already held goes the way of a feed
   * state instead.
   */
  loadPage(objects: MeshObject[]): void {
    for (const o of objects) {
      const id = o.id.toLowerCase();
      if (this.byId.has(id)) {
        this.applyStates([{ id, state: o }]);
        continue;
      }
      this.appendLoaded(this.toRecord(id, o, this.freeSlots.pop() ?? this.nextSlot++));
    }
  }

  private appendLoaded(rec: MeshRecord): void {
    this.byId.set(rec.id, rec);
    this.linkIncoming(rec);
    this.all.append(rec);
    const key = rec.objectType.toLowerCase();
    let ix = this.byType.get(key);
    if (!ix) this.byType.set(key, (ix = new SortedIndex()));
    ix.append(rec);
  }

  loadSnapshotPage(page: MeshSnapshotPage): void {
    this.loadCompactPage(page.compact);
  }

  /**
   * Records `from` to `to` of `records` in the compact form (see {@link CompactPage}), as this model holds them:
   * what the snapshot writes (lib/mesh/readModelSnapshot.ts).
   */
  compactPage(records: readonly MeshRecord[], from: number, to: number): CompactPage {
    const keys: string[] = [];
    const ids = new Map<string, number>();
    const k = (s: string): number => {
      let n = ids.get(s);
      if (n === undefined) {
        ids.set(s, (n = keys.length));
        keys.push(s);
      }
      return n;
    };
    const rows: CompactRow[] = [];
    for (let i = from; i < to; i++) {
      const r = records[i];
      const attrs: unknown[] = [];
      for (const n of r.names) {
        const column = this.columns[n];
        const m = r.slot * 3;
        const source = column.meta[m];
        attrs.push(
          k(this.names.values[n]),
          column.values[r.slot] ?? null,
          source === NO_SOURCE ? -1 : k(this.sources.values[source]),
          column.meta[m + 1],
          k(this.stamps.values[column.meta[m + 2]]),
        );
      }
      const rels: unknown[] = [];
      for (const x of r.relationships) rels.push(k(x.type), x.targetId, x.targetAnchor, k(x.targetType));
      rows.push([r.id, k(r.objectType), r.anchorValue, k(r.createdOn), k(r.updatedOn), attrs, rels, r.pending.length ? [...r.pending] : 0]);
    }
    return [keys, rows];
  }

  /**
   * A page in the compact form (a snapshot's), loaded as {@link loadPage} loads a scan's, without a whole
   * {@link MeshObject} per object: each key's attribute, connector and time id is looked up once per page.
   */
  loadCompactPage([keys, rows]: CompactPage): void {
    const nameOf = new Int32Array(keys.length).fill(-1);
    const sourceOf = new Int32Array(keys.length).fill(-1);
    const stampOf = new Int32Array(keys.length).fill(-1);
    for (const row of rows) {
      const [rawId, type, anchorValue, createdOn, updatedOn, attrs, rels, pending] = row;
      const id = rawId.toLowerCase();
      if (this.byId.has(id)) {
        this.applyStates([{ id, state: compactObject(keys, row) }]);
        continue;
      }
      const slot = this.freeSlots.pop() ?? this.nextSlot++;
      const ids: number[] = new Array(attrs.length / 5);
      for (let j = 0, i = 0; j < attrs.length; j += 5, i++) {
        const nk = attrs[j] as number;
        const n = nameOf[nk] >= 0 ? nameOf[nk] : (nameOf[nk] = this.nameId(keys[nk]));
        ids[i] = n;
        const sk = attrs[j + 2] as number;
        const source = sk === -1 ? NO_SOURCE : sourceOf[sk] >= 0 ? sourceOf[sk] : (sourceOf[sk] = this.sources.id(keys[sk]));
        const tk = attrs[j + 4] as number;
        const stamp = stampOf[tk] >= 0 ? stampOf[tk] : (stampOf[tk] = this.stamps.id(keys[tk]));
        this.setAttribute(slot, n, attrs[j + 1] as AttributeValue, source, attrs[j + 3] as number, stamp);
      }
      const relationships = rels.length ? compactRelationships(keys, rels) : EMPTY_RELS;
      this.appendLoaded(this.record(id, keys[type], anchorValue, keys[createdOn], keys[updatedOn], slot, ids, relationships, pending || EMPTY_PENDING));
    }
  }

  applyEntries(entries: FeedEntry[]): void {
    // A link entry (an export linked the object: lib/mesh/store.ts patchMeshLinks) changes nothing the model
    // keeps but the object's updatedOn; a later state or deletion of the same object supersedes it.
    const states: { id: string; state: MeshObject | null }[] = [];
    const touched = new Map<string, string>();
    for (const e of entries) {
      const id = e.id.toLowerCase();
      if ('link' in e) {
        if (e.link.updatedOn) touched.set(id, e.link.updatedOn);
        continue;
      }
      touched.delete(id);
      states.push({ id: e.id, state: 'state' in e ? e.state : null });
    }
    if (states.length) this.applyStates(states);
    if (!touched.size) return;
    this.changes++;
    for (const [id, updatedOn] of touched) {
      const rec = this.byId.get(id);
      // The sorted indexes order by anchor and id: a new updatedOn leaves every position as it is.
      if (rec) (rec as { updatedOn: string }).updatedOn = this.stamp(updatedOn);
    }
  }

  /** Apply states in order (null: deleted); the last state of an id wins. */
  applyStates(changes: { id: string; state: MeshObject | null }[]): void {
    this.changes++;
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
        this.unlinkIncoming(old);
        for (const n of old.names) this.columns[n].clear(old.slot);
        slot = old.slot;
      }
      if (state) {
        const rec = this.toRecord(id, state, slot ?? this.freeSlots.pop() ?? this.nextSlot++);
        this.byId.set(id, rec);
        this.linkIncoming(rec);
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
    // Names in UTF-16 code unit order (the default sort's); no [name, value] pair per attribute.
    const attrs = o.attributes;
    const sortedNames = Object.keys(attrs).sort();
    const ids: number[] = new Array(sortedNames.length);
    for (let i = 0; i < sortedNames.length; i++) {
      const attr = attrs[sortedNames[i]];
      const n = this.nameId(sortedNames[i]);
      ids[i] = n;
      this.setAttribute(
        slot,
        n,
        attr.value,
        attr.sourceConnectorId ? this.sources.id(attr.sourceConnectorId) : NO_SOURCE,
        attr.confidence,
        this.stamps.id(attr.updatedOn),
      );
    }
    return this.record(id, o.objectType, o.anchorValue, o.createdOn, o.updatedOn, slot, ids, o.relationships, o.pendingReferences);
  }

  private setAttribute(slot: number, n: number, raw: AttributeValue, source: number, confidence: number, stamp: number): void {
    const column = this.columns[n];
    const strings = column.strings;
    const value = Array.isArray(raw) ? raw.map((v) => scalar(strings, v)) : scalar(strings, raw);
    column.set(slot, value, fold(strings, value), source, confidence, stamp);
  }

  /** The record of an object whose attributes are set at `slot`: `ids`, its attribute name ids in name order. */
  private record(
    id: string,
    objectType: string,
    anchorValue: string,
    createdOn: string,
    updatedOn: string,
    slot: number,
    ids: number[],
    relationships: readonly Relationship[],
    pending: readonly PendingReference[],
  ): MeshRecord {
    const key = ids.join(',');
    let names = this.nameLists.get(key);
    if (!names) this.nameLists.set(key, (names = Object.freeze(ids)));
    const anchor = this.anchors.intern(anchorValue);
    const lower = anchor.toLowerCase();
    const rels = relationships.length ? relationships.map((r) => this.relationship(r)) : EMPTY_RELS;
    return new MeshRecord(
      id,
      this.type(objectType),
      anchor,
      lower === anchor ? anchor : lower,
      this.stamp(createdOn),
      this.stamp(updatedOn),
      slot,
      names,
      rels,
      pending.length ? pending : EMPTY_PENDING,
    );
  }

  /** One copy of a timestamp for every object written at the same moment (a run's page writes its objects with one). */
  private stamp(s: string): string {
    return this.stamps.values[this.stamps.id(s)];
  }

  /**
   * A relationship as kept: its target's id and anchor are the strings the target's record holds, when the
   * target is loaded and they are the same (one copy per target, not one per relationship to it).
   */
  private relationship(r: Relationship): Relationship {
    const t = this.byId.get(r.targetId);
    return {
      type: this.relTypes.intern(r.type),
      targetId: t ? t.id : r.targetId,
      targetAnchor: t && t.anchorValue === r.targetAnchor ? t.anchorValue : r.targetAnchor,
      targetType: this.type(r.targetType),
    };
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

  private linkIncoming(rec: MeshRecord): void {
    const rels = rec.relationships;
    for (let i = 0; i < rels.length; i++) {
      const target = rels[i].targetId.toLowerCase();
      const list = this.incoming.get(target);
      if (!list) this.incoming.set(target, [rec.id]);
      else if (list[list.length - 1] !== rec.id && !list.includes(rec.id)) list.push(rec.id);
    }
  }

  private unlinkIncoming(rec: MeshRecord): void {
    for (const r of rec.relationships) {
      const target = r.targetId.toLowerCase();
      const list = this.incoming.get(target);
      if (!list) continue;
      const at = list.indexOf(rec.id);
      if (at < 0) continue;
      if (list.length === 1) this.incoming.delete(target);
      else list.splice(at, 1);
    }
  }

  /** The live objects whose relationships name `id` (direct reports of a manager, groups of a member). */
  referrers(id: string): MeshRecord[] {
    const out: MeshRecord[] = [];
    for (const from of this.incoming.get(id.toLowerCase()) ?? []) {
      const r = this.byId.get(from);
      if (r) out.push(r);
    }
    return out;
  }

  /** The consolidated value of one attribute of a record, its name matched case-insensitively (undefined: none). */
  valueOf(r: MeshRecord, name: string): AttributeValue | undefined {
    for (const n of this.nameIds(name)) {
      const v = this.columns[n].values[r.slot] as AttributeValue | undefined;
      if (v !== undefined && v !== null && r.names.includes(n)) return v;
    }
    return undefined;
  }

  /** Current anchor and type of a relationship target (kept current by the engine, refreshed here too). */
  target(r: Relationship): { targetAnchor: string; targetType: string } {
    const t = this.byId.get(r.targetId);
    return t ? { targetAnchor: t.anchorValue, targetType: t.objectType } : { targetAnchor: r.targetAnchor, targetType: r.targetType };
  }
}

function fold(strings: ValueInterner, v: AttributeValue): FoldedValue {
  if (Array.isArray(v)) {
    const list: string[] = [];
    for (const x of v) {
      const f = foldScalar(strings, x);
      if (f !== null) list.push(f);
    }
    return list.length ? list : null;
  }
  return foldScalar(strings, v);
}

function foldScalar(strings: ValueInterner, v: ScalarValue): string | null {
  if (v === null || v === '') return null;
  if (typeof v !== 'string') return strings.intern(String(v));
  const lower = v.toLowerCase();
  return lower === v ? v : strings.intern(lower);
}

function scalar(strings: ValueInterner, v: ScalarValue): ScalarValue {
  return typeof v === 'string' ? strings.intern(v) : v;
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
let loadedAt: { ms: number; objects: number; fromSnapshot: boolean } | undefined;

/** How often the snapshot's writer looks whether the feed has been quiet long enough (at most; ms). */
const SNAPSHOT_CHECK_MS = 15_000;

/**
 * The snapshot of this process's read model (lib/mesh/readModelSnapshot.ts): its file (undefined: off,
 * `Mesh__ReadModelSnapshot=false`), the feed position it was last written at, and the write going on.
 */
let snapshot:
  | { file: string; idleMs: number; seq: number; writing?: Promise<void>; timer?: NodeJS.Timeout; seen: { seq: number; at: number }; failedAt?: number }
  | undefined;

/** After a failed write (a read-only or full disk), the next try waits this long (ms). */
const SNAPSHOT_RETRY_MS = 10 * 60_000;

/**
 * Start loading the read model in the background and tail the feed. Returns at once: the host starts
 * serving while the mesh loads; mesh queries wait for the load (see {@link readyModel}). The load starts from
 * the snapshot on disk when it is usable, else scans the mesh; once loaded, the snapshot is written again
 * whenever the feed has been quiet for a minute (`Mesh__ReadModelSnapshotIdleSeconds`) after a change, and at stop.
 */
export function startMeshReadModel(options: { pollMs?: number } = {}): void {
  if (ready) return;
  stopping = false;
  const started = Date.now();
  const generation = ++generations;
  const settings = new SettingsReader();
  const file = readReadModelSnapshot(settings) ? snapshotFile(settings.string('Service:DataDir', '.data')) : undefined;
  const idleMs = file ? readReadModelSnapshotIdleSeconds(settings) * 1000 : 0;
  snapshot = file ? { file, idleMs, seq: 0, seen: { seq: 0, at: started } } : undefined;
  ready = (async () => {
    for (;;) {
      // A failed load leaves a partial copy: every attempt starts from an empty model.
      const m = new MeshReadModel();
      const r = new MeshFeedReader(m, {
        pollMs: options.pollMs,
        onError: (err) => {
          if (err instanceof FeedGapError) void reloadAfterGap(err, options);
          else if (!stopping) log.error(`Reading the mesh change feed failed (${describe(err)}); retrying.`);
        },
        snapshot: file ? snapshotSource(file) : undefined,
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
      loadedAt = { ms: Date.now() - started, objects: m.size, fromSnapshot: r.fromSnapshot };
      log.info(`Read model loaded${r.fromSnapshot ? ' from its snapshot' : ''}: ${m.size} object(s) in ${loadedAt.ms} ms.`);
      r.startTailing();
      if (snapshot) {
        const s = snapshot;
        if (r.fromSnapshot) s.seq = r.loadedFrom;
        s.timer = setInterval(
          () => {
            if (r.position !== s.seen.seq) s.seen = { seq: r.position, at: Date.now() };
            else if (r.position !== s.seq && Date.now() - s.seen.at >= s.idleMs && !(Date.now() - (s.failedAt ?? 0) < SNAPSHOT_RETRY_MS))
              void saveSnapshot(m, r);
          },
          Math.min(SNAPSHOT_CHECK_MS, s.idleMs / 2),
        );
        s.timer.unref();
      }
      return m;
    }
  })();
  ready.catch(() => undefined);
}

let reloading = false;

/**
 * The feed lost rows this model had not applied yet (the process was stalled for longer than the feed keeps
 * them: lib/sync/run/feedTrim.ts): load the model again, as at a start (mesh queries wait for it as then).
 */
async function reloadAfterGap(err: FeedGapError, options: { pollMs?: number }): Promise<void> {
  if (reloading || stopping) return;
  reloading = true;
  log.warn(`${err.message} The mesh read model is loaded again.`);
  try {
    await stopMeshReadModel();
    startMeshReadModel(options);
  } finally {
    reloading = false;
  }
}

/** The feed position the read model has applied (undefined: not loaded yet, or stopped). */
export function meshReadModelPosition(): number | undefined {
  return isReady && reader ? reader.position : undefined;
}

/** Write the snapshot at the reader's position (one write at a time; a failure is logged, the next try is later). */
function saveSnapshot(m: MeshReadModel, r: MeshFeedReader): Promise<void> {
  const s = snapshot;
  if (!s || s.writing || r.position === 0) return s?.writing ?? Promise.resolve();
  s.writing = (async () => {
    const t0 = Date.now();
    try {
      const seq = r.position;
      const tag = await feedRowTag(seq);
      // Only a position whose row is there, and the model still at it (the write starts in this same turn).
      if (!tag || r.position !== seq) return;
      if (await writeSnapshot(s.file, m, seq, tag)) {
        s.seq = seq;
        s.failedAt = undefined;
        log.info(`Wrote the mesh read model's snapshot: ${m.size} object(s) at feed position ${seq} in ${Date.now() - t0} ms.`);
      }
    } catch (err) {
      s.failedAt = Date.now();
      log.warn(
        `Writing the mesh read model's snapshot failed (${(err as Error)?.message ?? describe(err)}); it is tried again in ${SNAPSHOT_RETRY_MS / 60_000} minutes, and at stop.`,
      );
    } finally {
      s.writing = undefined;
    }
  })();
  return s.writing;
}

export async function stopMeshReadModel(): Promise<void> {
  stopping = true;
  await reader?.stop();
  if (snapshot) {
    clearInterval(snapshot.timer);
    await snapshot.writing;
    if (isReady && model && reader && reader.position !== snapshot.seq) await saveSnapshot(model, reader);
  }
  snapshot = undefined;
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
  // After the stop (the host shutting down), a late caller must not start a new reader: the storage is going
  // away under it, and it would only log connection errors until the process ends.
  if (!ready && stopping) throw new AppError('service_unavailable', 'The service is stopping.', { headers: { 'retry-after': String(RETRY_AFTER_SECONDS) } });
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
export function meshReadModelStatus(): {
  ready: boolean;
  objects: number;
  loadMs?: number;
  fromSnapshot?: boolean;
  feedPosition: number;
  snapshotPosition?: number;
} {
  return {
    ready: isReady,
    objects: model?.size ?? 0,
    loadMs: loadedAt?.ms,
    fromSnapshot: loadedAt?.fromSnapshot,
    feedPosition: reader?.position ?? 0,
    snapshotPosition: snapshot && snapshot.seq > 0 ? snapshot.seq : undefined,
  };
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
