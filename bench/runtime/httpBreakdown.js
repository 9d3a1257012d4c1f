#!/usr/bin/env node
// Where the CPU of one HTTP request goes, measured inside ONE server process so that a loaded machine
// affects every figure alike: the process hosts the sample app through FunctionsHost (the runtime's HTTP
// front end) and a bare node:http server answering the same body; a child process drives load. Blocks
// alternate (runtime HTTP, bare HTTP, library floor = the ping function through invokeFunction without
// HTTP), each `--requests` requests with 50 in flight, `--rounds` times; CPU microseconds per request of
// this process (process.cpuUsage) per block, median of the rounds. The load generator's CPU is not counted.
//   node bench/runtime/httpBreakdown.js [--requests 20000] [--rounds 3]
'use strict';
const { fork } = require('node:child_process');
const http = require('node:http');
const os = require('node:os');
const path = require('node:path');

const root = path.resolve(__dirname, '../..');
const { arg } = require('../support');
const REQUESTS = arg('requests', 20000);
const ROUNDS = arg('rounds', 3);
const CONNECTIONS = 50;

if (process.argv[2] === '--driver') {
  // Load generator: one message per block, { url, amount } -> 'done'.
  const autocannon = require('autocannon');
  process.on('message', async ({ url, amount }) => {
    const r = await autocannon({ url, connections: CONNECTIONS, amount });
    process.send({ non2xx: r.non2xx, errors: r.errors });
  });
  return;
}

const { FunctionsHost } = require(path.join(root, 'dist/lib/runtime/host.js'));
const { invokeFunction } = require(path.join(root, 'dist/lib/runtime/invoke.js'));
const { httpInvocationRequest } = require(path.join(root, 'dist/lib/runtime/httpHost.js'));

const median = (xs) => [...xs].sort((a, b) => a - b)[xs.length >> 1];

(async () => {
  // As http.js runs the runtime: no storage, text logs. Extensions read process.env, so set it there.
  process.env.AzureWebJobsStorage = '';
  process.env.LOG_FORMAT = '';
  // Log lines go nowhere, as with `stdio: 'ignore'` in http.js, but are still formatted.
  const host = new FunctionsHost({ appDir: path.join(root, 'test/fixtures/sample-app'), port: 0, write: () => {} });
  await host.start();
  const bare = http.createServer((req, res) => {
    req.resume();
    const b = Buffer.from('pong');
    res.writeHead(200, { 'content-type': 'text/plain;charset=UTF-8', 'content-length': b.length });
    res.end(b);
  });
  await new Promise((r) => bare.listen(0, '127.0.0.1', r));
  const runtimeUrl = `${host.baseUrl}/api/ping`;
  const bareUrl = `http://127.0.0.1:${bare.address().port}/api/ping`;
  const driver = fork(__filename, ['--driver'], { stdio: ['ignore', 'ignore', 'inherit', 'ipc'] });
  const drive = (url, amount) =>
    new Promise((resolve) => {
      driver.once('message', resolve);
      driver.send({ url, amount });
    });
  const fn = host.registry.get('ping');
  const url = new URL(runtimeUrl);
  const headers = { host: url.host, connection: 'keep-alive', 'user-agent': 'autocannon' };
  let seq = 0;
  const floor = async (amount) => {
    const worker = async () => {
      for (let i = 0; i < amount / CONNECTIONS; i++) {
        const id = `floor-${++seq}`;
        await invokeFunction(host.registry, fn, httpInvocationRequest(fn, {}, 'GET', url, { ...headers }, null, id), { invocationId: id, log: () => {} });
      }
    };
    await Promise.all(Array.from({ length: CONNECTIONS }, worker));
  };
  const cpuPer = async (amount, run) => {
    const c0 = process.cpuUsage();
    const out = await run();
    const c = process.cpuUsage(c0);
    return { us: (c.user + c.system) / amount, sys: c.system / amount, out };
  };
  const blocks = { runtimeHttp: [], bareHttp: [], libraryFloor: [] };
  const system = { runtimeHttp: [], bareHttp: [], libraryFloor: [] };
  let failures = 0;
  // Warm-up of every path (JIT, pools).
  await drive(runtimeUrl, 5000);
  await drive(bareUrl, 5000);
  await floor(5000);
  for (let r = 0; r < ROUNDS; r++) {
    const a = await cpuPer(REQUESTS, () => drive(runtimeUrl, REQUESTS));
    const b = await cpuPer(REQUESTS, () => drive(bareUrl, REQUESTS));
    const f = await cpuPer(REQUESTS, () => floor(REQUESTS));
    failures += a.out.non2xx + a.out.errors + b.out.non2xx + b.out.errors;
    blocks.runtimeHttp.push(a.us);
    blocks.bareHttp.push(b.us);
    blocks.libraryFloor.push(f.us);
    system.runtimeHttp.push(a.sys);
    system.bareHttp.push(b.sys);
    system.libraryFloor.push(f.sys);
  }
  const m = Object.fromEntries(Object.entries(blocks).map(([k, v]) => [k, Math.round(median(v))]));
  const result = {
    benchmark: 'runtime-http-breakdown',
    requestsPerBlock: REQUESTS,
    rounds: ROUNDS,
    cpuMicrosPerRequest: m,
    // What the runtime adds beyond the library and node:http themselves (routing, request/response
    // conversion, logging, bookkeeping).
    runtimeOwnMicros: m.runtimeHttp - m.libraryFloor - m.bareHttp,
    // Of which in the kernel (socket reads and writes).
    systemMicrosPerRequest: Object.fromEntries(Object.entries(system).map(([k, v]) => [k, Math.round(median(v))])),
    perRound: Object.fromEntries(Object.entries(blocks).map(([k, v]) => [k, v.map(Math.round)])),
    failures,
    loadAverage: os.loadavg().map((n) => Number(n.toFixed(2))),
  };
  process.stdout.write(`${JSON.stringify(result, null, 2)}\n`);
  driver.kill();
  bare.close();
  await host.stop();
  process.exit(0);
})().catch((err) => {
  process.stderr.write(`${err.stack || err}\n`);
  process.exit(1);
});
