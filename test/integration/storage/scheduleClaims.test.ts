import { randomBytes, randomUUID } from 'node:crypto';
import { claimTick, purgeClaims } from '../../../lib/storage/schedules';
import { resetTableClients } from '../../../lib/storage/tables';

/** Tick claims on Azurite: one insert wins a tick; old claims are purged by RowKey range, recent ones stay. */
beforeAll(() => {
  process.env.AzureWebJobsStorage = process.env.TEST_STORAGE_CONNECTION_STRING;
  process.env.Storage__TablePrefix = 'c' + randomBytes(5).toString('hex');
  resetTableClients();
});

test('a tick is claimed once, by whichever insert comes first; concurrent claims: exactly one wins', async () => {
  const id = randomUUID();
  const tick = new Date('2026-11-25T10:00:00.000Z');
  const wins = await Promise.all(Array.from({ length: 8 }, (_, i) => claimTick(id, tick, `p${i}`)));
  expect(wins.filter(Boolean)).toHaveLength(1);
  expect(await claimTick(id, tick, 'late')).toBe(false);
  expect(await claimTick(id, new Date('2026-11-25T10:01:00.000Z'), 'p0')).toBe(true);
});

test('claims before a moment are purged, later ones kept (and still refuse a second claim)', async () => {
  const id = randomUUID();
  const ticks = ['2026-11-20T00:00:00.000Z', '2026-11-23T23:59:59.000Z', '2026-11-24T00:00:00.000Z', '2026-11-25T00:00:00.000Z'].map((t) => new Date(t));
  for (const t of ticks) expect(await claimTick(id, t, 'p')).toBe(true);
  expect(await purgeClaims(id, new Date('2026-11-24T00:00:00.000Z'))).toBe(2);
  expect(await purgeClaims(id, new Date('2026-11-24T00:00:00.000Z'))).toBe(0);
  expect(await claimTick(id, ticks[2], 'again')).toBe(false);
  expect(await claimTick(id, ticks[3], 'again')).toBe(false);
});
