import { app, type HttpRequest, type HttpResponseInit, type InvocationContext } from '@azure/functions';
import { exportConfig } from '../lib/api/configExport';
import { listConfigHistory, restoreVersion } from '../lib/api/configHistory';
import { importConfig } from '../lib/api/configImport';
import { CONFIG_HISTORY_QUERY, CONFIG_IMPORT_QUERY } from '../lib/api/queries';
import { authorize } from '../lib/auth/authorize';
import type { Caller } from '../lib/auth/permissions';
import { ok, parseQuery, readJson, routeId } from '../lib/http';
import { ConfigDocument } from '../lib/schemas/config';

async function listHistory(request: HttpRequest): Promise<HttpResponseInit> {
  return ok(await listConfigHistory(parseQuery(request, CONFIG_HISTORY_QUERY)));
}

/** POST /config/history/{versionId}/restore: 200 with the restore's own version. */
async function restore(request: HttpRequest, _context: InvocationContext, caller: Caller): Promise<HttpResponseInit> {
  return ok(await restoreVersion(routeId(request, 'versionId', 'Configuration version'), caller));
}

async function exportDocument(): Promise<HttpResponseInit> {
  return ok(await exportConfig());
}

/** POST /config/import?dryRun=&prune=: 200 `{ changes, applied }`; a document that cannot be imported: 400, nothing changed. */
async function importDocument(request: HttpRequest, context: InvocationContext, caller: Caller): Promise<HttpResponseInit> {
  const q = parseQuery(request, CONFIG_IMPORT_QUERY);
  const doc = await readJson(request, ConfigDocument);
  return ok(await importConfig(doc, caller, { dryRun: q.dryRun === 'true', prune: q.prune === 'true', log: (m) => context.warn(m) }));
}

app.http('listConfigHistory', { route: 'config/history', methods: ['GET'], handler: authorize('config.read', listHistory) });
app.http('restoreConfigVersion', {
  route: 'config/history/{versionId}/restore',
  methods: ['POST'],
  handler: authorize('config.write', restore, { rateLimit: 'sensitive' }),
});
app.http('exportConfig', { route: 'config/export', methods: ['GET'], handler: authorize('config.write', exportDocument, { rateLimit: 'sensitive' }) });
app.http('importConfig', { route: 'config/import', methods: ['POST'], handler: authorize('config.write', importDocument, { rateLimit: 'sensitive' }) });
