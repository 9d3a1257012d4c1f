import { randomBytes } from 'node:crypto';
import { RestError, type TransactionAction } from '@azure/data-tables';
import { isStatus, resetTableClients, submitTransaction, table } from '../../../lib/storage/tables';
import { canBuild } from '../../../lib/storage/transaction';

/**
 * Entity-group transactions built by lib/storage/transaction.ts, on real Azurite: every action kind, keys
 * that need escaping, typed values, the failures callers rely on (409 on an insert of an existing row, 404 on
 * a replace or delete of a missing one, 412 on a stale ETag), and a failed transaction changing nothing.
 */
jest.setTimeout(60_000);

beforeAll(() => {
  process.env.AzureWebJobsStorage = process.env.TEST_STORAGE_CONNECTION_STRING;
  process.env.Storage__TablePrefix = 't' + randomBytes(5).toString('hex');
  resetTableClients();
});

const PK = "p'1 ü";
const rows = async (name: string) => {
  const out: Record<string, unknown>[] = [];
  for await (const e of (await table(name)).listEntities<Record<string, unknown>>()) out.push(e);
  return out.sort((a, b) => String(a.rowKey).localeCompare(String(b.rowKey)));
};

test('create, upsert, update and delete land as the library would write them', async () => {
  const c = await table('TxKinds');
  const when = new Date('2026-01-02T03:04:05.000Z');
  await submitTransaction(c, [
    ['create', { partitionKey: PK, rowKey: "a'b%20c", s: 'x "quoted" \\ \n é', n: 5, d: 1.5, b: true, when }],
    ['upsert', { partitionKey: PK, rowKey: 'r2', s: 'y' }, 'Replace'],
    ['create', { partitionKey: PK, rowKey: 'r3', s: 'z', keep: 'me' }],
  ]);
  const e = await c.getEntity<Record<string, unknown>>(PK, "a'b%20c");
  expect(e).toMatchObject({ s: 'x "quoted" \\ \n é', n: 5, d: 1.5, b: true });
  expect(e.when).toEqual(when);
  await submitTransaction(c, [
    ['update', { partitionKey: PK, rowKey: 'r2', s: 'y2' }, 'Replace'],
    ['upsert', { partitionKey: PK, rowKey: 'r3', s: 'z2' }, 'Merge'],
    ['delete', { partitionKey: PK, rowKey: "a'b%20c" }],
    ['upsert', { partitionKey: PK, rowKey: 'r4', s: 'new' }, 'Replace'],
  ]);
  expect((await rows('TxKinds')).map((r) => [r.rowKey, r.s, r.keep])).toEqual([
    ['r2', 'y2', undefined],
    ['r3', 'z2', 'me'],
    ['r4', 'new', undefined],
  ]);
});

test('a failing action fails the whole transaction with its status, and nothing of it is applied', async () => {
  const c = await table('TxFail');
  await submitTransaction(c, [['create', { partitionKey: 'p', rowKey: 'a', v: 1 }]]);
  const attempt = async (actions: TransactionAction[]) => {
    try {
      await submitTransaction(c, actions);
    } catch (err) {
      return err;
    }
    throw new Error('expected the transaction to fail');
  };
  const dup = await attempt([
    ['create', { partitionKey: 'p', rowKey: 'b', v: 2 }],
    ['create', { partitionKey: 'p', rowKey: 'a', v: 3 }],
  ]);
  expect(dup).toBeInstanceOf(RestError);
  expect(isStatus(dup, 409)).toBe(true);
  expect((dup as RestError).code).toBe('EntityAlreadyExists');
  expect(isStatus(await attempt([['update', { partitionKey: 'p', rowKey: 'missing', v: 1 }, 'Replace']]), 404)).toBe(true);
  expect(isStatus(await attempt([['delete', { partitionKey: 'p', rowKey: 'missing' }]]), 404)).toBe(true);
  const stale = await c.getEntity('p', 'a');
  await submitTransaction(c, [['update', { partitionKey: 'p', rowKey: 'a', v: 4 }, 'Replace', { etag: stale.etag }]]);
  expect(isStatus(await attempt([['update', { partitionKey: 'p', rowKey: 'a', v: 5 }, 'Replace', { etag: stale.etag }]]), 412)).toBe(true);
  expect((await rows('TxFail')).map((r) => [r.rowKey, r.v])).toEqual([['a', 4]]);
});

test('a hundred actions of large values in one transaction', async () => {
  const c = await table('TxBig');
  const big = 'j'.repeat(30_000);
  await submitTransaction(
    c,
    Array.from({ length: 100 }, (_, i): TransactionAction => ['create', { partitionKey: 'p', rowKey: String(i).padStart(3, '0'), d0: big, n: i }]),
  );
  const all = await rows('TxBig');
  expect(all).toHaveLength(100);
  expect(all.every((r, i) => r.d0 === big && r.n === i)).toBe(true);
});

test('entities with typed values the builder does not handle go through the library', async () => {
  const binary: TransactionAction[] = [['create', { partitionKey: 'p', rowKey: 'bin', data: new Uint8Array([1, 2, 3]) }]];
  const int64: TransactionAction[] = [['create', { partitionKey: 'p', rowKey: 'i64', big: { value: '12345678901234', type: 'Int64' } }]];
  expect(canBuild(binary)).toBe(false);
  expect(canBuild(int64)).toBe(false);
  expect(canBuild([['create', { partitionKey: 'p', rowKey: 'plain', s: 'x', n: 1, b: false, when: new Date() }]])).toBe(true);
  const c = await table('TxTyped');
  await submitTransaction(c, [...binary, ...int64]);
  expect(Array.from((await c.getEntity<{ data: Uint8Array }>('p', 'bin')).data)).toEqual([1, 2, 3]);
  expect((await c.getEntity<{ big: { value: string } }>('p', 'i64', { disableTypeConversion: true })).big.value).toBe('12345678901234');
});

test("a transaction answers each action's new ETag, the one a later conditional write must name", async () => {
  const c = await table('TxEtags');
  const etags = await submitTransaction(c, [
    ['create', { partitionKey: 'p', rowKey: 'head', seq: 1 }],
    ['create', { partitionKey: 'p', rowKey: 'page1', v: 'x' }],
  ]);
  expect(etags).toHaveLength(2);
  expect(etags[0]).toBe((await c.getEntity('p', 'head')).etag);
  expect(etags[1]).toBe((await c.getEntity('p', 'page1')).etag);
  // Conditional on the answered ETag: accepted once, then stale (412).
  const next = await submitTransaction(c, [['update', { partitionKey: 'p', rowKey: 'head', seq: 2 }, 'Merge', { etag: etags[0]! }]]);
  expect(next[0]).toBe((await c.getEntity('p', 'head')).etag);
  const stale = await submitTransaction(c, [['update', { partitionKey: 'p', rowKey: 'head', seq: 3 }, 'Merge', { etag: etags[0]! }]]).catch(
    (err: unknown) => err,
  );
  expect(isStatus(stale, 412)).toBe(true);
});
