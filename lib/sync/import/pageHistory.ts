import { writeHistory, type ObjectChange } from '../../mesh/history';
import type { MeshObject } from '../../mesh/model';
import type { WorkingSet } from '../planner';

/**
 * The history rows of a page's mesh commit (lib/mesh/history.ts): an object not stored before is `Created`
 * (all its values new), a removed one `Deleted` (all its values gone), one back from its tombstone `Restored`
 * (all its values new again), any other compared with its state when
 * the page loaded it. Written in parallel with the mesh rows.
 */
export function writePageHistory(
  info: { runId: string; connectorId: string },
  ws: WorkingSet,
  upserts: readonly MeshObject[],
  deletes: readonly { id: string }[],
  fresh: ReadonlySet<string>,
  timestamp: string,
): Promise<number> {
  const changes: ObjectChange[] = [];
  for (const d of upserts) {
    // Back from its tombstone: `Restored`, its values new again (its `Deleted` entry removed them all).
    if (ws.revived.has(d.id)) changes.push({ id: d.id, before: null, after: d, restored: true });
    else if (fresh.has(d.id)) changes.push({ id: d.id, before: null, after: d });
    else {
      const before = ws.before.get(d.id);
      if (before) changes.push({ id: d.id, before, after: d });
    }
  }
  for (const d of deletes) {
    const before = ws.before.get(d.id);
    if (before) changes.push({ id: d.id, before, after: null });
  }
  return writeHistory(info.runId, info.connectorId, timestamp, changes);
}
