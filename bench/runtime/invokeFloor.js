#!/usr/bin/env node
// The programming model's floor for bench/runtime/http.js: the same trivial HTTP function of the sample app
// invoked through lib/runtime/invoke.ts invokeFunction (the @azure/functions pipeline: HttpRequest/undici
// Request, hooks, handler, HttpResponse, RPC response) with no HTTP server, no logging and no host wrapper,
// `--concurrency` invocations in flight for `--duration` seconds. Prints JSON: invocations/s and CPU
// microseconds per invocation of this process. http.js runs it as a child process.
//   node bench/runtime/invokeFloor.js [--concurrency 50] [--duration 10]
'use strict';
const os = require('node:os');
const path = require('node:path');

const root = path.resolve(__dirname, '../..');
const { arg } = require('../support');
const concurrency = arg('concurrency', 50);
const duration = arg('duration', 10);

const { FunctionsHost } = require(path.join(root, 'dist/lib/runtime/host.js'));
const { invokeFunction } = require(path.join(root, 'dist/lib/runtime/invoke.js'));
const { httpInvocationRequest } = require(path.join(root, 'dist/lib/runtime/httpHost.js'));

async function run(seconds, fn, registry, url, headers) {
  const until = performance.now() + seconds * 1000;
  let count = 0;
  let failures = 0;
  let seq = 0;
  const worker = async () => {
    while (performance.now() < until) {
      const id = `floor-${++seq}`;
      const out = await invokeFunction(registry, fn, httpInvocationRequest(fn, {}, 'GET', url, { ...headers }, null, id), { invocationId: id, log: () => {} });
      if (out.response.result?.status !== 'success') failures++;
      count++;
    }
  };
  const cpu0 = process.cpuUsage();
  const t0 = performance.now();
  await Promise.all(Array.from({ length: concurrency }, worker));
  const elapsed = (performance.now() - t0) / 1000;
  const cpu = process.cpuUsage(cpu0);
  return { count, failures, elapsed, cpuUs: cpu.user + cpu.system };
}

(async () => {
  const env = { ...process.env, AzureWebJobsStorage: '', LOG_FORMAT: '' };
  const host = new FunctionsHost({ appDir: path.join(root, 'test/fixtures/sample-app'), port: 0, env, extensions: [], write: () => {} });
  await host.start();
  try {
    const fn = host.registry.get('ping');
    if (!fn) throw new Error('the sample app has no ping function');
    const url = new URL(`${host.baseUrl}/api/ping`);
    const headers = { host: url.host, connection: 'keep-alive' };
    await run(2, fn, host.registry, url, headers);
    const r = await run(duration, fn, host.registry, url, headers);
    const result = {
      benchmark: 'runtime-invoke-floor',
      concurrency,
      durationSec: duration,
      invocationsPerSecond: Math.round(r.count / r.elapsed),
      cpuMicrosPerInvocation: Math.round(r.cpuUs / r.count),
      failures: r.failures,
      loadAverage: os.loadavg().map((n) => Number(n.toFixed(2))),
    };
    process.stdout.write(`${JSON.stringify(result)}\n`);
  } finally {
    await host.stop?.();
  }
  process.exit(0);
})().catch((err) => {
  process.stderr.write(`${err.stack || err}\n`);
  process.exit(1);
});
