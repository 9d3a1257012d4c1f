import { app, type HttpRequest, type HttpResponseInit, type InvocationContext } from '@azure/functions';
import * as correlation from '../lib/api/correlation';
import { CORRELATION_QUERY } from '../lib/api/queries';
import { authorize } from '../lib/auth/authorize';
import type { Caller } from '../lib/auth/permissions';
import { ok, parseQuery, readJson, routeGuid, routeId } from '../lib/http';
import { DecideCaseRequest, DecideCasesRequest, SpaceJoinRequest } from '../lib/schemas/correlation';

/** GET /correlation-cases: cases filtered by connectorId, state, reason, minScore; skip, take. */
async function listCorrelationCases(request: HttpRequest): Promise<HttpResponseInit> {
  const q = parseQuery(request, CORRELATION_QUERY);
  return ok(await correlation.listCorrelationCases(q));
}

/** GET /correlation-cases/{id}: the case with its candidates, scores and matches. */
async function getCorrelationCase(request: HttpRequest): Promise<HttpResponseInit> {
  return ok(await correlation.getCorrelationCase(routeId(request, 'id', 'Correlation case')));
}

/** POST /correlation-cases/{id}/decide: 200 with the decided case; 409 when it is not open or a run of its connector goes. */
async function decideCorrelationCase(request: HttpRequest, _context: InvocationContext, caller: Caller): Promise<HttpResponseInit> {
  const caseId = routeId(request, 'id', 'Correlation case');
  const body = await readJson(request, DecideCaseRequest);
  return ok(await correlation.decideCorrelationCase(caseId, body, caller));
}

/** POST /correlation-cases/decide: every open case the filter matches; 200 with the counts. */
async function decideCorrelationCases(request: HttpRequest, _context: InvocationContext, caller: Caller): Promise<HttpResponseInit> {
  const body = await readJson(request, DecideCasesRequest);
  return ok(await correlation.decideCorrelationCases(body, caller));
}

/** POST /connectors/{id}/space/{csObjectId}/join: join the object to a mesh object by hand. */
async function joinConnectorSpaceObject(request: HttpRequest, _context: InvocationContext, caller: Caller): Promise<HttpResponseInit> {
  const connectorId = routeId(request, 'id', 'Connector');
  const csObjectId = routeGuid(request, 'csObjectId');
  const body = await readJson(request, SpaceJoinRequest);
  return ok(await correlation.joinSpaceObject(connectorId, csObjectId, body.meshObjectId, caller));
}

/** POST /connectors/{id}/space/{csObjectId}/disconnect: an explicit disconnector until undone. */
async function disconnectConnectorSpaceObject(request: HttpRequest, _context: InvocationContext, caller: Caller): Promise<HttpResponseInit> {
  const connectorId = routeId(request, 'id', 'Connector');
  return ok(await correlation.disconnectSpaceObject(connectorId, routeGuid(request, 'csObjectId'), caller));
}

/** GET /connectors/{id}/space/{csObjectId}/decisions: the object's decision in force and its history. */
async function getConnectorSpaceObjectDecisions(request: HttpRequest): Promise<HttpResponseInit> {
  const connectorId = routeId(request, 'id', 'Connector');
  return ok(await correlation.spaceObjectDecisions(connectorId, routeGuid(request, 'csObjectId')));
}

/** POST /connectors/{id}/space/{csObjectId}/undo: the object's decision goes; its rules decide again. */
async function undoConnectorSpaceObjectDecision(request: HttpRequest, _context: InvocationContext, caller: Caller): Promise<HttpResponseInit> {
  const connectorId = routeId(request, 'id', 'Connector');
  return ok(await correlation.undoSpaceObjectDecision(connectorId, routeGuid(request, 'csObjectId'), caller));
}

app.http('listCorrelationCases', { route: 'correlation-cases', methods: ['GET'], handler: authorize('connectors.read', listCorrelationCases) });
app.http('decideCorrelationCases', {
  route: 'correlation-cases/decide',
  methods: ['POST'],
  handler: authorize('connectorSpace.operate', decideCorrelationCases),
});
app.http('getCorrelationCase', { route: 'correlation-cases/{id}', methods: ['GET'], handler: authorize('connectors.read', getCorrelationCase) });
app.http('decideCorrelationCase', {
  route: 'correlation-cases/{id}/decide',
  methods: ['POST'],
  handler: authorize('connectorSpace.operate', decideCorrelationCase),
});
app.http('joinConnectorSpaceObject', {
  route: 'connectors/{id}/space/{csObjectId}/join',
  methods: ['POST'],
  handler: authorize('connectorSpace.operate', joinConnectorSpaceObject),
});
app.http('disconnectConnectorSpaceObject', {
  route: 'connectors/{id}/space/{csObjectId}/disconnect',
  methods: ['POST'],
  handler: authorize('connectorSpace.operate', disconnectConnectorSpaceObject),
});
app.http('getConnectorSpaceObjectDecisions', {
  route: 'connectors/{id}/space/{csObjectId}/decisions',
  methods: ['GET'],
  handler: authorize('connectors.read', getConnectorSpaceObjectDecisions),
});
app.http('undoConnectorSpaceObjectDecision', {
  route: 'connectors/{id}/space/{csObjectId}/undo',
  methods: ['POST'],
  handler: authorize('connectorSpace.operate', undoConnectorSpaceObjectDecision),
});
