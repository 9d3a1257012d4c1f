#!/usr/bin/env node
'use strict';
/**
 * The service's CPU per table-storage request, by kind of request, through @azure/data-tables' client (`sdk`:
 * the client's own methods, and transactions with the body built by lib/storage/transaction.ts sent through the
 * client's pipeline) and through the lean client of lib/storage/fastTable.ts (`lean`: the helpers of
 * lib/storage/tables.ts the repositories call). Against a fresh in-memory Azurite (its own process, so the CPU
 * measured here is the client's alone).
 *
 * Kinds, each `--n` requests (default 2,000), 4 in flight:
 * - pointRead: getEntity of one of 2,000 rows of about 600 bytes (10 properties);
 * - upsert: upsertEntity (Merge) of such a row;
 * - updateIfMatch: updateEntity (Replace, If-Match with the row's ETag of the last write) of such a row;
 * - listPage: one page of 100 rows (filter on PartitionKey and a range of RowKey, continuation tokens);
 * - transaction: one entity-group transaction of 100 upserts of such rows (`--n` / 10 of them).
 * The two clients alternate kind by kind over `--rounds` rounds (default 3); the median round is reported.
 *
 * Prints JSON: per kind and client, client CPU microseconds per request (user + system, process.cpuUsage) and
 * wall microseconds per request; the Azurite process's CPU per request beside them; the load average.
 *
 * Usage: npm run build && node bench/storage/requestCost.js [--n 2000] [--rounds 3]
 */
const os = require('node:os');
const path = require('node:path');
const { arg, cpuSeconds, onInterrupt } = require('../support');

const ROOT = path.resolve(__dirname, '../..');
const N = arg('n', 2000);
const ROUNDS = arg('rounds', 3);
const ROWS = 2000;
const IN_FLIGHT = 4;

const row = (pk, i, v = 0) => {
  const e = { partitionKey: pk, rowKey: `r${String(i).padStart(6, '0')}` };
  for (let k = 0; k < 8; k++) e[`a${k}`] = `value ${k} of row ${i} version ${v} `.padEnd(60, 'x');
  e.n = i;
  e.on = new Date(Date.UTC(2026, 0, 1) + i * 1000);
  return e;
};

async function inFlight(n, fn) {
  let next = 0;
  await Promise.all(
    Array.from({ length: IN_FLIGHT }, async () => {
      while (next < n) await fn(next++);
    }),
  );
}

