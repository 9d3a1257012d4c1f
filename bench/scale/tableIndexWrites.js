#!/usr/bin/env node
'use strict';
/**
 * The embedded table store's index (lib/runtime/azuriteTableIndex.ts `TableIndex`) under the write pattern of
 * the mesh history at scale, in this process (no Azurite, no HTTP): one partition already holding `--rows`
 * keys in random order (a history partition at a million identities holds about 62,500 after a directory
 * import), then `--rows` more random keys inserted in batches of 100 (a transaction), with a range scan of
 * 10 keys after every batch (the history read of an object). Before the index kept its key lists lazily, each
 * insert spliced the partition's ordered key list (O(n)). Prints JSON: seconds and CPU seconds for the inserts
 * and scans, and the mean batch time of the first and last tenth.
 *
 * Usage: npm run build && node bench/scale/tableIndexWrites.js [--rows 62500,125000,250000] [--root /other/checkout]
 */
const crypto = require('node:crypto');
const os = require('node:os');
const path = require('node:path');
const { arg } = require('../support');

const ROOT = path.resolve(arg('root', path.resolve(__dirname, '../..')));
const SIZES = String(arg('rows', '62500,125000,250000')).split(',').map(Number);
const BATCH = 100;
const { TableIndex } = require(path.join(ROOT, 'dist/lib/runtime/azuriteTableIndex.js'));

const key = (i) => `${crypto.createHash('md5').update(`k${i}`).digest('hex')}_20261126_run`;
const entity = (i) => ({ PartitionKey: 'h7', RowKey: key(i), v: i });
const ANY = { partitionKey: {}, rowKey: {} };

function run(rows) {
  const ix = new TableIndex();
  for (let i = 0; i < rows; i++) ix.add(entity(i));
  // A first range read builds the ordered key list, as the first history read of a run does.
  [...ix.scan({ ...ANY, rowKey: { lo: key(0), loInclusive: true } })].slice(0, 1);
  const batchMs = [];
  const cpu0 = process.cpuUsage();
  const t0 = performance.now();
  let scanned = 0;
  for (let start = rows; start < 2 * rows; start += BATCH) {
    const b0 = performance.now();
    for (let i = start; i < Math.min(2 * rows, start + BATCH); i++) ix.add(entity(i));
    const lo = key(start);
    const it = ix.scan({ partitionKey: {}, rowKey: { lo, loInclusive: true } });
    for (let n = 0; n < 10; n++) if (!it.next().done) scanned++;
    batchMs.push(performance.now() - b0);
  }
  const seconds = (performance.now() - t0) / 1000;
  const cpu = process.cpuUsage(cpu0);
  if (ix.size !== 2 * rows) throw new Error(`index holds ${ix.size}, expected ${2 * rows}`);
  const tenth = Math.max(1, Math.floor(batchMs.length / 10));
  const mean = (xs) => +(xs.reduce((a, b) => a + b, 0) / xs.length).toFixed(3);
  return {
    rowsBefore: rows,
    inserted: rows,
    batches: batchMs.length,
    seconds: +seconds.toFixed(2),
    // On a busy machine the wall time carries other processes' share of the cores: this does not.
    cpuSeconds: +((cpu.user + cpu.system) / 1e6).toFixed(2),
    usPerInsert: +((seconds * 1e6) / rows).toFixed(1),
    firstTenthBatchMs: mean(batchMs.slice(0, tenth)),
    lastTenthBatchMs: mean(batchMs.slice(-tenth)),
    scanned,
  };
}

const results = SIZES.map(run);
console.log(
  JSON.stringify(
    { bench: 'tableIndexWrites', root: ROOT, batch: BATCH, results, loadAverage: os.loadavg().map((x) => +x.toFixed(2)), date: new Date().toISOString() },
    null,
    2,
  ),
);
