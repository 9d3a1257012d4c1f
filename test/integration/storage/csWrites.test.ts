import { randomBytes } from 'node:crypto';
import { resetTableClients, table } from '../../../lib/storage/tables';
import { csPartition, loadCsSummaries, readCsObjects, writeCsObjects } from '../../../lib/sync/space/connectorSpace';
import type { CsObject } from '../../../lib/sync/model';

/**
 * The connector-space writes and the summaries' load, on Azurite: rows serialized transaction by transaction
 * (submitBatchedLazy), inserts for rows believed new that fall back to upserts when a row is there after all,
 * a transaction split when its rows pass the size limit, and the summaries read with one query per table (the
 * range of the connector's four partitions there), never another connector's rows.
 */
jest.setTimeout(120_000);

beforeAll(() => {
  process.env.AzureWebJobsStorage = process.env.TEST_STORAGE_CONNECTION_STRING;
  process.env.Storage__TablePrefix = 'w' + randomBytes(5).toString('hex');
  resetTableClients();
});

const A = 'a0000000-0000-4000-8000-00000000000a';
// Sorts right after A and shares all but its last character: a range that leaked would take its rows.
const B = 'a0000000-0000-4000-8000-00000000000b';

const row = (anchor: string, attributes: CsObject['attributes'], meshId: string | null = null): CsObject => ({
  anchor,
  objectType: 'User',
  attributes,
  hash: 'h-' + anchor,
  rulesHash: 'r',
  meshId,
  updatedOn: '2026-11-30T12:00:00.000Z',
});

test('inserts of new rows, and inserts that meet a row go again as upserts, across every partition', async () => {
  const anchors = Array.from({ length: 1_000 }, (_, i) => `uid=p${i},ou=people,dc=example,dc=com`);
  // Every partition of the connector is used (64), most with more than one transaction's worth of nothing.
  expect(new Set(anchors.map((a) => csPartition(A, a))).size).toBe(64);
  await writeCsObjects(
    A,
    anchors.map((a, i) => row(a, { cn: `Person ${i}` })),
    () => false,
  );
  // Another connector's rows in the same tables.
  await writeCsObjects(
    B,
    anchors.slice(0, 300).map((a) => row(a, { cn: 'other' })),
    () => false,
  );
  // Half of A's rows again, "believed new" (a replayed page): the transactions holding them fail with 409 and
  // go again as upserts; the rows of the new anchors beside them are written too.
  const again = [...anchors.slice(0, 500), ...Array.from({ length: 100 }, (_, i) => `uid=n${i},ou=people,dc=example,dc=com`)];
  await writeCsObjects(
    A,
    again.map((a) => row(a, { cn: 'again ' + a }, 'm-' + a)),
    () => false,
  );
  const read = await readCsObjects(A, [...anchors, ...again.slice(500)]);
  expect(read.size).toBe(1_100);
  for (const a of again) expect(read.get(a)).toMatchObject({ attributes: { cn: 'again ' + a }, meshId: 'm-' + a });
  for (const a of anchors.slice(500)) expect(read.get(a)?.attributes.cn).toMatch(/^Person \d+$/);

  const summaries = await loadCsSummaries(A);
  expect(summaries.size).toBe(1_100);
  expect(summaries.get(again[0])?.meshId).toBe('m-' + again[0]);
  expect((await loadCsSummaries(B)).size).toBe(300);
});

test('a transaction whose rows pass the size limit is sent in parts; a row too large for the table is kept apart', async () => {
  // 100 rows of one partition, each about 80 KB: one transaction's worth of rows, 8 MB, more than a
  // transaction may carry.
  const anchors: string[] = [];
  const target = csPartition(A, 'uid=big0');
  for (let i = 0; anchors.length < 100; i++) if (csPartition(A, `uid=big${i}`) === target) anchors.push(`uid=big${i}`);
  const huge = 'uid=huge';
  const rows = [
    ...anchors.map((a, i) => row(a, { description: `${i}:` + 'x'.repeat(40_000) })),
    row(huge, { member: Array.from({ length: 20_000 }, (_, i) => `uid=m${i},ou=people,dc=example,dc=com`) }),
  ];
  await writeCsObjects(A, rows, () => false);
  const read = await readCsObjects(A, [...anchors, huge]);
  expect(read.size).toBe(101);
  anchors.forEach((a, i) => expect(read.get(a)?.attributes.description).toBe(`${i}:` + 'x'.repeat(40_000)));
  expect((read.get(huge)?.attributes.member as string[]).length).toBe(20_000);
  // The large row names a text kept apart rather than holding it.
  const pk = csPartition(A, huge);
  const stored = await (await table('ConnectorSpace' + pk.slice(-2, -1))).getEntity<Record<string, unknown>>(pk, huge);
  expect(typeof stored.aref).toBe('string');
});
