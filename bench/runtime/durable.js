#!/usr/bin/env node
'use strict';
/**
 * Durable task hub benchmark: 20 orchestrations x 50 activities each (fan-out/fan-in of no-op activities)
 * on Azurite, through the local runtime (`fnhost start`) hosting test/fixtures/durable-app. Prints JSON:
 * activity executions per second (target >= 300) and the per-orchestration overhead (start to Completed
 * of an orchestration that schedules nothing, run one at a time), in milliseconds.
 *
 * Also prints the CPU seconds the runtime process and the Azurite table process spent in the measured phase
 * (from /proc), and the load average before and after. `--cpu-prof DIR` writes a V8 CPU profile of the runtime.
 *
 * Usage: npm run build && node bench/runtime/durable.js [--orchestrations 20] [--activities 50] [--cpu-prof DIR]
 */
const { spawn } = require('node:child_process');
const { mkdtempSync, rmSync } = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const root = path.resolve(__dirname, '../..');
const { Azurite, freePort, portAnswers } = require(path.join(root, 'dist/lib/runtime/azurite.js'));
const { arg, cpuSeconds, sleep } = require('../support');

const ORCH = arg('orchestrations', 20);
const ACTS = arg('activities', 50);
const PROF_DIR = arg('cpu-prof', '') ? path.resolve(arg('cpu-prof', '')) : undefined;
const loadAvg = () => os.loadavg().map((n) => Number(n.toFixed(2)));

async function main() {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'durable-bench-'));
  const azurite = new Azurite();
  await azurite.start();
  const port = await freePort();
  const nodeArgs = PROF_DIR ? ['--cpu-prof', '--cpu-prof-dir', PROF_DIR] : [];
  const child = spawn(
    process.execPath,
    [
      ...nodeArgs,
      path.join(root, 'dist/lib/runtime/cli.js'),
      'start',
      '--app',
      path.join(root, 'test/fixtures/durable-app'),
      '--port',
      String(port),
      '--data-dir',
      dir,
    ],
    {
      env: { ...process.env, AzureWebJobsStorage: azurite.connectionString, LOG_FORMAT: '' },
      stdio: ['ignore', 'ignore', 'inherit'],
    },
  );
  const base = `http://127.0.0.1:${port}`;
  const api = `${base}/runtime/webhooks/durabletask`;
  try {
    for (let i = 0; !(await portAnswers('127.0.0.1', port)); i++) {
      if (i > 300) throw new Error('runtime did not start');
      await sleep(50);
    }
    await sleep(200);
    const start = async (name, id, input) => {
      const r = await fetch(`${api}/orchestrators/${name}/${id}`, {
        method: 'POST',
        body: JSON.stringify(input),
        headers: { 'content-type': 'application/json' },
      });
      if (r.status !== 202) throw new Error(`start ${name}: ${r.status} ${await r.text()}`);
    };
    const status = async (id) => await (await fetch(`${api}/instances/${id}`)).json();
    const waitAll = async (ids, pollMs) => {
      const done = new Map();
      while (done.size < ids.length) {
        for (const id of ids) {
          if (done.has(id)) continue;
          const s = await status(id);
          if (['Completed', 'Failed', 'Terminated'].includes(s.runtimeStatus)) done.set(id, s);
        }
        if (done.size < ids.length) await sleep(pollMs);
      }
      return done;
    };

    // Warm-up (module loading, table creation).
    await start('fanOutNoop', 'warmup', 5);
    await waitAll(['warmup'], 20);

    // Per-orchestration overhead: an orchestration that schedules nothing, one at a time.
    const overheads = [];
    for (let i = 0; i < 10; i++) {
      const t0 = performance.now();
      await start('fanOutNoop', `empty-${i}`, 0);
      await waitAll([`empty-${i}`], 2);
      overheads.push(performance.now() - t0);
    }

    const ids = Array.from({ length: ORCH }, (_, i) => `bench-${i}`);
    const [tablePid] = azurite.pids;
    const cpu0 = { runtime: cpuSeconds(child.pid), azuriteTable: cpuSeconds(tablePid) };
    const loadBefore = loadAvg();
    const t0 = performance.now();
    await Promise.all(ids.map((id) => start('fanOutNoop', id, ACTS)));
    const results = await waitAll(ids, 20);
    const seconds = (performance.now() - t0) / 1000;
    const cpu1 = { runtime: cpuSeconds(child.pid), azuriteTable: cpuSeconds(tablePid) };
    const cpuUsed = (k) => (cpu0[k] === null || cpu1[k] === null ? null : Number((cpu1[k] - cpu0[k]).toFixed(2)));
    const failed = [...results.values()].filter((s) => s.runtimeStatus !== 'Completed' || s.output !== ACTS);
    if (failed.length) throw new Error(`${failed.length} orchestrations did not complete correctly`);
    overheads.sort((a, b) => a - b);
    const activities = ORCH * ACTS;
    console.log(
      JSON.stringify(
        {
          benchmark: 'durable-task-hub',
          orchestrations: ORCH,
          activitiesPerOrchestration: ACTS,
          activities,
          seconds: Number(seconds.toFixed(3)),
          activityExecutionsPerSecond: Math.round(activities / seconds),
          targetActivityExecutionsPerSecond: 300,
          perOrchestrationOverheadMs: {
            median: Math.round(overheads[overheads.length >> 1]),
            min: Math.round(overheads[0]),
            max: Math.round(overheads[overheads.length - 1]),
          },
          cpuSecondsInMeasuredPhase: { runtime: cpuUsed('runtime'), azuriteTable: cpuUsed('azuriteTable') },
          cpus: os.cpus().length,
          loadAverage: { before: loadBefore, after: loadAvg() },
        },
        null,
        2,
      ),
    );
  } finally {
    child.kill('SIGTERM');
    await new Promise((r) => child.once('exit', r));
    await azurite.stop();
    rmSync(dir, { recursive: true, force: true });
  }
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
