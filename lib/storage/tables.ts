import {
  RestError,
  TableClient,
  TableServiceClient,
  type GetTableEntityOptions,
  type ListTableEntitiesOptions,
  type TableEntity,
  type TableEntityResult,
  type TableEntityResultPage,
  type TransactionAction,
  type UpdateMode,
} from '@azure/data-tables';
import type { PipelinePolicy } from '@azure/core-rest-pipeline';
import { AppError } from '../core/errors';
import { leanTable, type LeanTable, type WriteResult } from './fastTable';
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

/**
 * Plain HTTP is used when the connection string asks for it (an `http://` endpoint, `DefaultEndpointsProtocol=http`,
 * or the development storage): an Azurite on loopback, or one on another host of a private network. The
 * account key is never sent (requests carry its signature), but the data is: docs/scaling.md says where that fits.
 */
function plainHttpChosen(cs: string): boolean {
  return (
    /(?:^|;)\s*TableEndpoint\s*=\s*http:/i.test(cs) ||
    /(?:^|;)\s*DefaultEndpointsProtocol\s*=\s*http\s*(?:;|$)/i.test(cs) ||
    /UseDevelopmentStorage=true/i.test(cs)
  );
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
      const client = TableClient.fromConnectionString(cs, full, { allowInsecureConnection: plainHttpChosen(cs) });
      client.pipeline.addPolicy(brokenSocketRetry, { phase: 'Retry' });
      const lean = leanTableFor(cs, client.url, full);
      if (lean) leanTables.set(client, lean);
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

/** The lean client of each table client {@link table} made, when its connection allows one. */
const leanTables = new WeakMap<TableClient, LeanTable>();

/** A connection string's `name=value` (case-insensitive name, first match), as the library reads it. */
function setting(cs: string, name: string): string {
  for (const part of cs.split(';')) {
    const i = part.indexOf('=');
    if (i > 0 && part.slice(0, i).trim().toLowerCase() === name.toLowerCase()) return part.slice(i + 1);
  }
  return '';
}

/**
 * The lean client (lib/storage/fastTable.ts) for table `tableName` at `clientUrl` (the library's endpoint for
 * the connection string, with the SAS when it has one), or undefined where the library's client must stay:
 * a token credential or no credential, a Cosmos DB endpoint (it wants MERGE for PATCH), plain HTTP the
 * connection string did not ask for (the library refuses it), or an HTTP(S) proxy configured in the
 * environment (the library's pipeline goes through it).
 */
export function leanTableFor(cs: string, clientUrl: string, tableName: string): LeanTable | undefined {
  const env = process.env;
  if (env.HTTPS_PROXY || env.https_proxy || env.HTTP_PROXY || env.http_proxy || env.ALL_PROXY || env.all_proxy) return undefined;
  const [endpoint, sas] = clientUrl.split('?');
  let url: URL;
  try {
    url = new URL(endpoint);
  } catch {
    return undefined;
  }
  if (/\.table\.cosmos(db)?\./i.test(url.hostname) || (url.hostname === 'localhost' && !url.pathname.startsWith('/devstoreaccount1'))) return undefined;
  if (url.protocol !== 'https:' && !(url.protocol === 'http:' && plainHttpChosen(cs))) return undefined;
  const accountName = setting(cs, 'AccountName');
  const accountKey = setting(cs, 'AccountKey');
  if (sas) return leanTable({ endpoint, tableName, sas });
  if (accountName && accountKey && /defaultendpointsprotocol=/i.test(cs)) return leanTable({ endpoint, tableName, accountName, accountKey });
  return undefined;
}

export function tableService(): TableServiceClient {
  const cs = storageConnectionString();
  return TableServiceClient.fromConnectionString(cs, { allowInsecureConnection: plainHttpChosen(cs) });
}

/**
 * One entity-group transaction (one partition, at most 100 actions) on `client`: the body is built by
 * lib/storage/transaction.ts when the entities are plain (much less CPU than the library's own builder),
 * else by `client.submitTransaction`. Either way a failure is a `RestError` with the failing status, and a success
 * answers each action's new ETag (in the actions' order).
 */
export async function submitTransaction(client: TableClient, actions: TransactionAction[]): Promise<(string | undefined)[]> {
  if (canBuild(actions)) return submitTransactionFast(client, actions, plainHttpChosen(storageConnectionString()), leanTables.get(client));
  return (await client.submitTransaction(actions)).subResponses.map((r) => r.etag);
}

/*
 * The entity requests of the hot paths, each `client.<method>(...)` of @azure/data-tables as a function of the
 * client: sent by the table's lean client when it has one (lib/storage/fastTable.ts: same requests, retries,
 * errors and entity conversions, a fraction of the CPU), else by the library's client.
 */

function requireKeys(partitionKey: unknown, rowKey: unknown): void {
  if (partitionKey === undefined || partitionKey === null) throw new Error("The entity's partitionKey cannot be undefined or null.");
  if (rowKey === undefined || rowKey === null) throw new Error("The entity's rowKey cannot be undefined or null.");
}

/** `client.getEntity`: the row, or a `RestError` 404 when there is none. */
export async function getEntity<T extends object = Record<string, unknown>>(
  client: TableClient,
  partitionKey: string,
  rowKey: string,
  options?: GetTableEntityOptions,
): Promise<TableEntityResult<T>> {
  const lean = leanTables.get(client);
  if (!lean || (options && Object.keys(options).some((k) => k !== 'queryOptions'))) return client.getEntity<T>(partitionKey, rowKey, options);
  requireKeys(partitionKey, rowKey);
  return lean.getEntity<TableEntityResult<T>>(partitionKey, rowKey, options?.queryOptions?.select);
}

/** The iterator `client.listEntities` gives: entity by entity, or `byPage({ maxPageSize, continuationToken })`. */
export interface EntityIterator<T extends object> extends AsyncIterableIterator<TableEntityResult<T>> {
  byPage(settings?: { maxPageSize?: number; continuationToken?: string }): AsyncIterableIterator<TableEntityResultPage<T>>;
}

/** `client.listEntities`: a query's rows, one request per page (1,000 rows unless `maxPageSize` says fewer). */
export function listEntities<T extends object = Record<string, unknown>>(client: TableClient, options?: ListTableEntitiesOptions): EntityIterator<T> {
  const lean = leanTables.get(client);
  if (!lean || (options && Object.keys(options).some((k) => k !== 'queryOptions'))) return client.listEntities<T>(options) as EntityIterator<T>;
  const { filter, select } = options?.queryOptions ?? {};
  async function* pages(pageSize: number | undefined, token: string | undefined): AsyncGenerator<TableEntityResultPage<T>> {
    do {
      const page = await lean!.queryPage<TableEntityResult<T>>({ filter, select, top: pageSize }, token);
      yield page;
      token = page.continuationToken;
    } while (token);
  }
  async function* rows(): AsyncGenerator<TableEntityResult<T>> {
    for await (const page of pages(undefined, undefined)) yield* page;
  }
  const iter = rows() as unknown as EntityIterator<T>;
  iter.byPage = (settings) => pages(settings?.maxPageSize, settings?.continuationToken);
  return iter;
}

/** `client.createEntity`: an insert, a `RestError` 409 when the row exists. */
export function createEntity<T extends object>(client: TableClient, entity: TableEntity<T>): Promise<WriteResult> {
  const lean = leanTables.get(client);
  return lean ? lean.insert(entity as Record<string, unknown>) : client.createEntity(entity);
}

/** `client.upsertEntity`: insert or merge/replace, no condition. */
export async function upsertEntity<T extends object>(client: TableClient, entity: TableEntity<T>, mode: UpdateMode = 'Merge'): Promise<WriteResult> {
  const lean = leanTables.get(client);
  if (!lean || (mode !== 'Merge' && mode !== 'Replace')) return client.upsertEntity(entity, mode);
  requireKeys(entity.partitionKey, entity.rowKey);
  return lean.write(entity as Record<string, unknown>, mode);
}

/** `client.updateEntity`: merge/replace of a row that exists (404 else), matching `etag` when given (412 else). */
export async function updateEntity<T extends object>(
  client: TableClient,
  entity: TableEntity<T>,
  mode: UpdateMode = 'Merge',
  options?: { etag?: string },
): Promise<WriteResult> {
  const lean = leanTables.get(client);
  if (!lean || (mode !== 'Merge' && mode !== 'Replace')) return client.updateEntity(entity, mode, options);
  requireKeys(entity.partitionKey, entity.rowKey);
  return lean.write(entity as Record<string, unknown>, mode, options?.etag ?? '*');
}

/** `client.deleteEntity`: 404 when the row is gone, 412 when `etag` is given and does not match. */
export async function deleteEntity(client: TableClient, partitionKey: string, rowKey: string, options?: { etag?: string }): Promise<WriteResult> {
  const lean = leanTables.get(client);
  if (!lean) return client.deleteEntity(partitionKey, rowKey, options);
  requireKeys(partitionKey, rowKey);
  return lean.delete(partitionKey, rowKey, options?.etag ?? '*');
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
