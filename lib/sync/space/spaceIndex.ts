import { newestRunToken } from '../../storage/runs';
import { decodeKey, listEntities, table } from '../../storage/tables';
import { getJson, mapLimit } from '../../storage/tableUtil';
import { csObjectIdOf } from './csIds';
import { csTableRanges } from './connectorSpace';
import type { AttributeValue } from '../../connectors/sdk';
import type { ExportError, PendingExport } from '../model';
import { loadStagedAdds } from '../export/stagedAdds';

/**
 * The connector-space explorer's index: a per-process, in-memory list of one connector's objects (light
 * fields only: no attribute values), ordered by anchor, that answers `GET /connectors/{id}/space` (state
 * filters, search, paging) and resolves any csObjectId it hands out. Table Storage offers no substring filter,
 * offset or count, and a state filter over 64 partitions would be a scan, so the list runs here (as the mesh
 * read model does for mesh queries, docs/connector-space.md).
 *
 * The states are properties of the connector-space row itself (`p`, `x`, `xe`, `meshId`), written in the
 * same entity-group batch as the change that sets them: there is no second stored index that could drift.
 * This index is derived from the rows: loaded with one narrow query per partition, then kept current by
 * re-reading the rows written since its last read (`Timestamp ge`), whenever the connector's newest run row
 * changed (every run writes it per page) or {@link SPACE_INDEX_MAX_AGE_MS} passed, and at once in this process
 * after an API write ({@link touchSpaceIndex}). Rows are never deleted but with their connector.
 *
 * Memory is bounded: at most {@link MAX_CONNECTORS} connectors are kept (least recently used goes).
 */

export type SpaceState = 'joined' | 'disconnector' | 'pendingExport' | 'awaitingConfirmation' | 'error';
export const SPACE_STATES: readonly SpaceState[] = ['joined', 'disconnector', 'pendingExport', 'awaitingConfirmation', 'error'];
/**
 * The states a listing filters on: the index's, and `scheduledDeprovision` (target objects whose deprovisioning
 * waits for its grace), which, like the changes the next export would send under `pendingExport`, the
 * connector's next export computes (lib/sync/space/spaceNext.ts).
 */
export type SpaceListState = SpaceState | 'scheduledDeprovision';
export const SPACE_LIST_STATES: readonly SpaceListState[] = [...SPACE_STATES, 'scheduledDeprovision'];

const OPERATIONS = { add: 'Add', update: 'Update', delete: 'Delete', rename: 'Rename' } as const;

/** One object as the list shows it. `stagedMeshId`: a staged add (no anchor yet). */
export interface SpaceEntry {
  csObjectId: string;
  anchor: string | null;
  dn: string | null;
  objectType: string;
  meshObjectId: string | null;
  pendingExport: { operation: (typeof OPERATIONS)[keyof typeof OPERATIONS]; attributeCount: number; stagedOn: string } | null;
  awaitingConfirmation: boolean;
  error: ExportError | null;
  lastImportedOn: string | null;
  lastExportedOn: string | null;
  stagedMeshId?: string;
  /** A staged add's values (few objects): its anchor-to-be when an outbound flow gives the anchor attribute. */
  addValues?: Record<string, AttributeValue>;
  /** Lower-cased anchor and dn, for the search. */
  folded: string;
  /** A deprovisioning waiting for its grace: when it is due (state `scheduledDeprovision` only). */
  dueOn?: string;
}

const SELECT = [
  'RowKey',
  'objectType',
  'meshId',
  'deleted',
  'dn',
  'hash',
  'error',
  'updatedOn',
  'io',
  'eo',
  'cid',
  'xe',
  'xn',
  'xref',
  'pn',
  'p0',
  'p1',
  'p2',
  'p3',
];
/** Re-read a connector's changed rows at least this often, even with no new run (writes outside runs). */
export const SPACE_INDEX_MAX_AGE_MS = 30_000;
const MAX_CONNECTORS = 8;
/** How long one look at the connector's newest run serves (the list may lag a run's write by this much). */
const RUN_CHECK_MS = 250;
/** Rows whose Timestamp is this close before the last read are read again (clock of the storage vs ours). */
const OVERLAP_MS = 5_000;

function pendingOf(p: PendingExport | undefined, fallbackOn: string): SpaceEntry['pendingExport'] {
  if (!p) return null;
  return { operation: OPERATIONS[p.kind], attributeCount: Object.keys(p.attributes).length, stagedOn: p.stagedOn ?? fallbackOn };
}

export const fold = (anchor: string | null, dn: string | null) => `${anchor ?? ''}\n${dn ?? ''}`.toLowerCase();

