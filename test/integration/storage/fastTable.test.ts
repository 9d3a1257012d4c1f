import { randomBytes } from 'node:crypto';
import { AzureNamedKeyCredential, generateAccountSas, RestError, TableClient } from '@azure/data-tables';
import {
  createEntity,
  deleteEntity,
  getEntity,
  isStatus,
  leanTableFor,
  listEntities,
  resetTableClients,
  storageConnectionString,
  table,
  updateEntity,
  upsertEntity,
} from '../../../lib/storage/tables';

/**
 * The lean table client (lib/storage/fastTable.ts, used by the helpers of lib/storage/tables.ts) against the
 * library's own client on real Azurite: what one writes the other reads the same (typed values included), the
 * same pages and interchangeable continuation tokens, the same failures (status and service error code) for
 * the cases callers check, and a SAS connection string.
 */
jest.setTimeout(60_000);

let sdk: (name: string) => TableClient;

beforeAll(() => {
  process.env.AzureWebJobsStorage = process.env.TEST_STORAGE_CONNECTION_STRING;
  process.env.Storage__TablePrefix = 'f' + randomBytes(5).toString('hex');
  resetTableClients();
  sdk = (name) => TableClient.fromConnectionString(storageConnectionString(), process.env.Storage__TablePrefix + name, { allowInsecureConnection: true });
});

const typed = (rowKey: string) => ({
  partitionKey: "p'1 ü",
  rowKey,
  s: 'x "quoted" \\ \n é 😀',
  n: 7,
  d: 1.25,
  b: true,
  big: 9007199254740993n,
  when: new Date('2026-01-02T03:04:05.678Z'),
  bin: new Uint8Array([0, 1, 254, 255]),
  g: { value: '4f2a9b4e-0000-4000-8000-000000000001', type: 'Guid' as const },
  i64: { value: '-12', type: 'Int64' as const },
});

/** An entity without its service-made values (etag and timestamp differ from write to write). */
const content = (e: Record<string, unknown>) => {
  const { etag, timestamp, 'odata.metadata': metadata, ...rest } = e;
  expect(metadata === undefined || typeof metadata === 'string').toBe(true);
  expect(typeof etag).toBe('string');
  expect(typeof timestamp === 'string' || timestamp instanceof Date).toBe(true);
  return rest;
};

test('the table clients are lean on the test Azurite', async () => {
  expect(leanTableFor(storageConnectionString(), (await table('Probe')).url, 'Probe')).toBeDefined();
});

test('written by one client, read the same by both', async () => {
  const lean = await table('Typed');
  const lib = sdk('Typed');
  await createEntity(lean, typed("a'b%20c"));
  await lib.createEntity(typed('lib'));
  for (const rk of ["a'b%20c", 'lib']) {
    const viaLean = await getEntity<Record<string, unknown>>(lean, "p'1 ü", rk);
    const viaLib = await lib.getEntity<Record<string, unknown>>("p'1 ü", rk);
    expect(viaLean).toEqual(viaLib);
    expect(content(viaLean)).toMatchObject({
      s: 'x "quoted" \\ \n é 😀',
      n: 7,
      d: 1.25,
      b: true,
      big: 9007199254740993n,
      when: new Date('2026-01-02T03:04:05.678Z'),
      g: { value: '4f2a9b4e-0000-4000-8000-000000000001', type: 'Guid' },
      i64: -12n,
    });
    expect(Buffer.from(viaLean.bin as Uint8Array)).toEqual(Buffer.from([0, 1, 254, 255]));
  }
  const selected = await getEntity(lean, "p'1 ü", 'lib', { queryOptions: { select: ['n', 'etag'] } });
  expect(selected).toEqual(await lib.getEntity("p'1 ü", 'lib', { queryOptions: { select: ['n', 'etag'] } }));
  expect(Object.keys(selected).sort()).toEqual(['etag', 'n', 'odata.metadata']);
});

test('merge keeps other properties, replace drops them, with and without If-Match', async () => {
  const c = await table('Writes');
  await upsertEntity(c, { partitionKey: 'p', rowKey: 'r', a: 'a', keep: 'k' }, 'Replace');
  const m = await upsertEntity(c, { partitionKey: 'p', rowKey: 'r', a: 'a2' }, 'Merge');
  expect(content(await getEntity(c, 'p', 'r'))).toEqual({ partitionKey: 'p', rowKey: 'r', a: 'a2', keep: 'k' });
  const r = await updateEntity(c, { partitionKey: 'p', rowKey: 'r', a: 'a3' }, 'Replace', { etag: m.etag });
  expect(content(await getEntity(c, 'p', 'r'))).toEqual({ partitionKey: 'p', rowKey: 'r', a: 'a3' });
  expect(r.etag).toBe((await getEntity(c, 'p', 'r')).etag);
  await updateEntity(c, { partitionKey: 'p', rowKey: 'r', b: 1 }, 'Merge');
  expect(content(await getEntity(c, 'p', 'r'))).toEqual({ partitionKey: 'p', rowKey: 'r', a: 'a3', b: 1 });
  await deleteEntity(c, 'p', 'r', { etag: (await getEntity(c, 'p', 'r')).etag });
  await expect(getEntity(c, 'p', 'r')).rejects.toMatchObject({ statusCode: 404 });
});

