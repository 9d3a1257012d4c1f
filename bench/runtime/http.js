#!/usr/bin/env node
// HTTP overhead of the local runtime: autocannon (50 connections, 10 s) against a trivial function of the
// sample app served by `fnhost start`, and against a bare node:http server answering the same body, in one
// run. Both servers are child processes; autocannon runs here. Prints JSON. Target: ratio >= 0.5.
// Also: CPU microseconds per request of each server (from /proc, robust on a loaded machine), and the
// programming model's floor (bench/runtime/invokeFloor.js: the same function through invokeFunction without
// HTTP), so the figures show how far the runtime is from what the library allows.
//   node bench/runtime/http.js [--connections 50] [--duration 10] [--cpu-prof DIR] [--no-floor]
'use strict';
const { spawn } = require('node:child_process');
const { mkdtempSync } = require('node:fs');
const net = require('node:net');
const os = require('node:os');
const path = require('node:path');
const autocannon = require('autocannon');

const root = path.resolve(__dirname, '../..');
const { freePort } = require(path.join(root, 'dist/lib/runtime/azurite.js'));
const { arg, cpuSeconds, sleep } = require('../support');

const connections = arg('connections', 50);
const PROF_DIR = arg('cpu-prof', '') ? path.resolve(arg('cpu-prof', '')) : undefined;
const duration = arg('duration', 10);

async function waitForPort(port, child) {
  for (let i = 0; i < 400; i++) {
    if (child.exitCode !== null) throw new Error(`server exited with code ${child.exitCode}`);
    const ok = await new Promise((resolve) => {
      const s = net.connect({ host: '127.0.0.1', port }, () => (s.destroy(), resolve(true)));
      s.once('error', () => resolve(false));
    });
    if (ok) return;
    await sleep(50);
  }
  throw new Error(`nothing listens on ${port}`);
}

const BARE = `require('node:http').createServer((req, res) => { req.resume(); const b = Buffer.from('pong');
  res.writeHead(200, { 'content-type': 'text/plain;charset=UTF-8', 'content-length': b.length }); res.end(b); })
  .listen(Number(process.argv[1]), '127.0.0.1');`;

async function measure(url, pid) {
  const warm = await autocannon({ url, connections, duration: 2 });
  void warm;
  const cpu0 = cpuSeconds(pid);
  const r = await autocannon({ url, connections, duration });
  const cpu1 = cpuSeconds(pid);
  return {
    cpuMicrosPerRequest: cpu0 === null || cpu1 === null ? null : Math.round(((cpu1 - cpu0) * 1e6) / r.requests.total),
    rps: Math.round(r.requests.average),
    p50Ms: r.latency.p50,
    p99Ms: r.latency.p99,
    errors: r.errors + r.timeouts,
    non2xx: r.non2xx,
    requests: r.requests.total,
  };
}

async function withServer(args, env, url, port) {
  const child = spawn(process.execPath, args, { env: { ...process.env, ...env }, stdio: ['ignore', 'ignore', 'inherit'] });
  try {
    await waitForPort(port, child);
    // The runtime listens before it opens its gate; a first request waits for start-up to finish.
    await fetch(url);
    return await measure(url, child.pid);
  } finally {
    child.kill('SIGTERM');
    await new Promise((r) => (child.exitCode !== null ? r() : child.once('exit', r)));
  }
}

(async () => {
  const runtimePort = await freePort();
  const barePort = await freePort();
  const runtimeUrl = `http://127.0.0.1:${runtimePort}/api/ping`;
  const bareUrl = `http://127.0.0.1:${barePort}/api/ping`;
  const dataDir = mkdtempSync(path.join(os.tmpdir(), 'bench-runtime-'));
  const cli = path.join(root, 'dist/lib/runtime/cli.js');
  const runtime = await withServer(
    [
      ...(PROF_DIR ? ['--cpu-prof', '--cpu-prof-dir', PROF_DIR] : []),
      cli,
      'start',
      '--app',
      path.join(root, 'test/fixtures/sample-app'),
      '--port',
      String(runtimePort),
      '--data-dir',
      dataDir,
    ],
    // No storage: the ping function needs none, and the sample app's timers then keep no status.
    { AzureWebJobsStorage: '', LOG_FORMAT: '' },
    runtimeUrl,
    runtimePort,
  );
  const bare = await withServer(['-e', BARE, String(barePort)], {}, bareUrl, barePort);
  const floor = process.argv.includes('--no-floor')
    ? {}
    : await new Promise((resolve, reject) => {
        const child = spawn(process.execPath, [path.join(__dirname, 'invokeFloor.js'), '--concurrency', String(connections), '--duration', String(duration)], {
          stdio: ['ignore', 'pipe', 'inherit'],
        });
        let out = '';
        child.stdout.on('data', (d) => (out += d));
        child.once('exit', (code) => (code === 0 ? resolve(JSON.parse(out)) : reject(new Error(`invokeFloor exited with ${code}`))));
      });
  const ratio = Math.round((runtime.rps / bare.rps) * 100) / 100;
  const result = {
    benchmark: 'runtime-http',
    connections,
    durationSec: duration,
    node: process.version,
    cpus: os.cpus().length,
    runtimeRps: runtime.rps,
    bareRps: bare.rps,
    ratio,
    target: 0.5,
    meetsTarget: ratio >= 0.5,
    runtimeP50Ms: runtime.p50Ms,
    runtimeP99Ms: runtime.p99Ms,
    bareP50Ms: bare.p50Ms,
    bareP99Ms: bare.p99Ms,
    runtimeErrors: runtime.errors,
    runtimeNon2xx: runtime.non2xx,
    bareErrors: bare.errors,
    runtimeCpuMicrosPerRequest: runtime.cpuMicrosPerRequest,
    bareCpuMicrosPerRequest: bare.cpuMicrosPerRequest,
    // The programming model alone (no HTTP, no host): invocations/s and CPU per invocation.
    libraryFloorInvocationsPerSecond: floor.invocationsPerSecond,
    libraryFloorCpuMicrosPerInvocation: floor.cpuMicrosPerInvocation,
    // Best ratio the library allows: bare HTTP CPU / (bare HTTP CPU + library CPU).
    ratioCeilingFromCpu:
      bare.cpuMicrosPerRequest && floor.cpuMicrosPerInvocation
        ? Math.round((bare.cpuMicrosPerRequest / (bare.cpuMicrosPerRequest + floor.cpuMicrosPerInvocation)) * 100) / 100
        : null,
    loadAverage: os.loadavg().map((n) => Number(n.toFixed(2))),
  };
  process.stdout.write(`${JSON.stringify(result, null, 2)}\n`);
})().catch((err) => {
  process.stderr.write(`${err.stack || err}\n`);
  process.exit(1);
});
