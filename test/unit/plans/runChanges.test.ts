import { randomBytes, randomUUID } from 'node:crypto';
import { deflateRawSync } from 'node:zlib';
import { table, odata } from '../../../lib/storage/tables';
import {
  deleteRunChangeRow,
  deleteRunChanges,
  previewKey,
  listRunChanges,
  pageKey,
  readRunChanges,
  runChangeCounts,
  writeRunChanges,
  type StoredChange,
} from '../../../lib/storage/runChanges';
import { useTestStorage } from '../instances/storageEnv';

const item = (i: number, operation: StoredChange['operation'], outcome: StoredChange['outcome'], noise = 16): StoredChange => ({
  target: 'mesh',
  operation,
  csObjectId: null,
  meshObjectId: randomUUID(),
  anchor: `a${String(i).padStart(5, '0')}`,
  dn: null,
  attributes: { mail: { old: null, new: `user${i}@example.com` }, note: { old: null, new: randomBytes(noise).toString('base64') } },
  outcome,
  error: null,
  key: `a${i}`,
  fp: `fp${i}`,
});

describe('run changes repository', () => {
  beforeAll(() => useTestStorage());

  test('a preview row (the target items of an import plan) is listed after its page, never counted nor read as the plan', async () => {
    const runId = randomUUID();
    await writeRunChanges(runId, pageKey('i', 0), [item(0, 'Delete', 'planned'), item(1, 'Delete', 'planned')]);
    const target = { ...item(9, 'Delete', 'planned'), target: 'connector' as const, connectorId: 'c-ldap', key: undefined, fp: undefined };
    await writeRunChanges(runId, previewKey(pageKey('i', 0)), [target], { preview: true });
    await writeRunChanges(runId, pageKey('i', 1), [item(2, 'Add', 'planned')]);
    const all = await listRunChanges(runId, {}, 0, 50, 'c-hr');
    expect(all.totalCount).toBe(4);
    expect(all.items.map((i) => [i.anchor, i.target, i.connectorId])).toEqual([
      ['a00000', 'mesh', 'c-hr'],
      ['a00001', 'mesh', 'c-hr'],
      ['a00009', 'connector', 'c-ldap'],
      ['a00002', 'mesh', 'c-hr'],
    ]);
    expect((await listRunChanges(runId, { operation: 'Delete' }, 2, 5)).items.map((i) => i.anchor)).toEqual(['a00009']);
    expect(await runChangeCounts(runId)).toEqual({ 'Delete|planned': 2, 'Add|planned': 1 });
    const read: string[] = [];
    for await (const page of readRunChanges(runId)) read.push(...page.map((c) => c.anchor ?? ''));
    expect(read).toEqual(['a00000', 'a00001', 'a00002']);
    await deleteRunChangeRow(runId, previewKey(pageKey('i', 0)));
    expect((await listRunChanges(runId, {}, 0, 50)).totalCount).toBe(3);
  });

  test('pages are written compressed, listed in order, filtered and paged with an exact total', async () => {
    const runId = randomUUID();
    // Page 0: 3 adds; page 1: 2 deletes and 1 failed update; page 2: empty (nothing written).
    await writeRunChanges(runId, pageKey('i', 0), [item(0, 'Add', 'applied'), item(1, 'Add', 'applied'), item(2, 'Add', 'applied')]);
    await writeRunChanges(runId, pageKey('i', 1), [item(3, 'Delete', 'planned'), item(4, 'Update', 'failed'), item(5, 'Delete', 'planned')]);
    await writeRunChanges(runId, pageKey('i', 2), []);
    const all = await listRunChanges(runId, {}, 0, 50);
    expect(all.totalCount).toBe(6);
    expect(all.items.map((i) => i.anchor)).toEqual(['a00000', 'a00001', 'a00002', 'a00003', 'a00004', 'a00005']);
    // No key or fingerprint in what the API shows.
    expect(Object.keys(all.items[0]).sort()).toEqual([
      'anchor',
      'attributes',
      'connectorId',
      'csObjectId',
      'dn',
      'error',
      'meshObjectId',
      'operation',
      'outcome',
      'target',
    ]);
    const deletes = await listRunChanges(runId, { operation: 'Delete' }, 0, 50);
    expect(deletes).toMatchObject({ totalCount: 2, items: [{ anchor: 'a00003' }, { anchor: 'a00005' }] });
    const window = await listRunChanges(runId, {}, 2, 2);
    expect(window.totalCount).toBe(6);
    expect(window.items.map((i) => i.anchor)).toEqual(['a00002', 'a00003']);
    expect((await listRunChanges(runId, { outcome: 'failed' }, 0, 50)).items.map((i) => i.anchor)).toEqual(['a00004']);
    expect(await listRunChanges(runId, { operation: 'Rename' }, 0, 50)).toEqual({ items: [], totalCount: 0 });
    expect(await runChangeCounts(runId)).toEqual({ 'Add|applied': 3, 'Delete|planned': 2, 'Update|failed': 1 });
  });

  test('a page written again replaces its row; a large page goes on over several rows; delete removes all', async () => {
    const runId = randomUUID();
    await writeRunChanges(runId, pageKey('d', 0), [item(0, 'Delete', 'planned')]);
    await writeRunChanges(runId, pageKey('d', 0), [item(0, 'Delete', 'applied'), item(1, 'Delete', 'drifted')]);
    expect(await runChangeCounts(runId)).toEqual({ 'Delete|applied': 1, 'Delete|drifted': 1 });
    // Random values do not compress: 3,000 items of 600 random bytes are well over one entity's megabyte.
    const big = Array.from({ length: 3000 }, (_, i) => item(10 + i, 'Add', 'planned', 600));
    await writeRunChanges(runId, pageKey('i', 0), big);
    const client = await table('RunChanges');
    const rows: string[] = [];
    for await (const e of client.listEntities({ queryOptions: { filter: `PartitionKey eq ${odata(runId)}`, select: ['RowKey'] } })) rows.push(String(e.rowKey));
    expect(rows.filter((k) => k.startsWith('i')).length).toBeGreaterThan(1);
    const listed = await listRunChanges(runId, { operation: 'Add' }, 2990, 50);
    expect(listed.totalCount).toBe(3000);
    expect(listed.items).toHaveLength(10);
    let read = 0;
    for await (const page of readRunChanges(runId)) read += page.length;
    expect(read).toBe(3002);
    await deleteRunChanges(runId);
    expect(await listRunChanges(runId, {}, 0, 10)).toEqual({ items: [], totalCount: 0 });
  });

  test('a row written before the format column (deflated JSON) is listed and read as it was, beside new rows', async () => {
    const runId = randomUUID();
    const old = [item(0, 'Add', 'planned'), item(1, 'Update', 'planned')];
    const client = await table('RunChanges');
    await client.upsertEntity({
      partitionKey: runId,
      rowKey: pageKey('i', 0),
      k: JSON.stringify({ 'Add|planned': 1, 'Update|planned': 1 }),
      parts: 1,
      zn: 1,
      z0: new Uint8Array(deflateRawSync(Buffer.from(JSON.stringify(old), 'utf8'), { level: 1 })),
    });
    const fresh = [item(2, 'Delete', 'planned')];
    await writeRunChanges(runId, pageKey('i', 1), fresh);
    const pages: StoredChange[][] = [];
    for await (const page of readRunChanges(runId)) pages.push(page);
    expect(pages).toEqual([old, fresh]);
    const listed = await listRunChanges(runId, { outcome: 'planned' }, 1, 2);
    expect(listed.totalCount).toBe(3);
    expect(listed.items.map((c) => [c.anchor, c.operation])).toEqual([
      ['a00001', 'Update'],
      ['a00002', 'Delete'],
    ]);
  });
});
