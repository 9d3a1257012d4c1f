'use strict';
/**
 * One query scenario over HTTP with autocannon (the mesh benches: bench/mesh/query.js, bench/scale/scale.js):
 * a warm-up that is not counted, then `duration` seconds at `connections` connections; every response's own
 * time goes into p50/p95/p99.
 */
const autocannon = require('autocannon');

const round = (x, d = 2) => (x === null || x === undefined ? null : Math.round(x * 10 ** d) / 10 ** d);

function percentile(sorted, p) {
  return sorted.length ? round(sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * p))]) : null;
}

/**
 * `makeRequest()` gives each request's { method, path, body }; `headers` go with every request.
 * @returns {Promise<{ scenario: string, connections: number, requests: number, rps: number, p50Ms: number,
 *   p95Ms: number, p99Ms: number, non2xx: number, errors: number }>}
 */
async function measure(base, headers, name, makeRequest, connections, { duration = 8, warmup = 2 } = {}) {
  const run = (seconds) =>
    new Promise((resolve, reject) => {
      const times = [];
      const inst = autocannon(
        { url: base, connections, duration: seconds, headers, requests: [{ setupRequest: (req) => ({ ...req, ...makeRequest() }) }] },
        (err, result) => (err ? reject(err) : resolve({ result, times })),
      );
      inst.on('response', (_client, _status, _bytes, responseTime) => times.push(responseTime));
    });
  await run(warmup);
  const { result, times } = await run(duration);
  times.sort((a, b) => a - b);
  return {
    scenario: name,
    connections,
    requests: result.requests.total,
    rps: Math.round(result.requests.average),
    p50Ms: percentile(times, 0.5),
    p95Ms: percentile(times, 0.95),
    p99Ms: percentile(times, 0.99),
    non2xx: result.non2xx,
    errors: result.errors + result.timeouts,
  };
}

module.exports = { measure, percentile, round };
