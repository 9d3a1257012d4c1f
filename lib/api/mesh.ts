import { notFound } from '../core/errors';
import { queryMesh, toDetail, toListItem, type MeshQuery } from '../mesh/query';
import { readyModel } from '../mesh/readModel';

/** The page `{ items, totalCount, skip, take }` of a mesh query (list and search; lib/mesh/query.ts). */
export async function meshPage(q: MeshQuery) {
  const model = await readyModel();
  const { items, totalCount } = queryMesh(model, q);
  return { items: items.map((r) => toListItem(model, r)), totalCount, skip: q.skip, take: q.take };
}

/** One mesh object with its attributes and relationships; unknown: 404. */
export async function meshObject(id: string) {
  const model = await readyModel();
  const r = model.get(id);
  if (!r) throw notFound(`Mesh object '${id}' does not exist.`);
  return toDetail(model, r);
}
