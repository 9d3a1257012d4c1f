'use strict';
/**
 * A `--require` hook for the service process (BENCH_SERVICE_NODE_ARGS="--require <this file>"): counts the calls
 * of @azure/data-tables' TableClient by table and method, and the pages of each list query (every page is one
 * HTTP request), and writes the counts as JSON to $COUNT_STORAGE_FILE when it gets SIGUSR2. The bench asks
 * before and after a step and subtracts (bench/support.js storageCounter).
 *
 * Counted: getEntity (a point read), listEntities (a query; `listMorePages` its pages after the first, read through byPage,
 * or read any way when the lean client of dist/lib/storage/fastTable.js sends them), createEntity, upsertEntity,
 * updateEntity, deleteEntity (one write each), submitTransaction (one request; `actions` the operations in it),
 * and the table-level calls (createTable, deleteTable).
 */
const fs = require('node:fs');
const { TableClient } = require('@azure/data-tables');

const file = process.env.COUNT_STORAGE_FILE;
const counts = {}; // table -> method -> n
let flushes = 0;
const bump = (table, method, n = 1) => {
  const t = (counts[table] ??= {});
  t[method] = (t[method] ?? 0) + n;
};
// Written only when asked (SIGUSR2 from the bench), so counting costs the service nothing between asks.
process.on('SIGUSR2', () => {
  if (!file) return;
  try {
    fs.writeFileSync(`${file}.tmp`, JSON.stringify({ flush: ++flushes, counts }));
    fs.renameSync(`${file}.tmp`, file);
  } catch {
    // the bench went away
  }
});

const proto = TableClient.prototype;
for (const method of ['getEntity', 'createEntity', 'upsertEntity', 'updateEntity', 'deleteEntity', 'createTable', 'deleteTable']) {
  const original = proto[method];
  if (typeof original !== 'function') continue;
  proto[method] = function (...args) {
    bump(this.tableName, method);
    return original.apply(this, args);
  };
}
const submit = proto.submitTransaction;
proto.submitTransaction = function (actions, ...rest) {
  bump(this.tableName, 'submitTransaction');
  bump(this.tableName, 'transactionActions', Array.isArray(actions) ? actions.length : 0);
  return submit.call(this, actions, ...rest);
};
// The engine sends most transactions itself (dist/lib/storage/transaction.js submitTransactionFast, the same
// $batch request built without the client's serializer): counted as submitTransaction too.
const Module = require('node:module');
const load = Module._load;
Module._load = function (request, parent, ...rest) {
  const exported = load.call(this, request, parent, ...rest);
  if (exported && typeof exported.submitTransactionFast === 'function' && !exported.__counted) {
    const fast = exported.submitTransactionFast;
    exported.submitTransactionFast = function (client, actions, ...more) {
      bump(client.tableName, 'submitTransaction');
      bump(client.tableName, 'transactionActions', actions.length);
      return fast.call(this, client, actions, ...more);
    };
    exported.__counted = true;
  }
  // The lean client (dist/lib/storage/fastTable.js) sends the other entity requests of the hot paths: each
  // counted under the library method it stands for; a query's pages after its first as listMorePages (every
  // page is one request, however the caller reads them).
  if (exported && typeof exported.leanTable === 'function' && !exported.__counted) {
    const make = exported.leanTable;
    exported.leanTable = function (settings, ...more) {
      const lean = make.call(this, settings, ...more);
      const t = settings.tableName;
      const wrap = (method, name) => {
        const original = lean[method];
        lean[method] = function (...args) {
          bump(t, typeof name === 'function' ? name(...args) : name);
          return original.apply(this, args);
        };
      };
      wrap('getEntity', 'getEntity');
      wrap('queryPage', (query, token) => (token ? 'listMorePages' : 'listEntities'));
      wrap('insert', 'createEntity');
      wrap('write', (entity, mode, ifMatch) => (ifMatch === undefined ? 'upsertEntity' : 'updateEntity'));
      wrap('delete', 'deleteEntity');
      return lean;
    };
    exported.__counted = true;
  }
  return exported;
};

const list = proto.listEntities;
proto.listEntities = function (...args) {
  const table = this.tableName;
  bump(table, 'listEntities');
  const iter = list.apply(this, args);
  // The pages after the first fetched through byPage (each one more request); plain iteration counts as the query only.
  const byPage = iter.byPage.bind(iter);
  iter.byPage = (settings) => {
    const pages = byPage(settings);
    const next = pages.next.bind(pages);
    let n = 0;
    pages.next = async (...a) => {
      const r = await next(...a);
      if (!r.done && n++ > 0) bump(table, 'listMorePages');
      return r;
    };
    return pages;
  };
  return iter;
};
