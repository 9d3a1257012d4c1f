import { readRunChanges, type StoredChange } from '../storage/runChanges';
import { storedFingerprint } from './record';

/**
 * A plan as an apply reads it: the fingerprint of every object the plan changes, by the object's key in its
 * run (the anchor of an import's object, the mesh id of an export's change). Loaded once per process and
 * plan (about 80 bytes an object: a 100k plan is a few megabytes), from the plan's stored changes.
 *
 * The drift rule: an object of the plan whose fingerprint, computed again from its current inputs, differs
 * from the planned one is not touched and is listed `drifted`; an object the plan does not list is not
 * touched either (it waits for the next run); the others are applied as planned.
 */
export interface PlannedEntry {
  fp: string;
  target: StoredChange['target'];
  operation: StoredChange['operation'];
  meshObjectId: string | null;
  csObjectId: string | null;
  anchor: string | null;
  dn: string | null;
}

export class PlanIndex {
  readonly entries = new Map<string, PlannedEntry>();

  add(c: StoredChange): void {
    if (!c.key || c.fp === undefined) return;
    // A key listed twice (a mesh object and its follow-ups) keeps the first, the object's own change.
    if (!this.entries.has(c.key))
      this.entries.set(c.key, {
        fp: storedFingerprint(c.fp),
        target: c.target,
        operation: c.operation,
        meshObjectId: c.meshObjectId,
        csObjectId: c.csObjectId,
        anchor: c.anchor,
        dn: c.dn,
      });
  }

  has(key: string): boolean {
    return this.entries.has(key);
  }

  /** `apply`: in the plan with the same fingerprint; `drifted`: in the plan, inputs changed; `outside`: not in it. */
  verdict(key: string, fp: string): 'apply' | 'drifted' | 'outside' {
    const e = this.entries.get(key);
    if (!e) return 'outside';
    return e.fp === fp ? 'apply' : 'drifted';
  }

  /** The item listing an object of the plan as drifted. */
  drifted(key: string, why: string): StoredChange {
    const e = this.entries.get(key)!;
    return {
      target: e.target,
      operation: e.operation,
      csObjectId: e.csObjectId,
      meshObjectId: e.meshObjectId,
      anchor: e.anchor,
      dn: e.dn,
      attributes: {},
      outcome: 'drifted',
      error: why,
    };
  }
}

const loaded = new Map<string, Promise<PlanIndex>>();

/** The plan of run `planRunId` (its changes recorded `planned`, with fingerprints), cached in this process. */
export function planIndex(planRunId: string): Promise<PlanIndex> {
  let p = loaded.get(planRunId);
  if (!p) {
    p = (async () => {
      const index = new PlanIndex();
      for await (const page of readRunChanges(planRunId)) for (const c of page) index.add(c);
      return index;
    })();
    p.catch(() => loaded.delete(planRunId));
    loaded.set(planRunId, p);
  }
  return p;
}

/** Forget a plan (its apply ended). */
export function dropPlanIndex(planRunId: string): void {
  loaded.delete(planRunId);
}
