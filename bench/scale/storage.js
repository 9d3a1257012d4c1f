'use strict';
/**
 * The entities the service stored, per table, counted by a scan (every entity listed, only its keys selected):
 * fine up to about 100k users; larger sizes estimate instead (bench/scale/scale.js --count-max).
 */
const { TableClient, TableServiceClient } = require('@azure/data-tables');

async function countEntities(connectionString) {
  const service = TableServiceClient.fromConnectionString(connectionString, { allowInsecureConnection: true });
  const tables = {};
  let total = 0;
  for await (const t of service.listTables()) {
    const client = TableClient.fromConnectionString(connectionString, t.name, { allowInsecureConnection: true });
    let n = 0;
    for await (const page of client.listEntities({ queryOptions: { select: ['PartitionKey'] } }).byPage({ maxPageSize: 1000 })) n += page.length;
    tables[t.name] = n;
    total += n;
  }
  return { total, tables };
}

module.exports = { countEntities };
