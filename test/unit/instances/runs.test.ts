import { randomUUID } from 'node:crypto';
import { AppError } from '../../../lib/core/errors';
import {
  MAX_RUN_ERRORS,
  boundErrors,
  completeRun,
  createRun,
  emptyStats,
  findActiveRun,
  getRun,
  instanceNamesInRuns,
  listRuns,
  renameInstanceInRuns,
  runKey,
  updateRun,
} from '../../../lib/storage/runs';
import { useTestStorage } from './storageEnv';

describe('run keys', () => {
  test('newer runs sort first as plain strings, across digit-count boundaries', () => {
    const times = [
      0,
      9,
      10,
      999,
      1000,
      Date.parse('2001-09-09T01:46:39.999Z'),
      Date.parse('2001-09-09T01:46:40.000Z'),
      Date.parse('2026-11-21T10:15:30.123Z'),
      9_999_999_999_998,
    ];
    const keys = times.map((t) => runKey(t, randomUUID()));
    const sorted = [...keys].sort();
    expect(sorted).toEqual([...keys].reverse());
    for (const k of keys) expect(k).toMatch(/^\d{13}_[0-9a-f-]{36}$/);
  });

  test('run keys sort before the lock row', () => {
    expect(runKey(0, randomUUID()) < '~active').toBe(true);
    expect(runKey(0, randomUUID()) < ':').toBe(true);
  });
});

describe('boundErrors', () => {
  test('keeps the first 100 errors and bounds their size', () => {
    const errors = Array.from({ length: 250 }, (_, i) => ({ object: `cn=u${i}`, message: 'x'.repeat(5000) }));
    const bounded = boundErrors(errors);
    expect(bounded.length).toBeLessThanOrEqual(MAX_RUN_ERRORS);
    expect(bounded[0].object).toBe('cn=u0');
    expect(JSON.stringify(bounded).length).toBeLessThanOrEqual(30_000);
    expect(boundErrors(errors.slice(0, 3).map((e) => ({ ...e, message: 'short' })))).toHaveLength(3);
  });
});

