import { loadDuePointers, readDuePointers, writeDueChanges, type DueRecord } from '../storage/dueInstants';

/**
 * Keeps the due index (lib/storage/dueInstants.ts) in step with what a page evaluated (docs/dated-changes.md):
 * an export page, for each object whose rules read the clock, the next instant a result can change for its
 * target; an import page, for each source object with future-dated values, the date the next one takes effect
 * (target {@link importDueTarget}, keyed by the object's anchor).
 * Only differences from what is recorded are written. What is recorded is read once per run and process when
 * a page is large (one read of the target's rows), else point by point; the run keeps it current as it writes.
 */
const POINT_READS = 50;
const MAX_RUNS = 4;
const byRun = new Map<string, Map<string, number>>();

/** The due index's target of a source connector's future-dated values (its rows are keyed by anchor). */
export const importDueTarget = (connectorId: string) => `import:${connectorId}`;

async function recorded(runId: string, target: string, ids: string[]): Promise<Map<string, number>> {
  const key = `${runId}\u0000${target}`;
  let all = byRun.get(key);
  if (!all && ids.length > POINT_READS) {
    all = await loadDuePointers(target);
    if (byRun.size >= MAX_RUNS) byRun.delete(byRun.keys().next().value as string);
    byRun.set(key, all);
  }
  if (!all) return readDuePointers(target, ids);
  const out = new Map<string, number>();
  for (const id of ids) {
    const at = all.get(id);
    if (at !== undefined) out.set(id, at);
  }
  return out;
}

/** Records the instants of a page of run `runId` for `target` (`due`: key -> next instant, undefined for none). */
export async function recordDue(runId: string, target: string, due: ReadonlyMap<string, number | undefined>): Promise<void> {
  const ids = [...due.keys()];
  const previous = await recorded(runId, target, ids);
  const set: DueRecord[] = [];
  const clear: string[] = [];
  for (const [meshId, at] of due) {
    const before = previous.get(meshId);
    if (at === undefined) {
      if (before !== undefined) clear.push(meshId);
    } else if (before !== at) set.push({ target, meshId, at });
  }
  await writeDueChanges(target, set, clear, previous);
  const cached = byRun.get(`${runId}\u0000${target}`);
  if (cached) {
    for (const r of set) cached.set(r.meshId, r.at);
    for (const id of clear) cached.delete(id);
  }
}
