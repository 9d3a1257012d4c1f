import type { Caller } from '../auth/permissions';
import { recordAudit } from '../audit';
import { AppError, badRequest, conflict, notFound } from '../core/errors';
import { getMeshObject } from '../mesh/store';
import type { CorrelationCaseView, CorrelationDecisionView, DecideCaseBody, DecideCasesBody, DecideCasesOutcome } from '../schemas/correlation';
import { getConnectorRecord } from '../storage/connectors';
import { findActiveRun } from '../storage/runs';
import {
  decideCase,
  getCase,
  getDecision,
  listCases,
  putDecision,
  type CaseState,
  type CorrelationCase,
  type Decision,
  type DecisionEntry,
  type ManualDecision,
} from '../sync/correlation/caseStore';
import type { CaseReason } from '../sync/correlation/score';
import { syncSpaceObject } from '../sync/run/oneObject';
import { findSpaceObject, type SpaceObject } from '../sync/space/spaceObjects';

/**
 * Correlation as the Admin API sees it (docs/correlation.md): the cases the engine opened, an operator's
 * decision on one case or on every case a filter matches, and the manual join, disconnect and undo of any
 * connector-space object. A decision is recorded for the object (`CorrelationDecisions`: the engine plans the
 * object by it from then on, before its rules) and applied at once through the one-object path
 * (lib/sync/run/oneObject.ts: the mesh, the object's mesh history, the targets' next exports); each is audited
 * on the `connectorSpaceObject` (the case id is its csObjectId).
 */

const who = (caller: Caller) => caller.upn ?? caller.principal.display;

export function caseView(c: CorrelationCase): CorrelationCaseView {
  return {
    caseId: c.caseId,
    connectorId: c.connectorId,
    csObjectId: c.csObjectId,
    object: c.object,
    candidates: c.candidates,
    reason: c.reason,
    state: c.state,
    decision: c.decision,
    meshObjectId: c.meshObjectId,
    decidedBy: c.decidedBy,
    decidedOn: c.decidedOn || null,
    openedOn: c.openedOn,
    updatedOn: c.updatedOn,
  };
}

/** `GET /correlation-cases`: filters (connector, state, reason, least best score), paging. */
export async function listCorrelationCases(q: {
  connectorId?: string;
  state?: string;
  reason?: string;
  minScore?: number;
  skip: number;
  take: number;
}): Promise<{ items: CorrelationCaseView[]; totalCount: number }> {
  const all = await listCases({
    ...(q.connectorId ? { connectorId: q.connectorId } : {}),
    ...(q.state ? { state: q.state as CaseState } : {}),
    ...(q.reason ? { reason: q.reason as CaseReason } : {}),
    ...(q.minScore !== undefined ? { minScore: q.minScore } : {}),
  });
  return { items: all.slice(q.skip, q.skip + q.take).map(caseView), totalCount: all.length };
}

async function caseOf(caseId: string): Promise<CorrelationCase> {
  const c = await getCase(caseId);
  if (!c) throw notFound(`Correlation case '${caseId}' does not exist.`);
  return c;
}

/** `GET /correlation-cases/{id}`. */
export async function getCorrelationCase(caseId: string): Promise<CorrelationCaseView> {
  return caseView(await caseOf(caseId));
}

/** The connector-space row an operator decides for (staged adds have no imported object to correlate). */
async function rowObject(connectorId: string, csObjectId: string): Promise<Extract<SpaceObject, { kind: 'row' }>> {
  await getConnectorRecord(connectorId);
  const found = await findSpaceObject(connectorId, csObjectId);
  if (!found) throw notFound(`Connector-space object '${csObjectId}' does not exist in connector '${connectorId}'.`);
  if (found.kind !== 'row') throw conflict('The object is an add the target has not taken yet: there is no imported object to join or disconnect.');
  return found;
}

/**
 * Record `mode` for the object and apply it now through the one-object path. 409 while a run of the connector is
 * Running, Queued or AwaitingApproval (the run may be writing the object); a join to a mesh object that does not
 * exist is a 400, to one another object of the connector is joined to a 409. On a failed apply the object's
 * previous decision is put back. Returns the mesh object the object is joined to after it.
 */
