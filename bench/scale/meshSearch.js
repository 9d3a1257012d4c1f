#!/usr/bin/env node
'use strict';
/**
 * The mesh advanced search in this process, no storage, no HTTP (lib/mesh/query.ts `queryMesh` on a
 * lib/mesh/readModel.ts MeshReadModel): the scale bench's 3-criteria query (department equals + mail contains +
 * a present attribute, objectType User, take 50) on N generated objects (bench/scale/meshObjects.js), with random
 * values as the scale bench picks them. What the read model costs per query, apart from the HTTP pipeline and
 * the engine's garbage collections.
 *
 * For each size: the model's load time, then `--queries` queries timed one by one (p50, p95, max), with a
 * breakdown of one more round: each criterion's compilation (a value criterion marks its matches) alone; the
 * rest of a query is the pass that counts and orders.
 * A first round of queries warms up (builds each column's search text: once per column until it changes).
 *
 * Usage: npm run build && node --expose-gc --max-old-space-size=8192 bench/scale/meshSearch.js [--objects 100000,1000000]
 *          [--queries 200] [--root /other/checkout] (measure its dist/: the code before a change)
 * Prints JSON.
 */
const path = require('node:path');
const os = require('node:os');
const { arg } = require('../support');
const { meshObject } = require('./meshObjects');

const ROOT = path.resolve(arg('root', path.resolve(__dirname, '../..')));
const SIZES = String(arg('objects', '100000')).split(',').map(Number);
const QUERIES = arg('queries', 200);
const dist = (p) => require(path.join(ROOT, 'dist/lib', p));

const pick = (a) => a[Math.floor(Math.random() * a.length)];
const DEPARTMENTS = Array.from({ length: 20 }, (_, i) => `Department ${String.fromCharCode(65 + i)}`);
const query = () => ({
  objectType: 'User',
  criteria: [
    { attributeName: 'department', operator: 'equals', value: pick(DEPARTMENTS) },
    // The generator's mails are user<i>@example.com: `user<0..99>` matches about as many as the scale bench's `u<0..99>`.
    { attributeName: 'mail', operator: 'contains', value: `user${Math.floor(Math.random() * 100)}` },
    { attributeName: 'title', operator: 'ispresent' },
  ],
  skip: pick([0, 50]),
  take: 50,
});

const quantile = (xs, q) => {
  const s = [...xs].sort((a, b) => a - b);
  return +s[Math.min(s.length - 1, Math.floor(q * s.length))].toFixed(2);
};

function main() {
  const { projectedMeshId, consolidate } = dist('mesh/model.js');
  const { MeshReadModel } = dist('mesh/readModel.js');
  const { queryMesh, compileCriterion } = dist('mesh/query.js');
  const results = [];
  for (const n of SIZES) {
    const model = new MeshReadModel();
    const t0 = performance.now();
    for (let start = 0; start < n; start += 1000) {
      const page = [];
      for (let i = start; i < Math.min(n, start + 1000); i++) page.push(meshObject(i, projectedMeshId, consolidate));
      model.loadPage(page);
    }
    model.all.at(0);
    const loadSeconds = (performance.now() - t0) / 1000;
    if (global.gc) global.gc();
    // Warm-up: every column's search text built, the code optimised.
    for (let k = 0; k < 20; k++) queryMesh(model, query());
    if (global.gc) global.gc();
    const ms = [];
    let hits = 0;
    for (let k = 0; k < QUERIES; k++) {
      const q = query();
      const s = performance.now();
      const page = queryMesh(model, q);
      ms.push(performance.now() - s);
      hits += page.totalCount;
    }
    // One more round, by parts: each criterion compiled (a value criterion marks its matches: a pass over the
    // column's search text), alone.
    const parts = { department: [], mail: [], title: [] };
    for (let k = 0; k < Math.min(QUERIES, 50); k++) {
      query().criteria.forEach((c, i) => {
        const s = performance.now();
        compileCriterion(model, c, i);
        parts[c.attributeName].push(performance.now() - s);
      });
    }
    results.push({
      objects: n,
      loadSeconds: +loadSeconds.toFixed(1),
      queries: QUERIES,
      meanTotalCount: Math.round(hits / QUERIES),
      p50Ms: quantile(ms, 0.5),
      p95Ms: quantile(ms, 0.95),
      maxMs: quantile(ms, 1),
      partsP50Ms: Object.fromEntries(Object.entries(parts).map(([k, v]) => [k, quantile(v, 0.5)])),
      heapUsedMB: Math.round(process.memoryUsage().heapUsed / 1e6),
    });
  }
  console.log(
    JSON.stringify(
      { bench: 'meshSearch', root: ROOT, results, loadAverage: os.loadavg().map((x) => +x.toFixed(2)), cpus: os.cpus().length, date: new Date().toISOString() },
      null,
      2,
    ),
  );
}

main();
