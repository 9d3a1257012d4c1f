import { app, type HttpRequest, type HttpResponseInit, type InvocationContext } from '@azure/functions';
import { explainAttribute, meshHistory } from '../lib/api/explain';
import { meshObject, meshPage, restoreMesh, type MeshObjectState } from '../lib/api/mesh';
import { MESH_HISTORY_QUERY, MESH_QUERY } from '../lib/api/queries';
import { authorize } from '../lib/auth/authorize';
import type { Caller } from '../lib/auth/permissions';
import { ok, parseQuery, readJson, routeId } from '../lib/http';
import { MeshSearchRequest } from '../lib/schemas/mesh';

/** `GET /mesh/objects?skip=&take=&objectType=&search=&state=`. */
async function listMeshObjects(request: HttpRequest): Promise<HttpResponseInit> {
  const q = parseQuery(request, MESH_QUERY);
  return ok(await meshPage({ objectType: q.objectType, search: q.search, skip: q.skip, take: q.take, state: q.state as MeshObjectState | undefined }));
}

/** `POST /mesh/objects/search` `{ objectType, anchorSearch, criteria, skip, take }`. */
async function searchMeshObjects(request: HttpRequest): Promise<HttpResponseInit> {
  const body = await readJson(request, MeshSearchRequest);
  return ok(await meshPage({ objectType: body.objectType, search: body.anchorSearch, criteria: body.criteria, skip: body.skip, take: body.take }));
}

async function getMeshObject(request: HttpRequest): Promise<HttpResponseInit> {
  return ok(await meshObject(routeId(request, 'id', 'Mesh object')));
}

/** `GET /mesh/objects/{id}/attributes/{name}/explain`. */
async function explainMeshAttribute(request: HttpRequest): Promise<HttpResponseInit> {
  const id = routeId(request, 'id', 'Mesh object');
  return ok(await explainAttribute(id, request.params.name ?? ''));
}

/** `GET /mesh/objects/{id}/history?skip=&take=`. */
async function getMeshObjectHistory(request: HttpRequest): Promise<HttpResponseInit> {
  const id = routeId(request, 'id', 'Mesh object');
  const q = parseQuery(request, MESH_HISTORY_QUERY);
  return ok(await meshHistory(id, q.skip, q.take));
}

/** `POST /mesh/objects/{id}/restore`: a deleted object (tombstone) live again. */
async function restoreMeshObject(request: HttpRequest, _context: InvocationContext, caller: Caller): Promise<HttpResponseInit> {
  return ok(await restoreMesh(routeId(request, 'id', 'Mesh object'), caller));
}

app.http('listMeshObjects', { route: 'mesh/objects', methods: ['GET'], handler: authorize('mesh.read', listMeshObjects) });
app.http('searchMeshObjects', { route: 'mesh/objects/search', methods: ['POST'], handler: authorize('mesh.read', searchMeshObjects) });
app.http('getMeshObject', { route: 'mesh/objects/{id}', methods: ['GET'], handler: authorize('mesh.read', getMeshObject) });
app.http('explainMeshAttribute', {
  route: 'mesh/objects/{id}/attributes/{name}/explain',
  methods: ['GET'],
  handler: authorize('mesh.read', explainMeshAttribute),
});
app.http('getMeshObjectHistory', { route: 'mesh/objects/{id}/history', methods: ['GET'], handler: authorize('mesh.read', getMeshObjectHistory) });
app.http('restoreMeshObject', { route: 'mesh/objects/{id}/restore', methods: ['POST'], handler: authorize('mesh.restore', restoreMeshObject) });
