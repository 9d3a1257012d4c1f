import { app, type HttpRequest, type HttpResponseInit, type InvocationContext } from '@azure/functions';
import { exportConfig } from '../lib/api/configExport';
import { listConfigHistory, restoreVersion } from '../lib/api/configHistory';
import { importConfig } from '../lib/api/configImport';
import { approveChange, getChange, listChanges, rejectChange } from '../lib/api/configChanges';
import { CONFIG_CHANGES_QUERY, CONFIG_HISTORY_QUERY, CONFIG_IMPORT_QUERY } from '../lib/api/queries';
import { authorize } from '../lib/auth/authorize';
import type { Caller } from '../lib/auth/permissions';
import { accepted, apiPath, ok, parseQuery, readJson, routeId } from '../lib/http';
import { ConfigDocument } from '../lib/schemas/config';
import type { ConfigChangeStatus } from '../lib/storage/configChanges';

async function listHistory(request: HttpRequest): Promise<HttpResponseInit> {
  return ok(await listConfigHistory(parseQuery(request, CONFIG_HISTORY_QUERY)));
}

/** POST /config/history/{versionId}/restore: 200 with the restore's own version; 202 when it loosens a guard rail. */
async function restore(request: HttpRequest, _context: InvocationContext, caller: Caller): Promise<HttpResponseInit> {
  const restored = await restoreVersion(routeId(request, 'versionId', 'Configuration version'), caller);
  return 'held' in restored ? accepted(apiPath(`config/changes/${restored.held.changeId}`), restored.held) : ok(restored);
}

async function listHeldChanges(request: HttpRequest): Promise<HttpResponseInit> {
  return ok(await listChanges(parseQuery(request, CONFIG_CHANGES_QUERY).status as ConfigChangeStatus | undefined));
}

async function getHeldChange(request: HttpRequest): Promise<HttpResponseInit> {
  return ok(await getChange(routeId(request, 'changeId', 'Configuration change')));
}

/** 200 with the change Applied; 403 for its requester under the four-eyes rule; 409 when its target changed since. */
async function approveHeldChange(request: HttpRequest, context: InvocationContext, caller: Caller): Promise<HttpResponseInit> {
  return ok(await approveChange(routeId(request, 'changeId', 'Configuration change'), caller, (m) => context.warn(m)));
}

async function rejectHeldChange(request: HttpRequest, _context: InvocationContext, caller: Caller): Promise<HttpResponseInit> {
  return ok(await rejectChange(routeId(request, 'changeId', 'Configuration change'), caller));
}

async function exportDocument(): Promise<HttpResponseInit> {
  return ok(await exportConfig());
}

/** POST /config/import?dryRun=&prune=: 200 `{ changes, applied }`; a document that cannot be imported: 400, nothing changed. */
async function importDocument(request: HttpRequest, context: InvocationContext, caller: Caller): Promise<HttpResponseInit> {
  const q = parseQuery(request, CONFIG_IMPORT_QUERY);
  const doc = await readJson(request, ConfigDocument);
  const result = await importConfig(doc, caller, { dryRun: q.dryRun === 'true', prune: q.prune === 'true', log: (m) => context.warn(m) });
  if (result.held) return accepted(apiPath(`config/changes/${result.held.changeId}`), { ...result.held, changes: result.changes });
  return ok({ changes: result.changes, applied: result.applied });
}

app.http('listConfigHistory', { route: 'config/history', methods: ['GET'], handler: authorize('config.read', listHistory) });
app.http('restoreConfigVersion', {
  route: 'config/history/{versionId}/restore',
  methods: ['POST'],
  handler: authorize('config.write', restore, { rateLimit: 'sensitive' }),
});
app.http('exportConfig', { route: 'config/export', methods: ['GET'], handler: authorize('config.write', exportDocument, { rateLimit: 'sensitive' }) });
app.http('importConfig', { route: 'config/import', methods: ['POST'], handler: authorize('config.write', importDocument, { rateLimit: 'sensitive' }) });
app.http('listConfigChanges', { route: 'config/changes', methods: ['GET'], handler: authorize('config.write', listHeldChanges) });
app.http('getConfigChange', { route: 'config/changes/{changeId}', methods: ['GET'], handler: authorize('config.write', getHeldChange) });
app.http('approveConfigChange', {
  route: 'config/changes/{changeId}/approve',
  methods: ['POST'],
  handler: authorize('config.write', approveHeldChange, { rateLimit: 'sensitive' }),
});
app.http('rejectConfigChange', {
  route: 'config/changes/{changeId}/reject',
  methods: ['POST'],
  handler: authorize('config.write', rejectHeldChange, { rateLimit: 'sensitive' }),
});
