#!/usr/bin/env node
'use strict';
/**
 * The mesh read model kept up to date during a run (lib/mesh/readModel.ts `applyStates`, fed by the mesh feed
 * after every page an import or an export writes), in this process, no storage:
 *   1. `create`: N new objects in pages of 1,000 (a directory's full import into an empty mesh);
 *   2. `update`: every object changed once, in pages of 1,000 (an HR import joining and adding attributes, or an
 *      export linking each object to its target);
 * then one read of the ordered index (the mesh list a console asks for). With `--read-every K`, a mesh list is
 * also read every K pages (a console open during the run). For each stage: seconds, CPU seconds, and the mean
 * page time of its first and last tenth of pages: equal when the cost per page does not grow with the mesh.
 *
 * Usage: npm run build && node --expose-gc bench/scale/readModelApply.js [--objects 100000,300000] [--read-every 0]
 *          [--root /other/checkout] (measure its dist/: the code before a change)
 * Prints JSON.
 */
const path = require('node:path');
const os = require('node:os');
const { arg } = require('../support');
const { meshObject } = require('./meshObjects');

const ROOT = path.resolve(arg('root', path.resolve(__dirname, '../..')));
const SIZES = String(arg('objects', '100000,300000')).split(',').map(Number);
const READ_EVERY = arg('read-every', 0);
const PAGE = 1000;
const dist = (p) => require(path.join(ROOT, 'dist/lib', p));

function stage(name, pages, model, make) {
  if (global.gc) global.gc();
  const cpu0 = process.cpuUsage();
  const t0 = performance.now();
  const pageMs = [];
  let reads = 0;
  for (let p = 0; p < pages; p++) {
    const changes = make(p);
    const s = performance.now();
    model.applyStates(changes);
    if (READ_EVERY && (p + 1) % READ_EVERY === 0) {
      model.all.at(0);
      reads++;
    }
    pageMs.push(performance.now() - s);
  }
  const r = performance.now();
  model.all.at(0);
  const readMs = performance.now() - r;
  const seconds = (performance.now() - t0) / 1000;
  const cpu = process.cpuUsage(cpu0);
  const tenth = Math.max(1, Math.floor(pages / 10));
  const mean = (xs) => +(xs.reduce((a, b) => a + b, 0) / xs.length).toFixed(2);
  return {
    stage: name,
    pages,
    seconds: +seconds.toFixed(2),
    cpuSeconds: +((cpu.user + cpu.system) / 1e6).toFixed(2),
    firstTenthPageMs: mean(pageMs.slice(0, tenth)),
    lastTenthPageMs: mean(pageMs.slice(-tenth)),
    readsDuring: reads,
    readAfterMs: +readMs.toFixed(1),
  };
}

function main() {
  const { projectedMeshId, consolidate } = dist('mesh/model.js');
  const { MeshReadModel } = dist('mesh/readModel.js');
  const results = [];
  for (const n of SIZES) {
    const model = new MeshReadModel();
    const pages = Math.ceil(n / PAGE);
    const page = (p, run, at0) => {
      const out = [];
      for (let i = p * PAGE; i < Math.min(n, (p + 1) * PAGE); i++) {
        const o = meshObject(i, projectedMeshId, consolidate, run, at0);
        out.push({ id: o.id, state: o });
      }
      return out;
    };
    const create = stage('create', pages, model, (p) => page(p, 'run-create', Date.UTC(2026, 0, 1)));
    const update = stage('update', pages, model, (p) => page(p, 'run-update', Date.UTC(2026, 0, 2)));
    if (model.size !== n) throw new Error(`read model holds ${model.size} objects, expected ${n}`);
    results.push({ objects: n, stages: [create, update], heapUsedMB: Math.round(process.memoryUsage().heapUsed / 1e6) });
  }
  console.log(
    JSON.stringify(
      {
        bench: 'readModelApply',
        root: ROOT,
        pageSize: PAGE,
        readEvery: READ_EVERY,
        results,
        loadAverage: os.loadavg().map((x) => +x.toFixed(2)),
        cpus: os.cpus().length,
        date: new Date().toISOString(),
      },
      null,
      2,
    ),
  );
}

main();
