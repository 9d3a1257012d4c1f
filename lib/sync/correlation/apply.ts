import { indexCsObjectIds } from '../space/csIds';
import type { ObjectPlan } from '../planner';
import { closeCases, putCases, settleUndone } from './caseStore';
import { pageCases, type CorrelationContext } from './plan';

/**
 * A page's correlation writes (with its mesh rows, before its connector-space rows: a page replayed after a
 * crash plans the same objects again and writes the same cases): the cases its objects opened (and their ids
 * made resolvable, so that `/connectors/{id}/space/{csObjectId}` finds each case's object), the open cases the
 * rules settled closed, and applied undos settled.
 */
export async function writePageCorrelation(
  connectorId: string,
  corr: CorrelationContext | undefined,
  plans: readonly ObjectPlan[],
  now: string,
): Promise<void> {
  if (!corr) return;
  const planned = plans.map((p) => ({
    anchor: p.cs.anchor,
    ...(p.cs.csObjectId ? { csObjectId: p.cs.csObjectId } : {}),
    meshId: p.cs.meshId,
    ...(p.cs.deleted ? { deleted: true } : {}),
    ...(p.correlation?.case ? { draft: p.correlation.case } : {}),
    ...(p.correlation?.decided ? { decided: true } : {}),
  }));
  const { open, closed } = pageCases(connectorId, corr, planned, now);
  const undone = plans.filter((p) => p.correlation?.undone).map((p) => p.cs.anchor);
  if (!open.length && !closed.length && !undone.length) return;
  await Promise.all([
    putCases(open),
    closeCases(closed),
    settleUndone(connectorId, undone),
    indexCsObjectIds(
      connectorId,
      open.map((c) => ({ csObjectId: c.caseId, anchor: c.object.anchor })),
    ),
  ]);
  for (const a of undone) corr.decisions.delete(a);
}
