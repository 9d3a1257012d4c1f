import { app, type HttpRequest, type HttpResponseInit } from '@azure/functions';
import { authorize } from '../lib/auth/authorize';
import { AUDIT_QUERY } from '../lib/api/queries';
import { ok, parseQuery } from '../lib/http';
import { queryAudit } from '../lib/storage/audit';

async function listAudit(request: HttpRequest): Promise<HttpResponseInit> {
  const q = parseQuery(request, AUDIT_QUERY);
  return ok(await queryAudit(q));
}

app.http('listAudit', { route: 'audit', methods: ['GET'], handler: authorize('audit.read', listAudit, { rateLimit: 'sensitive' }) });
