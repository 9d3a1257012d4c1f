import { app, type HttpRequest, type HttpResponseInit, type InvocationContext } from '@azure/functions';
import { getConnectorSpaceObject as getObject, listConnectorSpace as list, retryConnectorSpaceObject as retry } from '../lib/api/connectorSpace';
import { SPACE_QUERY } from '../lib/api/queries';
import { previewSpaceObject as preview, syncOneSpaceObject as syncOne } from '../lib/api/spaceObjectSync';
import { authorize } from '../lib/auth/authorize';
import type { Caller } from '../lib/auth/permissions';
import { ok, parseQuery, routeGuid, routeId } from '../lib/http';
import type { SpaceListState } from '../lib/sync/space/spaceIndex';

/** GET /connectors/{id}/space: a page of the connector space (state, objectType, search, skip, take). */
async function listConnectorSpace(request: HttpRequest): Promise<HttpResponseInit> {
  const connectorId = routeId(request, 'id', 'Connector');
  const q = parseQuery(request, SPACE_QUERY);
  return ok(await list(connectorId, { state: q.state as SpaceListState | undefined, objectType: q.objectType, search: q.search, skip: q.skip, take: q.take }));
}

/** GET /connectors/{id}/space/{csObjectId}: one object with its attributes, pending change and exported values. */
async function getConnectorSpaceObject(request: HttpRequest): Promise<HttpResponseInit> {
  const connectorId = routeId(request, 'id', 'Connector');
  return ok(await getObject(connectorId, routeGuid(request, 'csObjectId')));
}

/**
 * POST /connectors/{id}/space/{csObjectId}/retry: 200 with the object, its export failure reset so that the next
 * export tries its pending change again. 404 unknown connector or object; 400 a csObjectId that is not a GUID.
 */
async function retryConnectorSpaceObject(request: HttpRequest, _context: InvocationContext, caller: Caller): Promise<HttpResponseInit> {
  const connectorId = routeId(request, 'id', 'Connector');
  const csObjectId = routeGuid(request, 'csObjectId');
  return ok(await retry(connectorId, csObjectId, caller));
}

/** POST /connectors/{id}/space/{csObjectId}/preview: 200, what a sync of the object would do now; writes nothing. */
async function previewConnectorSpaceObject(request: HttpRequest): Promise<HttpResponseInit> {
  const connectorId = routeId(request, 'id', 'Connector');
  const csObjectId = routeGuid(request, 'csObjectId');
  return ok(await preview(connectorId, csObjectId));
}

/** POST /connectors/{id}/space/{csObjectId}/sync: 200, what the sync did (`applied: true`); 409 during a run of the connector. */
async function syncConnectorSpaceObject(request: HttpRequest, _context: InvocationContext, caller: Caller): Promise<HttpResponseInit> {
  const connectorId = routeId(request, 'id', 'Connector');
  const csObjectId = routeGuid(request, 'csObjectId');
  return ok(await syncOne(connectorId, csObjectId, caller));
}

app.http('listConnectorSpace', { route: 'connectors/{id}/space', methods: ['GET'], handler: authorize('connectors.read', listConnectorSpace) });
app.http('getConnectorSpaceObject', {
  route: 'connectors/{id}/space/{csObjectId}',
  methods: ['GET'],
  handler: authorize('connectors.read', getConnectorSpaceObject),
});
app.http('retryConnectorSpaceObject', {
  route: 'connectors/{id}/space/{csObjectId}/retry',
  methods: ['POST'],
  handler: authorize('connectorSpace.operate', retryConnectorSpaceObject),
});
app.http('previewConnectorSpaceObject', {
  route: 'connectors/{id}/space/{csObjectId}/preview',
  methods: ['POST'],
  handler: authorize('connectorSpace.operate', previewConnectorSpaceObject),
});
app.http('syncConnectorSpaceObject', {
  route: 'connectors/{id}/space/{csObjectId}/sync',
  methods: ['POST'],
  handler: authorize('connectorSpace.operate', syncConnectorSpaceObject),
});
