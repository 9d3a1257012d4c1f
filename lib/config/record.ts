import type { Caller } from '../auth/permissions';
import { principalRecord } from '../core/principal';
import { currentSnapshot } from './current';
import { sameSnapshot, type Snapshot, type TargetType, type VersionAction } from './snapshots';
import { commitVersion, dropVersion, listVersionHeads, readVersion, writePendingVersion, type StoredVersion, type VersionHead } from './versions';

/**
 * Every change of a connector, rule or schedule goes through {@link versioned}, so no change is ever made
 * without its version.
 *
 * The configuration lives in several tables (Connectors with ConnectorNames, Rules, Schedules) and the
 * versions in their own, so one entity-group transaction cannot hold a change and its version. The order is
 * therefore: the version is written first as `pending` (with the snapshot before and the one the change will
 * leave), then the change is made, then the version is marked `committed`. A failed change drops its pending
 * version. A crash can only leave a pending version, never a change without one; a pending version is settled
 * when history is read ({@link settlePending}): it is committed when the target is now in its `after` state, or
 * when the next committed version of the target started from that state (the change was made and changed
 * again since); it is dropped when the next change started from another state, or when it is older than
 * {@link PENDING_GRACE_MS} and the target is not in its `after` state (the change never happened).
 */
export const PENDING_GRACE_MS = 120_000;

export interface Change {
  caller: Caller | string | null;
  targetType: TargetType;
  targetId: string;
  action: VersionAction;
  before: Snapshot | null;
  after: Snapshot | null;
}

/** Make `apply` with its version written ahead and committed after; the version id with `apply`'s result. */
export async function versioned<T>(change: Change, apply: () => Promise<T>): Promise<{ result: T; versionId: string }> {
  const { caller } = change;
  const version = await writePendingVersion({
    actorUpn: typeof caller === 'string' ? caller : caller ? caller.upn : 'system',
    actorSid: caller && typeof caller !== 'string' ? caller.sid : null,
    ...(caller && typeof caller !== 'string' ? { actor: principalRecord(caller.principal) } : {}),
    targetType: change.targetType,
    targetId: change.targetId,
    action: change.action,
    before: change.before,
    after: change.after,
  });
  let result: T;
  try {
    result = await apply();
  } catch (err) {
    await dropVersion(version.versionId).catch(() => undefined);
    throw err;
  }
  // A failed commit is settled by the next read of history (the target is in its `after` state).
  await commitVersion(version.versionId).catch(() => undefined);
  return { result, versionId: version.versionId };
}

/**
 * Settle the pending versions among `heads` (see the module comment); the heads that are committed after it,
 * still newest first. A pending version younger than the grace whose change cannot be told made is left out.
 */
export async function settlePending(heads: VersionHead[], now = Date.now()): Promise<VersionHead[]> {
  const out: VersionHead[] = [];
  for (const head of heads) {
    if (head.state === 'committed') {
      out.push(head);
      continue;
    }
    const verdict = await settle(head, now);
    if (verdict === 'commit') out.push({ ...head, state: 'committed' });
  }
  return out;
}

async function settle(head: VersionHead, now: number): Promise<'commit' | 'drop' | 'wait'> {
  const v = await readVersion(head.versionId);
  if (!v || v.state === 'committed') return v ? 'commit' : 'drop';
  let verdict: 'commit' | 'drop' | 'wait';
  if (sameSnapshot(await currentSnapshot(v.targetType, v.targetId), v.after)) verdict = 'commit';
  else {
    const next = await nextCommitted(v);
    if (next) verdict = sameSnapshot(next.before, v.after) ? 'commit' : 'drop';
    else verdict = now - Date.parse(v.timestamp) > PENDING_GRACE_MS ? 'drop' : 'wait';
  }
  if (verdict === 'commit') await commitVersion(v.versionId);
  if (verdict === 'drop') await dropVersion(v.versionId);
  return verdict;
}

/** The oldest committed version of the same target after `v`. */
async function nextCommitted(v: StoredVersion): Promise<StoredVersion | null> {
  const later = (await listVersionHeads({ targetType: v.targetType, targetId: v.targetId })).filter((h) => h.seq > v.seq && h.state === 'committed');
  const oldest = later[later.length - 1];
  return oldest ? readVersion(oldest.versionId) : null;
}
