import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { TableClient, type TableEntityResult } from '@azure/data-tables';
import { Azurite } from '../../../lib/runtime/azurite';

/**
 * The table store's index (lib/runtime/azuriteTableIndex.ts) against Azurite as shipped: the same operations
 * on both, real Azurite processes, the same answers: entities, order, pages, continuations, errors,
 * rolled-back batches; and the index rebuilt from a data folder after a restart (also one the stock store wrote).
 */
jest.setTimeout(120_000);

type Row = TableEntityResult<Record<string, unknown>>;
const TABLE = 'indexcheck';

async function scenario(cs: string): Promise<unknown[]> {
  const c = TableClient.fromConnectionString(cs, TABLE, { allowInsecureConnection: true });
  await c.createTable();
  const out: unknown[] = [];
  const attempt = async (label: string, f: () => Promise<unknown>) => {
    try {
      const answer = await f();
      out.push([label, 'ok', answer && typeof answer === 'object' && 'n' in answer ? answer : null]);
    } catch (err) {
      out.push([label, 'error', (err as { statusCode?: number }).statusCode]);
    }
  };
  for (let b = 0; b < 30; b++) {
    const pk = `p${b % 6}`;
    await c.submitTransaction(
      Array.from({ length: 50 }, (_, j) => {
        const i = b * 50 + j;
        return ['create', { partitionKey: pk, rowKey: `r${String((i * 7919) % 10007).padStart(5, '0')}`, n: i, s: `it's ${i % 4}` }] as const;
      }) as never,
    );
  }
  const first = (await c.listEntities({ queryOptions: { filter: "PartitionKey eq 'p1'" } }).next()).value as Row;
  // A batch that fails half-way leaves nothing behind (rollback): a create that collides at its end.
  await attempt('failed batch', () =>
    c.submitTransaction([
      ['create', { partitionKey: 'p1', rowKey: 'new1', n: -1 }],
      ['upsert', { partitionKey: 'p1', rowKey: first.rowKey, n: -2 }, 'Replace'],
      ['delete', { partitionKey: 'p1', rowKey: 'r00000' }],
      ['create', { partitionKey: 'p1', rowKey: first.rowKey, n: -3 }],
    ] as never),
  );
  await attempt('create twice', () =>
    c.createEntity({ partitionKey: 'p2', rowKey: 'dup', n: 1 }).then(() => c.createEntity({ partitionKey: 'p2', rowKey: 'dup', n: 2 })),
  );
  await attempt('replace', () => c.upsertEntity({ partitionKey: 'p2', rowKey: 'dup', n: 3 }, 'Replace'));
  await attempt('merge', () => c.upsertEntity({ partitionKey: 'p2', rowKey: 'dup', m: 4 }, 'Merge'));
  await attempt('update missing', () => c.updateEntity({ partitionKey: 'p2', rowKey: 'missing', n: 1 }, 'Replace'));
  const dup = await c.getEntity('p2', 'dup');
  await attempt('update, right etag', () => c.updateEntity({ partitionKey: 'p2', rowKey: 'dup', n: 5 }, 'Replace', { etag: dup.etag }));
  await attempt('update, stale etag', () => c.updateEntity({ partitionKey: 'p2', rowKey: 'dup', n: 6 }, 'Replace', { etag: dup.etag }));
  await attempt('delete', () => c.deleteEntity('p1', first.rowKey as string));
  await attempt('delete missing', () => c.deleteEntity('p3', 'nothing'));
  await attempt('get', () => c.getEntity('p2', 'dup').then((e) => ({ n: e.n, m: e.m })));
  await attempt('get missing', () => c.getEntity('p2', 'missing'));
  const filters = [
    undefined,
    "PartitionKey eq 'p1'",
    "PartitionKey eq 'p1' and RowKey ge 'r03' and RowKey lt 'r06'",
    "PartitionKey ge 'p2' and PartitionKey lt 'p4' and n lt 900",
    "PartitionKey eq 'p1' or RowKey eq 'dup'",
    "not (PartitionKey eq 'p0')",
    "s eq 'it''s 1' and RowKey gt 'r05'",
    "RowKey eq 'dup'",
    "PartitionKey eq 'none'",
    'n ge 1000',
    // Batched reads by RowKey (the engine's), disjunctions of partitions, and what must not narrow.
    "PartitionKey eq 'p1' and (RowKey eq 'r05677' or RowKey eq 'r03589' or RowKey eq 'r99999' or RowKey eq 'dup')",
    "(PartitionKey eq 'p2' or PartitionKey eq 'p0') and n lt 1200",
    "PartitionKey eq 'p1' and RowKey eq 'r05677' or RowKey eq 'dup'",
    "PartitionKey eq 'p1' and not (RowKey eq 'r05677')",
    "(RowKey eq 'dup' or n eq 5) and PartitionKey ge 'p1'",
    "(RowKey eq 'r05677' or RowKey eq 'r03589') and (RowKey eq 'r03589' or RowKey eq 'r00000')",
    "(PartitionKey eq 'p1') and (RowKey ge 'r03' and RowKey lt 'r06')",
  ];
  for (const filter of filters)
    for (const maxPageSize of [7, 1000]) {
      const pages: string[][] = [];
      for await (const page of c.listEntities({ queryOptions: { filter } }).byPage({ maxPageSize }))
        pages.push(page.map((r) => `${r.partitionKey}/${r.rowKey}/${String(r.n)}/${String(r.m)}`));
      out.push([filter ?? 'all', maxPageSize, pages]);
    }
  return out;
}

