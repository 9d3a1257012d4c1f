import { app, type HttpRequest, type HttpResponseInit, type InvocationContext } from '@azure/functions';
import { retryConnectorSpaceObject as retry } from '../lib/api/connectorSpace';
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

app.http('retryConnectorSpaceObject', { route: 'connectors/{id}/space/{csObjectId}/retry', methods: ['POST'], handler: authorize('connectorSpace.operate', retryConnectorSpaceObject) });
