import { randomBytes } from 'node:crypto';
import { resetTableClients } from '../../../lib/storage/tables';
import {
  EXTERNAL_OWNER,
  listReservations,
  markExternal,
  readHoldings,
  readReservation,
  releaseUniqueValues,
  reserveValue,
  sweepUniqueValues,
  reserveAll,
  writeHoldings,
  type Reservation,
} from '../../../lib/storage/uniqueValues';

/**
 * The UniqueValues reservations on Azurite (lib/storage/uniqueValues.ts): appended to the pool's log in the order
 * of its head, so of many claimants of one value at the same moment exactly one wins; an owner's own value is its own again; a value
 * the target refused passes to `external`; release after purge keeps the value in quarantine, and another
 * object takes it when the quarantine is over. Keys with characters Table Storage refuses (`/`, `#`, `?`, `\`).
 */
jest.setTimeout(60_000);

beforeAll(() => {
  process.env.AzureWebJobsStorage = process.env.TEST_STORAGE_CONNECTION_STRING;
  process.env.Storage__TablePrefix = 'u' + randomBytes(5).toString('hex');
  resetTableClients();
});

const POOL = 'connector/c0000000-0000-4000-8000-00000000000c/samaccountname';
const claim = (owner: string, value = 'jsmith', pool = POOL): Reservation => ({
  pool,
  key: value.toLowerCase(),
  value,
  owner,
  ruleId: 'r1',
  connectorId: 'c1',
  reservedOn: new Date().toISOString(),
});

test('of 40 claimants of one value at the same moment, exactly one wins; the others are told who holds it', async () => {
  const owners = Array.from({ length: 40 }, (_, i) => `m${i}`);
  const outcomes = await Promise.all(owners.map((o) => reserveValue(claim(o))));
  const winners = owners.filter((_, i) => outcomes[i].won);
  expect(winners).toHaveLength(1);
  for (const o of outcomes) if (!o.won) expect(o.holder.owner).toBe(winners[0]);
  // The winner asking again (a page sent again) wins again; nobody else does.
  expect(await reserveValue(claim(winners[0]))).toEqual({ won: true });
  expect((await reserveValue(claim('late'))).won).toBe(false);
  expect(await listReservations(POOL)).toHaveLength(1);
});

test('values with characters keys may not hold are reserved and read back', async () => {
  const odd = 'a/b\\c#d?e';
  expect(await reserveValue(claim('m1', odd, 'targets/x,y'))).toEqual({ won: true });
  expect(await readReservation('targets/x,y', odd.toLowerCase())).toMatchObject({ value: odd, owner: 'm1' });
});

test('a value the target refused passes to external (with the reason) and the owner loses its holding', async () => {
  const r = claim('m7', 'xwarrior');
  expect(await reserveValue(r)).toEqual({ won: true });
  await writeHoldings([
    {
      meshId: 'm7',
      pool: POOL,
      value: 'xwarrior',
      key: 'xwarrior',
      ruleId: 'r1',
      connectorId: 'c1',
      basis: 'xwarrior',
      candidate: 0,
      skipped: [],
      reservedOn: r.reservedOn,
      quarantineDays: 90,
    },
  ]);
  await markExternal(POOL, 'xwarrior', 'm7', 'the target refused it: already exists');
  expect(await readReservation(POOL, 'xwarrior')).toMatchObject({ owner: EXTERNAL_OWNER, reason: 'the target refused it: already exists' });
  expect((await readHoldings(POOL, ['m7'])).size).toBe(0);
  expect(await reserveValue(claim('m7', 'xwarrior'))).toMatchObject({ won: false, holder: { owner: EXTERNAL_OWNER } });
});

