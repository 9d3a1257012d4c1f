import { queryAudit, type AuditQuery } from '../storage/audit';

/** The audit trail, newest first: `{ items, totalCount }` (filters of `GET /audit`). */
export async function listAuditRecords(q: AuditQuery) {
  return queryAudit(q);
}
