import type { Caller } from '../auth/permissions';
import { conflict } from '../core/errors';
import {
  getConnectorRecord,
  insertConnector,
  markConnectorDeleting,
  markConnectorReady,
  readConnectorRow,
  removeConnectorRow,
  replaceConnector,
} from '../storage/connectors';
import { completeOperation, recordOperation, type PendingOperation } from '../storage/operations';
import { deleteRule, getRule, insertRule, replaceRule } from '../storage/rules';
import { deleteSchedule, getSchedule, insertSchedule, removeScheduleRow, replaceSchedule } from '../storage/schedules';
import { currentSnapshot } from './current';
import { versioned } from './record';
import {
  sameSnapshot,
  type ConnectorSnapshot,
  type RuleSnapshot,
  type ScheduleSnapshot,
  type Snapshot,
  type TargetType,
  type VersionAction,
} from './snapshots';
import { dropVersion } from './versions';

/**
 * The writes of a configuration import or restore, one target at a time, each with its version
 * (lib/config/record.ts), and their undo. A write starts from the state it was planned on (`before`): a target
 * changed since is a 409 and nothing is written. A connector delete only marks the connector `deleting` (with
 * its pending operation); the cleanup of its data, which cannot be undone, is the caller's, once every write
 * has been made. A schedule delete keeps its schedule runs for the same reason.
 */
export interface PlannedWrite {
  targetType: TargetType;
  targetId: string;
  action: VersionAction;
  before: Snapshot | null;
  after: Snapshot | null;
}

export interface AppliedWrite extends PlannedWrite {
  versionId: string;
  /** A connector delete's pending operation, finished by the caller (or completed by the undo). */
  operation?: PendingOperation;
}

export interface ConfigWriter {
  apply(write: PlannedWrite, caller: Caller | string | null): Promise<AppliedWrite>;
  /** Put the target back in its `before` state and remove the version of the write. */
  undo(write: AppliedWrite): Promise<void>;
}

const changedSince = (w: PlannedWrite) =>
  conflict(
    `The ${w.targetType} '${w.targetId}' was changed by another request while this change was being made; nothing was changed. Read it again and retry.`,
  );

async function applyConnector(w: PlannedWrite): Promise<PendingOperation | undefined> {
  const after = w.after as ConnectorSnapshot | null;
  if (!w.before) {
    await insertConnector({ ...(after as ConnectorSnapshot), status: 'active', lastSync: null });
    return undefined;
  }
  const current = await getConnectorRecord(w.targetId);
  if (!after) {
    const op = await recordOperation('deleteConnector', w.targetId);
    try {
      await markConnectorDeleting(current);
    } catch (err) {
      await completeOperation(op).catch(() => undefined);
      throw err;
    }
    return op;
  }
  await replaceConnector(current, {
    name: after.name,
    config: after.config,
    sealedSecrets: after.sealedSecrets,
    secretPaths: after.secretPaths,
    updatedOn: after.updatedOn,
  });
  return undefined;
}

async function applyRule(w: PlannedWrite): Promise<void> {
  const after = w.after as RuleSnapshot | null;
  if (!w.before) return void (await insertRule(after!));
  const current = await getRule(w.targetId);
  if (!current) throw changedSince(w);
  if (!after) return void (await deleteRule(w.targetId, current.etag));
  await replaceRule(after, current.etag);
}

async function applySchedule(w: PlannedWrite): Promise<void> {
  const after = w.after as ScheduleSnapshot | null;
  if (!w.before) return void (await insertSchedule(after!));
  const current = await getSchedule(w.targetId);
  if (!current) throw changedSince(w);
  if (!after) return removeScheduleRow(current);
  await replaceSchedule(current, after);
}

/** The writer over the service's tables. */
export const storageWriter: ConfigWriter = {
  async apply(w, caller) {
    if (!sameSnapshot(await currentSnapshot(w.targetType, w.targetId), w.before)) {
      // A connector left `deleting` by an earlier delete is not there for readers: re-creating it is a conflict.
      throw w.targetType === 'connector' && !w.before && (await readConnectorRow(w.targetId))
        ? conflict(`The connector '${w.targetId}' is still being deleted; retry when its cleanup has finished.`)
        : changedSince(w);
    }
    let operation: PendingOperation | undefined;
    const { versionId } = await versioned({ caller, ...w }, async () => {
      if (w.targetType === 'connector') operation = await applyConnector(w);
      else if (w.targetType === 'rule') await applyRule(w);
      else await applySchedule(w);
    });
    return { ...w, versionId, ...(operation ? { operation } : {}) };
  },

  async undo(w) {
    if (w.targetType === 'connector') {
      const before = w.before as ConnectorSnapshot | null;
      if (!before) await removeConnectorRow(w.targetId);
      else if (!w.after) {
        await markConnectorReady(w.targetId);
        if (w.operation) await completeOperation(w.operation);
      } else {
        const current = await getConnectorRecord(w.targetId);
        await replaceConnector(current, {
          name: before.name,
          config: before.config,
          sealedSecrets: before.sealedSecrets,
          secretPaths: before.secretPaths,
          updatedOn: before.updatedOn,
        });
      }
    } else if (w.targetType === 'rule') {
      const current = await getRule(w.targetId);
      if (!w.before) {
        if (current) await deleteRule(w.targetId);
      } else if (current) await replaceRule(w.before as RuleSnapshot, current.etag);
      else await insertRule(w.before as RuleSnapshot);
    } else {
      const current = await getSchedule(w.targetId);
      if (!w.before) {
        if (current) await deleteSchedule(current);
      } else if (current) await replaceSchedule(current, w.before as ScheduleSnapshot);
      else await insertSchedule(w.before as ScheduleSnapshot);
    }
    await dropVersion(w.versionId);
  },
};

/**
 * Apply `writes` in order, all or nothing: when one fails, the ones made are undone in reverse order and the
 * error is thrown again. An undo that fails too is reported through `onUndoFailure` (the rest are still undone).
 */
export async function applyAll(
  writer: ConfigWriter,
  writes: readonly PlannedWrite[],
  caller: Caller | string | null,
  onUndoFailure: (write: AppliedWrite, err: unknown) => void = () => undefined,
): Promise<AppliedWrite[]> {
  const done: AppliedWrite[] = [];
  try {
    for (const w of writes) done.push(await writer.apply(w, caller));
  } catch (err) {
    for (const w of [...done].reverse()) {
      try {
        await writer.undo(w);
      } catch (undoErr) {
        onUndoFailure(w, undoErr);
      }
    }
    throw err;
  }
  return done;
}
