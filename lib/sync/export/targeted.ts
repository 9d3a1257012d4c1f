import { existingMeshIds } from '../../mesh/store';
import { readRunChanges } from '../../storage/runChanges';

/**
 * A targeted export's scope: the mesh objects one import run changed (its changes list: the items it applied,
 * with their mesh object), split into those still in the mesh (to add or update in the target) and those gone
 * (to deprovision). A continuous batch's Export run (trigger `continuous` with `sourceRunId`, see
 * docs/continuous.md) looks at these and nothing else; it records no export position, so the target's next
 * untargeted export still looks at everything since its last one (and finds these done).
 *
 * The "export these mesh ids" primitive: `targetedScope` takes any list of ids (`idsChangedBy` gives a run's).
 */
export async function idsChangedBy(runId: string): Promise<string[]> {
  const ids = new Set<string>();
  for await (const page of readRunChanges(runId)) {
    for (const c of page) if (c.outcome === 'applied' && c.meshObjectId && !c.connectorId) ids.add(c.meshObjectId);
  }
  return [...ids];
}

export async function targetedScope(ids: readonly string[]): Promise<{ changed: string[]; deleted: string[] }> {
  const present = await existingMeshIds([...ids]);
  return { changed: ids.filter((id) => present.has(id)).sort(), deleted: ids.filter((id) => !present.has(id)) };
}
