import type { ConnectorCleanupStep } from '../../storage/operations';
import { deleteConnectorSpace, loadCsSummaries } from '../space/connectorSpace';
import { deleteCsObjectIds } from '../space/csIds';
import { deleteConnectorStagedAdds } from '../export/stagedAdds';
import { processItems } from '../import/pages';
import { csCaches, context } from './runContext';
import { DEFAULT_PAGE_SIZE, type RunInfo } from './runTypes';
import { deleteSyncState } from './state';

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
