import { Azurite } from '../../lib/runtime/azurite';
import { pidFile } from './processes';

/**
 * One in-memory Azurite (table, queue, blob) for the whole test run. Its connection string reaches every test worker through
 * TEST_STORAGE_CONNECTION_STRING (workers are forked after this runs and inherit the environment).
 */
export default async function globalSetup(): Promise<void> {
  process.env.TEST_PID_FILE = pidFile();
  const azurite = new Azurite();
  await azurite.start();
  (globalThis as { __AZURITE__?: Azurite }).__AZURITE__ = azurite;
  process.env.TEST_STORAGE_CONNECTION_STRING = azurite.connectionString;
  process.env.TEST_AZURITE_TABLE_PORT = String(azurite.endpoints.tablePort);
  process.env.TEST_AZURITE_QUEUE_PORT = String(azurite.endpoints.queuePort);
  process.env.TEST_AZURITE_BLOB_PORT = String(azurite.endpoints.blobPort);
}
