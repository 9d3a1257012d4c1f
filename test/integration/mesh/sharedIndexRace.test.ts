import { randomBytes } from 'node:crypto';
import { dropSharedIndex, sharedIndex } from '../../../lib/mesh/joinIndex';
import { commitMeshWrite } from '../../../lib/mesh/store';
import { resetTableClients } from '../../../lib/storage/tables';
import { gid, meshObject } from '../../unit/mesh/meshSupport';

/**
 * The process's join index asked for while another caller drops it (a failed preload after a restart, a feed
 * gap): the caller gets the index it found, synced, instead of reading `index` of a shared entry that is gone
 * (an export dry run after a restart crashed so: "Cannot read properties of undefined (reading 'index')").
 */
jest.setTimeout(60_000);

beforeAll(() => {
  process.env.AzureWebJobsStorage = process.env.TEST_STORAGE_CONNECTION_STRING;
  process.env.Storage__TablePrefix = 's' + randomBytes(5).toString('hex');
  resetTableClients();
});

test('a caller whose sync is under way when the shared index is dropped gets the index it found', async () => {
  await commitMeshWrite({ upserts: [meshObject(gid(1), 'ann')], deletes: [] });
  dropSharedIndex();
  const built = await sharedIndex(['employeeId']);
  expect(built.find(undefined, 'ann')).toEqual([gid(1)]);
  await commitMeshWrite({ upserts: [meshObject(gid(2), 'bob')], deletes: [] });
  // The second caller finds the shared index and awaits its sync; the drop lands meanwhile.
  const asked = sharedIndex(['employeeId']);
  dropSharedIndex();
  const got = await asked;
  // (Before: "Cannot read properties of undefined (reading 'index')".)
  expect(got).toBe(built);
  // The next caller builds a new one, from the mesh as it is now.
  const rebuilt = await sharedIndex(['employeeId']);
  expect(rebuilt).not.toBe(built);
  expect(rebuilt.find(undefined, 'bob')).toEqual([gid(2)]);
});