test('release after purge: the value stays in quarantine, then the sweep frees it', async () => {
  const r = claim('m9', 'qvalue');
  expect(await reserveValue(r)).toEqual({ won: true });
  await writeHoldings([
    {
      meshId: 'm9',
      pool: POOL,
      value: 'qvalue',
      key: 'qvalue',
      ruleId: 'r1',
      connectorId: 'c1',
      basis: 'qvalue',
      candidate: 0,
      skipped: [],
      reservedOn: r.reservedOn,
      quarantineDays: 30,
    },
  ]);
  const now = new Date();
  expect(await releaseUniqueValues(['m9'], [POOL], now)).toBe(1);
  expect((await readHoldings(POOL, ['m9'])).size).toBe(0);
  const released = await readReservation(POOL, 'qvalue');
  expect(released).toMatchObject({ owner: 'm9', releasedOn: now.toISOString(), quarantineUntil: new Date(now.getTime() + 30 * 86_400_000).toISOString() });
  // In quarantine: refused to another object, and the sweep of today leaves it.
  expect(await reserveValue(claim('m10', 'qvalue'), now)).toMatchObject({ won: false, holder: { owner: 'm9' } });
  expect(await sweepUniqueValues(now)).toBe(0);
  // Past the quarantine: another object takes it (appended after the release, in the order of the pool's head).
  const later = new Date(now.getTime() + 31 * 86_400_000);
  expect(await reserveValue(claim('m10', 'qvalue'), later)).toEqual({ won: true });
  expect(await readReservation(POOL, 'qvalue')).toMatchObject({ owner: 'm10' });
  expect((await readReservation(POOL, 'qvalue'))?.releasedOn).toBeUndefined();
});

test('a release without quarantine frees the value at once', async () => {
  const pool = 'connector/c4/uid';
  expect(await reserveValue(claim('z1', 'zero', pool))).toEqual({ won: true });
  expect(await releaseUniqueValues(['z1'], [pool], new Date(), () => 0)).toBe(1);
  expect(await readReservation(pool, 'zero')).toBeNull();
  expect(await reserveValue(claim('z2', 'zero', pool))).toEqual({ won: true });
});

test('an expired value is won by exactly one of two claimants', async () => {
  const r = claim('m20', 'expired');
  await reserveValue(r);
  await writeHoldings([
    {
      meshId: 'm20',
      pool: POOL,
      value: 'expired',
      key: 'expired',
      ruleId: 'r1',
      connectorId: 'c1',
      basis: 'expired',
      candidate: 0,
      skipped: [],
      reservedOn: r.reservedOn,
      quarantineDays: 1,
    },
  ]);
  const now = new Date();
  await releaseUniqueValues(['m20'], [POOL], now);
  const later = new Date(now.getTime() + 2 * 86_400_000);
  const [x, y] = await Promise.all([reserveValue(claim('m21', 'expired'), later), reserveValue(claim('m22', 'expired'), later)]);
  expect([x.won, y.won].filter(Boolean)).toHaveLength(1);
  expect((await readReservation(POOL, 'expired'))?.owner).toBe(x.won ? 'm21' : 'm22');
});

test('a page reserves its free values in one transaction; a value another holds is refused to its claimant alone', async () => {
  const pool = 'connector/c2/uid';
  const page = Array.from({ length: 30 }, (_, i) => claim(`p${i}`, `value${i}`, pool));
  expect(await reserveAll(page)).toEqual(page.map(() => true));
  expect(await listReservations(pool)).toHaveLength(30);
  const next = [claim('q1', 'fresh1', pool), claim('q2', 'value3', pool), claim('q3', 'fresh3', pool), claim('p4', 'value4', pool)];
  expect(await reserveAll(next)).toEqual([true, false, true, true]);
  expect((await readReservation(pool, 'fresh1'))?.owner).toBe('q1');
  expect((await readReservation(pool, 'value3'))?.owner).toBe('p3');
  // Holdings of a page are read back in queries of 14 ids.
  await writeHoldings(
    page.map((r, i) => ({
      meshId: r.owner,
      pool,
      value: r.value,
      key: r.key,
      ruleId: 'r1',
      connectorId: 'c2',
      basis: r.value,
      candidate: 0,
      skipped: [],
      reservedOn: r.reservedOn,
      quarantineDays: 90,
      ...(i % 2 ? { counter: i } : {}),
    })),
  );
  const held = await readHoldings(pool, [...page.map((r) => r.owner), 'nobody']);
  expect(held.size).toBe(30);
  expect(held.get('p7')).toMatchObject({ value: 'value7', counter: 7 });
});

test('a value reserved without a holding (a first candidate won) is released by its owner too', async () => {
  const pool = 'connector/c3/uid';
  expect(await reserveValue(claim('lonely', 'solo', pool))).toEqual({ won: true });
  const now = new Date();
  expect(await releaseUniqueValues(['lonely', 'someone-else'], [pool], now, () => 7)).toBe(1);
  expect(await readReservation(pool, 'solo')).toMatchObject({ owner: 'lonely', quarantineUntil: new Date(now.getTime() + 7 * 86_400_000).toISOString() });
});
