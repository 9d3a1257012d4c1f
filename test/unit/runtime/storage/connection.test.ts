import { connectionStringFor, DEFAULT_ENDPOINTS } from '../../../../lib/runtime/azurite';
import { requireConnection, resolveConnection } from '../../../../lib/runtime/storage/connection';

describe('storage connection names, resolved as the host does', () => {
  it('an empty name is AzureWebJobsStorage; UseDevelopmentStorage=true is Azurite on its default ports', () => {
    expect(resolveConnection('', 'queue', { AzureWebJobsStorage: 'UseDevelopmentStorage=true' })).toEqual({
      kind: 'connectionString',
      setting: 'AzureWebJobsStorage',
      connectionString: connectionStringFor(DEFAULT_ENDPOINTS),
    });
    expect(resolveConnection(undefined, 'blob', {})).toBeUndefined();
  });

  it('N is looked up as AzureWebJobsN, then N, then ConnectionStrings:N, names case-insensitive', () => {
    expect(resolveConnection('Store', 'queue', { AzureWebJobsStore: 'a', Store: 'b' })).toMatchObject({ setting: 'AzureWebJobsStore', connectionString: 'a' });
    expect(resolveConnection('Store', 'queue', { store: 'b' })).toMatchObject({ setting: 'Store', connectionString: 'b' });
    expect(resolveConnection('Store', 'queue', { ConnectionStrings__Store: 'c' })).toMatchObject({ connectionString: 'c' });
  });

  it('N__serviceUri, N__<service>ServiceUri and N__accountName are identity-based connections', () => {
    expect(resolveConnection('Store', 'queue', { Store__serviceUri: 'https://acct.queue.core.windows.net', Store__clientId: 'id-1' })).toEqual({
      kind: 'identity',
      setting: 'Store',
      serviceUri: 'https://acct.queue.core.windows.net',
      clientId: 'id-1',
    });
    expect(resolveConnection('Store', 'blob', { Store__blobServiceUri: 'https://b', Store__queueServiceUri: 'https://q' })).toMatchObject({
      serviceUri: 'https://b',
    });
    expect(resolveConnection('Store', 'table', { Store__accountName: 'acct' })).toMatchObject({ serviceUri: 'https://acct.table.core.windows.net' });
  });

  it('a missing connection is a start-up error naming the function, the binding and the setting', () => {
    expect(() => requireConnection('work', 'outQueue', 'queue', 'Store', 'queue', {})).toThrow(
      "Function 'work': the queue binding 'outQueue' uses the storage connection 'Store', but the app setting 'Store' (nor 'AzureWebJobsStore', 'Store__serviceUri', 'Store__queueServiceUri') is not set.",
    );
    expect(() => requireConnection('work', 'in', 'blob', '', 'blob', {})).toThrow(
      "uses the storage connection 'AzureWebJobsStorage', but the app setting 'AzureWebJobsStorage' is not set.",
    );
  });
});
