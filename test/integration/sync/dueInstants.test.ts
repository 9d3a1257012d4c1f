import { randomBytes } from 'node:crypto';
import {
  bucketOf,
  claimDueRow,
  countDue,
  deleteTargetDue,
  loadDuePointers,
  readDuePointers,
  readDueRows,
  releaseDueRows,
  removeDueRows,
  writeDueChanges,
} from '../../../lib/storage/dueInstants';
import { resetTableClients, table } from '../../../lib/storage/tables';

/**
 * The due index against Azurite: one row per object and target, replaced when its instant moves and removed
 * when it has none; "due by now" read by hour partitions; a row claimed by one of several concurrent claimers.
 */
const T = 'c0000000-0000-4000-8000-0000000000d1';
const H = 3_600_000;
const base = Date.parse('2026-12-09T05:00:00Z');

beforeAll(() => {
  process.env.AzureWebJobsStorage = process.env.TEST_STORAGE_CONNECTION_STRING;
  process.env.Storage__TablePrefix = 'd' + randomBytes(5).toString('hex');
  resetTableClients();
});

async function bucketRows(): Promise<{ pk: string; rk: string; at: number }[]> {
  const client = await table('DueInstants');
  const out: { pk: string; rk: string; at: number }[] = [];
  for await (const e of client.listEntities<{ at: number }>({ queryOptions: { filter: "PartitionKey lt 'c'" } }))
    out.push({ pk: e.partitionKey as string, rk: e.rowKey as string, at: e.at });
  return out;
}

test('an instant is recorded, moved (its old hour row goes) and cleared', async () => {
  await writeDueChanges(
    T,
    [
      { target: T, meshId: 'm1', at: base },
      { target: T, meshId: 'm2', at: base + 30 * 60_000 },
    ],
    [],
    new Map(),
  );
  expect(await loadDuePointers(T)).toEqual(
    new Map([
      ['m1', base],
      ['m2', base + 30 * 60_000],
    ]),
  );
  expect(await readDuePointers(T, ['m1', 'm3'])).toEqual(new Map([['m1', base]]));
  // m1 moves three days on: its row in the old hour goes, the new one is in the new hour.
  await writeDueChanges(T, [{ target: T, meshId: 'm1', at: base + 72 * H }], [], new Map([['m1', base]]));
  expect((await bucketRows()).map((r) => [r.pk, r.at]).sort()).toEqual(
    [
      [bucketOf(base), base + 30 * 60_000],
      [bucketOf(base + 72 * H), base + 72 * H],
    ].sort(),
  );
  // m2 has no instant any more.
  await writeDueChanges(T, [], ['m2'], new Map([['m2', base + 30 * 60_000]]));
  expect(await loadDuePointers(T)).toEqual(new Map([['m1', base + 72 * H]]));
  expect(await bucketRows()).toHaveLength(1);
  expect(await countDue()).toEqual(new Map([[T, 1]]));
});

test('due by now: the rows of past hours and of this hour up to now, not later ones', async () => {
  await writeDueChanges(
    T,
    [
      { target: T, meshId: 'a', at: base - 5 * H },
      { target: T, meshId: 'b', at: base + 10 * 60_000 },
    ],
    [],
    new Map(),
  );
  expect((await readDueRows(base, 100)).map((r) => r.meshId)).toEqual(['a']);
  expect((await readDueRows(base + 10 * 60_000, 100)).map((r) => r.meshId).sort()).toEqual(['a', 'b']);
  expect(await readDueRows(base - 6 * H, 100)).toEqual([]);
});

test('of concurrent claims of one row, one succeeds; a released row is claimed again; removed rows are gone', async () => {
  const [row] = (await readDueRows(base, 100)).filter((r) => r.meshId === 'a');
  const claims = await Promise.all([1, 2, 3, 4, 5].map((n) => claimDueRow(row, `p${n}`, Date.now() + 60_000)));
  const won = claims.filter((c) => c !== null);
  expect(won).toHaveLength(1);
  const [again] = (await readDueRows(base, 100)).filter((r) => r.meshId === 'a');
  expect(again.claimedBy).toBe(won[0]!.claimedBy);
  // A stale copy (read before the claim) cannot claim it.
  expect(await claimDueRow(row, 'late', Date.now() + 60_000)).toBeNull();
  await releaseDueRows([won[0]!]);
  const [free] = (await readDueRows(base, 100)).filter((r) => r.meshId === 'a');
  expect(free.claimedBy).toBeUndefined();
  const mine = await claimDueRow(free, 'p9', Date.now() + 60_000);
  expect(mine).not.toBeNull();
  await removeDueRows([mine!]);
  expect((await readDueRows(base, 100)).map((r) => r.meshId)).toEqual([]);
});

test("a connector's delete removes its rows", async () => {
  await deleteTargetDue(T);
  expect(await loadDuePointers(T)).toEqual(new Map());
  expect(await bucketRows()).toEqual([]);
});
