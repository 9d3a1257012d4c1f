import { app, type HttpRequest, type HttpResponseInit, type InvocationContext } from '@azure/functions';
import * as instances from '../lib/api/instances';
import { authorize } from '../lib/auth/authorize';
import type { Caller } from '../lib/auth/permissions';
import { noContent, ok, readJson, routeId } from '../lib/http';
import { AssignConnectorRequest, InstanceActionRequest, RenameInstanceRequest } from '../lib/schemas/instances';

async function listInstances(): Promise<HttpResponseInit> {
  return ok(await instances.listEngineInstances());
}

async function pause(request: HttpRequest, paused: boolean, caller: Caller): Promise<HttpResponseInit> {
  const id = instances.instanceIdFromRoute(request.params.id);
  await readJson(request, InstanceActionRequest, { optional: true });
  return ok(await instances.pauseInstance(id, paused, caller));
}

async function pauseInstance(request: HttpRequest, _context: InvocationContext, caller: Caller): Promise<HttpResponseInit> {
  return pause(request, true, caller);
}

async function resumeInstance(request: HttpRequest, _context: InvocationContext, caller: Caller): Promise<HttpResponseInit> {
  return pause(request, false, caller);
}

async function renameInstance(request: HttpRequest, _context: InvocationContext, caller: Caller): Promise<HttpResponseInit> {
  const id = instances.instanceIdFromRoute(request.params.id);
  const body = await readJson(request, RenameInstanceRequest);
  return ok(await instances.renameInstance(id, body.name, caller));
}

async function removeInstance(request: HttpRequest, _context: InvocationContext, caller: Caller): Promise<HttpResponseInit> {
  await instances.removeEngineInstance(instances.instanceIdFromRoute(request.params.id), caller);
  return noContent();
}

async function assignConnectorToInstance(request: HttpRequest, _context: InvocationContext, caller: Caller): Promise<HttpResponseInit> {
  const connectorId = routeId(request, 'id', 'Connector');
  const body = await readJson(request, AssignConnectorRequest);
  return ok(await instances.assignConnectorTo(connectorId, body.instanceId, caller));
}

async function unassignConnectorFromInstance(request: HttpRequest, _context: InvocationContext, caller: Caller): Promise<HttpResponseInit> {
  const connectorId = routeId(request, 'id', 'Connector');
  await instances.unassignConnectorFrom(connectorId, caller);
  return noContent();
}

app.http('listInstances', { route: 'instances', methods: ['GET'], handler: authorize('instances.read', listInstances) });
app.http('pauseInstance', { route: 'instances/{id}/pause', methods: ['POST'], handler: authorize('instances.operate', pauseInstance) });
app.http('resumeInstance', { route: 'instances/{id}/resume', methods: ['POST'], handler: authorize('instances.operate', resumeInstance) });
app.http('renameInstance', {
  route: 'instances/{id}/rename',
  methods: ['POST'],
  handler: authorize('instances.write', renameInstance, { rateLimit: 'sensitive' }),
});
app.http('removeInstance', {
  route: 'instances/{id}',
  methods: ['DELETE'],
  handler: authorize('instances.write', removeInstance, { rateLimit: 'sensitive' }),
});
app.http('assignConnectorToInstance', {
  route: 'connectors/{id}/instance',
  methods: ['PUT'],
  handler: authorize('instances.write', assignConnectorToInstance),
});
app.http('unassignConnectorFromInstance', {
  route: 'connectors/{id}/instance',
  methods: ['DELETE'],
  handler: authorize('instances.write', unassignConnectorFromInstance),
});
