import type { TableClient } from '@azure/data-tables';
import type { ContainerClient } from '@azure/storage-blob';
import type { QueueClient } from '@azure/storage-queue';
import type { RpcInvocationRequest, RpcTypedData } from '../coreTypes';
import type { ExtensionContext } from '../extension';
import type { RegisteredFunction } from '../registry';
import { encodeMessage } from './bindings';

/** Where the receipts live: one row per function and blob, with the ETag that was processed. */
export const BLOB_RECEIPTS_TABLE = 'RuntimeBlobReceipts';
/** The host's poison queue for blob triggers. */
export const BLOB_POISON_QUEUE = 'webjobs-blobtrigger-poison';

export interface BlobPattern {
  container: string;
  /** Literal start of the blob name (listing prefix). */
  prefix: string;
  regex: RegExp;
  names: string[];
}

/** `container/prefix-{name}.txt` -> the container and a matcher that captures the `{...}` parts. */
export function compileBlobPath(path: string, fnName: string): BlobPattern {
  const i = path.indexOf('/');
  const container = i < 0 ? path : path.slice(0, i);
  const rest = i < 0 ? '' : path.slice(i + 1);
  if (!container || /[{}]/.test(container))
    throw Object.assign(new Error(`Function '${fnName}': the blob trigger path '${path}' must start with a container name.`), { setting: `${fnName}.path` });
  const names: string[] = [];
  let source = '';
  let prefix: string | undefined;
  const re = /\{([^{}]+)\}/g;
  let last = 0;
  for (let m = re.exec(rest); m; m = re.exec(rest)) {
    const literal = rest.slice(last, m.index);
    prefix ??= literal;
    source += literal.replace(/[.*+?^${}()|[\]\\]/g, '\\$&') + '(.+?)';
    names.push(m[1]);
    last = m.index + m[0].length;
  }
  const tail = rest.slice(last);
  source += tail.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
  // A bare container means every blob in it.
  if (rest === '') return { container, prefix: '', regex: /^.+$/, names: [] };
  return { container, prefix: prefix ?? rest, regex: new RegExp(`^${source}$`), names };
}

interface Receipt {
  ETag: string;
  Attempts: number;
  Done: boolean;
}

const rowKeyOf = (blobName: string) => encodeURIComponent(blobName);

/**
 * One blob-triggered function: lists its container every `pollMs` (the host scans containers and logs; a
 * scan is what works on Azurite) and invokes the function for every blob that matches the path and has no
 * receipt for its current ETag, so a blob fires once, and again only when it changes. The receipt (table
 * RuntimeBlobReceipts) is written after a success; a failure is retried on the next scans until
 * maxDequeueCount attempts, then a message goes to `webjobs-blobtrigger-poison` and the blob is not retried.
 */
export class BlobListener {
  private stopped = false;
  private timer: NodeJS.Timeout | undefined;
  private scanning: Promise<void> | undefined;
  /** ETags settled (run, or given up) per blob name: later scans skip them without reading their receipt. */
  private readonly settled = new Map<string, string>();

  constructor(
    private readonly ctx: ExtensionContext,
    readonly fn: RegisteredFunction,
    private readonly pattern: BlobPattern,
    private readonly container: ContainerClient,
    private readonly receipts: TableClient,
    private readonly poison: () => QueueClient,
    private readonly options: { pollMs: number; maxDequeueCount: number; messageEncoding: 'base64' | 'none' },
  ) {}

  private get partition(): string {
    return `${this.ctx.instanceId}.${this.fn.metadata.name.toLowerCase()}`;
  }

  start(): void {
    const tick = () => {
      if (this.stopped) return;
      this.scanning = this.scan()
        .catch((err: Error) =>
          this.ctx.logger.log('warning', `Function.${this.fn.metadata.name}`, `Scanning container '${this.pattern.container}' failed: ${err.message}`),
        )
        .finally(() => {
          this.scanning = undefined;
          if (!this.stopped) this.timer = setTimeout(tick, this.options.pollMs);
        });
    };
    tick();
  }

