import { randomBytes } from 'node:crypto';
import { encodeKey, resetTableClients, table } from '../../../lib/storage/tables';
import type * as UniqueValues from '../../../lib/storage/uniqueValues';
import type { Reservation } from '../../../lib/storage/uniqueValues';

/**
 * A pool's reservations as a log ordered by its head (lib/storage/uniquePoolLog.ts) on Azurite, between engine
 * instances: each instance is its own copy of the storage modules (its own memory of the pools, its own table
 * clients), as two processes of the service are. An instance whose view of the pool is behind loses its
 * transaction, reads the pages added since and decides again; rows of the earlier shape (a row per value) are
 * read, released and taken over.
 */
jest.setTimeout(60_000);

beforeAll(() => {
  process.env.AzureWebJobsStorage = process.env.TEST_STORAGE_CONNECTION_STRING;
  process.env.Storage__TablePrefix = 'l' + randomBytes(5).toString('hex');
  resetTableClients();
});

/** A second (third...) engine instance: the storage modules loaded again, with nothing in memory. */
function instance(): typeof UniqueValues {
  let m: typeof UniqueValues | undefined;
  jest.isolateModules(() => {
    m = jest.requireActual<typeof UniqueValues>('../../../lib/storage/uniqueValues');
  });
  return m!;
}

const claim = (pool: string, owner: string, value: string): Reservation => ({
  pool,
  key: value.toLowerCase(),
  value,
  owner,
  ruleId: 'r1',
  connectorId: 'c1',
  reservedOn: new Date().toISOString(),
});

test('an instance whose view is behind loses its transaction, reads the pages added since and chooses again', async () => {
  const pool = 'connector/c1/uid';
  const [a, b] = [instance(), instance()];
  // b reads the pool (and appends a page) before a's value exists.
  expect(await b.reserveValue(claim(pool, 'mb0', 'warm'))).toEqual({ won: true });
  expect(await a.reserveValue(claim(pool, 'ma', 'jsmith'))).toEqual({ won: true });
  // b still believes jsmith free: its append (under the head's ETag it last saw) is refused, it reads a's page and
  // is told who holds the value.
  expect(await b.reserveValue(claim(pool, 'mb', 'jsmith'))).toMatchObject({ won: false, holder: { owner: 'ma' } });
  // A page of b's: the taken value refused, the free ones reserved.
  expect(await b.reserveAll([claim(pool, 'mb1', 'jsmith'), claim(pool, 'mb2', 'john.smith'), claim(pool, 'mb3', 'jsmith2')])).toEqual([false, true, true]);
  // a, behind in turn, is refused john.smith.
  expect(await a.reserveValue(claim(pool, 'ma2', 'john.smith'))).toMatchObject({ won: false, holder: { owner: 'mb2' } });
  const owners = Object.fromEntries((await instance().listReservations(pool)).map((r) => [r.key, r.owner]));
  expect(owners).toEqual({ warm: 'mb0', jsmith: 'ma', 'john.smith': 'mb2', jsmith2: 'mb3' });
});

test('two instances reserving overlapping pages at the same moment never hand out one value twice', async () => {
  const pool = 'targets/c1,c2';
  const [a, b] = [instance(), instance()];
  await Promise.all([a.listReservations(pool), b.listReservations(pool)]);
  const pageA = Array.from({ length: 150 }, (_, i) => claim(pool, `a${i}`, `v${i}`));
  const pageB = Array.from({ length: 150 }, (_, i) => claim(pool, `b${i}`, `v${i + 75}`));
  const rounds = await Promise.all([
    a.reserveAll(pageA),
    b.reserveAll(pageB),
    Promise.all(Array.from({ length: 20 }, (_, i) => a.reserveValue(claim(pool, `x${i}`, `v${100 + i}`)))),
    Promise.all(Array.from({ length: 20 }, (_, i) => b.reserveValue(claim(pool, `y${i}`, `v${100 + i}`)))),
  ]);
  const final = new Map((await instance().listReservations(pool)).map((r) => [r.key, r.owner]));
  expect(final.size).toBe(225);
  // Each claimant was told true exactly when the value is its own in storage.
  pageA.forEach((r, i) => expect(rounds[0][i]).toBe(final.get(r.key) === r.owner));
  pageB.forEach((r, i) => expect(rounds[1][i]).toBe(final.get(r.key) === r.owner));
  rounds[2].forEach((o, i) => expect(o.won).toBe(final.get(`v${100 + i}`) === `x${i}`));
  rounds[3].forEach((o, i) => expect(o.won).toBe(final.get(`v${100 + i}`) === `y${i}`));
  // Every value of the overlap went to exactly one claimant.
  const told = [...rounds[0], ...rounds[1], ...rounds[2].map((o) => o.won), ...rounds[3].map((o) => o.won)].filter(Boolean).length;
  expect(told).toBe(225);
});

