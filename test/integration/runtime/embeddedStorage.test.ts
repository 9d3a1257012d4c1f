import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { TableClient } from '@azure/data-tables';
import { Azurite, DEFAULT_ENDPOINTS, portAnswers } from '../../../lib/runtime/azurite';
import { STREAMED_FORMAT } from '../../../lib/runtime/tablePersistence/adapter';
import { startService } from '../../support/service';
import { startRuntime } from './runtimeProcess';

/**
 * The embedded storage (issue 21): Azurite's table service through our launcher, as real processes. Its
 * data survives a stop and a start in the streamed layout, a folder written by stock Azurite is converted,
 * and its warnings reach the host's log and GET /health.
 */
const DB = '__azurite_db_table__.json';
const folders: string[] = [];
const running: Azurite[] = [];
afterAll(async () => {
  for (const a of running) await a.stop();
  for (const f of folders) rmSync(f, { recursive: true, force: true });
});
const folder = (name: string) => {
  const f = mkdtempSync(path.join(os.tmpdir(), `embedded-${name}-`));
  folders.push(f);
  return f;
};
const start = async (options: ConstructorParameters<typeof Azurite>[0]) => {
  const a = new Azurite({ services: ['table'], ...options });
  await a.start();
  running.push(a);
  return a;
};
const tableOf = (a: Azurite, name: string) => TableClient.fromConnectionString(a.connectionString, name, { allowInsecureConnection: true });
const rowKeys = async (t: TableClient) => {
  const keys: string[] = [];
  for await (const e of t.listEntities()) keys.push(e.rowKey!);
  return keys.sort();
};

