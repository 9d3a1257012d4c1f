import { THRESHOLD_OPERATIONS } from '../storage/runs';
import { limitOf, thresholdsOf, type Threshold } from './thresholds';

/**
 * The guard rails of a connector's configuration, and the changes that loosen them. Pure.
 *
 * A guard rail is what stands between a mistake and a mass change: the thresholds (lib/plans/thresholds.ts),
 * the deprovisioning grace and action of a target, and the connector's four-eyes rule
 * (`approvals.requireSecondPerson`, the global `Approvals:RequireSecondPerson` when not set). A change loosens
 * one when it lets more through without a second person:
 * - a threshold whose limit is larger for some size of the connector space (a count or percent made larger or
 *   removed, `deletes: {}`): a larger limit lets more changes pass before a run waits for approval. A change of
 *   the pair that is never looser (`{ count: 500, percent: 20 }` to `{ count: 10, percent: 20 }`) is not;
 * - `deprovisioning.graceDays` shortened;
 * - `deprovisioning.action` made harsher (`none` < `disable` < `delete`; absent is `delete`);
 * - `deprovisioning.orphanAction` made harsher (`disable` to `delete`; absent is `disable`);
 * - four-eyes turned off for the connector.
 * Tightening any of them (a smaller limit, a longer grace, a milder action, four-eyes on) is not a loosening.
 * Thresholds are compared as they take effect, defaults and the older `deletionThreshold` included.
 */
export interface GuardRailReason {
  /** The setting, as a path in the connector's `config` (`thresholds.deletes.count`, `deprovisioning.graceDays`). */
  setting: string;
  /** Its effective value before and after; null: not set (no limit, no grace, four-eyes off). */
  before: number | string | boolean | null;
  after: number | string | boolean | null;
}

const ACTION_SEVERITY: Record<string, number> = { none: 0, disable: 1, delete: 2 };

type Config = Record<string, unknown>;

const obj = (v: unknown): Config => (v && typeof v === 'object' && !Array.isArray(v) ? (v as Config) : {});

/** The connector's own four-eyes setting, or the global one. */
export function requiresSecondPerson(config: Config | undefined, globalSetting: boolean): boolean {
  const own = obj(obj(config).approvals).requireSecondPerson;
  return typeof own === 'boolean' ? own : globalSetting;
}

function deprovisioningOf(config: Config): { action: string; graceDays: number; orphanAction: string } {
  const d = obj(config.deprovisioning);
  return {
    action: typeof d.action === 'string' ? d.action : 'delete',
    graceDays: typeof d.graceDays === 'number' ? d.graceDays : 0,
    orphanAction: d.orphanAction === 'delete' ? 'delete' : 'disable',
  };
}

/**
 * How `after` loosens the guard rails of `before` (null: a new connector, compared with the defaults). Empty
 * when it loosens none.
 */
export function loosenedGuardRails(before: Config | null, after: Config, globalSecondPerson: boolean): GuardRailReason[] {
  // A looser threshold has a field made larger or removed: a pair whose fields are all kept or made smaller
  // is at most as large as before at every base.
  const reasons: GuardRailReason[] = [];
  const b = thresholdsOf(before ?? {});
  const a = thresholdsOf(after);
  for (const op of THRESHOLD_OPERATIONS) {
    if (!looser(b[op], a[op])) continue;
    for (const field of ['count', 'percent'] as const) {
      const was = b[op]?.[field];
      const now = a[op]?.[field];
      if (was !== undefined && (now === undefined || now > was)) reasons.push({ setting: `thresholds.${op}.${field}`, before: was, after: now ?? null });
    }
  }
  const db = deprovisioningOf(before ?? {});
  const da = deprovisioningOf(after);
  if (da.graceDays < db.graceDays) reasons.push({ setting: 'deprovisioning.graceDays', before: db.graceDays, after: da.graceDays });
  if ((ACTION_SEVERITY[da.action] ?? 2) > (ACTION_SEVERITY[db.action] ?? 2))
    reasons.push({ setting: 'deprovisioning.action', before: db.action, after: da.action });
  if (da.orphanAction === 'delete' && db.orphanAction !== 'delete')
    reasons.push({ setting: 'deprovisioning.orphanAction', before: db.orphanAction, after: da.orphanAction });
  const fb = requiresSecondPerson(before ?? {}, globalSecondPerson);
  const fa = requiresSecondPerson(after, globalSecondPerson);
  if (fb && !fa) reasons.push({ setting: 'approvals.requireSecondPerson', before: true, after: false });
  return reasons;
}

/**
 * True when `after` lets more changes through than `before` for some size of the connector space: its limit
 * (lib/plans/thresholds.ts limitOf, the smaller of count and percent, none without either) is larger at some base.
 * Both limits are the minimum of a constant and a non-decreasing step function of the base, so comparing them at
 * the base 0, at every point where one of them changes shape (and next to it) and at a very large base suffices.
 */
function looser(before: Threshold | undefined, after: Threshold | undefined): boolean {
  const bases = new Set<number>([0, 1, 2, 1e12]);
  for (const t of [before, after])
    if (t?.count !== undefined && t.percent) for (const d of [-1, 0, 1]) bases.add(Math.max(0, Math.ceil((t.count * 100) / t.percent) + d));
  for (const n of bases) {
    const was = limitOf(before, n) ?? Infinity;
    const now = limitOf(after, n) ?? Infinity;
    if (now > was) return true;
  }
  return false;
}

/** The reasons as one line, for a detail or an audit record. */
export function guardRailText(reasons: readonly GuardRailReason[]): string {
  const show = (v: GuardRailReason['before']) => (v === null ? 'not set' : String(v));
  return reasons.map((r) => `${r.setting} ${show(r.before)} -> ${show(r.after)}`).join(', ');
}
