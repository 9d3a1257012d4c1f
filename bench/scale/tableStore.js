#!/usr/bin/env node
'use strict';
/**
 * The embedded Azurite's table store with and without the runtime's index (lib/runtime/azuriteTableIndex.ts):
 * the same work on Azurite as shipped (`stockTable`) and on the runtime's, each a fresh in-memory table
 * process. N entities of about 300 bytes in P partitions written in batches of 100 (4 in flight, as the
 * engine writes), then N/10 upserts of existing rows, a whole-table read in pages of 1,000, one partition read,
 * and 2,000 point reads. Prints JSON: seconds and the table process's CPU seconds per step, for each store,
 * and whether both answered the same (a hash of every answer).
 *
 * Usage: npm run build && node bench/scale/tableStore.js [--entities 100000] [--partitions 64] [--stores indexed,stock]
 */
const crypto = require('node:crypto');
const path = require('node:path');
const { TableClient } = require('@azure/data-tables');
const { arg, cpuSeconds } = require('../support');

const ROOT = path.resolve(__dirname, '../..');
const N = arg('entities', 100000);
const P = arg('partitions', 64);
const STORES = String(arg('stores', 'indexed,stock')).split(',');

const rowKey = (i) => `${crypto.createHash('md5').update(`r${i}`).digest('hex').slice(0, 16)}_${i}`;

async function timed(pid, f) {
  const c0 = cpuSeconds(pid);
  const t0 = performance.now();
  const out = await f();
  return { seconds: +((performance.now() - t0) / 1000).toFixed(2), cpuSeconds: +(cpuSeconds(pid) - c0).toFixed(1), out };
}

async function measure(store) {
  const { Azurite } = require(path.join(ROOT, 'dist/lib/runtime/azurite.js'));
  const azurite = new Azurite({ services: ['table'], stockTable: store === 'stock' });
  await azurite.start();
  const pid = azurite.pids[0];
  const hash = crypto.createHash('sha1');
  try {
    const client = TableClient.fromConnectionString(azurite.connectionString, 'storebench', { allowInsecureConnection: true });
    await client.createTable();
    const batches = [];
    for (let p = 0; p < P; p++) {
      const ids = [];
      for (let i = p; i < N; i += P) ids.push(i);
      for (let b = 0; b < ids.length; b += 100)
        batches.push(ids.slice(b, b + 100).map((i) => ({ partitionKey: `p${p}`, rowKey: rowKey(i), n: i, body: 'x'.repeat(200) })));
    }
    const run = async (list, kind) => {
      let next = 0;
      const worker = async () => {
        while (next < list.length) {
          const batch = list[next++];
          await client.submitTransaction(batch.map((e) => (kind === 'create' ? ['create', e] : ['upsert', e, 'Replace'])));
        }
      };
      await Promise.all([worker(), worker(), worker(), worker()]);
    };
    const insert = await timed(pid, () => run(batches, 'create'));
    const updates = batches.filter((_, i) => i % 10 === 0).map((b) => b.map((e) => ({ ...e, n: -e.n })));
    const upsert = await timed(pid, () => run(updates, 'upsert'));
    const fullRead = await timed(pid, async () => {
      let n = 0;
      for await (const page of client.listEntities().byPage({ maxPageSize: 1000 })) {
        n += page.length;
        hash.update(page.map((e) => `${e.partitionKey}/${e.rowKey}/${e.n}`).join());
      }
      return n;
    });
    const partitionRead = await timed(pid, async () => {
      let n = 0;
      for await (const page of client.listEntities({ queryOptions: { filter: "PartitionKey eq 'p7'" } }).byPage({ maxPageSize: 1000 })) {
        n += page.length;
        hash.update(page.map((e) => e.rowKey).join());
      }
      return n;
    });
    const pointReads = await timed(pid, async () => {
      for (let k = 0; k < 2000; k++) {
        const i = (k * 7919) % N;
        const e = await client.getEntity(`p${i % P}`, rowKey(i));
        hash.update(String(e.n));
      }
      return 2000;
    });
    const strip = ({ seconds, cpuSeconds }) => ({ seconds, cpuSeconds });
    return {
      store,
      insert: { ...strip(insert), perSecond: Math.round(N / insert.seconds) },
      upsert: { ...strip(upsert), entities: updates.flat().length },
      fullRead: { ...strip(fullRead), entities: fullRead.out },
      partitionRead: { ...strip(partitionRead), entities: partitionRead.out },
      pointReads: strip(pointReads),
      answersHash: hash.digest('hex'),
    };
  } finally {
    await azurite.stop();
  }
}

async function main() {
  const results = [];
  for (const s of STORES) {
    process.stderr.write(`${new Date().toISOString()} ${s}: ${N} entities in ${P} partitions\n`);
    results.push(await measure(s));
  }
  const same = new Set(results.map((r) => r.answersHash)).size === 1;
  console.log(JSON.stringify({ entities: N, partitions: P, results, sameAnswers: same, load: require('node:os').loadavg() }, null, 2));
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
