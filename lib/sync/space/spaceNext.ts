import { nextExport, type NextChange, type NextExport } from '../export/next';
import { compareEntries, findSpaceEntry, fold, queryEntries, querySpace, type SpaceEntry, type SpaceQuery } from './spaceIndex';

/**
 * The connector space's computed states: `pendingExport` lists every object the connector's next export would
 * change (lib/sync/export/next.ts), with the changes the target refused (stored on the rows: their first
 * failure's `stagedOn`, their error); `scheduledDeprovision` lists the target objects whose deprovisioning waits
 * for its grace, each with `dueOn`. Entries are the index's (lib/sync/space/spaceIndex.ts) with the computed pending
 * change; an add of a mesh object not in the target yet is listed as a staged add is (anchor null, the
 * csObjectId its staged add has or would have). Same order, filters and paging as the index's listing.
 */

export interface ComputedPage {
  items: SpaceEntry[];
  totalCount: number;
  /** The next export has more objects to look at than one computation looks at: the list is incomplete. */
  partial: boolean;
}

/** A page of `pendingExport` or `scheduledDeprovision`. */
export async function queryComputedState(
  connectorId: string,
  state: 'pendingExport' | 'scheduledDeprovision',
  q: Omit<SpaceQuery, 'state'>,
): Promise<ComputedPage> {
  const next = await nextExport(connectorId);
  const entries = state === 'pendingExport' ? await pendingEntries(connectorId, next) : await scheduledEntries(connectorId, next);
  entries.sort(compareEntries);
  return { ...queryEntries(entries, { ...q, state: undefined }), partial: next.partial };
}

/** The change the next export would send to the object with this csObjectId, if any. */
export async function nextChangeOf(connectorId: string, csObjectId: string): Promise<NextChange | undefined> {
  return (await nextExport(connectorId)).changes.find((c) => c.csObjectId === csObjectId);
}

async function pendingEntries(connectorId: string, next: NextExport): Promise<SpaceEntry[]> {
  const byId = new Map<string, SpaceEntry>();
  // The changes the target refused (stored pending): listed as today, whatever the next export does with them.
  for (const e of (await querySpace(connectorId, { state: 'pendingExport', skip: 0, take: Number.MAX_SAFE_INTEGER })).items) byId.set(e.csObjectId, e);
  for (const c of next.changes) {
    // A refused change is listed as stored (as the unfiltered list and the detail show it).
    if (byId.get(c.csObjectId)?.pendingExport) continue;
    const stored = byId.get(c.csObjectId) ?? (await findSpaceEntry(connectorId, c.csObjectId));
    const pendingExport = {
      operation: c.operation,
      attributeCount: Object.keys(c.attributes).length,
      // A change the target refused was staged at its first failure.
      stagedOn: stored?.pendingExport?.stagedOn ?? c.stagedOn,
    };
    byId.set(c.csObjectId, stored ? { ...stored, pendingExport } : entryOfChange(c, pendingExport));
  }
  return [...byId.values()];
}

/** An object not in the index (an add of a mesh object not in the target yet, or a row written since its read). */
function entryOfChange(c: NextChange, pendingExport: NonNullable<SpaceEntry['pendingExport']>): SpaceEntry {
  const add = c.anchor === null;
  return {
    csObjectId: c.csObjectId,
    anchor: c.anchor,
    dn: c.dn,
    objectType: c.objectType,
    meshObjectId: c.meshObjectId,
    pendingExport,
    awaitingConfirmation: false,
    error: null,
    lastImportedOn: null,
    lastExportedOn: null,
    ...(add && c.meshObjectId ? { stagedMeshId: c.meshObjectId, addValues: Object.fromEntries(Object.entries(c.attributes).map(([k, v]) => [k, v.new])) } : {}),
    folded: fold(c.anchor, c.dn),
  };
}

async function scheduledEntries(connectorId: string, next: NextExport): Promise<SpaceEntry[]> {
  const out: SpaceEntry[] = [];
  for (const s of next.scheduled) {
    const e = await findSpaceEntry(connectorId, s.csObjectId);
    const pendingExport = s.operation ? { operation: s.operation, attributeCount: s.attributeCount, stagedOn: s.stagedOn ?? next.at } : null;
    out.push({
      ...(e ?? {
        csObjectId: s.csObjectId,
        anchor: s.anchor,
        dn: s.dn,
        objectType: s.objectType,
        meshObjectId: s.meshObjectId,
        awaitingConfirmation: false,
        error: null,
        lastImportedOn: null,
        lastExportedOn: null,
        folded: fold(s.anchor, s.dn),
      }),
      pendingExport,
      dueOn: s.dueOn,
    });
  }
  return out;
}