async function main() {
  const { Azurite } = require(path.join(ROOT, 'dist/lib/runtime/azurite.js'));
  const azurite = new Azurite({ services: ['table'] });
  await azurite.start();
  const removeInterrupt = onInterrupt(() => azurite.stop());
  const tablePid = azurite.pids[0];
  process.env.AzureWebJobsStorage = azurite.connectionString;
  process.env.Storage__TablePrefix = 'Cost';
  const tables = require(path.join(ROOT, 'dist/lib/storage/tables.js'));
  const { submitTransactionFast } = require(path.join(ROOT, 'dist/lib/storage/transaction.js'));
  try {
    const client = await tables.table('Rows');
    const pk = 'p0';
    const seed = [];
    for (let i = 0; i < ROWS; i++) seed.push(['upsert', row(pk, i), 'Replace']);
    const batches = [];
    for (let i = 0; i < seed.length; i += 100) batches.push(seed.slice(i, i + 100));
    await inFlight(batches.length, (b) => tables.submitTransaction(client, batches[b]));
    let version = 0;

    const kinds = {
      pointRead: {
        n: N,
        sdk: (i) => client.getEntity(pk, row(pk, i % ROWS).rowKey),
        lean: (i) => tables.getEntity(client, pk, row(pk, i % ROWS).rowKey),
      },
      upsert: {
        n: N,
        sdk: (i) => client.upsertEntity(row(pk, i % ROWS, ++version), 'Merge'),
        lean: (i) => tables.upsertEntity(client, row(pk, i % ROWS, ++version), 'Merge'),
      },
      updateIfMatch: {
        n: N,
        // Each worker owns the rows i ≡ w (mod 4), so the ETag it holds is the row's current one.
        prepare: async () => {
          const etags = new Map();
          for await (const e of client.listEntities({ queryOptions: { filter: `PartitionKey eq '${pk}'`, select: ['RowKey'] } })) etags.set(e.rowKey, e.etag);
          return etags;
        },
        sdk: async (i, etags) => {
          const e = row(pk, i % ROWS, ++version);
          const r = await client.updateEntity(e, 'Replace', { etag: etags.get(e.rowKey) });
          etags.set(e.rowKey, r.etag);
        },
        lean: async (i, etags) => {
          const e = row(pk, i % ROWS, ++version);
          const r = await tables.updateEntity(client, e, 'Replace', { etag: etags.get(e.rowKey) });
          etags.set(e.rowKey, r.etag);
        },
      },
      listPage: {
        n: N / 4,
        // A range of 200 rows read in pages of 100: the second page follows a continuation token.
        sdk: async (i) => {
          const from = (i * 100) % (ROWS - 200);
          const filter = `PartitionKey eq '${pk}' and RowKey ge '${row(pk, from).rowKey}' and RowKey lt '${row(pk, from + 200).rowKey}'`;
          let rows = 0;
          for await (const page of client.listEntities({ queryOptions: { filter } }).byPage({ maxPageSize: 100 })) rows += page.length;
          if (rows !== 200) throw new Error(`listPage read ${rows} rows, not 200`);
        },
        lean: async (i) => {
          const from = (i * 100) % (ROWS - 200);
          const filter = `PartitionKey eq '${pk}' and RowKey ge '${row(pk, from).rowKey}' and RowKey lt '${row(pk, from + 200).rowKey}'`;
          let rows = 0;
          for await (const page of tables.listEntities(client, { queryOptions: { filter } }).byPage({ maxPageSize: 100 })) rows += page.length;
          if (rows !== 200) throw new Error(`listPage read ${rows} rows, not 200`);
        },
        requestsPerCall: 2,
      },
      transaction: {
        n: Math.max(1, Math.round(N / 10)),
        sdk: (i) => submitTransactionFast(client, batchOf(i), true),
        lean: (i) => tables.submitTransaction(client, batchOf(i)),
      },
    };
    const batchOf = (i) => {
      const s = (i * 100) % ROWS;
      const out = [];
      for (let j = s; j < s + 100; j++) out.push(['upsert', row(pk, j, ++version), 'Merge']);
      return out;
    };

    // Warm both paths (JIT, sockets) before measuring.
    for (const k of Object.values(kinds)) {
      const state = k.prepare ? await k.prepare() : undefined;
      for (const c of ['sdk', 'lean']) await inFlight(Math.min(50, k.n), (i) => k[c](i, state));
    }

    const rounds = { sdk: {}, lean: {} };
    for (let r = 0; r < ROUNDS; r++) {
      for (const [name, k] of Object.entries(kinds)) {
        for (const c of r % 2 ? ['lean', 'sdk'] : ['sdk', 'lean']) {
          const state = k.prepare ? await k.prepare() : undefined;
          if (global.gc) global.gc();
          const requests = k.n * (k.requestsPerCall ?? 1);
          const az0 = cpuSeconds(tablePid);
          const cpu0 = process.cpuUsage();
          const t0 = performance.now();
          await inFlight(k.n, (i) => k[c](i, state));
          const wall = performance.now() - t0;
          const cpu = process.cpuUsage(cpu0);
          const az = cpuSeconds(tablePid) - az0;
          (rounds[c][name] ??= []).push({
            cpuUsPerRequest: +((cpu.user + cpu.system) / requests).toFixed(1),
            wallUsPerRequest: +((wall * 1000) / requests).toFixed(1),
            azuriteCpuUsPerRequest: +((az * 1e6) / requests).toFixed(1),
            requests,
          });
        }
      }
    }
    const median = (list) => [...list].sort((a, b) => a.cpuUsPerRequest - b.cpuUsPerRequest)[Math.floor(list.length / 2)];
    const result = {};
    for (const name of Object.keys(kinds)) {
      const sdk = median(rounds.sdk[name]);
      const lean = median(rounds.lean[name]);
      result[name] = {
        sdk,
        lean,
        cpuRatio: +(lean.cpuUsPerRequest / sdk.cpuUsPerRequest).toFixed(2),
        allRounds: { sdk: rounds.sdk[name], lean: rounds.lean[name] },
      };
    }
    console.log(
      JSON.stringify(
        {
          bench: 'storage-request-cost',
          date: new Date().toISOString(),
          node: process.version,
          cpus: os.cpus().length,
          loadAvg: os.loadavg(),
          n: N,
          rounds: ROUNDS,
          inFlight: IN_FLIGHT,
          result,
        },
        null,
        2,
      ),
    );
  } finally {
    removeInterrupt();
    await azurite.stop();
  }
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
