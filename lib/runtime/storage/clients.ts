import { TableClient } from '@azure/data-tables';
import type { BlobServiceClient } from '@azure/storage-blob';
import type { QueueServiceClient } from '@azure/storage-queue';
import { identityCredential, type StorageConnection } from './connection';

// Loaded when an app first uses a queue or blob: an app without them (this service) never pays for the SDKs.
const queueSdk = () => require('@azure/storage-queue') as typeof import('@azure/storage-queue');
const blobSdk = () => require('@azure/storage-blob') as typeof import('@azure/storage-blob');

/** One service client per connection and service, shared by every binding that uses it. */
export class StorageClients {
  private readonly queues = new Map<string, QueueServiceClient>();
  private readonly blobs = new Map<string, BlobServiceClient>();

  queueService(c: StorageConnection): QueueServiceClient {
    const key = c.kind === 'connectionString' ? c.connectionString : c.serviceUri;
    let client = this.queues.get(key);
    if (!client) {
      const { QueueServiceClient } = queueSdk();
      client =
        c.kind === 'connectionString'
          ? QueueServiceClient.fromConnectionString(c.connectionString)
          : new QueueServiceClient(c.serviceUri, identityCredential(c.clientId));
      this.queues.set(key, client);
    }
    return client;
  }

  blobService(c: StorageConnection): BlobServiceClient {
    const key = c.kind === 'connectionString' ? c.connectionString : c.serviceUri;
    let client = this.blobs.get(key);
    if (!client) {
      const { BlobServiceClient } = blobSdk();
      client =
        c.kind === 'connectionString'
          ? BlobServiceClient.fromConnectionString(c.connectionString)
          : new BlobServiceClient(c.serviceUri, identityCredential(c.clientId));
      this.blobs.set(key, client);
    }
    return client;
  }

  table(c: StorageConnection, tableName: string): TableClient {
    return c.kind === 'connectionString'
      ? TableClient.fromConnectionString(c.connectionString, tableName, { allowInsecureConnection: true })
      : new TableClient(c.serviceUri, tableName, identityCredential(c.clientId));
  }
}
