import { randomBytes } from 'node:crypto';
import { resetTableClients } from '../../../lib/storage/tables';
import { listDoneLeavers, listOpenLeavers, moveLeaversToDone, purgeDoneLeavers, putOpenLeavers, type LeaverRecord } from '../../../lib/storage/leavers';

/**
 * The purge of confirmed leavers on Azurite (lib/storage/leavers.ts): rows seen more than the retention ago are
 * deleted, at most the budget per call; newer confirmed rows and every open leaver stay.
 */
jest.setTimeout(60_000);

beforeAll(() => {
  process.env.AzureWebJobsStorage = process.env.TEST_STORAGE_CONNECTION_STRING;
  process.env.Storage__TablePrefix = 'l' + randomBytes(5).toString('hex');
  resetTableClients();
});

const NOW = new Date('2026-11-29T12:00:00Z');
const daysAgo = (d: number) => new Date(NOW.getTime() - d * 86_400_000).toISOString();

function leaver(i: number, seenDaysAgo: number, confirmed: boolean): LeaverRecord {
  const seenOn = daysAgo(seenDaysAgo);
  return {
    meshObjectId: `m-${i}`,
    connectorId: 'c-directory',
    anchor: `uid=p${i},ou=people,dc=example,dc=org`,
    displayName: `Person ${i}`,
    objectType: 'person',
    sourceConnectorId: 'c-hr',
    operation: 'delete',
    reason: 'gone',
    seenOn,
    seenRunId: 'run-1',
    dueOn: null,
    deadlineOn: seenOn,
    sentOn: confirmed ? seenOn : null,
    sentRunId: confirmed ? 'run-2' : null,
    confirmedOn: confirmed ? seenOn : null,
    confirmedRunId: confirmed ? 'run-3' : null,
  };
}

test('deletes confirmed leavers older than the retention, within the budget, and keeps open ones', async () => {
  // 12 confirmed: seen 400, 399, ..., 389 days ago (older than 365) and 5 seen 10..14 days ago; 3 open, seen 500 days ago.
  const old = Array.from({ length: 12 }, (_, i) => leaver(i, 400 - i, true));
  const recent = Array.from({ length: 5 }, (_, i) => leaver(100 + i, 10 + i, true));
  const open = Array.from({ length: 3 }, (_, i) => leaver(200 + i, 500, false));
  await putOpenLeavers([...old, ...recent, ...open]);
  await moveLeaversToDone([...old, ...recent]);
  expect(await listDoneLeavers({})).toHaveLength(17);

  // A budget of 5 deletes five of the old ones, and only old ones.
  expect(await purgeDoneLeavers(365, NOW, 5)).toBe(5);
  let done = await listDoneLeavers({});
  expect(done).toHaveLength(12);
  expect(done.filter((r) => r.meshObjectId.startsWith('m-1') && r.meshObjectId.length === 5)).toHaveLength(5);

  // The rest of the old ones; the recent ones stay.
  expect(await purgeDoneLeavers(365, NOW, 1000)).toBe(7);
  done = await listDoneLeavers({});
  expect(done.map((r) => r.meshObjectId).sort()).toEqual(['m-100', 'm-101', 'm-102', 'm-103', 'm-104']);
  expect(await purgeDoneLeavers(365, NOW, 1000)).toBe(0);

  // Open leavers are never purged, however old.
  expect((await listOpenLeavers()).map((r) => r.meshObjectId).sort()).toEqual(['m-200', 'm-201', 'm-202']);

  // A shorter retention reaches the recent ones at their boundary: seen 10..14 days ago, retention 12: 13 and 14 go,
  // the one seen exactly 12 days ago stays.
  expect(await purgeDoneLeavers(12, NOW, 1000)).toBe(2);
  expect((await listDoneLeavers({})).map((r) => r.meshObjectId).sort()).toEqual(['m-100', 'm-101', 'm-102']);
});
