import { randomBytes } from 'node:crypto';
import * as tables from '../../../lib/storage/tables';
import { createRun, getRun, runKey, updateRun } from '../../../lib/storage/runs';

/**
 * A run's pointer (run id -> its connector and row key) is read once per process and kept: a run a client polls
 * costs one storage read per poll, not two. On Azurite: the kept pointer is used, one this process never saw is
 * read, a run that does not exist is read again every time (never kept as missing), and a run whose row is gone
 * still reads as no such run.
 */
jest.setTimeout(60_000);

beforeAll(() => {
  process.env.AzureWebJobsStorage = process.env.TEST_STORAGE_CONNECTION_STRING;
  process.env.Storage__TablePrefix = 'p' + randomBytes(5).toString('hex');
  tables.resetTableClients();
});

afterEach(() => jest.restoreAllMocks());

const connectorId = () => `c${randomBytes(6).toString('hex')}`;
const start = (id = connectorId()) => createRun({ connectorId: id, instanceId: 'i-1', runType: 'Export', status: 'Running' });

/** The partition keys of the rows `fn` reads one by one. */
async function pointReads(fn: () => Promise<unknown>): Promise<string[]> {
  const spy = jest.spyOn(tables, 'getEntity');
  await fn();
  const keys = spy.mock.calls.map((c) => String(c[1]));
  spy.mockRestore();
  return keys;
}

test('a run this process created or read is read with one request, its pointer kept', async () => {
  const run = await start();
  let got: Awaited<ReturnType<typeof getRun>> = null;
  const reads = await pointReads(async () => {
    for (let i = 0; i < 3; i++) got = await getRun(run.runId);
  });
  expect(got).toMatchObject({ runId: run.runId, connectorId: run.connectorId, status: 'Running' });
  // Three reads of the run row, none of the pointer.
  expect(reads).toEqual([`c_${run.connectorId}`, `c_${run.connectorId}`, `c_${run.connectorId}`]);
  // Progress goes through the kept pointer too, and lands on the row.
  const progressed = await updateRun(run.runId, { stats: { ...run.stats, objectsProcessed: 7 } });
  expect(progressed.stats.objectsProcessed).toBe(7);
  expect((await getRun(run.runId))?.stats.objectsProcessed).toBe(7);
});

test('a run another process created is found through its stored pointer, then kept', async () => {
  const run = await start();
  await jest.isolateModulesAsync(async () => {
    // A second copy of the module: a process that never saw the run.
    const other = (await import('../../../lib/storage/runs')) as typeof import('../../../lib/storage/runs');
    const otherTables = (await import('../../../lib/storage/tables')) as typeof tables;
    const spy = jest.spyOn(otherTables, 'getEntity');
    expect((await other.getRun(run.runId))?.runId).toBe(run.runId);
    expect((await other.getRun(run.runId))?.runId).toBe(run.runId);
    expect(spy.mock.calls.map((c) => String(c[1]))).toEqual(['id', `c_${run.connectorId}`, `c_${run.connectorId}`]);
  });
});

test('an unknown run is looked up every time: a pointer written later is found', async () => {
  const reads = await pointReads(async () => {
    expect(await getRun('00000000-0000-4000-8000-000000000000')).toBeNull();
    expect(await getRun('00000000-0000-4000-8000-000000000000')).toBeNull();
  });
  expect(reads).toEqual(['id', 'id']);
});

test('a kept pointer whose run row is gone reads as no such run', async () => {
  const run = await start();
  expect(await getRun(run.runId)).not.toBeNull();
  const client = await tables.table('Runs');
  await tables.deleteEntity(client, `c_${run.connectorId}`, runKey(Date.parse(run.startedAt), run.runId));
  expect(await getRun(run.runId)).toBeNull();
  await expect(updateRun(run.runId, { stats: run.stats })).rejects.toMatchObject({ code: 'not_found' });
});

test('a run refused by the connector lock keeps no pointer: its id reads as no such run', async () => {
  const id = connectorId();
  await start(id);
  const created = jest.spyOn(tables, 'createEntity');
  await expect(start(id)).rejects.toMatchObject({ code: 'conflict' });
  // The refused run's pointer was written, then removed; this process kept nothing of it.
  const refused = created.mock.calls.map((c) => c[1] as { partitionKey: string; rowKey: string }).find((e) => e.partitionKey === 'id');
  expect(refused).toBeDefined();
  expect(await getRun(refused!.rowKey)).toBeNull();
});
