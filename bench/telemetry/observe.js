#!/usr/bin/env node
// What measuring an Admin API request costs: the API boundary's observeRequest (route label, method label,
// histogram observation; tracing off, as by default) around a handler that does nothing, against the same
// handler called directly, in one process, interleaved rounds. Prints JSON (nanoseconds per request).
//   node bench/telemetry/observe.js [--n 200000] [--rounds 5]
'use strict';
const path = require('node:path');
const { arg } = require('../support');

const root = path.resolve(__dirname, '../..');
const { HttpRequest, InvocationContext } = require('@azure/functions');
const { observeRequest } = require(path.join(root, 'dist/lib/telemetry/http.js'));

const n = arg('n', 200_000);
const rounds = arg('rounds', 5);
const request = new HttpRequest({ method: 'GET', url: 'http://127.0.0.1:7071/api/connectors/5b1f0e52-8f0e-4c59-9a43-3d0c7f1c2b7e' });
const context = new InvocationContext({
  functionName: 'getConnector',
  options: { trigger: { type: 'httpTrigger', name: 'httpTrigger', route: 'connectors/{id}' } },
});
const answer = { status: 200 };
const handle = async () => answer;

async function time(fn) {
  const t0 = process.hrtime.bigint();
  for (let i = 0; i < n; i++) await fn();
  return Number(process.hrtime.bigint() - t0) / n;
}

(async () => {
  const bare = [];
  const observed = [];
  await time(handle);
  await time(() => observeRequest(request, context, handle));
  for (let r = 0; r < rounds; r++) {
    bare.push(await time(handle));
    observed.push(await time(() => observeRequest(request, context, handle)));
  }
  const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
  console.log(
    JSON.stringify(
      {
        benchmark: 'telemetry-observe-request',
        requestsPerRound: n,
        rounds,
        node: process.version,
        bareNsPerRequest: Math.round(median(bare)),
        observedNsPerRequest: Math.round(median(observed)),
        overheadNsPerRequest: Math.round(median(observed) - median(bare)),
        loadAverage: require('node:os')
          .loadavg()
          .map((x) => Math.round(x * 100) / 100),
      },
      null,
      2,
    ),
  );
})();
