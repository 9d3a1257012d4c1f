import type { TableEntity } from '@azure/data-tables';
import type { RpcBindingInfo, RpcInvocationRequest, RpcTypedData } from '../coreTypes';
import type { RegisteredFunction } from '../registry';
import { resolveString } from '../settings';
import { bindingData, resolveTemplate } from './bindingData';
import type { StorageClients } from './clients';
import { requireConnection, type StorageConnection, type StorageService } from './connection';

/** What the storage bindings share: clients, settings, and a way to wake this process's queue listeners. */
export interface StorageBindingContext {
  clients: StorageClients;
  env: NodeJS.ProcessEnv;
  /** host.json extensions.queues.messageEncoding: 'base64' (default) or 'none'. */
  messageEncoding: 'base64' | 'none';
  /** Called after messages were added to a queue (a listener of this process polls it at once). */
  queueWritten(connection: StorageConnection, queueName: string): void;
}

export function bindingString(fn: RegisteredFunction, binding: RpcBindingInfo, property: string, env: NodeJS.ProcessEnv = process.env): string | undefined {
  const v = binding[property];
  if (v === undefined || v === null || v === '') return undefined;
  return resolveString(String(v), env, `Function '${fn.metadata.name}', binding property '${property}'`);
}

export function connectionOf(
  fn: RegisteredFunction,
  bindingName: string,
  binding: RpcBindingInfo,
  service: StorageService,
  env: NodeJS.ProcessEnv,
): StorageConnection {
  return requireConnection(fn.metadata.name, bindingName, String(binding.type), bindingString(fn, binding, 'connection', env), service, env);
}

/** The bytes of an output value as the host writes them (strings as UTF-8, objects as JSON). */
export function typedDataBytes(data: RpcTypedData): Buffer {
  if (data.bytes) return Buffer.from(data.bytes.buffer, data.bytes.byteOffset, data.bytes.byteLength);
  if (data.stream) return Buffer.from(data.stream);
  if (typeof data.string === 'string') return Buffer.from(data.string, 'utf8');
  if (typeof data.json === 'string') return Buffer.from(data.json, 'utf8');
  if (typeof data.int === 'number') return Buffer.from(String(data.int));
  if (typeof data.double === 'number') return Buffer.from(String(data.double));
  return Buffer.alloc(0);
}

/** An output value as JSON (tables, queue message arrays). */
function typedDataValue(data: RpcTypedData): unknown {
  if (typeof data.json === 'string') return JSON.parse(data.json);
  if (typeof data.string === 'string') {
    try {
      return JSON.parse(data.string);
    } catch {
      return data.string;
    }
  }
  if (typeof data.int === 'number') return data.int;
  if (typeof data.double === 'number') return data.double;
  return typedDataBytes(data).toString('utf8');
}

function splitBlobPath(path: string, what: string): { container: string; blob: string } {
  const i = path.indexOf('/');
  if (i <= 0 || i === path.length - 1) throw new Error(`${what}: the blob path '${path}' must be '<container>/<blob name>'.`);
  return { container: path.slice(0, i), blob: path.slice(i + 1) };
}

function bindingName(fn: RegisteredFunction, binding: RpcBindingInfo): string {
  return Object.entries(fn.metadata.bindings).find(([, b]) => b === binding)?.[0] ?? String(binding.name ?? binding.type);
}

export function encodeMessage(text: string, encoding: 'base64' | 'none'): string {
  return encoding === 'base64' ? Buffer.from(text, 'utf8').toString('base64') : text;
}

/** Blob input: the blob's bytes (a string with `dataType: 'string'`); a missing blob arrives as null. */
export async function readBlobInput(
  ctx: StorageBindingContext,
  binding: RpcBindingInfo,
  fn: RegisteredFunction,
  request: RpcInvocationRequest,
): Promise<RpcTypedData> {
  const conn = connectionOf(fn, bindingName(fn, binding), binding, 'blob', ctx.env);
  const path = resolveTemplate(bindingString(fn, binding, 'path', ctx.env) ?? '', bindingData(request, fn.triggerName));
  const { container, blob } = splitBlobPath(path, `Function '${fn.metadata.name}'`);
  try {
    const bytes = await ctx.clients.blobService(conn).getContainerClient(container).getBlobClient(blob).downloadToBuffer();
    return binding.dataType === 'string' ? { string: bytes.toString('utf8') } : { bytes };
  } catch (err) {
    if ((err as { statusCode?: number }).statusCode === 404) return { json: 'null' };
    throw err;
  }
}

/** Blob output: the value's bytes as a block blob (the container is created when missing). */
export async function writeBlobOutput(
  ctx: StorageBindingContext,
  binding: RpcBindingInfo,
  fn: RegisteredFunction,
  data: RpcTypedData,
  request: RpcInvocationRequest,
): Promise<void> {
  const conn = connectionOf(fn, bindingName(fn, binding), binding, 'blob', ctx.env);
  const path = resolveTemplate(bindingString(fn, binding, 'path', ctx.env) ?? '', bindingData(request, fn.triggerName));
  const { container, blob } = splitBlobPath(path, `Function '${fn.metadata.name}'`);
  const containerClient = ctx.clients.blobService(conn).getContainerClient(container);
  await containerClient.createIfNotExists();
  const bytes = typedDataBytes(data);
  await containerClient.getBlockBlobClient(blob).upload(bytes, bytes.length);
}

