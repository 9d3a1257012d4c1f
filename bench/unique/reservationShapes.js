#!/usr/bin/env node
'use strict';
/**
 * What a unique rule's reservations cost the storage, by the shape they are written in (BENCHMARKS.md, "Unique
 * values"): N values of one pool reserved against an in-memory Azurite (with the runtime's table index, as the
 * service runs it), in pages of 100, five ways, each twice in the order A B C D E E D C B A:
 *
 * - `rows`: the earlier write (before the per-pool log): one row per value (owner, ruleId, connectorId,
 *   reservedOn), 100 conditional inserts per transaction;
 * - `rowsOwnerOnly`: the same with the owner as the row's only property (what trimming the row could save);
 * - `pageLog`: one row per page holding its 100 values (JSON), inserted in one transaction with an ETag-checked
 *   merge of the pool's head row, after a point read of the head (the write of a per-pool log whose head
 *   orders every reservation);
 * - `pageLogNoRead`: the same transaction without the head's read (its ETag as the transaction's answer would
 *   give it: one request per page);
 * - `service`: what the service does today (lib/storage/uniqueValues.ts `reserveAll`: the pool's log, each page
 *   decided against the pool in memory and appended under the head's ETag from the previous answer).

 * Per shape: wall seconds, Azurite CPU seconds, this process's CPU seconds (the client side: building and
 * sending the transactions), and the storage entity writes. Prints JSON.
 *
 * Usage: npm run bench:unique:shapes [-- --values 20000]
 */
const path = require('node:path');
const { arg, cpuSeconds, ROOT } = require('../support');

const N = arg('values', 20000);
const r2 = (x) => Math.round(x * 100) / 100;

async function main() {
  const { Azurite } = require(path.join(ROOT, 'dist/lib/runtime/azurite.js'));
  const azurite = new Azurite({ services: ['table'] });
  await azurite.start();
  process.env.AzureWebJobsStorage = azurite.connectionString;
  const { submitTransaction, table } = require(path.join(ROOT, 'dist/lib/storage/tables.js'));
  const { reserveAll } = require(path.join(ROOT, 'dist/lib/storage/uniqueValues.js'));
  const tablePid = azurite.pids[0];
  const client = await table('UniqueValues');
  const owner = (i) => `00000000-0000-4000-8000-${String(i).padStart(12, '0')}`;
  const reservedOn = new Date().toISOString();

  const shapes = {
    async rows(pool) {
      const pk = `v.${encodeURIComponent(pool)}`;
      for (let i = 0; i < N; i += 100) {
        const actions = [];
        for (let j = i; j < Math.min(N, i + 100); j++)
          actions.push(['create', { partitionKey: pk, rowKey: `user${j}x`, owner: owner(j), ruleId: owner(1), connectorId: owner(2), reservedOn }]);
        await submitTransaction(client, actions);
      }
      return N;
    },
    async service(pool) {
      for (let i = 0; i < N; i += 100) {
        const page = [];
        for (let j = i; j < Math.min(N, i + 100); j++)
          page.push({ pool, key: `user${j}x`, value: `user${j}x`, owner: owner(j), ruleId: owner(1), connectorId: owner(2), reservedOn });
        if ((await reserveAll(page)).includes(false)) throw new Error('a value was taken');
      }
      return 2 * Math.ceil(N / 100) + 1;
    },
    async rowsOwnerOnly(pool) {
      const pk = `v.${encodeURIComponent(pool)}`;
      for (let i = 0; i < N; i += 100) {
        const actions = [];
        for (let j = i; j < Math.min(N, i + 100); j++) actions.push(['create', { partitionKey: pk, rowKey: `user${j}x`, owner: owner(j) }]);
        await submitTransaction(client, actions);
      }
      return N;
    },
    async pageLog(pool) {
      const pk = `l.${encodeURIComponent(pool)}`;
      await client.createEntity({ partitionKey: pk, rowKey: 'head', seq: 0 });
      let writes = 1;
      for (let i = 0, seq = 1; i < N; i += 100, seq++) {
        const { etag } = await client.getEntity(pk, 'head');
        const values = [];
        for (let j = i; j < Math.min(N, i + 100); j++) values.push([`user${j}x`, owner(j)]);
        await submitTransaction(client, [
          ['update', { partitionKey: pk, rowKey: 'head', seq }, 'Merge', { etag }],
          ['create', { partitionKey: pk, rowKey: `p.${String(seq).padStart(10, '0')}`, values: JSON.stringify(values), reservedOn }],
        ]);
        writes += 2;
      }
      return writes;
    },
    // The same write with the head's ETag known without a read (as it would be from the transaction's answer):
    // the cost of one request per page.
    async pageLogNoRead(pool) {
      const pk = `l.${encodeURIComponent(pool)}`;
      await client.createEntity({ partitionKey: pk, rowKey: 'head', seq: 0 });
      let writes = 1;
      for (let i = 0, seq = 1; i < N; i += 100, seq++) {
        const values = [];
        for (let j = i; j < Math.min(N, i + 100); j++) values.push([`user${j}x`, owner(j)]);
        await submitTransaction(client, [
          ['update', { partitionKey: pk, rowKey: 'head', seq }, 'Merge', { etag: '*' }],
          ['create', { partitionKey: pk, rowKey: `p.${String(seq).padStart(10, '0')}`, values: JSON.stringify(values), reservedOn }],
        ]);
        writes += 2;
      }
      return writes;
    },
  };

  const runs = [];
  const order = ['rows', 'rowsOwnerOnly', 'pageLog', 'pageLogNoRead', 'service', 'service', 'pageLogNoRead', 'pageLog', 'rowsOwnerOnly', 'rows'];
  for (const [i, shape] of order.entries()) {
    const a0 = cpuSeconds(tablePid);
    const c0 = process.cpuUsage();
    const t0 = process.hrtime.bigint();
    const entityWrites = await shapes[shape](`connector/c${i}/login`);
    const c = process.cpuUsage(c0);
    runs.push({
      shape,
      seconds: r2(Number(process.hrtime.bigint() - t0) / 1e9),
      azuriteCpuSeconds: r2(cpuSeconds(tablePid) - a0),
      clientCpuSeconds: r2((c.user + c.system) / 1e6),
      entityWrites,
    });
  }
  const mean = (shape, k) => r2(runs.filter((r) => r.shape === shape).reduce((s, r) => s + r[k], 0) / 2);
  const summary = Object.fromEntries(
    Object.keys(shapes).map((s) => [
      s,
      { seconds: mean(s, 'seconds'), azuriteCpuSeconds: mean(s, 'azuriteCpuSeconds'), clientCpuSeconds: mean(s, 'clientCpuSeconds') },
    ]),
  );
  console.log(JSON.stringify({ bench: 'unique-reservation-shapes', date: new Date().toISOString(), values: N, runs, summary }, null, 2));
  await azurite.stop();
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
