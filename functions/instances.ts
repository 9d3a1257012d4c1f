import { app, type HttpRequest, type HttpResponseInit, type InvocationContext } from '@azure/functions';
import { recordAudit } from '../lib/audit';
import { authorize } from '../lib/auth/authorize';
import type { Caller } from '../lib/auth/permissions';
import { assignConnector, unassignConnector } from '../lib/instances/assignments';
import { isInstanceId } from '../lib/instances/config';
import { listInstances as listEngineInstances, removeInstance as removeEngineInstance, renameInstanceByApi, setPaused } from '../lib/instances/instances';
import { notFound } from '../lib/errors';
import { noContent, ok, readJson, routeId } from '../lib/http';
import { AssignConnectorRequest, InstanceActionRequest, RenameInstanceRequest } from '../lib/schemas/instances';

/** The `{id}` of an instance route, lower-cased; a value that cannot be an instance id is a 404. */
function instanceId(request: HttpRequest): string {
  const value = request.params.id ?? '';
  if (!isInstanceId(value)) throw notFound('The engine instance does not exist.');
  return value.toLowerCase();
}

async function listInstances(): Promise<HttpResponseInit> {
  const items = await listEngineInstances();
  return ok({ items, totalCount: items.length });
}

async function pause(request: HttpRequest, paused: boolean, caller: Caller): Promise<HttpResponseInit> {
  const id = instanceId(request);
  await readJson(request, InstanceActionRequest, { optional: true });
  const instance = await setPaused(id, paused, caller.upn ?? caller.name);
  await recordAudit(caller, paused ? 'pause' : 'resume', 'instance', id);
  return ok(instance);
}

async function pauseInstance(request: HttpRequest, _context: InvocationContext, caller: Caller): Promise<HttpResponseInit> {
  return pause(request, true, caller);
}

async function resumeInstance(request: HttpRequest, _context: InvocationContext, caller: Caller): Promise<HttpResponseInit> {
  return pause(request, false, caller);
}

async function renameInstance(request: HttpRequest, _context: InvocationContext, caller: Caller): Promise<HttpResponseInit> {
  const id = instanceId(request);
  const body = await readJson(request, RenameInstanceRequest);
  const instance = await renameInstanceByApi(id, body.name);
  await recordAudit(caller, 'rename', 'instance', id);
  return ok(instance);
}

async function removeInstance(request: HttpRequest, _context: InvocationContext, caller: Caller): Promise<HttpResponseInit> {
  const id = instanceId(request);
  await removeEngineInstance(id);
  await recordAudit(caller, 'remove', 'instance', id);
  return noContent();
}

async function assignConnectorToInstance(request: HttpRequest, _context: InvocationContext, caller: Caller): Promise<HttpResponseInit> {
  const connectorId = routeId(request, 'id', 'Connector');
  const body = await readJson(request, AssignConnectorRequest);
  const { assignment } = await assignConnector(connectorId, body.instanceId.toLowerCase());
  await recordAudit(caller, 'assign', 'connector', connectorId);
  return ok(assignment);
}

async function unassignConnectorFromInstance(request: HttpRequest, _context: InvocationContext, caller: Caller): Promise<HttpResponseInit> {
  const connectorId = routeId(request, 'id', 'Connector');
  await unassignConnector(connectorId);
  await recordAudit(caller, 'unassign', 'connector', connectorId);
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
