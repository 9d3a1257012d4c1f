import { newExecutionId, type WorkMessage } from './store';

// How the worker packs work messages into table rows: group rows within a size budget, and the size limits.

/**
 * Largest text (UTF-16 code units) one group row carries: Azure Tables stores strings as UTF-16 and limits an
 * entity to 1 MiB, so a group is closed at this budget and larger single messages travel alone.
 */
const GROUP_BUDGET = 200_000;
/**
 * Largest activity result (JSON, UTF-16 code units) the hub stores: one result travels in one work row and
 * then in one history row, each a table entity of at most 1 MiB. A larger result fails its activity with a
 * message saying so, instead of a store that can never succeed (Azure's Durable Functions moves large
 * payloads to blobs; this runtime does not: see docs/runtime-durable.md).
 */
export const MAX_RESULT_CHARS = 400_000;

/** In-memory key of the i-th part of a group row: `#` never occurs in a stored row key (Tables forbid it). */
export const partKey = (groupRk: string, i: number): string => `${groupRk}#${i}`;

function messageSize(m: WorkMessage): number {
  return 200 + (m.data?.length ?? 0) + (m.reason?.length ?? 0) + (m.details?.length ?? 0) + (m.name?.length ?? 0);
}

/** Split messages into runs that fit one group row each. */
export function chunkBySize(messages: WorkMessage[]): WorkMessage[][] {
  const out: WorkMessage[][] = [];
  let cur: WorkMessage[] = [];
  let size = 0;
  for (const m of messages) {
    const n = messageSize(m);
    if (cur.length && size + n > GROUP_BUDGET) {
      out.push(cur);
      cur = [];
      size = 0;
    }
    cur.push(m);
    size += n;
  }
  if (cur.length) out.push(cur);
  return out;
}

/**
 * Activity results of one flush as few `o` rows as possible: one `results` group per execution (within the
 * size budget); a lone result keeps its own deterministic row `r.<exec>.<taskId>`. Group keys are unique, so
 * a group never replaces another; a result stored twice is dropped by the episode as a duplicate.
 */
export function groupResults(msgs: WorkMessage[]): WorkMessage[] {
  const byExec = new Map<string, WorkMessage[]>();
  for (const m of msgs) {
    const k = `${m.instanceId}\u0000${m.executionId ?? ''}`;
    const list = byExec.get(k);
    if (list) list.push(m);
    else byExec.set(k, [m]);
  }
  const out: WorkMessage[] = [];
  for (const list of byExec.values()) {
    if (list.length === 1) {
      out.push(list[0]);
      continue;
    }
    for (const parts of chunkBySize(list)) {
      const first = parts[0];
      out.push({
        pk: 'o',
        rk: `r.${first.executionId ?? ''}.g${newExecutionId().slice(0, 16)}`,
        instanceId: first.instanceId,
        kind: 'results',
        executionId: first.executionId,
        enqueuedAt: first.enqueuedAt,
        visibleAt: first.visibleAt,
        parts,
      });
    }
  }
  return out;
}

export function errorText(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}
