/**
 * The embedded storage past its ceilings (issue 21): fills a disk-persisted Azurite table with N entities of
 * about 1 KB, with Azurite's stock table persistence (one JSON string per save) and with ours (each table
 * streamed to its own file), and reports the fill rate, the longest request stall while the data is saved
 * (a save blocks Azurite's event loop), the files, the restart (load) time, the table process's RSS and
 * heap, and whether the data came back.
 *
 *   node bench/scale/azuritePersist.js [--sizes 100000,500000,1000000] [--modes stock,streamed,memory] [--heap MB]
 *
 * `memory`: Azurite in memory (no persistence), for the fill rate and stalls without saves.
 *
 * Prints one JSON object. Run under `flock /tmp/bench.lock`.
 */
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const { performance } = require('node:perf_hooks');
const { TableClient } = require('@azure/data-tables');
const { Azurite } = require('../../dist/lib/runtime/azurite.js');

const arg = (name, fallback) => {
  const i = process.argv.indexOf(`--${name}`);
  return i > 0 ? process.argv[i + 1] : fallback;
};
const sizes = arg('sizes', '100000,500000,1000000').split(',').map(Number);
const modes = arg('modes', 'stock,streamed').split(',');
const heapMB = Number(arg('heap', 0)) || undefined;
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const rssMB = (pid) => {
  try {
    const m = /VmRSS:\s+(\d+)/.exec(fs.readFileSync(`/proc/${pid}/status`, 'utf8'));
    return m ? Math.round(Number(m[1]) / 1024) : null;
  } catch {
    return null;
  }
};
const dirMB = (dir) => {
  const files = {};
  let total = 0;
  for (const f of fs.readdirSync(dir)) {
    const size = fs.statSync(path.join(dir, f)).size;
    total += size;
    if (size > 1024 * 1024) files[f] = Math.round(size / 1024 / 1024);
  }
  return { totalMB: Math.round(total / 1024 / 1024), largeFilesMB: files };
};
const alive = (pid) => {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
};
const entity = (i) => ({ partitionKey: `p${Math.floor(i / 10000)}`, rowKey: String(i).padStart(8, '0'), d: 'x'.repeat(900) });

async function fill(client, n) {
  await client.createTable();
  let next = 0;
  const t0 = performance.now();
  await Promise.all(
    Array.from({ length: 4 }, async () => {
      while (next < n) {
        const s = next;
        next += 100;
        const actions = [];
        for (let i = s; i < Math.min(n, s + 100); i++) actions.push(['create', entity(i)]);
        await client.submitTransaction(actions);
      }
    }),
  );
  return (performance.now() - t0) / 1000;
}

/** Probe a point read every 100 ms for `ms`: the longest answer is the longest stall (a save in progress). */
async function stalls(client, ms, pid) {
  let longest = 0;
  const end = Date.now() + ms;
  while (Date.now() < end && alive(pid)) {
    const t = performance.now();
    try {
      await client.getEntity('p0', '00000000', { abortSignal: AbortSignal.timeout(120_000) });
    } catch {
      break;
    }
    longest = Math.max(longest, performance.now() - t);
    await sleep(100);
  }
  return Math.round(longest);
}

async function one(mode, n) {
  const memory = mode === 'memory';
  const location = fs.mkdtempSync(path.join(os.tmpdir(), `azpersist-${mode}-`));
  const logs = [];
  const opts = { location: memory ? undefined : location, services: ['table'], stockTable: mode === 'stock', maxHeapMB: heapMB, onLog: (l) => logs.push(l) };
  const r = { mode, entities: n };
  let az = new Azurite(opts);
  try {
    await az.start();
    let pid = az.pids[0];
    const client = () => TableClient.fromConnectionString(az.connectionString, 'PersistBench', { allowInsecureConnection: true });
    try {
      r.fillSeconds = +(await fill(client(), n)).toFixed(1);
      r.fillPerSecond = Math.round(n / r.fillSeconds);
    } catch (err) {
      r.fillError = String(err.message).slice(0, 200);
    }
    r.rssAfterFillMB = rssMB(pid);
    // Stock saves every 5 s; ours every max(5 s, 2 x last save). Watch a few save periods.
    r.longestStallWhileSavingMs = await stalls(client(), mode === 'stock' ? 20_000 : 40_000, pid);
    r.aliveAfterSaves = alive(pid);
    const statsFile = path.join(location, 'azurite-table-stats.json');
    if (fs.existsSync(statsFile)) {
      const s = JSON.parse(fs.readFileSync(statsFile, 'utf8'));
      r.lastSave = s.lastSave;
      r.heapUsedMB = Math.round(s.heapUsedBytes / 1048576);
      r.heapLimitMB = Math.round(s.heapLimitBytes / 1048576);
    }
    if (mode === 'stock' && r.aliveAfterSaves) {
      // Azurite's table main saves on SIGINT only.
      process.kill(pid, 'SIGINT');
      const t = Date.now();
      while (alive(pid) && Date.now() - t < 300_000) await sleep(200);
    }
    const t0 = performance.now();
    if (memory) {
      return r;
    }
    await az.stop();
    r.stopSeconds = +((performance.now() - t0) / 1000).toFixed(1);
    r.errors = logs.filter((l) => /error|invalid string|heap/i.test(l)).map((l) => l.slice(0, 200));
    r.files = dirMB(location);
    const t1 = performance.now();
    az = new Azurite({ ...opts, onLog: () => undefined });
    await az.start();
    pid = az.pids[0];
    r.restartSeconds = +((performance.now() - t1) / 1000).toFixed(1);
    r.rssAfterRestartMB = rssMB(pid);
    const c = client();
    const last = await c.getEntity(entity(n - 1).partitionKey, entity(n - 1).rowKey).then(
      () => true,
      () => false,
    );
    r.lastEntityBack = last;
  } catch (err) {
    r.error = String(err.message).slice(0, 300);
  } finally {
    await az.stop().catch(() => undefined);
    fs.rmSync(location, { recursive: true, force: true });
  }
  process.stderr.write(`${JSON.stringify(r)}\n`);
  return r;
}

(async () => {
  const results = [];
  for (const n of sizes) for (const mode of modes) results.push(await one(mode, n));
  console.log(JSON.stringify({ bench: 'azuritePersist', node: process.version, cpus: os.cpus().length, loadavg: os.loadavg(), results }, null, 2));
})();
