import { addConnectorCleanup } from '../storage/operations';
import { deleteConnectorSpace } from './connectorSpace';
import { withdrawConnector } from './engine';
import { deleteSyncState } from './state';

/**
 * The sync engine's steps of a connector delete (lib/storage/operations.ts extension point): recall the
 * connector's contributions from the mesh, then remove its connector space and sync state. Each is safe to
 * run again after a crash.
 */
addConnectorCleanup({ name: 'meshContributions', run: withdrawConnector });
addConnectorCleanup({ name: 'connectorSpace', run: deleteConnectorSpace });
addConnectorCleanup({ name: 'syncState', run: deleteSyncState });