/** The entry of a connector-space row read with {@link SELECT}; null for a deleted row. */
export function entryOfRow(connectorId: string, e: Record<string, unknown>): SpaceEntry | null {
  if (e.deleted) return null;
  const anchor = decodeKey(String(e.rowKey));
  const updatedOn = String(e.updatedOn ?? '');
  const pn = Number(e.pn ?? 0);
  // A pending export larger than four chunks is not read here: counted as a change of unknown size.
  const p = pn > 0 && pn <= 4 ? getJson<PendingExport>(e, 'p') : undefined;
  const dn = e.dn ? String(e.dn) : null;
  return {
    csObjectId: csObjectIdOf(connectorId, { anchor, csObjectId: e.cid ? String(e.cid) : undefined }),
    anchor,
    dn,
    objectType: String(e.objectType ?? ''),
    meshObjectId: e.meshId ? String(e.meshId) : null,
    pendingExport: pn > 4 ? { operation: 'Update', attributeCount: 0, stagedOn: updatedOn } : pendingOf(p, updatedOn),
    awaitingConfirmation: Number(e.xn ?? 0) > 0 || typeof e.xref === 'string',
    error: e.xe ? (JSON.parse(String(e.xe)) as ExportError) : null,
    lastImportedOn: e.io ? String(e.io) : e.hash || e.error ? updatedOn : null,
    lastExportedOn: e.eo ? String(e.eo) : null,
    folded: fold(anchor, dn),
  };
}

/** Whether an entry is in a state. */
export function inState(e: SpaceEntry, state: SpaceState): boolean {
  switch (state) {
    case 'joined':
      return !!e.meshObjectId;
    case 'disconnector':
      return !e.meshObjectId;
    case 'pendingExport':
      return !!e.pendingExport;
    case 'awaitingConfirmation':
      return e.awaitingConfirmation;
    case 'error':
      return !!e.error;
  }
}

/** Anchored entries by anchor (code-unit order), then staged adds by csObjectId. */
export function compareEntries(a: SpaceEntry, b: SpaceEntry): number {
  if (a.anchor !== null && b.anchor !== null) return a.anchor < b.anchor ? -1 : a.anchor > b.anchor ? 1 : 0;
  if (a.anchor !== null) return -1;
  if (b.anchor !== null) return 1;
  return a.csObjectId < b.csObjectId ? -1 : a.csObjectId > b.csObjectId ? 1 : 0;
}

export interface SpaceQuery {
  state?: SpaceState;
  objectType?: string;
  search?: string;
  skip: number;
  take: number;
}

/** One page of ordered entries and how many match. Pure: one pass over the ordered list. */
export function queryEntries(ordered: readonly SpaceEntry[], q: SpaceQuery): { items: SpaceEntry[]; totalCount: number } {
  const needle = q.search?.toLowerCase();
  const type = q.objectType?.toLowerCase();
  const items: SpaceEntry[] = [];
  let totalCount = 0;
  for (const e of ordered) {
    if (q.state && !inState(e, q.state)) continue;
    if (type && e.objectType.toLowerCase() !== type) continue;
    if (needle && !e.folded.includes(needle)) continue;
    if (totalCount >= q.skip && items.length < q.take) items.push(e);
    totalCount++;
  }
  return { items, totalCount };
}

/**
 * The ordered entries with what makes a page cheap, built once per change of the index (not per request):
 * one ordered list per state and per object type (such a page is a slice, its count a length) and the folded anchors and dns
 * joined in one string, searched with the native `indexOf` (a match is mapped back to its entry by a binary
 * search over the entries' offsets), so a search does not visit 100,000 strings one by one.
 */
export class SpaceView {
  readonly byState = new Map<SpaceState, SpaceEntry[]>();
  /** Entries by lower-cased object type. */
  readonly byType = new Map<string, SpaceEntry[]>();
  private readonly text: string;
  private readonly starts: Int32Array;

  constructor(readonly ordered: readonly SpaceEntry[]) {
    for (const st of SPACE_STATES) this.byState.set(st, []);
    const parts: string[] = [];
    this.starts = new Int32Array(ordered.length);
    let at = 0;
    ordered.forEach((e, i) => {
      for (const st of SPACE_STATES) if (inState(e, st)) this.byState.get(st)!.push(e);
      const type = e.objectType.toLowerCase();
      let ofType = this.byType.get(type);
      if (!ofType) this.byType.set(type, (ofType = []));
      ofType.push(e);
      this.starts[i] = at;
      parts.push(e.folded);
      at += e.folded.length + 1;
    });
    // Entries are joined by \u0001: a needle without it cannot match across two entries.
    this.text = parts.join('\u0001');
  }

  /** Entries whose folded anchor or dn contains the needle, in order. */
  private matches(needle: string): SpaceEntry[] {
    const out: SpaceEntry[] = [];
    if (needle.includes('\u0001')) return out;
    let from = 0;
    for (;;) {
      const at = this.text.indexOf(needle, from);
      if (at < 0) return out;
      let lo = 0;
      let hi = this.starts.length - 1;
      while (lo < hi) {
        const mid = (lo + hi + 1) >> 1;
        if (this.starts[mid] <= at) lo = mid;
        else hi = mid - 1;
      }
      const e = this.ordered[lo];
      out.push(e);
      from = this.starts[lo] + e.folded.length + 1;
    }
  }

