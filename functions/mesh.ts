import { app, type HttpRequest, type HttpResponseInit } from '@azure/functions';
import { MESH_QUERY } from '../lib/api/queries';
import { authorize } from '../lib/auth/authorize';
import { notFound } from '../lib/errors';
import { ok, parseQuery, readJson, routeId } from '../lib/http';
import { queryMesh, toDetail, toListItem, type MeshQuery } from '../lib/mesh/query';
import { readyModel } from '../lib/mesh/readModel';
import { MeshSearchRequest } from '../lib/schemas/mesh';

/** The page `{ items, totalCount, skip, take }` of a mesh query (lib/mesh/query.ts). */
async function answer(q: MeshQuery): Promise<HttpResponseInit> {
  const model = await readyModel();
  const { items, totalCount } = queryMesh(model, q);
  return ok({ items: items.map((r) => toListItem(model, r)), totalCount, skip: q.skip, take: q.take });
}

/** `GET /mesh/objects?skip=&take=&objectType=&search=`. */
async function listMeshObjects(request: HttpRequest): Promise<HttpResponseInit> {
  const q = parseQuery(request, MESH_QUERY);
  return answer({ objectType: q.objectType, search: q.search, skip: q.skip, take: q.take });
}

/** `POST /mesh/objects/search` `{ objectType, anchorSearch, criteria, skip, take }`. */
async function searchMeshObjects(request: HttpRequest): Promise<HttpResponseInit> {
  const body = await readJson(request, MeshSearchRequest);
  return answer({ objectType: body.objectType, search: body.anchorSearch, criteria: body.criteria, skip: body.skip, take: body.take });
}

async function getMeshObject(request: HttpRequest): Promise<HttpResponseInit> {
  const id = routeId(request, 'id', 'Mesh object');
  const model = await readyModel();
  const r = model.get(id);
  if (!r) throw notFound(`Mesh object '${id}' does not exist.`);
  return ok(toDetail(model, r));
}

app.http('listMeshObjects', { route: 'mesh/objects', methods: ['GET'], handler: authorize('mesh.read', listMeshObjects) });
app.http('searchMeshObjects', { route: 'mesh/objects/search', methods: ['POST'], handler: authorize('mesh.read', searchMeshObjects) });
app.http('getMeshObject', { route: 'mesh/objects/{id}', methods: ['GET'], handler: authorize('mesh.read', getMeshObject) });
