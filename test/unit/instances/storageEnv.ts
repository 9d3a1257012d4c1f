import { randomBytes } from 'node:crypto';
import { resetTableClients } from '../../../lib/storage/tables';

/** Point the repositories at the test Azurite, under a table prefix of their own. */
export function useTestStorage(): void {
  const cs = process.env.TEST_STORAGE_CONNECTION_STRING;
  if (!cs) throw new Error('TEST_STORAGE_CONNECTION_STRING is not set (jest globalSetup starts Azurite).');
  process.env.AzureWebJobsStorage = cs;
  process.env.Storage__TablePrefix = 't' + randomBytes(5).toString('hex');
  resetTableClients();
}
