import { TableClient } from '@azure/data-tables';
import { BlobServiceClient } from '@azure/storage-blob';
import { QueueServiceClient } from '@azure/storage-queue';
import path from 'node:path';
import { ROOT, startRuntime, type RuntimeProcess } from './runtimeProcess';

const APP = path.join(ROOT, 'test/fixtures/bindings-app');
const UNSUPPORTED_APP = path.join(ROOT, 'test/fixtures/unsupported-app');
const storage = () => process.env.TEST_STORAGE_CONNECTION_STRING!;
const b64 = (s: string) => Buffer.from(s, 'utf8').toString('base64');

async function until<T>(what: string, probe: () => Promise<T | undefined>, timeoutMs = 20_000): Promise<T> {
  const end = Date.now() + timeoutMs;
  for (;;) {
    const v = await probe();
    if (v !== undefined) return v;
    if (Date.now() > end) throw new Error(`Timed out waiting for ${what}.`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

interface AppState {
  queueRetry: { message: string; retryContext: { retryCount: number; maxRetryCount: number; exception?: { message?: string } } | null; dequeueCount: number }[];
  timerRetry: { retryContext: { retryCount: number; maxRetryCount: number; exception?: { message?: string } } | null; at: number }[];
  blobFires: { name: string; text: string; isBuffer: boolean; blobTrigger: string }[];
  badBlobAttempts: number;
  hooks: Record<string, { error: string | null }>;
}

function runtimeFor(app: string, env: Record<string, string | undefined>, waitForStart = true): Promise<RuntimeProcess> {
  return startRuntime({
    env,
    waitForStart,
    args: (port, dataDir) => [path.join(ROOT, 'dist/lib/runtime/cli.js'), 'start', '--app', app, '--port', String(port), '--data-dir', dataDir],
  });
}

describe('storage bindings on Azurite, through the embedded host (test/fixtures/bindings-app)', () => {
  let rt: RuntimeProcess;
  let api: string;
  const blobs = () => BlobServiceClient.fromConnectionString(storage());
  const queues = () => QueueServiceClient.fromConnectionString(storage());
  const state = async () => (await (await fetch(`${api}/state`)).json()) as AppState;

  async function blobText(container: string, name: string): Promise<string | undefined> {
    try {
      return (await blobs().getContainerClient(container).getBlobClient(name).downloadToBuffer()).toString('utf8');
    } catch (err) {
      if ((err as { statusCode?: number }).statusCode === 404) return undefined;
      throw err;
    }
  }

  beforeAll(async () => {
    rt = await runtimeFor(APP, { BindingsStorage: storage(), BINDINGS_QUEUE: 'bindings-work' });
    api = `${rt.baseUrl}/api`;
  }, 60_000);

  afterAll(async () => {
    await rt?.stop();
  });

  it('lists queue and blob triggers as running and names their queue and scan interval', () => {
    expect(rt.stdout()).toContain('        work: queueTrigger\n');
    expect(rt.stdout()).toContain('        watch: blobTrigger\n');
    expect(rt.stdout()).toContain("Queue trigger 'work' listens on queue 'bindings-work' (batchSize 8, maxDequeueCount 2, polling up to every 500ms).");
    expect(rt.stdout()).toContain("Blob trigger 'watch' scans its container every 300ms.");
    expect(rt.stdout()).not.toMatch(/will not be triggered/);
  });

  it('queue output -> queue trigger -> blob output and table output', async () => {
    const res = await fetch(`${api}/queue`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify([
        { key: 'a1', text: 'hello' },
        { key: 'a2', text: 'skip' },
        { key: 'a3', text: 'third' },
      ]),
    });
    expect(res.status).toBe(201);
    const report = await until('the blob written by the queue-triggered function', () => blobText('bindings-out', 'a1.json'));
    // The library parses JSON trigger metadata: queueTrigger (the message text) arrives as the object.
    expect(JSON.parse(report)).toEqual({ key: 'a1', text: 'hello', queueTrigger: { key: 'a1', text: 'hello' } });
    const rows = TableClient.fromConnectionString(storage(), 'BindingsRows', { allowInsecureConnection: true });
    const a3 = await until('the table row of a3', async () => {
      try {
        return await rows.getEntity<{ Text: string; DequeueCount: number }>('work', 'a3');
      } catch {
        return undefined;
      }
    });
    expect(a3).toMatchObject({ Text: 'third', DequeueCount: 1 });
    // Processed messages are deleted.
    await until('an empty work queue', async () =>
      (await queues().getQueueClient('bindings-work').getProperties()).approximateMessagesCount === 0 ? true : undefined,
    );
  });

  it('blob input: the bytes of the blob named by a route parameter; a missing blob arrives as null', async () => {
    await until('a1.json', () => blobText('bindings-out', 'a1.json'));
    const res = await fetch(`${api}/blob/a1.json`);
    expect(res.status).toBe(200);
    expect(res.headers.get('x-is-buffer')).toBe('true');
    expect(JSON.parse(await res.text())).toMatchObject({ key: 'a1', text: 'hello' });
    const missing = await fetch(`${api}/blob/nope.json`);
    expect(missing.status).toBe(404);
    expect(await missing.json()).toEqual({ missing: 'nope.json' });
  });

  it('table input: one entity by partitionKey + rowKey (null when missing), and a query with filter and take', async () => {
    const rows = TableClient.fromConnectionString(storage(), 'BindingsRows', { allowInsecureConnection: true });
    await until('three work rows', async () => {
      let n = 0;
      for await (const _ of rows.listEntities({ queryOptions: { filter: "PartitionKey eq 'work'" } })) n++;
      return n === 3 ? n : undefined;
    });
    const one = (await (await fetch(`${api}/table/work/a1`)).json()) as { row: Record<string, unknown> };
    expect(one.row).toMatchObject({ PartitionKey: 'work', RowKey: 'a1', Text: 'hello', DequeueCount: 1 });
    expect(one.row.Timestamp).toEqual(expect.any(String));
    expect(await (await fetch(`${api}/table/work/zz`)).json()).toEqual({ row: null });
    const some = (await (await fetch(`${api}/table/work`)).json()) as { rows: { RowKey: string; Text: string }[] };
    expect(some.rows.map((r) => r.RowKey)).toEqual(['a1', 'a3']);
  });

  it('queue trigger: a failing message is retried up to maxDequeueCount, then moved to <queue>-poison', async () => {
    const failing = queues().getQueueClient('bindings-fail');
    await failing.createIfNotExists();
    await failing.sendMessage(b64('bad message'));
    const poison = queues().getQueueClient('bindings-fail-poison');
    const peeked = await until('the poison message', async () => {
      if (!(await poison.exists())) return undefined;
      const p = await poison.peekMessages();
      return p.peekedMessageItems[0];
    });
    expect(Buffer.from(peeked.messageText, 'base64').toString('utf8')).toBe('bad message');
    expect(rt.stdout()).toContain('alwaysFails attempt 1');
    expect(rt.stdout()).toContain('alwaysFails attempt 2');
    expect(rt.stdout()).not.toContain('alwaysFails attempt 3');
    // The line is written once the move is done: the message can be seen in the poison queue a moment before.
    await rt.waitFor(/Message has reached MaxDequeueCount of 2\. Moving message to queue 'bindings-fail-poison'\./);
    expect((await failing.peekMessages()).peekedMessageItems).toEqual([]);
    // The postInvocation hook saw the handler's error.
    expect((await state()).hooks.alwaysFails.error).toBe('cannot handle bad message');
  });

  it('queue trigger retry policy (fixedDelay): attempts in one dequeue, with retryContext as the worker gives it', async () => {
    const q = queues().getQueueClient('bindings-retry');
    await q.createIfNotExists();
    await q.sendMessage(b64('r1'));
    const seen = await until('three attempts', async () => {
      const s = (await state()).queueRetry;
      return s.length >= 3 ? s : undefined;
    });
    expect(seen.map((a) => a.retryContext?.retryCount)).toEqual([0, 1, 2]);
    expect(seen.every((a) => a.retryContext?.maxRetryCount === 3 && a.dequeueCount === 1 && a.message === 'r1')).toBe(true);
    expect(seen[0].retryContext?.exception).toBeUndefined();
    expect(seen[1].retryContext?.exception?.message).toBe('attempt 0 fails');
    expect(seen[2].retryContext?.exception?.message).toBe('attempt 1 fails');
    await until('the retried message deleted', async () => ((await q.getProperties()).approximateMessagesCount === 0 ? true : undefined));
  });

  it('timer retry policy (exponentialBackoff): runOnStartup fails twice and succeeds on the last retry', async () => {
    const seen = await until('three timer attempts', async () => {
      const s = (await state()).timerRetry;
      return s.length >= 3 ? s : undefined;
    });
    expect(seen.map((a) => a.retryContext)).toEqual([
      { retryCount: 0, maxRetryCount: 2 },
      { retryCount: 1, maxRetryCount: 2, exception: expect.objectContaining({ message: 'timer attempt 0 fails' }) },
      { retryCount: 2, maxRetryCount: 2, exception: expect.objectContaining({ message: 'timer attempt 1 fails' }) },
    ]);
    // minimumInterval is 1 s: no retry came sooner.
    expect(seen[1].at - seen[0].at).toBeGreaterThanOrEqual(900);
    expect(seen[2].at - seen[1].at).toBeGreaterThanOrEqual(900);
  });

  it('blob trigger: fires once per new blob (receipt), again when it changes, never for a name that does not match', async () => {
    const container = blobs().getContainerClient('bindings-watch');
    await container.createIfNotExists();
    await container.getBlockBlobClient('one.txt').upload('v1', 2);
    await container.getBlockBlobClient('ignored.bin').upload('x', 1);
    const first = await until('the first fire', async () => {
      const f = (await state()).blobFires;
      return f.length >= 1 ? f : undefined;
    });
    expect(first[0]).toEqual({ name: 'one', text: 'v1', isBuffer: true, blobTrigger: 'bindings-watch/one.txt' });
    expect(await until('the copy', () => blobText('bindings-copies', 'one.txt'))).toBe('copy of v1');
    // Several scans later: still one fire.
    await new Promise((r) => setTimeout(r, 1500));
    expect((await state()).blobFires).toHaveLength(1);
    await container.getBlockBlobClient('one.txt').upload('v2', 2);
    const second = await until('the fire for the changed blob', async () => {
      const f = (await state()).blobFires;
      return f.length >= 2 ? f : undefined;
    });
    expect(second.map((f) => f.text)).toEqual(['v1', 'v2']);
    expect(second.some((f) => f.name.startsWith('ignored'))).toBe(false);
    expect(await until('the second copy', async () => ((await blobText('bindings-copies', 'one.txt')) === 'copy of v2' ? true : undefined))).toBe(true);
  });

  it('blob trigger: a blob that keeps failing is given up after maxDequeueCount attempts, reported to webjobs-blobtrigger-poison', async () => {
    const container = blobs().getContainerClient('bindings-bad');
    await container.createIfNotExists();
    await container.getBlockBlobClient('broken.txt').upload('x', 1);
    const poison = queues().getQueueClient('webjobs-blobtrigger-poison');
    const msg = await until('the blob poison message', async () => {
      if (!(await poison.exists())) return undefined;
      return (await poison.peekMessages()).peekedMessageItems[0];
    });
    expect(JSON.parse(Buffer.from(msg.messageText, 'base64').toString('utf8'))).toMatchObject({
      Type: 'BlobTrigger',
      FunctionId: 'Host.Functions.watchFails',
      BlobType: 'BlockBlob',
      ContainerName: 'bindings-bad',
      BlobName: 'broken.txt',
      ETag: expect.any(String),
    });
    // Several scans later: no further attempt.
    await new Promise((r) => setTimeout(r, 1200));
    expect((await state()).badBlobAttempts).toBe(2);
    expect(rt.stdout()).toContain("Blob bindings-bad/broken.txt failed 2 times (maxDequeueCount). Moving it to queue 'webjobs-blobtrigger-poison'.");
  });

  it('postInvocation hooks receive error: null when there was none', async () => {
    await fetch(`${api}/table/work/a1`);
    expect((await state()).hooks.readRow).toEqual({ error: null });
  });

  it("a durable activity's blob output is written", async () => {
    const started = (await (await fetch(`${api}/report`, { method: 'POST' })).json()) as { instanceId: string };
    const status = await until('the orchestration to complete', async () => {
      const s = (await (await fetch(`${api}/report/${started.instanceId}`)).json()) as { runtimeStatus?: string; output?: unknown };
      return s.runtimeStatus === 'Completed' || s.runtimeStatus === 'Failed' ? s : undefined;
    });
    expect(status).toEqual({ runtimeStatus: 'Completed', output: 'written' });
    expect(await blobText('bindings-reports', `${started.instanceId}.txt`)).toBe(`report for ${started.instanceId}`);
  });
});

describe('start-up refusals', () => {
  it('a storage connection setting that is not set stops the host, naming the function, binding and setting', async () => {
    const rt = await runtimeFor(APP, { BindingsStorage: undefined, BINDINGS_QUEUE: 'bindings-work' }, false);
    const exit = await rt.exited;
    expect(exit.code).toBe(1);
    expect(rt.stderr()).toMatch(
      /The host could not start: Function '\w+': the \w+ binding '\w+' uses the storage connection 'BindingsStorage', but the app setting 'BindingsStorage' \(nor 'AzureWebJobsBindingsStorage', 'BindingsStorage__serviceUri', 'BindingsStorage__\w+ServiceUri'\) is not set\./,
    );
  });

  it('bindings the runtime does not run (Service Bus, Cosmos DB) stop the host, naming each function and binding', async () => {
    const rt = await runtimeFor(UNSUPPORTED_APP, {}, false);
    const exit = await rt.exited;
    expect(exit.code).toBe(1);
    const err = rt.stderr();
    expect(err).toContain('The host could not start: The app declares bindings this runtime cannot run:');
    expect(err).toMatch(/function 'orders' uses the serviceBusTrigger trigger binding '\w+', which this runtime does not support\./);
    expect(err).toMatch(/function 'saveDoc' uses the cosmosDB output binding '\w+', which this runtime does not support\./);
    expect(err).toContain('set Runtime__SkipUnsupportedFunctions=true to start without them');
    expect(err).not.toContain("'ping'");
  });

  it('Runtime__SkipUnsupportedFunctions=true starts without them, with a warning naming each', async () => {
    const rt = await runtimeFor(UNSUPPORTED_APP, { Runtime__SkipUnsupportedFunctions: 'true' });
    try {
      const out = rt.stdout();
      expect(out).toMatch(
        /Skipped function 'orders' \(Runtime__SkipUnsupportedFunctions=true\): this runtime does not support its binding serviceBusTrigger '\w+'\. It will not run\./,
      );
      expect(out).toMatch(
        /Skipped function 'saveDoc' \(Runtime__SkipUnsupportedFunctions=true\): this runtime does not support its binding cosmosDB '\w+'\. It will not run\./,
      );
      expect(out).not.toMatch(/^\s+orders: /m);
      expect(out).not.toMatch(/^\s+saveDoc: /m);
      expect(await (await fetch(`${rt.baseUrl}/api/ping`)).text()).toBe('pong');
      expect((await fetch(`${rt.baseUrl}/api/saveDoc`, { method: 'POST' })).status).toBe(404);
    } finally {
      await rt.stop();
    }
  });
});
