import type { RpcBindingInfo } from '../coreTypes';
import type { ExtensionContext, RuntimeExtension } from '../extension';
import type { RegisteredFunction } from '../registry';
import { retryPolicyOf } from '../retry';
import { resolveString, RuntimeConfigError } from '../settings';
import { BLOB_POISON_QUEUE, BLOB_RECEIPTS_TABLE, BlobListener, compileBlobPath } from './blobTrigger';
import {
  bindingString,
  connectionOf,
  readBlobInput,
  readTableInput,
  writeBlobOutput,
  writeQueueOutput,
  writeTableOutput,
  type StorageBindingContext,
} from './bindings';
import { StorageClients } from './clients';
import { requireConnection, type StorageConnection, type StorageService } from './connection';
import { QueueListener, queueOptions } from './queueTrigger';

/** Binding types of the storage extension, with the service each one uses. */
const SERVICES: Record<string, StorageService> = { queuetrigger: 'queue', queue: 'queue', blobtrigger: 'blob', blob: 'blob', table: 'table' };

/** Default blob container scan interval (host.json `localRuntime.blobPollingIntervalMs`). */
export const BLOB_POLL_MS = 2000;

const connectionKey = (c: StorageConnection) => (c.kind === 'connectionString' ? c.connectionString : c.serviceUri);

/**
 * The Azure Storage extension of the host (Microsoft.Azure.WebJobs.Extensions.Storage): queue and blob
 * triggers, blob and table input, queue, blob and table output, on Azure Storage or Azurite. Every storage
 * binding's connection is resolved at start: a missing one stops the host, naming the function and setting.
 */
