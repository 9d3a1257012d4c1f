import { randomBytes } from 'node:crypto';
import { Azurite } from '../../../lib/runtime/azurite';
import { createEntity, getEntity, listEntities, resetTableClients, submitTransaction, table } from '../../../lib/storage/tables';

/**
 * Storage on another host over plain HTTP (docs/scaling.md, "An Azurite of its own"): a connection string whose
 * table endpoint is `http://` on an address that is not 127.0.0.1, localhost or [::1] is used as written. The
 * Azurite here listens on 127.0.0.2 (loopback on Linux, but not one of the names the service knew as local),
 * which is the same case as `http://azurite-host:10002` on a private network.
 */
jest.setTimeout(60_000);

const azurite = new Azurite({ endpoints: { host: '127.0.0.2' }, services: ['table'] });
const saved = { storage: process.env.AzureWebJobsStorage, prefix: process.env.Storage__TablePrefix };

beforeAll(async () => {
  await azurite.start();
  process.env.AzureWebJobsStorage = azurite.connectionString;
  process.env.Storage__TablePrefix = 'h' + randomBytes(4).toString('hex');
  resetTableClients();
});

afterAll(async () => {
  process.env.AzureWebJobsStorage = saved.storage;
  process.env.Storage__TablePrefix = saved.prefix;
  resetTableClients();
  await azurite.stop();
});

test('the connection string names http://127.0.0.2: tables are created, written, read and listed there', async () => {
  expect(azurite.connectionString).toMatch(/TableEndpoint=http:\/\/127\.0\.0\.2:\d+\//);
  const client = await table('PlainHttp');
  await createEntity(client, { partitionKey: 'p', rowKey: 'one', name: 'Ada' });
  await submitTransaction(
    client,
    ['two', 'three'].map(
      (rowKey) => ['upsert', { partitionKey: 'p', rowKey, name: rowKey }] as ['upsert', { partitionKey: string; rowKey: string; name: string }],
    ),
  );
  expect(await getEntity<{ name: string }>(client, 'p', 'one')).toMatchObject({ name: 'Ada' });
  const names: string[] = [];
  for await (const e of listEntities<{ name: string }>(client, { queryOptions: { filter: "PartitionKey eq 'p'" } })) names.push(e.name);
  expect(names.sort()).toEqual(['Ada', 'three', 'two']);
});