async function applyDecision(
  connectorId: string,
  obj: Extract<SpaceObject, { kind: 'row' }>,
  mode: Decision | 'rules',
  meshId: string | undefined,
  by: string,
  caseId?: string,
): Promise<{ meshObjectId: string | null; decision: ManualDecision }> {
  const active = await findActiveRun(connectorId);
  if (active) throw conflict(`Run ${active.runId} of this connector is ${active.status}; decide when it has finished.`);
  if (mode === 'join') {
    const target = meshId ? await getMeshObject(meshId) : null;
    if (!target) throw badRequest('The mesh object to join does not exist.', [{ path: '/meshObjectId', message: 'is not an existing mesh object' }]);
    const holder = target.links[connectorId];
    if (holder !== undefined && holder !== obj.row.anchor)
      throw conflict(`Mesh object '${target.id}' is joined to another object of this connector; disconnect that one first.`);
  }
  const previous = await getDecision(connectorId, obj.row.anchor);
  const on = new Date().toISOString();
  const entry: DecisionEntry = { mode: mode === 'rules' ? 'undo' : mode, by, on, ...(meshId ? { meshId } : {}), ...(caseId ? { caseId } : {}) };
  const decision: ManualDecision = { anchor: obj.row.anchor, mode, ...(meshId ? { meshId } : {}), by, on, log: [...(previous?.log ?? []), entry] };
  await putDecision(connectorId, decision);
  try {
    const result = await syncSpaceObject(connectorId, obj, true);
    return { meshObjectId: result.meshObjectId, decision };
  } catch (err) {
    if (previous) await putDecision(connectorId, previous);
    else await putDecision(connectorId, { ...decision, mode: 'none', log: [] });
    throw err;
  }
}

function decisionView(csObjectId: string, d: ManualDecision, meshObjectId: string | null): CorrelationDecisionView {
  return {
    csObjectId,
    decision: d.mode === 'join' || d.mode === 'project' || d.mode === 'ignore' ? d.mode : null,
    meshObjectId,
    history: d.log.map((e) => ({
      action: e.mode === 'rules' || e.mode === 'none' ? 'undo' : e.mode,
      meshObjectId: e.meshId ?? null,
      by: e.by,
      on: e.on,
    })),
  };
}

/** The mesh object a join decision on a case joins: the one named, else the best candidate (a tie is a 400). */
function joinTarget(c: CorrelationCase, meshObjectId: string | undefined): string {
  if (meshObjectId) return meshObjectId.toLowerCase();
  const [best, next] = c.candidates;
  if (!best) throw badRequest('The case has no candidate: name the mesh object to join.', [{ path: '/meshObjectId', message: 'is required for this case' }]);
  if (next && next.score === best.score)
    throw badRequest('Several candidates share the best score: name the mesh object to join.', [
      { path: '/meshObjectId', message: 'is required for this case' },
    ]);
  return best.meshObjectId;
}

/** `POST /correlation-cases/{id}/decide`: join (a candidate or any mesh object), project or ignore. Only an open case (else 409). */
export async function decideCorrelationCase(caseId: string, body: DecideCaseBody, caller: Caller): Promise<CorrelationCaseView> {
  const c = await caseOf(caseId);
  if (c.state !== 'open')
    throw conflict(`Case '${caseId}' is ${c.state}; undo the object's decision (POST /connectors/{id}/space/{csObjectId}/undo) to decide again.`);
  if (body.meshObjectId !== undefined && body.decision !== 'join')
    throw badRequest('meshObjectId goes with join only.', [{ path: '/meshObjectId', message: 'applies only to join' }]);
  const meshId = body.decision === 'join' ? joinTarget(c, body.meshObjectId) : undefined;
  const obj = await rowObject(c.connectorId, c.csObjectId);
  const { meshObjectId } = await applyDecision(c.connectorId, obj, body.decision, meshId, who(caller), caseId);
  const decided = await decideCase(c, body.decision, body.decision === 'ignore' ? null : meshObjectId, who(caller), new Date().toISOString());
  await recordAudit(caller, 'decide', 'connectorSpaceObject', c.csObjectId, 'success', `${body.decision}${meshObjectId ? ` ${meshObjectId}` : ''}`);
  return caseView(decided);
}

/**
 * `POST /correlation-cases/decide`: every open case the filter matches, one after the other; a failure of one
 * (a run started, a candidate taken meanwhile) is listed and the others go on. 409 while a run of the filtered
 * connector is going (nothing decided).
 */