test('rows of the earlier shape (a row per value) are read, refused to others, released and taken over after their quarantine', async () => {
  const pool = 'connector/c9/samaccountname';
  const client = await table('UniqueValues');
  const pk = 'v.' + encodeKey(pool);
  const on = '2026-01-01T00:00:00.000Z';
  await client.createEntity({ partitionKey: pk, rowKey: encodeKey('asmith'), owner: 'old1', ruleId: 'r0', connectorId: 'c9', reservedOn: on });
  await client.createEntity({ partitionKey: pk, rowKey: encodeKey('bsmith'), owner: 'old2', value: 'BSmith', ruleId: 'r0', connectorId: 'c9', reservedOn: on });
  await client.createEntity({
    partitionKey: pk,
    rowKey: encodeKey('xwarrior'),
    owner: 'external',
    reason: 'refused',
    ruleId: '',
    connectorId: '',
    reservedOn: on,
  });
  await client.createEntity({
    partitionKey: pk,
    rowKey: encodeKey('gone'),
    owner: 'old3',
    ruleId: 'r0',
    connectorId: 'c9',
    reservedOn: on,
    releasedOn: on,
    quarantineUntil: '2026-02-01T00:00:00.000Z',
  });
  const u = instance();
  expect(await u.readReservation(pool, 'bsmith')).toMatchObject({ owner: 'old2', value: 'BSmith', reservedOn: on });
  expect(await u.reserveValue(claim(pool, 'new1', 'asmith'))).toMatchObject({ won: false, holder: { owner: 'old1' } });
  expect(await u.reserveAll([claim(pool, 'new2', 'xwarrior'), claim(pool, 'old1', 'asmith')])).toEqual([false, true]);
  // Past its quarantine: taken over by a new claimant.
  expect(await u.reserveValue(claim(pool, 'new3', 'gone'))).toEqual({ won: true });
  // Released after its owner's purge (no holding: found by its owner), in quarantine for others.
  const now = new Date();
  expect(await u.releaseUniqueValues(['old2'], [pool], now, () => 30)).toBe(1);
  const other = instance();
  expect(await other.reserveValue(claim(pool, 'new4', 'bsmith'), now)).toMatchObject({ won: false, holder: { owner: 'old2', releasedOn: now.toISOString() } });
  expect(await other.reserveValue(claim(pool, 'new4', 'bsmith'), new Date(now.getTime() + 31 * 86_400_000))).toEqual({ won: true });
  // The sweep deletes the old row whose quarantine is over; the log's entry (new3's) still holds the value.
  expect(await u.sweepUniqueValues(now)).toBe(1);
  expect(await instance().readReservation(pool, 'gone')).toMatchObject({ owner: 'new3' });
  expect(await instance().readReservation(pool, 'bsmith')).toMatchObject({ owner: 'new4' });
});

test('a page of 100 long values in any script (several properties of the page row) is read back whole by another instance', async () => {
  const pool = 'mesh/cn';
  const values = Array.from({ length: 100 }, (_, i) => `Ünïcødé 名前 😀 ${i} `.padEnd(256, 'é'));
  const u = instance();
  expect(await u.reserveAll(values.map((v, i) => claim(pool, `m${i}`, v)))).toEqual(values.map(() => true));
  const read = await instance().listReservations(pool);
  expect(read).toHaveLength(100);
  expect(new Map(read.map((r) => [r.owner, r.value]))).toEqual(new Map(values.map((v, i) => [`m${i}`, v])));
});

test("entries read back by another instance keep their own rule, connector and time, or the page's they share", async () => {
  const pool = 'targets/c5,c6';
  const u = instance();
  const shared = claim(pool, 's1', 'shared1');
  const own = { ...claim(pool, 's2', 'own2'), ruleId: 'r2', connectorId: 'c6', reservedOn: '2026-11-28T00:00:00.000Z' };
  expect(await u.reserveAll([shared, { ...claim(pool, 's3', 'shared3'), reservedOn: shared.reservedOn }, own])).toEqual([true, true, true]);
  const other = instance();
  expect(await other.readReservation(pool, 'shared3')).toEqual({ ...claim(pool, 's3', 'shared3'), reservedOn: shared.reservedOn });
  expect(await other.readReservation(pool, 'own2')).toEqual(own);
});
