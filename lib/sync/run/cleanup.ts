import type { ConnectorCleanupStep } from '../../storage/operations';
import { getMeshObjects } from '../../mesh/store';
import { deleteConnectorSpace, loadCsSummaries } from '../space/connectorSpace';
import { deleteCsObjectIds } from '../space/csIds';
import { deleteConnectorStagedAdds } from '../export/stagedAdds';
import { processItems } from '../import/pages';
import { csCaches, context } from './runContext';
import { DEFAULT_PAGE_SIZE, type RunInfo } from './runTypes';
import { deleteSyncState } from './state';
import { deleteConnectorCorrelation } from '../correlation/caseStore';
import { deleteTargetDue } from '../../storage/dueInstants';
import { deleteConnectorOrphanKeeps } from '../../storage/orphanKeeps';

/**
 * The sync engine's steps of a connector delete (run by lib/api/connectors.ts after the connector's rules and
 * assignment): recall the connector's contributions from the mesh, then remove its connector space (its rows, staged adds and id
 * index) and sync state. Each is safe to run again after a crash.
 */
export const SYNC_CONNECTOR_CLEANUPS: readonly ConnectorCleanupStep[] = [
  { name: 'meshContributions', run: withdrawConnector },
  { name: 'connectorSpace', run: deleteConnectorSpace },
  { name: 'stagedAdds', run: deleteConnectorStagedAdds },
  { name: 'connectorSpaceIds', run: deleteCsObjectIds },
  { name: 'syncState', run: deleteSyncState },
  { name: 'correlation', run: deleteConnectorCorrelation },
  { name: 'dueInstants', run: deleteTargetDue },
  { name: 'orphanKeeps', run: deleteConnectorOrphanKeeps },
];

/**
 * Connector deletion: every object of the connector's space is treated as deleted (its contributions are
 * recalled, mesh objects left with no connector are deleted, relationships re-resolved), then the space and
 * the sync state go. Safe to repeat after a crash.
 */
export async function withdrawConnector(connectorId: string): Promise<void> {
  const info: RunInfo = { runId: 'withdraw', connectorId, runType: 'FullImport', dryRun: false };
  const summaries = await loadCsSummaries(connectorId);
  const anchors = [...summaries].filter(([, s]) => !s.deleted && s.meshId).map(([a]) => a);
  for (let i = 0; i < anchors.length; i += DEFAULT_PAGE_SIZE) {
    const ctx = await context(info);
    await processItems(
      ctx,
      anchors.slice(i, i + DEFAULT_PAGE_SIZE).map((anchor) => ({ anchor, object: null })),
    );
  }
  csCaches.runEnded(info.runId);
  csCaches.delete(connectorId);
}

/** What deleting a connector would do to the mesh (see {@link connectorDeleteImpact}). */
export interface ConnectorDeleteImpact {
  /** Its connector-space objects (not deleted). */
  connectorSpaceObjects: number;
  /** The mesh objects its objects are joined to. */
  meshObjects: number;
  /** Those it is the last connector of (others only provisioned into): the delete makes them tombstones. */
  tombstones: number;
}

/**
 * Count what {@link withdrawConnector} would do, without doing it: the same object deletion rule as a
 * connector-space delete (lib/sync/planner.ts planDelete), read from the summaries and the joined mesh objects.
 */
export async function connectorDeleteImpact(connectorId: string): Promise<ConnectorDeleteImpact> {
  const summaries = await loadCsSummaries(connectorId);
  let connectorSpaceObjects = 0;
  const meshIds: string[] = [];
  for (const [, s] of summaries) {
    if (s.deleted) continue;
    connectorSpaceObjects++;
    if (s.meshId) meshIds.push(s.meshId);
  }
  let tombstones = 0;
  for (let i = 0; i < meshIds.length; i += DEFAULT_PAGE_SIZE) {
    const docs = await getMeshObjects(meshIds.slice(i, i + DEFAULT_PAGE_SIZE));
    for (const doc of docs.values()) {
      const provisioned = (doc.provisioned ?? []).filter((c) => c !== connectorId);
      if (Object.keys(doc.links).every((c) => c === connectorId || provisioned.includes(c))) tombstones++;
    }
  }
  return { connectorSpaceObjects, meshObjects: meshIds.length, tombstones };
}
