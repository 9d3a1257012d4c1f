import { loadDuePointers, readDuePointers, writeDueChanges, type DueRecord } from '../../storage/dueInstants';
import type { RunInfo } from '../run/runTypes';

/**
 * Keeps the due index (lib/storage/dueInstants.ts) in step with what an export page evaluated: for each object
 * whose rules read the clock, the next instant a result can change for this target (docs/dated-changes.md).
 * Only differences from what is recorded are written. What is recorded is read once per run and process when
 * a page is large (one read of the target's rows), else point by point; the run keeps it current as it writes.
 */
const POINT_READS = 50;
const MAX_RUNS = 4;
const byRun = new Map<string, Map<string, number>>();

async function recorded(info: RunInfo, ids: string[]): Promise<Map<string, number>> {
  let all = byRun.get(info.runId);
  if (!all && ids.length > POINT_READS) {
    all = await loadDuePointers(info.connectorId);
    if (byRun.size >= MAX_RUNS) byRun.delete(byRun.keys().next().value as string);
    byRun.set(info.runId, all);
  }
  if (!all) return readDuePointers(info.connectorId, ids);
  const out = new Map<string, number>();
  for (const id of ids) {
    const at = all.get(id);
    if (at !== undefined) out.set(id, at);
  }
  return out;
}

/** Records the instants of a page (`due`: mesh id -> next instant, undefined for none). */
export async function recordDue(info: RunInfo, due: ReadonlyMap<string, number | undefined>): Promise<void> {
  const ids = [...due.keys()];
  const previous = await recorded(info, ids);
  const set: DueRecord[] = [];
  const clear: string[] = [];
  for (const [meshId, at] of due) {
    const before = previous.get(meshId);
    if (at === undefined) {
      if (before !== undefined) clear.push(meshId);
    } else if (before !== at) set.push({ target: info.connectorId, meshId, at });
  }
  await writeDueChanges(info.connectorId, set, clear, previous);
  const cached = byRun.get(info.runId);
  if (cached) {
    for (const r of set) cached.set(r.meshId, r.at);
    for (const id of clear) cached.delete(id);
  }
}
