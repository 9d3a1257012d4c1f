import type { ConnectorCleanupStep } from '../storage/operations';
import { deleteConnectorSpace } from './connectorSpace';
import { deleteCsObjectIds } from './csIds';
import { deleteConnectorStagedAdds } from './stagedAdds';
import { withdrawConnector } from './engine';
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
