import { randomBytes } from 'node:crypto';
import { resetTableClients } from '../../../lib/storage/tables';
import { getConnectorRecord, insertConnector, replaceConnector, setConnectorRunState } from '../../../lib/storage/connectors';

/**
 * A configuration write (PUT /connectors/{id}) and a run of the same connector ending at the same moment, on
 * Azurite: the run's merge of `status` and `lastSync` moves the row's ETag, which the write is conditional on.
 * That is no configuration change: the write goes on and keeps what the run wrote. A real change made since the
 * write read the row (another request's name or configuration) is still a 409 and changes nothing.
 */
jest.setTimeout(60_000);

beforeAll(() => {
  process.env.AzureWebJobsStorage = process.env.TEST_STORAGE_CONNECTION_STRING;
  process.env.Storage__TablePrefix = 'n' + randomBytes(5).toString('hex');
  resetTableClients();
});

let n = 0;
async function connector() {
  const id = `c${randomBytes(6).toString('hex')}`;
  return insertConnector({
    id,
    name: `HR ${++n} ${id}`,
    type: 'file',
    status: 'active',
    lastSync: null,
    config: { folder: '/data/hr', continuous: { enabled: false } },
    sealedSecrets: null,
    secretPaths: [],
    createdOn: '2026-11-30T14:00:00.000Z',
    updatedOn: '2026-11-30T14:00:00.000Z',
  });
}

const update = (name: string, config: Record<string, unknown>) => ({
  name,
  config,
  sealedSecrets: null,
  secretPaths: [],
  updatedOn: '2026-11-30T14:05:00.000Z',
});

test('a run that ended after the write read the row: the write is made and the run state is kept', async () => {
  const read = await connector();
  await setConnectorRunState(read.id, { status: 'error', lastSync: '2026-11-30T14:04:00.000Z' });
  const written = await replaceConnector(read, update(read.name, { folder: '/data/hr', continuous: { enabled: true } }));
  expect(written).toMatchObject({ config: { continuous: { enabled: true } }, status: 'error', lastSync: '2026-11-30T14:04:00.000Z', state: 'ready' });
  expect(await getConnectorRecord(read.id)).toMatchObject({ config: { continuous: { enabled: true } }, status: 'error', lastSync: '2026-11-30T14:04:00.000Z' });
});

test('the same race with a rename: the new name is taken, the old one freed, the run state kept', async () => {
  const read = await connector();
  const other = await connector();
  await setConnectorRunState(read.id, { lastSync: '2026-11-30T14:04:30.000Z' });
  const renamed = `${read.name} renamed`;
  expect(await replaceConnector(read, update(renamed, read.config))).toMatchObject({ name: renamed, pendingName: null, lastSync: '2026-11-30T14:04:30.000Z' });
  // The old name is free again (another connector can take it), the new one is held.
  expect(await replaceConnector(other, update(read.name, other.config))).toMatchObject({ name: read.name });
  await expect(replaceConnector(await getConnectorRecord(other.id), update(renamed, other.config))).rejects.toMatchObject({ code: 'conflict' });
});

test('a configuration another request wrote since the read is still a 409, and nothing of this write lands', async () => {
  const read = await connector();
  await replaceConnector(read, update(read.name, { folder: '/data/other' }));
  await setConnectorRunState(read.id, { lastSync: '2026-11-30T14:04:45.000Z' });
  await expect(replaceConnector(read, update(read.name, { folder: '/data/mine' }))).rejects.toMatchObject({ code: 'conflict' });
  expect((await getConnectorRecord(read.id)).config).toEqual({ folder: '/data/other' });
});