describe('embedded Azurite table persistence', () => {
  it('saves on stop (no periodic save in between) and gives the data back at the next start, one file per table', async () => {
    const location = folder('restart');
    // A save interval of an hour: only the save on SIGTERM can have written the entities.
    const first = await start({ location, tableSaveMs: 3_600_000 });
    const users = tableOf(first, 'Users');
    await users.createTable();
    await users.submitTransaction(Array.from({ length: 50 }, (_, i) => ['create', { partitionKey: 'p', rowKey: `u${String(i).padStart(2, '0')}`, n: i }]));
    await tableOf(first, 'Other').createTable();
    await first.stop();

    const header = JSON.parse(readFileSync(path.join(location, DB), 'utf8')) as { streamedFormat: string; collections: { name: string }[] };
    expect(header.streamedFormat).toBe(STREAMED_FORMAT);
    expect(header.collections.map((c) => c.name)).toEqual(expect.arrayContaining(['devstoreaccount1$Users', 'devstoreaccount1$Other']));
    const usersFile = readdirSync(location).find((f) => f.endsWith('Users.jsonl'))!;
    expect(readFileSync(path.join(location, usersFile), 'utf8').trim().split('\n')).toHaveLength(51);

    const second = await start({ location, tableSaveMs: 3_600_000 });
    expect(await rowKeys(tableOf(second, 'Users'))).toHaveLength(50);
    expect((await tableOf(second, 'Users').getEntity('p', 'u42')).n).toBe(42);
    // A deleted table's file goes at the next save.
    await second.stop();
    const third = await start({ location });
    await tableOf(third, 'Other').deleteTable();
    await third.stop();
    expect(readdirSync(location).some((f) => f.endsWith('Other.jsonl'))).toBe(false);
    expect(readdirSync(location).some((f) => f.endsWith('Users.jsonl'))).toBe(true);
  });

  it('appends changes to a journal between compactions, and a start after a kill gives back what the last save held', async () => {
    const location = folder('journal');
    const first = await start({ location, tableSaveMs: 3_600_000 });
    const people = tableOf(first, 'People');
    await people.createTable();
    for (let b = 0; b < 12; b++) {
      await people.submitTransaction(
        Array.from({ length: 100 }, (_, i) => [
          'create',
          { partitionKey: `p${b % 3}`, rowKey: `r${String(b * 100 + i).padStart(4, '0')}`, n: b * 100 + i, v: 'first' },
        ]),
      );
    }
    await first.stop();
    const peopleFile = readdirSync(location).find((f) => f.endsWith('People.jsonl'))!;
    const written = readFileSync(path.join(location, peopleFile), 'utf8');

    // Saves every 200 ms from here: updates, merges, deletes and inserts, then a table deleted and made again.
    const second = await start({ location, tableSaveMs: 200 });
    const p2 = tableOf(second, 'People');
    await p2.updateEntity({ partitionKey: 'p0', rowKey: 'r0000', n: 0, v: 'replaced' }, 'Replace');
    await p2.updateEntity({ partitionKey: 'p1', rowKey: 'r0100', v: 'merged' }, 'Merge');
    await p2.deleteEntity('p2', 'r0200');
    await p2.createEntity({ partitionKey: 'p9', rowKey: 'r9999', n: 9999, v: 'new' });
    const again = tableOf(second, 'Again');
    await again.createTable();
    await again.createEntity({ partitionKey: 'a', rowKey: 'old' });
    await again.deleteTable();
    await again.createTable();
    await again.createEntity({ partitionKey: 'a', rowKey: 'fresh' });
    // Wait for a save that holds all of it (the stats file tells), then kill: no save at the end.
    const saved = Date.now();
    for (;;) {
      const stats = JSON.parse(readFileSync(second.statsFile!, 'utf8')) as { lastSave?: { at: string } };
      if (stats.lastSave && Date.parse(stats.lastSave.at) > saved + 50) break;
      await new Promise((r) => setTimeout(r, 100));
    }
    process.kill(second.pids[0], 'SIGKILL');
    await second.stop();
    // The large table was not written again: its changes went to its journal.
    expect(readFileSync(path.join(location, peopleFile), 'utf8')).toBe(written);
    expect(readdirSync(location).filter((f) => /People\.journal-\d+\.jsonl$/.test(f))).toHaveLength(1);

    const third = await start({ location });
    const p3 = tableOf(third, 'People');
    const all: { rowKey?: string; n?: unknown; v?: unknown }[] = [];
    for await (const e of p3.listEntities<{ n?: number; v?: string }>()) all.push(e);
    expect(all).toHaveLength(1200);
    expect(all.find((e) => e.rowKey === 'r0200')).toBeUndefined();
    expect((await p3.getEntity<{ v: string; n: number }>('p0', 'r0000')).v).toBe('replaced');
    expect(await p3.getEntity<{ v: string; n: number }>('p1', 'r0100')).toMatchObject({ v: 'merged', n: 100 });
    expect((await p3.getEntity<{ v: string }>('p9', 'r9999')).v).toBe('new');
    expect((await p3.getEntity<{ v: string }>('p1', 'r1000')).v).toBe('first');
    expect(await rowKeys(tableOf(third, 'Again'))).toEqual(['fresh']);
    // Writes after the start go on with new ids (a deleted entity's id is never handed out again).
    await p3.createEntity({ partitionKey: 'p9', rowKey: 'r9998', v: 'after' });
    await third.stop();
    const fourth = await start({ location });
    expect((await tableOf(fourth, 'People').getEntity<{ v: string }>('p9', 'r9998')).v).toBe('after');
    expect((await tableOf(fourth, 'People').getEntity<{ v: string }>('p9', 'r9999')).v).toBe('new');
  });

  it('answers before its large tables are loaded: a request for one waits for it, and every change is kept', async () => {
    const location = folder('background');
    const first = await start({ location, tableSaveMs: 3_600_000 });
    const big = tableOf(first, 'Big');
    await big.createTable();
    for (let b = 0; b < 30; b++) {
      await big.submitTransaction(
        Array.from({ length: 100 }, (_, i) => [
          'create',
          { partitionKey: `p${b % 4}`, rowKey: `r${String(b * 100 + i).padStart(4, '0')}`, v: 'x'.repeat(200) },
        ]),
      );
    }
    await tableOf(first, 'Small').createTable();
    await tableOf(first, 'Small').createEntity({ partitionKey: 'p', rowKey: 's', v: 'small' });
    await first.stop();

    // Tables above 100 KB load in the background (Big is about 900 KB on disk), here 1.5 s after the start.
    const lines: string[] = [];
    process.env.AZURITE_TABLE_DEFER_DELAY_MS = '1500';
    const second = await start({ location, backgroundLoadMB: 0.1, onLog: (l) => lines.push(l) }).finally(() => delete process.env.AZURITE_TABLE_DEFER_DELAY_MS);
    const t0 = Date.now();
    const again = tableOf(second, 'Big');
    // The small table answers at once; a read of the large one waits for its load.
    expect((await tableOf(second, 'Small').getEntity<{ v: string }>('p', 's')).v).toBe('small');
    expect(Date.now() - t0).toBeLessThan(1000);
    const waited = (async () => {
      const e = await again.getEntity<{ v: string }>('p3', 'r0300');
      return { v: e.v, ms: Date.now() - t0 };
    })();
    // Reads, a point read, a write and a batch, sent at once: each waits for Big as needed.
    const [keys, one] = await Promise.all([
      rowKeys(again),
      again.getEntity<{ v: string }>('p1', 'r0100'),
      again.updateEntity({ partitionKey: 'p2', rowKey: 'r0200', v: 'changed' }, 'Merge'),
    ]);
    expect(keys).toHaveLength(3000);
    expect(await waited).toEqual({ v: 'x'.repeat(200), ms: expect.any(Number) });
    expect((await waited).ms).toBeGreaterThanOrEqual(1000);
    expect(one.v).toBe('x'.repeat(200));
    await again.submitTransaction([
      ['create', { partitionKey: 'p0', rowKey: 'z-new', v: 'batch' }],
      ['delete', { partitionKey: 'p0', rowKey: 'r0000' }],
    ]);
    expect((await tableOf(second, 'Small').getEntity<{ v: string }>('p', 's')).v).toBe('small');
    expect(lines.join('\n')).toMatch(/Loading 1 large table\(s\) \(\d+ MB\) in the background/);
    expect(lines.join('\n')).toMatch(/Every table is loaded: 1 large table\(s\) loaded in the background/);
    await second.stop();

    // Everything loaded before answering: the changes made after the background load are there.
    const third = await start({ location });
    const t3 = tableOf(third, 'Big');
    expect(await rowKeys(t3)).toHaveLength(3000);
    expect((await t3.getEntity<{ v: string }>('p2', 'r0200')).v).toBe('changed');
    expect((await t3.getEntity<{ v: string }>('p0', 'z-new')).v).toBe('batch');
    await expect(t3.getEntity('p0', 'r0000')).rejects.toMatchObject({ statusCode: 404 });
    await third.stop();

    // A table deleted while it is still loading is deleted once loaded, and stays deleted.
    const fourth = await start({ location, backgroundLoadMB: 0.1 });
    await tableOf(fourth, 'Big').deleteTable();
    await fourth.stop();
    const fifth = await start({ location });
    await expect(tableOf(fifth, 'Big').getEntity('p1', 'r0100')).rejects.toMatchObject({ statusCode: 404 });
    expect(readdirSync(location).some((f) => f.includes('Big.'))).toBe(false);
    expect((await tableOf(fifth, 'Small').getEntity<{ v: string }>('p', 's')).v).toBe('small');
  });

  it('converts a data folder written by stock Azurite (one JSON file) at start, keeping the old file', async () => {
    const location = folder('convert');
    const stock = await start({ location, stockTable: true });
    const legacy = tableOf(stock, 'Legacy');
    await legacy.createTable();
    await legacy.createEntity({ partitionKey: 'p', rowKey: 'old-1', v: 'kept' });
    await legacy.createEntity({ partitionKey: 'p', rowKey: 'old-2', v: 'kept' });
    // Stock Azurite's table main saves on SIGINT (not on SIGTERM).
    const pid = stock.pids[0];
    process.kill(pid, 'SIGINT');
    // It stops listening before its save is done: wait for the process to end.
    const alive = () => {
      try {
        process.kill(pid, 0);
        return true;
      } catch {
        return false;
      }
    };
    while (alive()) await new Promise((r) => setTimeout(r, 100));
    await stock.stop();
    expect(readFileSync(path.join(location, DB), 'utf8')).not.toContain(STREAMED_FORMAT);
    expect(readFileSync(path.join(location, DB), 'utf8')).toContain('old-2');

    const ours = await start({ location });
    expect(await rowKeys(tableOf(ours, 'Legacy'))).toEqual(['old-1', 'old-2']);
    expect(readFileSync(path.join(location, DB), 'utf8')).toContain(STREAMED_FORMAT);
    expect(readFileSync(path.join(location, `${DB}.before-streamed`), 'utf8')).toContain('old-2');
    await tableOf(ours, 'Legacy').createEntity({ partitionKey: 'p', rowKey: 'new-3' });
    await ours.stop();

    const again = await start({ location });
    expect(await rowKeys(tableOf(again, 'Legacy'))).toEqual(['new-3', 'old-1', 'old-2']);
  });
});