describe('runs repository (Azurite)', () => {
  beforeAll(() => useTestStorage());

  test('one active run per connector, even for concurrent starts; completing releases the lock', async () => {
    const connectorId = randomUUID();
    const results = await Promise.allSettled(
      Array.from({ length: 5 }, () => createRun({ connectorId, instanceId: 'inst-a', instanceName: 'A', runType: 'DeltaImport', status: 'Running' })),
    );
    const ok = results.filter((r) => r.status === 'fulfilled');
    const failed = results.filter((r): r is PromiseRejectedResult => r.status === 'rejected');
    expect(ok).toHaveLength(1);
    for (const f of failed) expect((f.reason as AppError).code).toBe('conflict');
    const run = (ok[0] as PromiseFulfilledResult<Awaited<ReturnType<typeof createRun>>>).value;
    expect((await findActiveRun(connectorId))?.runId).toBe(run.runId);
    // Losers left nothing behind.
    expect((await listRuns({ connectorId, skip: 0, take: 50 })).totalCount).toBe(1);

    const done = await completeRun(run.runId, { status: 'Completed', stats: { ...emptyStats(), objectsProcessed: 3, objectsCreated: 3 } });
    expect(done.status).toBe('Completed');
    expect(done.completedAt).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
    expect(await findActiveRun(connectorId)).toBeNull();
    const next = await createRun({ connectorId, instanceId: 'inst-a', runType: 'FullImport', status: 'Queued' });
    expect(next.status).toBe('Queued');
  });

  test('updateRun with a stale ETag is a conflict; without one it merges', async () => {
    const run = await createRun({ connectorId: randomUUID(), instanceId: null, runType: 'Export', status: 'Running', dryRun: true });
    const first = await updateRun(run.runId, { stats: { ...emptyStats(), objectsProcessed: 10 } }, { etag: run.etag });
    expect(first.stats.objectsProcessed).toBe(10);
    await expect(updateRun(run.runId, { stats: emptyStats() }, { etag: run.etag })).rejects.toMatchObject({ code: 'conflict' });
    const merged = await updateRun(run.runId, { errors: [{ object: 'x', message: 'bad' }] });
    expect(merged.stats.objectsProcessed).toBe(10);
    expect(merged.errors).toEqual([{ object: 'x', message: 'bad' }]);
    expect(merged.dryRun).toBe(true);
    const failed = await completeRun(run.runId, { status: 'Failed', stats: merged.stats, error: 'connection lost' });
    expect(await getRun(run.runId)).toMatchObject({ status: 'Failed', error: 'connection lost', instanceId: null });
    expect(failed.etag).not.toBe(merged.etag);
    await expect(updateRun(randomUUID(), {})).rejects.toMatchObject({ code: 'not_found' });
    expect(await getRun(randomUUID())).toBeNull();
  });

  test('history: newest first, filters, exact totals, paging; copies follow the primary', async () => {
    const c1 = randomUUID();
    const c2 = randomUUID();
    const inst = `inst-${randomUUID()}`;
    const base = Date.parse('2030-01-01T00:00:00.000Z');
    const made: string[] = [];
    for (let i = 0; i < 12; i++) {
      const connectorId = i % 2 ? c2 : c1;
      const run = await createRun({
        connectorId,
        instanceId: i < 8 ? inst : 'other',
        instanceName: 'N1',
        runType: 'DeltaImport',
        status: 'Running',
        startedAt: new Date(base + i * 1000),
      });
      await completeRun(run.runId, { status: i % 3 === 0 ? 'Failed' : 'Completed', stats: emptyStats() });
      made.push(run.runId);
    }
    const newestFirst = [...made].reverse();
    const byInst = await listRuns({ instanceId: inst, skip: 0, take: 50 });
    expect(byInst.totalCount).toBe(8);
    expect(byInst.items.map((r) => r.runId)).toEqual(newestFirst.slice(4));
    const c1Runs = await listRuns({ connectorId: c1, skip: 1, take: 2 });
    expect(c1Runs.totalCount).toBe(6);
    expect(c1Runs.items.map((r) => r.runId)).toEqual([made[8], made[6]]);
    const failed = await listRuns({ connectorId: c1, status: 'Failed', skip: 0, take: 50 });
    expect(failed.items.map((r) => r.runId)).toEqual([made[6], made[0]]);
    const c2Inst = await listRuns({ connectorId: c2, instanceId: inst, status: 'Completed', skip: 0, take: 50 });
    expect(c2Inst.items.map((r) => r.runId)).toEqual([made[7], made[5], made[1]]);
    const instFailed = await listRuns({ instanceId: inst, status: 'Failed', skip: 0, take: 50 });
    expect(instFailed.items.map((r) => r.runId)).toEqual([made[6], made[3], made[0]]);
    expect(instFailed.items.every((r) => r.status === 'Failed' && r.completedAt)).toBe(true);
    const all = await listRuns({ skip: 0, take: 200 });
    const mine = all.items.filter((r) => made.includes(r.runId)).map((r) => r.runId);
    expect(mine).toEqual(newestFirst);
    expect((await listRuns({ connectorId: c1, skip: 10, take: 5 })).items).toEqual([]);
  });

  test('renameInstanceInRuns relabels primary and copies, and is idempotent', async () => {
    const inst = `inst-${randomUUID()}`;
    for (let i = 0; i < 3; i++) {
      const run = await createRun({ connectorId: randomUUID(), instanceId: inst, instanceName: 'Old', runType: 'FullImport', status: 'Running' });
      await completeRun(run.runId, { status: 'Completed', stats: emptyStats() });
    }
    expect(await instanceNamesInRuns(inst)).toEqual(new Set(['Old']));
    expect(await renameInstanceInRuns(inst, 'New')).toBe(3);
    expect(await renameInstanceInRuns(inst, 'New')).toBe(0);
    expect(await instanceNamesInRuns(inst)).toEqual(new Set(['New']));
    const listed = await listRuns({ instanceId: inst, skip: 0, take: 10 });
    expect(listed.items.every((r) => r.instanceName === 'New')).toBe(true);
  });
});
