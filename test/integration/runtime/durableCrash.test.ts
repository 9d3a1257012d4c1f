import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { odata, TableClient } from '@azure/data-tables';
import { RuntimeProcess, sleep } from './durableSupport';

/**
 * Crash safety: kill -9 the runtime while orchestrations are in the middle of their activities, start it
 * again on the same storage and data dir (same engine instance, same task hub), and every orchestration
 * resumes from its history and completes with the right output; every activity's effect (a marker row) is
 * present: activities run at least once and none is lost.
 */
describe('durable task hub survives kill -9', () => {
  const markerTable = `Markers${randomBytes(6).toString('hex')}`;
  let dir: string;
  let rt: RuntimeProcess;
  const markers = TableClient.fromConnectionString(process.env.TEST_STORAGE_CONNECTION_STRING ?? '', markerTable, { allowInsecureConnection: true });

  const countMarkers = async (tag: string): Promise<number[]> => {
    const out: number[] = [];
    try {
      for await (const e of markers.listEntities<{ index: number }>({ queryOptions: { filter: odata`PartitionKey eq ${tag}` } })) out.push(e.index);
    } catch {
      return [];
    }
    return out.sort((a, b) => a - b);
  };

  beforeAll(() => {
    dir = mkdtempSync(path.join(os.tmpdir(), 'durable-crash-'));
    rt = new RuntimeProcess(dir, { MARKER_TABLE: markerTable });
  });

  afterAll(async () => {
    await rt?.stop();
    rmSync(dir, { recursive: true, force: true });
    await markers.deleteTable().catch(() => undefined);
  });

  it('resumes sequential and fan-out orchestrations after a kill -9 and completes them', async () => {
    await rt.start();
    const seqCount = 30;
    const fanCount = 40;
    // Activities past the gate wait for a row the test writes only after the restart: however loaded the
    // machine, the kill lands while both orchestrations have unfinished activities. Few enough wait at once
    // that they never hold every activity slot (host.json maxConcurrentActivityFunctions).
    const gate = 'crash-gate';
    expect((await rt.start202('markMany', 'crash-seq', { tag: 'crash-seq', count: seqCount, delayMs: 20, sequential: true, gate, gateFrom: 10 })).status).toBe(
      202,
    );
    expect((await rt.start202('markMany', 'crash-fan', { tag: 'crash-fan', count: fanCount, delayMs: 20, gate, gateFrom: fanCount - 4 })).status).toBe(202);

    // Wait until the sequence is under way, then kill the runtime without warning.
    while ((await countMarkers('crash-seq')).length < 6) await sleep(20);
    const port = rt.port;
    await rt.kill();
    const before = { seq: (await countMarkers('crash-seq')).length, fan: (await countMarkers('crash-fan')).length };
    expect(before.seq).toBeLessThanOrEqual(10);
    expect((await (async () => (await rt.start(port), rt.status('crash-seq')))()).body.runtimeStatus).not.toBe('Completed');
    await markers.upsertEntity({ partitionKey: 'gate', rowKey: gate });

    const seq = await rt.waitFor('crash-seq');
    const fan = await rt.waitFor('crash-fan');
    const sum = (n: number) => n * (n - 1);
    expect(seq).toMatchObject({ runtimeStatus: 'Completed', output: sum(seqCount), customStatus: { done: seqCount } });
    expect(fan).toMatchObject({ runtimeStatus: 'Completed', output: sum(fanCount) });
    expect(await countMarkers('crash-seq')).toEqual(Array.from({ length: seqCount }, (_, i) => i));
    expect(await countMarkers('crash-fan')).toEqual(Array.from({ length: fanCount }, (_, i) => i));
    expect(before.fan).toBeLessThan(fanCount);
  });
});
