import { app, type HttpRequest, type HttpResponseInit, type InvocationContext } from '@azure/functions';
import { ORPHANS_QUERY, keepOrphan, listOrphans, unkeepOrphan } from '../lib/api/orphans';
import { authorize } from '../lib/auth/authorize';
import type { Caller } from '../lib/auth/permissions';
import { noContent, ok, parseQuery, readJson, routeGuid, routeId } from '../lib/http';
import { OrphanKeepRequest } from '../lib/schemas/orphans';

/** GET /connectors/{id}/orphans: the target's accounts joined to no active identity (reason, excluded, skip, take). */
async function listConnectorOrphans(request: HttpRequest): Promise<HttpResponseInit> {
  const connectorId = routeId(request, 'id', 'Connector');
  return ok(await listOrphans(connectorId, parseQuery(request, ORPHANS_QUERY)));
}

/** PUT /connectors/{id}/orphans/{csObjectId}/keep `{ note? }`: 200 with the mark; the object is never swept. */
async function keepConnectorOrphan(request: HttpRequest, _context: InvocationContext, caller: Caller): Promise<HttpResponseInit> {
  const connectorId = routeId(request, 'id', 'Connector');
  const csObjectId = routeGuid(request, 'csObjectId');
  const body = await readJson(request, OrphanKeepRequest, { optional: true });
  return ok(await keepOrphan(connectorId, csObjectId, body.note, caller));
}

/** DELETE /connectors/{id}/orphans/{csObjectId}/keep: 204, the mark removed; 404 when there is none. */
async function unkeepConnectorOrphan(request: HttpRequest, _context: InvocationContext, caller: Caller): Promise<HttpResponseInit> {
  const connectorId = routeId(request, 'id', 'Connector');
  await unkeepOrphan(connectorId, routeGuid(request, 'csObjectId'), caller);
  return noContent();
}

app.http('listConnectorOrphans', { route: 'connectors/{id}/orphans', methods: ['GET'], handler: authorize('connectors.read', listConnectorOrphans) });
app.http('keepConnectorOrphan', {
  route: 'connectors/{id}/orphans/{csObjectId}/keep',
  methods: ['PUT'],
  handler: authorize('orphans.keep', keepConnectorOrphan),
});
app.http('unkeepConnectorOrphan', {
  route: 'connectors/{id}/orphans/{csObjectId}/keep',
  methods: ['DELETE'],
  handler: authorize('orphans.keep', unkeepConnectorOrphan),
});