  async stop(): Promise<void> {
    this.stopped = true;
    if (this.timer) clearTimeout(this.timer);
    await this.scanning;
  }

  private async receipt(blobName: string): Promise<Receipt | undefined> {
    try {
      const e = await this.receipts.getEntity<Receipt>(this.partition, rowKeyOf(blobName));
      return { ETag: e.ETag, Attempts: Number(e.Attempts ?? 0), Done: e.Done === true };
    } catch (err) {
      if ((err as { statusCode?: number }).statusCode === 404) return undefined;
      throw err;
    }
  }

  private async scan(): Promise<void> {
    if (!(await this.container.exists())) return;
    for await (const item of this.container.listBlobsFlat({ prefix: this.pattern.prefix, includeMetadata: true })) {
      if (this.stopped) return;
      const match = this.pattern.regex.exec(item.name);
      if (!match) continue;
      const etag = item.properties.etag ?? '';
      if (this.settled.get(item.name) === etag) continue;
      const seen = await this.receipt(item.name);
      if (seen && seen.ETag === etag && (seen.Done || seen.Attempts >= this.options.maxDequeueCount)) {
        this.settled.set(item.name, etag);
        continue;
      }
      const attempts = seen && seen.ETag === etag ? seen.Attempts : 0;
      await this.fire(item.name, etag, match, item.metadata ?? {}, item.properties as unknown as Record<string, unknown>, attempts);
    }
  }

  private async fire(
    blobName: string,
    etag: string,
    match: RegExpExecArray,
    metadata: Record<string, string>,
    properties: Record<string, unknown>,
    attempts: number,
  ): Promise<void> {
    const name = this.fn.metadata.name;
    const blob = this.container.getBlobClient(blobName);
    const binding = this.fn.metadata.bindings[this.fn.triggerName];
    let failed = true;
    try {
      const bytes = await blob.downloadToBuffer();
      const triggerMetadata: Record<string, RpcTypedData> = {
        BlobTrigger: { string: `${this.pattern.container}/${blobName}` },
        Uri: { string: blob.url },
        Properties: { json: JSON.stringify({ ...properties, ETag: etag }) },
        Metadata: { json: JSON.stringify(metadata) },
      };
      this.pattern.names.forEach((n, i) => (triggerMetadata[n] = { string: match[i + 1] }));
      const request: RpcInvocationRequest = {
        inputData: [{ name: this.fn.triggerName, data: binding.dataType === 'string' ? { string: bytes.toString('utf8') } : { bytes } }],
        triggerMetadata,
      };
      const outcome = await this.ctx.invoke(
        this.fn,
        request,
        `New blob detected(${properties.blobType ?? 'BlockBlob'}): ${this.pattern.container}/${blobName}`,
      );
      failed = outcome.response.result?.status === 'failure';
    } catch (err) {
      this.ctx.logger.log('error', `Function.${name}`, `Blob ${this.pattern.container}/${blobName} could not be processed: ${(err as Error).message}`);
    }
    const tries = attempts + 1;
    if (failed && tries >= this.options.maxDequeueCount) {
      const message = {
        Type: 'BlobTrigger',
        FunctionId: `Host.Functions.${name}`,
        BlobType: String(properties.blobType ?? 'BlockBlob'),
        ContainerName: this.pattern.container,
        BlobName: blobName,
        ETag: etag,
      };
      const poison = this.poison();
      await poison.createIfNotExists();
      await poison.sendMessage(encodeMessage(JSON.stringify(message), this.options.messageEncoding));
      this.ctx.logger.log(
        'warning',
        `Function.${name}`,
        `Blob ${this.pattern.container}/${blobName} failed ${tries} times (maxDequeueCount). Moving it to queue '${BLOB_POISON_QUEUE}'.`,
      );
    }
    await this.receipts.upsertEntity({ partitionKey: this.partition, rowKey: rowKeyOf(blobName), ETag: etag, Attempts: tries, Done: !failed }, 'Replace');
    if (!failed || tries >= this.options.maxDequeueCount) this.settled.set(blobName, etag);
  }
}