test('the same failures as the library: status and service error code', async () => {
  const c = await table('Fails');
  const lib = sdk('Fails');
  await upsertEntity(c, { partitionKey: 'p', rowKey: 'r', v: 1 });
  const stale = (await getEntity(c, 'p', 'r')).etag;
  await upsertEntity(c, { partitionKey: 'p', rowKey: 'r', v: 2 });
  const failure = async (p: Promise<unknown>) => {
    try {
      await p;
    } catch (err) {
      return err as RestError;
    }
    throw new Error('expected a failure');
  };
  const cases: [string, () => Promise<unknown>, () => Promise<unknown>, number][] = [
    ['read of a missing row', () => getEntity(c, 'p', 'none'), () => lib.getEntity('p', 'none'), 404],
    ['insert of an existing row', () => createEntity(c, { partitionKey: 'p', rowKey: 'r' }), () => lib.createEntity({ partitionKey: 'p', rowKey: 'r' }), 409],
    [
      'update with a stale ETag',
      () => updateEntity(c, { partitionKey: 'p', rowKey: 'r', v: 3 }, 'Merge', { etag: stale }),
      () => lib.updateEntity({ partitionKey: 'p', rowKey: 'r', v: 3 }, 'Merge', { etag: stale }),
      412,
    ],
    [
      'update of a missing row',
      () => updateEntity(c, { partitionKey: 'p', rowKey: 'none' }, 'Replace'),
      () => lib.updateEntity({ partitionKey: 'p', rowKey: 'none' }, 'Replace'),
      404,
    ],
    ['delete of a missing row', () => deleteEntity(c, 'p', 'none'), () => lib.deleteEntity('p', 'none'), 404],
    ['delete with a stale ETag', () => deleteEntity(c, 'p', 'r', { etag: stale }), () => lib.deleteEntity('p', 'r', { etag: stale }), 412],
  ];
  for (const [what, viaLean, viaLib, status] of cases) {
    const [a, b] = [await failure(viaLean()), await failure(viaLib())];
    expect([what, a instanceof RestError, a.statusCode, isStatus(a, status), a.code]).toEqual([what, true, status, true, b.code]);
    expect((a.details as { errorCode?: string }).errorCode).toBe((b.details as { errorCode?: string }).errorCode);
    expect((a.details as { odataError?: { code?: string } }).odataError?.code).toBe((b.details as { odataError?: { code?: string } }).odataError?.code);
    expect(a.message.replace(/RequestId:[^\\]*\\nTime:[^"]*/, '')).toBe(b.message.replace(/RequestId:[^\\]*\\nTime:[^"]*/, ''));
  }
  expect((await getEntity<{ v: number }>(c, 'p', 'r')).v).toBe(2);
  await expect(getEntity(c, 'p', null as unknown as string)).rejects.toThrow("The entity's rowKey cannot be undefined or null.");
});