export async function decideCorrelationCases(body: DecideCasesBody, caller: Caller): Promise<DecideCasesOutcome> {
  const f = body.filter;
  if (f.connectorId) {
    await getConnectorRecord(f.connectorId);
    const active = await findActiveRun(f.connectorId);
    if (active) throw conflict(`Run ${active.runId} of this connector is ${active.status}; decide when it has finished.`);
  }
  const cases = (
    await listCases({
      state: 'open',
      ...(f.connectorId ? { connectorId: f.connectorId.toLowerCase() } : {}),
      ...(f.reason ? { reason: f.reason } : {}),
      ...(f.minScore !== undefined ? { minScore: f.minScore } : {}),
    })
  ).filter((c) => f.maxCandidates === undefined || c.candidates.length <= f.maxCandidates);
  const out: DecideCasesOutcome = { matched: cases.length, decided: 0, skipped: 0, failed: [] };
  for (const c of cases) {
    if (body.decision === 'join' && (!c.candidates.length || (c.candidates[1] && c.candidates[1].score === c.candidates[0].score))) {
      out.skipped++;
      continue;
    }
    try {
      await decideCorrelationCase(c.caseId, { decision: body.decision }, caller);
      out.decided++;
    } catch (err) {
      out.failed.push({ caseId: c.caseId, message: err instanceof AppError ? err.detail : 'The decision could not be applied.' });
    }
  }
  return out;
}

/** `POST /connectors/{id}/space/{csObjectId}/join`: join the object to a mesh object by hand (any object, opted in or not). */
export async function joinSpaceObject(connectorId: string, csObjectId: string, meshObjectId: string, caller: Caller): Promise<CorrelationDecisionView> {
  const obj = await rowObject(connectorId, csObjectId);
  const { meshObjectId: now, decision } = await applyDecision(connectorId, obj, 'join', meshObjectId.toLowerCase(), who(caller));
  await settleCase(connectorId, csObjectId, 'join', now, who(caller));
  await recordAudit(caller, 'join', 'connectorSpaceObject', csObjectId, 'success', now ?? undefined);
  return decisionView(csObjectId, decision, now);
}

/** `POST /connectors/{id}/space/{csObjectId}/disconnect`: an explicit disconnector, out of joins and projection until undone. */
export async function disconnectSpaceObject(connectorId: string, csObjectId: string, caller: Caller): Promise<CorrelationDecisionView> {
  const obj = await rowObject(connectorId, csObjectId);
  const { meshObjectId, decision } = await applyDecision(connectorId, obj, 'ignore', undefined, who(caller));
  await settleCase(connectorId, csObjectId, 'ignore', null, who(caller));
  await recordAudit(caller, 'disconnect', 'connectorSpaceObject', csObjectId);
  return decisionView(csObjectId, decision, meshObjectId);
}

/**
 * `POST /connectors/{id}/space/{csObjectId}/undo`: the object's decision goes; it leaves the mesh object the
 * decision joined or projected, and its rules decide again (which may open its case again). 409 when it has no
 * decision to undo.
 */
export async function undoSpaceObjectDecision(connectorId: string, csObjectId: string, caller: Caller): Promise<CorrelationDecisionView> {
  const obj = await rowObject(connectorId, csObjectId);
  const current = await getDecision(connectorId, obj.row.anchor);
  if (!current || current.mode === 'none' || current.mode === 'rules') throw conflict('The object has no decision to undo.');
  const { meshObjectId, decision } = await applyDecision(connectorId, obj, 'rules', undefined, who(caller));
  await recordAudit(caller, 'undo', 'connectorSpaceObject', csObjectId);
  return decisionView(csObjectId, { ...decision, mode: 'none' }, meshObjectId);
}

/**
 * `GET /connectors/{id}/space/{csObjectId}/decisions`: the object's decision in force, the mesh object it is
 * joined to, and its decisions oldest first (an object never decided: no decision, an empty history).
 */
export async function spaceObjectDecisions(connectorId: string, csObjectId: string): Promise<CorrelationDecisionView> {
  const obj = await rowObject(connectorId, csObjectId);
  const d = await getDecision(connectorId, obj.row.anchor);
  const none: ManualDecision = { anchor: obj.row.anchor, mode: 'none', by: '', on: '', log: [] };
  return decisionView(csObjectId, d ?? none, obj.row.meshId);
}

/** An open case of the object, decided by a manual join or disconnect. */
async function settleCase(connectorId: string, csObjectId: string, decision: Decision, meshObjectId: string | null, by: string): Promise<void> {
  const c = await getCase(csObjectId);
  if (c && c.connectorId === connectorId && c.state === 'open') await decideCase(c, decision, meshObjectId, by, new Date().toISOString());
}