async function withAzurite<T>(o: ConstructorParameters<typeof Azurite>[0], f: (a: Azurite) => Promise<T>): Promise<T> {
  const a = new Azurite({ services: ['table'], ...o });
  await a.start();
  try {
    return await f(a);
  } finally {
    await a.stop();
  }
}

async function listAll(cs: string): Promise<string[]> {
  const c = TableClient.fromConnectionString(cs, TABLE, { allowInsecureConnection: true });
  const keys: string[] = [];
  for await (const page of c.listEntities({ queryOptions: { filter: "PartitionKey ge 'p1' and n lt 1200" } }).byPage({ maxPageSize: 100 }))
    keys.push(...page.map((r) => `${r.partitionKey}/${r.rowKey}/${String(r.n)}`));
  return keys;
}

describe('the table store index against Azurite as shipped', () => {
  it('answers every operation, query, page and continuation as the stock store does', async () => {
    const stock = await withAzurite({ stockTable: true }, (a) => scenario(a.connectionString));
    const indexed = await withAzurite({}, (a) => scenario(a.connectionString));
    expect(stock.length).toBeGreaterThan(25);
    const all = stock.find((x) => (x as unknown[])[0] === 'all' && (x as unknown[])[1] === 1000) as [string, number, string[][]];
    expect(all[2].flat()).toHaveLength(1500); // 30 batches of 50, p2/dup created, one row of p1 deleted
    expect(stock.filter((x) => (x as unknown[])[1] === 'error').length).toBeGreaterThanOrEqual(5);
    expect(indexed).toEqual(stock);
  });

  it('rebuilds the index from a data folder after a restart, also from one the stock store wrote', async () => {
    const dir = mkdtempSync(path.join(os.tmpdir(), 'azurite-index-'));
    try {
      const stockDir = path.join(dir, 'stock');
      const expected = await withAzurite({ location: stockDir, stockTable: true }, async (a) => {
        await scenario(a.connectionString);
        return listAll(a.connectionString);
      });
      expect(expected.length).toBeGreaterThan(500);
      expect(await withAzurite({ location: stockDir }, (a) => listAll(a.connectionString))).toEqual(expected);
      const ownDir = path.join(dir, 'own');
      await withAzurite({ location: ownDir }, (a) => scenario(a.connectionString));
      expect(await withAzurite({ location: ownDir }, (a) => listAll(a.connectionString))).toEqual(expected);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