export function createStorageExtension(env: NodeJS.ProcessEnv = process.env): RuntimeExtension {
  const clients = new StorageClients();
  const queueListeners: QueueListener[] = [];
  const blobListeners: BlobListener[] = [];
  const byQueue = new Map<string, QueueListener[]>();
  let messageEncoding: 'base64' | 'none' = 'base64';

  const bindingCtx: StorageBindingContext = {
    clients,
    env,
    get messageEncoding() {
      return messageEncoding;
    },
    queueWritten(connection, queueName) {
      for (const l of byQueue.get(`${connectionKey(connection)}|${queueName}`) ?? []) l.notify();
    },
  };

  function checkConnections(fns: RegisteredFunction[]): void {
    for (const fn of fns) {
      for (const [name, binding] of Object.entries(fn.metadata.bindings)) {
        const service = SERVICES[String(binding.type ?? '').toLowerCase()];
        if (service) connectionOf(fn, name, binding, service, env);
      }
    }
  }

  function required(fn: RegisteredFunction, binding: RpcBindingInfo, property: string): string {
    const v = bindingString(fn, binding, property, env);
    if (!v)
      throw new RuntimeConfigError(
        `${fn.metadata.name}.${property}`,
        `Function '${fn.metadata.name}': the ${String(binding.type)} binding needs '${property}'.`,
      );
    return v;
  }

  return {
    name: 'Storage',
    triggerTypes: ['queuetrigger', 'blobtrigger'],
    inputBindings: {
      blob: (binding, fn, request) => readBlobInput(bindingCtx, binding, fn, request),
      table: (binding, fn, request) => readTableInput(bindingCtx, binding, fn, request),
    },
    outputBindings: {
      queue: (binding, fn, data, request) => writeQueueOutput(bindingCtx, binding, fn, data, request),
      blob: (binding, fn, data, request) => writeBlobOutput(bindingCtx, binding, fn, data, request),
      table: (binding, fn, data, request) => writeTableOutput(bindingCtx, binding, fn, data, request),
    },
    validate(registry, hostJson) {
      queueOptions(hostJson);
      checkConnections([...registry.functions.values()]);
      for (const fn of registry.byTriggerType('blobTrigger')) compileBlobPath(required(fn, fn.metadata.bindings[fn.triggerName], 'path'), fn.metadata.name);
    },
    async start(ctx: ExtensionContext) {
      const options = queueOptions(ctx.hostJson);
      messageEncoding = options.messageEncoding;
      const fns = [...ctx.registry.functions.values()];
      checkConnections(fns);
      const localRuntime = (ctx.hostJson.localRuntime ?? {}) as Record<string, unknown>;
      const pollMs = localRuntime.blobPollingIntervalMs === undefined ? BLOB_POLL_MS : Number(localRuntime.blobPollingIntervalMs);
      if (!Number.isFinite(pollMs) || pollMs < 100)
        throw new RuntimeConfigError(
          'localRuntime.blobPollingIntervalMs',
          'host.json localRuntime.blobPollingIntervalMs must be a number of milliseconds >= 100.',
        );

      for (const fn of ctx.registry.byTriggerType('queueTrigger')) {
        const binding = fn.metadata.bindings[fn.triggerName];
        const conn = connectionOf(fn, fn.triggerName, binding, 'queue', env);
        const queueName = resolveString(required(fn, binding, 'queueName'), env).toLowerCase();
        const service = clients.queueService(conn);
        const listener = new QueueListener(
          ctx,
          fn,
          service.getQueueClient(queueName),
          () => service.getQueueClient(`${queueName}-poison`),
          options,
          retryPolicyOf(fn),
        );
        queueListeners.push(listener);
        const key = `${connectionKey(conn)}|${queueName}`;
        byQueue.set(key, [...(byQueue.get(key) ?? []), listener]);
      }

      const blobFns = ctx.registry.byTriggerType('blobTrigger');
      if (blobFns.length) {
        // Receipts and the poison queue live in the host's own storage, as on the host.
        const host = requireConnection(blobFns[0].metadata.name, blobFns[0].triggerName, 'blobTrigger (receipts)', undefined, 'table', env);
        const receipts = clients.table(host, BLOB_RECEIPTS_TABLE);
        try {
          await receipts.createTable();
        } catch (err) {
          if ((err as { statusCode?: number }).statusCode !== 409) throw err;
        }
        const hostQueue = requireConnection(blobFns[0].metadata.name, blobFns[0].triggerName, 'blobTrigger (poison queue)', undefined, 'queue', env);
        for (const fn of blobFns) {
          const binding = fn.metadata.bindings[fn.triggerName];
          if (binding.source !== undefined && binding.source !== null && String(binding.source).toLowerCase() === 'eventgrid') {
            throw new RuntimeConfigError(
              `${fn.metadata.name}.source`,
              `Function '${fn.metadata.name}': blob trigger source 'EventGrid' is not supported by this runtime (Event Grid does not reach it); use the default source.`,
            );
          }
          const conn = connectionOf(fn, fn.triggerName, binding, 'blob', env);
          const pattern = compileBlobPath(required(fn, binding, 'path'), fn.metadata.name);
          const container = clients.blobService(conn).getContainerClient(pattern.container);
          blobListeners.push(
            new BlobListener(ctx, fn, pattern, container, receipts, () => clients.queueService(hostQueue).getQueueClient(BLOB_POISON_QUEUE), {
              pollMs,
              maxDequeueCount: options.maxDequeueCount,
              messageEncoding: options.messageEncoding,
            }),
          );
        }
      }
      for (const l of queueListeners) {
        l.start();
        ctx.logger.log(
          'information',
          `Function.${l.fn.metadata.name}`,
          `Queue trigger '${l.fn.metadata.name}' listens on queue '${l.queueName}' (batchSize ${options.batchSize}, maxDequeueCount ${options.maxDequeueCount}, polling up to every ${options.maxPollingIntervalMs}ms).`,
        );
      }
      for (const l of blobListeners) {
        l.start();
        ctx.logger.log('information', `Function.${l.fn.metadata.name}`, `Blob trigger '${l.fn.metadata.name}' scans its container every ${pollMs}ms.`);
      }
    },
    async stop() {
      await Promise.all([...queueListeners.map((l) => l.stop()), ...blobListeners.map((l) => l.stop())]);
    },
  };
}