test('queries: the same pages, filters and selects, and continuation tokens either client can follow', async () => {
  const c = await table('Pages');
  const lib = sdk('Pages');
  for (let i = 0; i < 23; i++)
    await upsertEntity(c, { partitionKey: i % 2 ? 'odd' : 'even', rowKey: `r${String(i).padStart(2, '0')}`, i, tag: i % 3 ? 'x' : 'y' });
  const filter = "PartitionKey eq 'odd' and tag eq 'x'";
  const pagesOf = async (it: AsyncIterable<Record<string, unknown>[] & { continuationToken?: string }>) => {
    const out: { rows: unknown[]; token?: string }[] = [];
    for await (const page of it) out.push({ rows: page.map((e) => [e.rowKey, e.i]), token: page.continuationToken });
    return out;
  };
  const leanPages = await pagesOf(listEntities(c, { queryOptions: { filter, select: ['RowKey', 'i'] } }).byPage({ maxPageSize: 3 }));
  const libPages = await pagesOf(lib.listEntities({ queryOptions: { filter, select: ['RowKey', 'i'] } }).byPage({ maxPageSize: 3 }));
  expect(leanPages.map((p) => p.rows)).toEqual(libPages.map((p) => p.rows));
  expect(leanPages.length).toBeGreaterThan(2);
  // A token from one client continues in the other.
  const fromLib = await pagesOf(
    listEntities(c, { queryOptions: { filter, select: ['RowKey', 'i'] } }).byPage({ maxPageSize: 3, continuationToken: libPages[0].token }),
  );
  expect(fromLib.map((p) => p.rows)).toEqual(libPages.slice(1).map((p) => p.rows));
  const fromLean = await pagesOf(
    lib.listEntities({ queryOptions: { filter, select: ['RowKey', 'i'] } }).byPage({ maxPageSize: 3, continuationToken: leanPages[1].token }),
  );
  expect(fromLean.map((p) => p.rows)).toEqual(leanPages.slice(2).map((p) => p.rows));
  // Entity by entity, every row of the table, as the library lists it.
  const all: unknown[] = [];
  for await (const e of listEntities(c)) all.push(e);
  const allLib: unknown[] = [];
  for await (const e of lib.listEntities()) allLib.push(e);
  expect(all).toEqual(allLib);
  expect(all).toHaveLength(23);
});

test('a SAS connection string: requests carry the SAS instead of a signature', async () => {
  const cs = storageConnectionString();
  const key = /AccountKey=([^;]+)/.exec(cs)![1];
  const account = /AccountName=([^;]+)/.exec(cs)![1];
  const endpoint = /TableEndpoint=([^;]+)/.exec(cs)![1];
  const sas = generateAccountSas(new AzureNamedKeyCredential(account, key), {
    expiresOn: new Date(Date.now() + 3600_000),
    permissions: { query: true, write: true, add: true, update: true, delete: true, list: true },
    resourceTypes: 'sco',
  });
  const sasCs = `TableEndpoint=${endpoint};SharedAccessSignature=${sas}`;
  const name = process.env.Storage__TablePrefix + 'Sas';
  const lib = TableClient.fromConnectionString(sasCs, name, { allowInsecureConnection: true });
  await sdk('Sas').createTable();
  const lean = leanTableFor(sasCs, lib.url, name)!;
  expect(lean).toBeDefined();
  await lean.write({ partitionKey: 'p', rowKey: 'r', v: 'sas' }, 'Replace');
  expect((await lean.getEntity<{ v: string }>('p', 'r')).v).toBe('sas');
  expect((await lib.getEntity<{ v: string }>('p', 'r')).v).toBe('sas');
  // Without the SAS the emulator refuses: the SAS is what authorized the requests above.
  const unsigned = leanTableFor(`TableEndpoint=${endpoint};SharedAccessSignature=sv=2019-02-02&sig=bad`, `${endpoint}?sv=2019-02-02&sig=bad`, name)!;
  await expect(unsigned.getEntity('p', 'r')).rejects.toMatchObject({ statusCode: 403 });
});

test('no lean client where the library must stay: a proxy, no credential; plain HTTP to another host when the connection string asks for it', () => {
  const key = 'Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw==';
  const remote = `DefaultEndpointsProtocol=http;AccountName=a;AccountKey=${key};TableEndpoint=http://10.1.2.3:10002/a`;
  expect(leanTableFor(remote, 'http://10.1.2.3:10002/a', 'T')).toBeDefined();
  const httpsAsked = `DefaultEndpointsProtocol=https;AccountName=a;AccountKey=${key};EndpointSuffix=core.windows.net`;
  expect(leanTableFor(httpsAsked, 'http://a.table.core.windows.net', 'T')).toBeUndefined();
  const azure = `DefaultEndpointsProtocol=https;AccountName=a;AccountKey=${key};EndpointSuffix=core.windows.net`;
  expect(leanTableFor(azure, 'https://a.table.core.windows.net', 'T')).toBeDefined();
  expect(leanTableFor(azure, 'https://a.table.cosmos.azure.com', 'T')).toBeUndefined();
  const saved = process.env.HTTPS_PROXY;
  process.env.HTTPS_PROXY = 'http://proxy.example:3128';
  try {
    expect(leanTableFor(azure, 'https://a.table.core.windows.net', 'T')).toBeUndefined();
  } finally {
    if (saved === undefined) delete process.env.HTTPS_PROXY;
    else process.env.HTTPS_PROXY = saved;
  }
  expect(leanTableFor('TableEndpoint=https://a.table.core.windows.net', 'https://a.table.core.windows.net', 'T')).toBeUndefined();
});