describe('embedded storage warnings', () => {
  it('GET /health has no warnings with the default thresholds, and lists them (same three fields) when the data passes a low one', async () => {
    const location = folder('health');
    const quiet = await start({ location, statsEveryMs: 200 });
    const endpoints = quiet.endpoints;
    await tableOf(quiet, 'Warm').createTable();
    const svc = await startService({
      env: { AzureWebJobsStorage: quiet.connectionString, Storage__AzuriteStatsFile: quiet.statsFile!, Engine__InstanceName: 'embedded-node' },
    });
    try {
      const calm = await svc.call('GET', 'health', { role: null });
      expect(calm.status).toBe(200);
      expect(calm.body).toEqual({ status: 'healthy', instance: 'embedded-node', storage: 'ok' });
      expect(JSON.parse(readFileSync(quiet.statsFile!, 'utf8'))).toMatchObject({ warnings: [], heapLimitBytes: expect.any(Number) });

      // The same Azurite (ports and data) again, warning above 1 KB of table data.
      await quiet.stop();
      const loud = await start({ location, endpoints, statsEveryMs: 200, dataWarnMB: 1 / 1024 });
      expect(loud.statsFile).toBe(quiet.statsFile);
      const warned = await svc.call('GET', 'health', { role: null });
      expect(warned.status).toBe(200);
      expect(warned.body).toEqual({
        status: 'healthy',
        instance: 'embedded-node',
        storage: 'ok',
        warnings: [expect.stringMatching(/^Embedded table storage \(Azurite\) holds \d+ KB on disk \(warning at 1 KB\): move AzureWebJobsStorage/)],
      });
    } finally {
      await svc.dispose();
    }
  });

  it('npm start (development storage) logs the warning at start and names the heap limit', async () => {
    const { host, tablePort, queuePort, blobPort } = DEFAULT_ENDPOINTS;
    const busy = (await portAnswers(host, tablePort)) || (await portAnswers(host, queuePort)) || (await portAnswers(host, blobPort));
    const dataDir = folder('devstorage');
    const rt = await startRuntime({
      dataDir,
      env: { AzureWebJobsStorage: 'UseDevelopmentStorage=true', Storage__AzuriteDataWarnMB: '0.001', Storage__AzuriteMaxHeapMB: '1536' },
    });
    try {
      if (!busy) {
        expect(rt.stdout()).toContain(`with data in ${path.join(dataDir, 'azurite')}; table heap limit 1536 MB.`);
        await rt.waitFor(/Embedded table storage \(Azurite\) holds \d+ KB on disk \(warning at \d+ KB\)/);
        const stats = JSON.parse(readFileSync(path.join(dataDir, 'azurite', 'azurite-table-stats.json'), 'utf8')) as { heapLimitBytes: number };
        // V8 adds its young generation to --max-old-space-size.
        expect(stats.heapLimitBytes).toBeGreaterThanOrEqual(1536 * 1024 * 1024);
        expect(stats.heapLimitBytes).toBeLessThan(1800 * 1024 * 1024);
      } else {
        // Another Azurite already serves the default ports: nothing of ours to watch.
        expect(rt.stdout()).toContain('Using the Azurite (development storage) already listening');
        expect(rt.stdout()).not.toContain('Embedded table storage');
      }
    } finally {
      expect((await rt.stop()).code).toBe(0);
    }
    if (!busy) expect(existsSync(path.join(dataDir, 'azurite', DB))).toBe(true);
  });
});
