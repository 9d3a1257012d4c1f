'use strict';
/**
 * Preload (`NODE_OPTIONS=--require .../cpuprof.js`, since --cpu-prof is not allowed in NODE_OPTIONS): records a
 * V8 CPU profile of the process and writes it to $SYNC_BENCH_CPUPROF/<pid>.cpuprofile when the process exits,
 * or to <pid>-<n>.cpuprofile on SIGUSR2 (then profiles on: Azurite may be killed before its exit handlers run).
 */
const inspector = require('node:inspector');
const { writeFileSync } = require('node:fs');
const path = require('node:path');

const dir = process.env.SYNC_BENCH_CPUPROF;
if (dir) {
  const session = new inspector.Session();
  session.connect();
  session.post('Profiler.enable');
  session.post('Profiler.setSamplingInterval', { interval: 1000 });
  session.post('Profiler.start');
  let n = 0;
  process.on('SIGUSR2', () => {
    session.post('Profiler.stop', (err, res) => {
      if (!err) writeFileSync(path.join(dir, `${process.pid}-${++n}.cpuprofile`), JSON.stringify(res.profile));
      session.post('Profiler.start');
    });
  });
  process.on('exit', () => {
    session.post('Profiler.stop', (err, res) => {
      if (!err) writeFileSync(path.join(dir, `${process.pid}.cpuprofile`), JSON.stringify(res.profile));
    });
  });
}
