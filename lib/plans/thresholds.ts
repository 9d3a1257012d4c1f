import { THRESHOLD_OPERATIONS, type ApprovalReason, type ThresholdOperation } from '../storage/runs';

/**
 * Thresholds: a connector's `config.thresholds` `{ adds, updates, deletes, renames, blanks }`, each
 * `{ count, percent }` (either or both). A run whose changes of one operation would exceed its limit applies
 * nothing and waits for an Admin's approval (lib/runs/approval.ts). `percent` is of the connector's
 * connector-space objects (those not deleted) when the run starts; a connector space with no object yet has no
 * percent limit (a first import is not a mass change of anything). `blanks` counts updates that empty an
 * attribute that had a value. Pure: the engine counts, this decides.
 *
 * Default: `{ deletes: { count: 500, percent: 20 } }`. A connector's thresholds replace the defaults key by key
 * (a `deletes` left out keeps the default; `deletes: {}` sets no limit on deletes). The older
 * `deletionThreshold` (a count, or `{ objects, percent }`) is read as `thresholds.deletes` when
 * `thresholds.deletes` is not given.
 */

export interface Threshold {
  count?: number;
  percent?: number;
}

export type Thresholds = Partial<Record<ThresholdOperation, Threshold>>;

export const DEFAULT_THRESHOLDS: Readonly<Thresholds> = Object.freeze({ deletes: { count: 500, percent: 20 } });

/** Counts of a run's changes by threshold operation. */
export type OperationCounts = Record<ThresholdOperation, number>;

export const zeroCounts = (): OperationCounts => ({ adds: 0, updates: 0, deletes: 0, renames: 0, blanks: 0 });

export function addCounts(a: OperationCounts, b: Partial<OperationCounts>): OperationCounts {
  const out = { ...a };
  for (const op of THRESHOLD_OPERATIONS) out[op] += b[op] ?? 0;
  return out;
}

const num = (v: unknown): number | undefined => (typeof v === 'number' && Number.isFinite(v) && v >= 0 ? v : undefined);

function thresholdOf(v: unknown): Threshold | undefined {
  if (!v || typeof v !== 'object') return undefined;
  const t = v as { count?: unknown; percent?: unknown };
  const out: Threshold = {};
  if (num(t.count) !== undefined) out.count = num(t.count);
  if (num(t.percent) !== undefined) out.percent = num(t.percent);
  return out;
}

/** The older `deletionThreshold`: a number (objects; the percent stays the default) or `{ objects, percent }`. */
function legacyDeletes(setting: unknown): Threshold | undefined {
  if (typeof setting === 'number') return { count: setting, percent: DEFAULT_THRESHOLDS.deletes!.percent };
  if (setting && typeof setting === 'object') {
    const s = setting as { objects?: unknown; percent?: unknown };
    return { count: num(s.objects) ?? DEFAULT_THRESHOLDS.deletes!.count, percent: num(s.percent) ?? DEFAULT_THRESHOLDS.deletes!.percent };
  }
  return undefined;
}

/** A connector's effective thresholds from its configuration (`thresholds`, `deletionThreshold`). */
export function thresholdsOf(config: { thresholds?: unknown; deletionThreshold?: unknown }): Thresholds {
  const out: Thresholds = { ...DEFAULT_THRESHOLDS };
  const legacy = legacyDeletes(config.deletionThreshold);
  if (legacy) out.deletes = legacy;
  const given = config.thresholds && typeof config.thresholds === 'object' ? (config.thresholds as Record<string, unknown>) : {};
  for (const op of THRESHOLD_OPERATIONS) {
    const t = thresholdOf(given[op]);
    if (t) out[op] = t;
  }
  return out;
}

/** The number a count of this operation may reach: the smaller of the count and the percent of `base`. */
export function limitOf(t: Threshold | undefined, base: number): number | null {
  if (!t) return null;
  const limits: number[] = [];
  if (t.count !== undefined) limits.push(t.count);
  if (t.percent !== undefined && base > 0) limits.push(Math.floor((t.percent * base) / 100));
  return limits.length ? Math.min(...limits) : null;
}

/**
 * The thresholds the counts exceed (a count above its limit), in the order adds, updates, deletes, renames,
 * blanks; empty when the run may go on. `base`: the connector-space objects the percents are of.
 */
export function exceeded(thresholds: Thresholds, counts: Partial<OperationCounts>, base: number): ApprovalReason[] {
  const reasons: ApprovalReason[] = [];
  for (const op of THRESHOLD_OPERATIONS) {
    const limit = limitOf(thresholds[op], base);
    const count = counts[op] ?? 0;
    if (limit !== null && count > limit) reasons.push({ operation: op, count, limit });
  }
  return reasons;
}

/** True when a limit other than deletes is set: such a run counts every change before it applies any. */
export function guardsMoreThanDeletes(thresholds: Thresholds): boolean {
  return THRESHOLD_OPERATIONS.some((op) => op !== 'deletes' && limitOf(thresholds[op], Number.MAX_SAFE_INTEGER) !== null);
}

/** The reasons as one line (the run's `error` when it is rejected, the audit's detail). */
export function reasonsText(reasons: readonly ApprovalReason[]): string {
  return reasons.map((r) => `${r.count} ${r.operation} (limit ${r.limit})`).join(', ');
}

/** The threshold counts of a run's stored changes of one outcome (`planned`: a plan's). */
export function countsOf(stored: Record<string, number>, outcome: string): OperationCounts {
  const n = (op: string) => stored[`${op}|${outcome}`] ?? 0;
  return { adds: n('Add'), updates: n('Update'), deletes: n('Delete'), renames: n('Rename'), blanks: n('Blank') };
}
