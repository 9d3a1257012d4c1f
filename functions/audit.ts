import { app, type HttpRequest, type HttpResponseInit } from '@azure/functions';
import { listAuditRecords } from '../lib/api/audit';
import { AUDIT_QUERY } from '../lib/api/queries';
import { authorize } from '../lib/auth/authorize';
import { ok, parseQuery } from '../lib/http';

async function listAudit(request: HttpRequest): Promise<HttpResponseInit> {
  return ok(await listAuditRecords(parseQuery(request, AUDIT_QUERY)));
}

app.http('listAudit', { route: 'audit', methods: ['GET'], handler: authorize('audit.read', listAudit, { rateLimit: 'sensitive' }) });
