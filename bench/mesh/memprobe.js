'use strict';
/**
 * Preload for the service under the mesh benchmark (`NODE_OPTIONS=--expose-gc --require .../memprobe.js`):
 * on SIGUSR2, collects garbage and writes the process's memory figures to $MESH_BENCH_MEMPROBE/<pid>-<n>.json,
 * so the benchmark can read the heap the read model holds in the service itself, not only its RSS.
 */
const { renameSync, writeFileSync } = require('node:fs');
const path = require('node:path');

const dir = process.env.MESH_BENCH_MEMPROBE;
if (dir) {
  let n = 0;
  process.on('SIGUSR2', () => {
    if (global.gc) {
      global.gc();
      global.gc();
    }
    const m = process.memoryUsage();
    const file = path.join(dir, `${process.pid}-${++n}.json`);
    // Written then renamed, so the reader never sees half a file.
    writeFileSync(
      `${file}.tmp`,
      JSON.stringify({ gc: Boolean(global.gc), rss: m.rss, heapUsed: m.heapUsed, heapTotal: m.heapTotal, external: m.external, arrayBuffers: m.arrayBuffers }),
    );
    renameSync(`${file}.tmp`, file);
  });
}