  query(q: SpaceQuery): { items: SpaceEntry[]; totalCount: number } {
    if (q.search) return queryEntries(this.matches(q.search.toLowerCase()), { ...q, search: undefined });
    if (q.objectType) {
      const ofType = this.byType.get(q.objectType.toLowerCase()) ?? [];
      if (q.state) return queryEntries(ofType, { ...q, objectType: undefined });
      return { items: ofType.slice(q.skip, q.skip + q.take), totalCount: ofType.length };
    }
    const base = q.state ? this.byState.get(q.state)! : this.ordered;
    return { items: base.slice(q.skip, q.skip + q.take), totalCount: base.length };
  }
}

/** One connector's index. */
class ConnectorSpaceIndex {
  private readonly byAnchor = new Map<string, SpaceEntry>();
  private staged: SpaceEntry[] = [];
  private readonly byId = new Map<string, SpaceEntry>();
  private view: SpaceView | null = null;
  private readAt = 0;
  private runToken = '';
  private checkedAt = 0;
  private refreshing: Promise<void> | null = null;

  constructor(readonly connectorId: string) {}

  /** Bring the index up to date when the connector's runs moved or it is older than the maximum age. */
  async current(force = false): Promise<void> {
    if (this.refreshing) return this.refreshing;
    // Requests in a burst share one look at the runs (a page of requests is not a storage query each).
    if (!force && this.readAt && Date.now() - this.checkedAt < RUN_CHECK_MS) return;
    this.checkedAt = Date.now();
    const token = await newestRunToken(this.connectorId);
    if (!force && this.readAt && token === this.runToken && Date.now() - this.readAt < SPACE_INDEX_MAX_AGE_MS) return;
    this.refreshing = this.read(token).finally(() => (this.refreshing = null));
    return this.refreshing;
  }

  private async read(token: string): Promise<void> {
    const started = Date.now();
    const since = this.readAt ? new Date(this.readAt - OVERLAP_MS).toISOString() : null;
    let changed = false;
    await mapLimit(csTableRanges(this.connectorId), 4, async (range) => {
      const filter = since ? `${range.filter} and Timestamp ge datetime'${since}'` : range.filter;
      const it = listEntities<Record<string, unknown>>(await table(range.table), { queryOptions: { filter, select: SELECT } });
      for await (const row of it) {
        this.put(decodeKey(String(row.rowKey)), entryOfRow(this.connectorId, row));
        changed = true;
      }
    });
    const staged = [...(await loadStagedAdds(this.connectorId)).values()].map((s) => ({
      csObjectId: s.csObjectId,
      anchor: null,
      dn: null,
      objectType: s.objectType,
      meshObjectId: s.meshId,
      pendingExport: pendingOf(s.pendingExport, s.updatedOn),
      awaitingConfirmation: false,
      error: s.exportError ?? null,
      lastImportedOn: null,
      lastExportedOn: null,
      stagedMeshId: s.meshId,
      addValues: s.pendingExport.attributes,
      folded: '\n',
    }));
    // Nothing written since the last read: the view (sorted, per state, search text) stays.
    if (!changed && JSON.stringify(staged) === JSON.stringify(this.staged)) {
      this.readAt = started;
      this.runToken = token;
      return;
    }
    this.staged = staged;
    this.byId.clear();
    for (const e of this.byAnchor.values()) this.byId.set(e.csObjectId, e);
    for (const e of this.staged) if (!this.byId.has(e.csObjectId)) this.byId.set(e.csObjectId, e);
    this.view = null;
    this.readAt = started;
    this.runToken = token;
  }

  private put(anchor: string, e: SpaceEntry | null): void {
    if (e) this.byAnchor.set(anchor, e);
    else this.byAnchor.delete(anchor);
  }

  list(): SpaceView {
    this.view ??= new SpaceView([...this.byAnchor.values()].sort(compareEntries).concat([...this.staged].sort(compareEntries)));
    return this.view;
  }

  find(csObjectId: string): SpaceEntry | undefined {
    return this.byId.get(csObjectId);
  }

  invalidate(): void {
    this.runToken = '';
    this.checkedAt = 0;
  }
}

const indexes = new Map<string, ConnectorSpaceIndex>();

async function indexOf(connectorId: string): Promise<ConnectorSpaceIndex> {
  let ix = indexes.get(connectorId);
  if (ix) indexes.delete(connectorId);
  else ix = new ConnectorSpaceIndex(connectorId);
  indexes.set(connectorId, ix);
  while (indexes.size > MAX_CONNECTORS) indexes.delete(indexes.keys().next().value as string);
  await ix.current();
  return ix;
}

/** A page of a connector's space (see {@link queryEntries}). */
export async function querySpace(connectorId: string, q: SpaceQuery): Promise<{ items: SpaceEntry[]; totalCount: number }> {
  return (await indexOf(connectorId)).list().query(q);
}

/** The entry a csObjectId names (any id the list hands out), or undefined. */
export async function findSpaceEntry(connectorId: string, csObjectId: string): Promise<SpaceEntry | undefined> {
  return (await indexOf(connectorId)).find(csObjectId);
}

/** This process wrote the connector's space outside a run (a retry): read it again on the next request. */
export function touchSpaceIndex(connectorId: string): void {
  indexes.get(connectorId)?.invalidate();
}

/** Forget a connector (deletion). */
export function dropSpaceIndex(connectorId: string): void {
  indexes.delete(connectorId);
}