/** Queue output: one message, or one per element of an array (objects as JSON), in the host's encoding. */
export async function writeQueueOutput(
  ctx: StorageBindingContext,
  binding: RpcBindingInfo,
  fn: RegisteredFunction,
  data: RpcTypedData,
  request: RpcInvocationRequest,
): Promise<void> {
  const conn = connectionOf(fn, bindingName(fn, binding), binding, 'queue', ctx.env);
  const queueName = resolveTemplate(bindingString(fn, binding, 'queueName', ctx.env) ?? '', bindingData(request, fn.triggerName)).toLowerCase();
  const value = typedDataValue(data);
  const items = Array.isArray(value) ? value : [value];
  const queue = ctx.clients.queueService(conn).getQueueClient(queueName);
  await queue.createIfNotExists();
  for (const item of items) {
    const text = Buffer.isBuffer(item) ? item.toString('utf8') : typeof item === 'string' ? item : JSON.stringify(item);
    await queue.sendMessage(encodeMessage(text, ctx.messageEncoding));
  }
  if (items.length) ctx.queueWritten(conn, queueName);
}

function toHostEntity(e: Record<string, unknown>): Record<string, unknown> {
  const { partitionKey, rowKey, timestamp, etag: _etag, ...rest } = e;
  const out: Record<string, unknown> = { PartitionKey: partitionKey, RowKey: rowKey };
  if (timestamp !== undefined) out.Timestamp = timestamp;
  for (const [k, v] of Object.entries(rest)) if (!k.startsWith('odata.')) out[k] = v;
  return out;
}

/**
 * Table input: with `rowKey`, the one entity (null when missing); otherwise the entities of `partitionKey`
 * and/or `filter` (OData), at most `take`. Entities carry PartitionKey, RowKey, Timestamp and their properties.
 */
export async function readTableInput(
  ctx: StorageBindingContext,
  binding: RpcBindingInfo,
  fn: RegisteredFunction,
  request: RpcInvocationRequest,
): Promise<RpcTypedData> {
  const conn = connectionOf(fn, bindingName(fn, binding), binding, 'table', ctx.env);
  const values = bindingData(request, fn.triggerName);
  const prop = (p: string) => {
    const v = bindingString(fn, binding, p, ctx.env);
    return v === undefined ? undefined : resolveTemplate(v, values);
  };
  const table = ctx.clients.table(conn, prop('tableName') ?? '');
  const pk = prop('partitionKey');
  const rk = prop('rowKey');
  if (rk !== undefined) {
    if (pk === undefined) throw new Error(`Function '${fn.metadata.name}': a table input with rowKey needs partitionKey.`);
    try {
      const e = await table.getEntity<Record<string, unknown>>(pk, rk);
      return { json: JSON.stringify(toHostEntity(e)) };
    } catch (err) {
      if ((err as { statusCode?: number }).statusCode === 404) return { json: 'null' };
      throw err;
    }
  }
  const clauses: string[] = [];
  if (pk !== undefined) clauses.push(`PartitionKey eq '${pk.replace(/'/g, "''")}'`);
  const filter = prop('filter');
  if (filter) clauses.push(`(${filter})`);
  const take = binding.take === undefined || binding.take === null ? undefined : Number(binding.take);
  const out: Record<string, unknown>[] = [];
  try {
    for await (const e of table.listEntities<Record<string, unknown>>({ queryOptions: clauses.length ? { filter: clauses.join(' and ') } : {} })) {
      if (take !== undefined && out.length >= take) break;
      out.push(toHostEntity(e));
    }
  } catch (err) {
    if ((err as { statusCode?: number }).statusCode !== 404) throw err;
  }
  return { json: JSON.stringify(out) };
}

/**
 * Table output: one entity or an array, each added (never replaced: an existing key fails the invocation, as
 * on the host). `PartitionKey`/`RowKey` come from the entity, else from the binding's partitionKey/rowKey.
 */
export async function writeTableOutput(
  ctx: StorageBindingContext,
  binding: RpcBindingInfo,
  fn: RegisteredFunction,
  data: RpcTypedData,
  request: RpcInvocationRequest,
): Promise<void> {
  const conn = connectionOf(fn, bindingName(fn, binding), binding, 'table', ctx.env);
  const values = bindingData(request, fn.triggerName);
  const prop = (p: string) => {
    const v = bindingString(fn, binding, p, ctx.env);
    return v === undefined ? undefined : resolveTemplate(v, values);
  };
  const tableName = prop('tableName') ?? '';
  const value = typedDataValue(data);
  const items = (Array.isArray(value) ? value : [value]) as Record<string, unknown>[];
  const table = ctx.clients.table(conn, tableName);
  try {
    await table.createTable();
  } catch (err) {
    if ((err as { statusCode?: number }).statusCode !== 409) throw err;
  }
  for (const item of items) {
    if (!item || typeof item !== 'object')
      throw new Error(`Function '${fn.metadata.name}': a table output value must be an object (an entity) or an array of them.`);
    const { PartitionKey, RowKey, partitionKey, rowKey, ...props } = item;
    const pk = PartitionKey ?? partitionKey ?? prop('partitionKey');
    const rk = RowKey ?? rowKey ?? prop('rowKey');
    if (pk === undefined || rk === undefined)
      throw new Error(`Function '${fn.metadata.name}': table entity has no PartitionKey or RowKey (set them on the value or on the binding).`);
    delete props.Timestamp;
    delete props.ETag;
    const entity: TableEntity<Record<string, unknown>> = { partitionKey: String(pk), rowKey: String(rk), ...props };
    await table.createEntity(entity);
  }
}
