import { app, type HttpRequest, type HttpResponseInit, type InvocationContext } from '@azure/functions';
import * as df from 'durable-functions';
import * as connectors from '../lib/api/connectors';
import { authorize } from '../lib/auth/authorize';
import type { Caller } from '../lib/auth/permissions';
import { accepted, apiPath, created, noContent, ok, parseQuery, readJson, routeId } from '../lib/http';
import { CONNECTOR_DELETE_QUERY } from '../lib/api/queries';
import { CreateConnectorRequest, UpdateConnectorRequest } from '../lib/schemas/connectors';
import { runOrchestrations } from '../orchestrations/runReconcile';

async function listConnectors(): Promise<HttpResponseInit> {
  return ok(await connectors.listConnectors());
}

async function getConnector(request: HttpRequest): Promise<HttpResponseInit> {
  return ok(await connectors.getConnector(routeId(request, 'id', 'Connector')));
}

async function createConnector(request: HttpRequest, _context: InvocationContext, caller: Caller): Promise<HttpResponseInit> {
  const body = await readJson(request, CreateConnectorRequest, { innerErrors: connectors.createRequestInnerErrors });
  const saved = await connectors.createConnector(body, caller);
  if ('held' in saved) return heldAnswer(saved);
  return created(apiPath(`connectors/${saved.id}`), saved);
}

/** 202: the save loosens a guard rail (or is a forced delete over its threshold) and waits for a second Admin. */
function heldAnswer({ held }: connectors.HeldSave): HttpResponseInit {
  return accepted(apiPath(`config/changes/${held.changeId}`), held);
}

async function updateConnector(request: HttpRequest, _context: InvocationContext, caller: Caller): Promise<HttpResponseInit> {
  const id = routeId(request, 'id', 'Connector');
  const body = await readJson(request, UpdateConnectorRequest, { innerErrors: (b) => connectors.updateRequestInnerErrors(id, b) });
  const saved = await connectors.updateConnector(id, body, caller);
  return 'held' in saved ? heldAnswer(saved) : ok(saved);
}

/** 200 `{ ok, message, durationMs }` whatever the outcome: a failed test is `ok: false`, not an error status. */
async function testConnectorConnection(request: HttpRequest, context: InvocationContext): Promise<HttpResponseInit> {
  return ok(await connectors.testConnector(routeId(request, 'id', 'Connector'), (m) => context.warn(m)));
}

/**
 * 409 while a run is Running or Queued (a run lock held by a run whose orchestration is over is released first),
 * and while it holds objects or a schedule runs it, unless `?force=true`; forced over its threshold: 202.
 */
async function deleteConnector(request: HttpRequest, context: InvocationContext, caller: Caller): Promise<HttpResponseInit> {
  const id = routeId(request, 'id', 'Connector');
  const q = parseQuery(request, CONNECTOR_DELETE_QUERY);
  const outcome = await connectors.deleteConnectorReleasingStaleLock(id, caller, runOrchestrations(df.getClient(context)), (m) => context.warn(m), {
    force: q.force === 'true',
  });
  return 'held' in outcome ? heldAnswer(outcome) : noContent();
}

app.http('listConnectors', { route: 'connectors', methods: ['GET'], handler: authorize('connectors.read', listConnectors) });
app.http('getConnector', { route: 'connectors/{id}', methods: ['GET'], handler: authorize('connectors.read', getConnector) });
app.http('createConnector', { route: 'connectors', methods: ['POST'], handler: authorize('connectors.write', createConnector, { rateLimit: 'sensitive' }) });
app.http('updateConnector', {
  route: 'connectors/{id}',
  methods: ['PUT'],
  handler: authorize('connectors.write', updateConnector, { rateLimit: 'sensitive' }),
});
app.http('testConnectorConnection', { route: 'connectors/{id}/test', methods: ['POST'], handler: authorize('connectors.test', testConnectorConnection) });
app.http('deleteConnector', {
  route: 'connectors/{id}',
  methods: ['DELETE'],
  extraInputs: [df.input.durableClient()],
  handler: authorize('connectors.write', deleteConnector, { rateLimit: 'sensitive' }),
});
