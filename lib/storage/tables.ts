import { RestError, TableClient, TableServiceClient, type TransactionAction } from '@azure/data-tables';
import type { PipelinePolicy } from '@azure/core-rest-pipeline';
import { AppError } from '../core/errors';
import { canBuild, submitTransactionFast } from './transaction';

/**
 * Table clients for the service's own tables, on the account named by `AzureWebJobsStorage` (the local
 * runtime resolves `UseDevelopmentStorage=true` to the Azurite it started). Tables are created on first use,
 * once per process. `Storage:TablePrefix` (default empty) prefixes every table name, so several services
 * (or test suites) can share one account.
 */
const clients = new Map<string, Promise<TableClient>>();

const AZURITE_DEFAULT =
  'DefaultEndpointsProtocol=http;AccountName=devstoreaccount1;AccountKey=Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw==;TableEndpoint=http://127.0.0.1:10002/devstoreaccount1';

export function storageConnectionString(): string {
  const cs = process.env.AzureWebJobsStorage ?? process.env.AzureWebJobsStorage__connectionString;
  if (!cs) throw new Error("Setting 'AzureWebJobsStorage' is not set.");
  return /^\s*UseDevelopmentStorage\s*=\s*true\s*;?\s*$/i.test(cs) ? AZURITE_DEFAULT : cs;
}

function tablePrefix(): string {
  return process.env.Storage__TablePrefix ?? process.env['Storage:TablePrefix'] ?? '';
}

function isLoopbackHttp(cs: string): boolean {
  return /TableEndpoint=http:\/\/(127\.0\.0\.1|localhost|\[::1\])/i.test(cs) || /UseDevelopmentStorage=true/i.test(cs);
}

/**
 * A request whose socket broke while it was being written (`EPIPE`: a kept-alive connection the server closed
 * at that moment, or a busy emulator dropping it) never reached the service whole, so sending it again is
 * safe; the SDK's own retries leave this code out. Tried up to 3 more times, 50, 100, 150 ms apart.
 */
export const brokenSocketRetry: PipelinePolicy = {
  name: 'brokenSocketRetry',
  async sendRequest(request, next) {
    for (let attempt = 1; ; attempt++) {
      try {
        return await next(request);
      } catch (err) {
        if (attempt > 3 || (err as { code?: unknown })?.code !== 'EPIPE') throw err;
        await new Promise((r) => setTimeout(r, 50 * attempt));
      }
    }
  },
};

/** The client for table `name` (prefix applied), created if it does not exist yet. */
export function table(name: string): Promise<TableClient> {
  const full = tablePrefix() + name;
  let p = clients.get(full);
  if (!p) {
    p = (async () => {
      const cs = storageConnectionString();
      const client = TableClient.fromConnectionString(cs, full, { allowInsecureConnection: isLoopbackHttp(cs) });
      client.pipeline.addPolicy(brokenSocketRetry, { phase: 'Retry' });
      try {
        await client.createTable();
      } catch (err) {
        if (!(err instanceof RestError && err.statusCode === 409)) throw err;
      }
      return client;
    })();
    p.catch(() => clients.delete(full));
    clients.set(full, p);
  }
  return p;
}

export function tableService(): TableServiceClient {
  const cs = storageConnectionString();
  return TableServiceClient.fromConnectionString(cs, { allowInsecureConnection: isLoopbackHttp(cs) });
}

/**
 * One entity-group transaction (one partition, at most 100 actions) on `client`: the body is built by
 * lib/storage/transaction.ts when the entities are plain (much less CPU than the library's own builder),
 * else by `client.submitTransaction`. Either way a failure is a `RestError` with the failing status.
 */
export async function submitTransaction(client: TableClient, actions: TransactionAction[]): Promise<void> {
  if (canBuild(actions)) await submitTransactionFast(client, actions, isLoopbackHttp(storageConnectionString()));
  else await client.submitTransaction(actions);
}

/** Forget cached clients (tests that switch accounts or prefixes). */
export function resetTableClients(): void {
  clients.clear();
}

export function isStatus(err: unknown, status: number): boolean {
  return err instanceof RestError && err.statusCode === status;
}

/** Map an ETag mismatch (412) or an insert of an existing key (409) to the API's 409 Conflict. */
export function concurrencyConflict(err: unknown, detail: string): never {
  if (isStatus(err, 412) || isStatus(err, 409)) throw new AppError('conflict', detail);
  throw err;
}

/**
 * RowKeys and PartitionKeys may not contain / \ # ? or control characters. Encode arbitrary text
 * (names, anchors) reversibly and keep the sort order of plain ASCII text.
 */
export function encodeKey(value: string): string {
  return value.replace(/[%/\\#?\u0000-\u001f\u007f]/g, (c) => '%' + c.charCodeAt(0).toString(16).padStart(2, '0'));
}

export function decodeKey(value: string): string {
  return value.replace(/%([0-9a-f]{2})/g, (_, h: string) => String.fromCharCode(parseInt(h, 16)));
}

/** OData string literal for a filter (single quotes doubled). */
export function odata(value: string): string {
  return `'${value.replace(/'/g, "''")}'`;
}
