import { app, type HttpRequest, type HttpResponseInit, type InvocationContext } from '@azure/functions';
import { retryConnectorSpaceObject as retry } from '../lib/api/connectorSpace';
import { previewSpaceObject as preview, syncOneSpaceObject as syncOne } from '../lib/api/spaceObjectSync';
import { authorize } from '../lib/auth/authorize';
import type { Caller } from '../lib/auth/permissions';
import { ok, routeGuid, routeId } from '../lib/http';

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

app.http('retryConnectorSpaceObject', { route: 'connectors/{id}/space/{csObjectId}/retry', methods: ['POST'], handler: authorize('connectorSpace.operate', retryConnectorSpaceObject) });
app.http('previewConnectorSpaceObject', { route: 'connectors/{id}/space/{csObjectId}/preview', methods: ['POST'], handler: authorize('connectorSpace.operate', previewConnectorSpaceObject) });
app.http('syncConnectorSpaceObject', { route: 'connectors/{id}/space/{csObjectId}/sync', methods: ['POST'], handler: authorize('connectorSpace.operate', syncConnectorSpaceObject) });
