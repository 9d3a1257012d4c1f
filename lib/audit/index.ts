import type { Caller } from '../auth/permissions';
import { appendAudit, type AuditRecord } from '../storage/audit';

/**
 * The audit trail of every write of the Admin API and the engine: `{ auditId, timestamp, action, targetType,
 * targetId, actorUpn, actorSid, scheme, outcome }`, with the actor identity of spec 5.4 taken from the
 * authenticated Caller. Query it with `GET /api/audit?targetType=connector&targetId=<id>`.
 *
 * Every record names the principal (`actorKey`, `actorKind`: lib/auth/principal.ts) besides the scheme.
 * Called after the write succeeded (`outcome: 'success'`); a request the API rejects writes nothing, the
 * audit log included, except a refused approval, which is recorded with `outcome: 'failure'` and the reason. A background step finishing an accepted request (a resumed delete) records its own
 * outcome with the `system` actor (`caller` null); an engine task names itself (`system:reconcile` ends the runs
 * whose orchestration ended outside the engine, with `cancel` or `fail` on the run).
 */
export type AuditAction =
  | 'create'
  | 'update'
  | 'delete'
  | 'trigger'
  | 'pause'
  | 'resume'
  | 'rename'
  | 'remove'
  | 'assign'
  | 'unassign'
  | 'cancel'
  | 'fail'
  | 'retry'
  | 'sync'
  | 'restore'
  | 'apply'
  | 'approve'
  | 'reject'
  | 'request'
  | 'decide'
  | 'join'
  | 'disconnect'
  | 'undo'
  /** An orphan marked to keep, or the mark removed (docs/orphans.md). */
  | 'keep'
  | 'unkeep'
  /** A read that is audited too: a SCIM client's GET (docs/scim.md). */
  | 'read';
/** An engine task acting on its own, as its audit records name it (`schedule:<name>` for a schedule's runs). */
export type SystemActor = `system:${string}` | `schedule:${string}` | `continuous:${string}`;
export type AuditTargetType =
  | 'connector'
  | 'rule'
  | 'instance'
  | 'run'
  | 'schedule'
  | 'connectorSpaceObject'
  | 'meshObject'
  | 'configChange'
  /** A User or Group pushed to the SCIM endpoint (`User/<id>`, `Group/<id>`). */
  | 'scimResource';
export type AuditOutcome = 'success' | 'failure';

export async function recordAudit(
  caller: Caller | SystemActor | null,
  action: AuditAction,
  targetType: AuditTargetType,
  targetId: string,
  outcome: AuditOutcome = 'success',
  details?: string,
): Promise<AuditRecord> {
  const person = caller && typeof caller !== 'string' ? caller : null;
  return appendAudit({
    action,
    targetType,
    targetId,
    actorUpn: typeof caller === 'string' ? caller : person ? (person.upn ?? person.principal.display) : 'system',
    actorSid: person ? person.sid : null,
    scheme: person ? person.scheme : null,
    actorKey: person ? person.principal.key : typeof caller === 'string' ? caller : 'system',
    actorKind: person ? person.principal.kind : 'system',
    outcome,
    ...(details ? { details } : {}),
  });
}
