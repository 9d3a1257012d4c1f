import { randomUUID } from 'node:crypto';
import { completeRun, createRun, emptyStats, updateRun, type RunStatus, type TerminalRunStatus } from '../../../lib/storage/runs';
import { startService, type Answer, type ServiceUnderTest } from '../../support/service';

/**
 * Runs (read side) over HTTP against the local runtime on Azurite. Runs are seeded through the runs
 * repository, as the sync engine writes them.
 */
jest.setTimeout(120_000);

let rt: ServiceUnderTest;
const c1 = randomUUID();
const c2 = randomUUID();
const instA = randomUUID();
const instB = randomUUID();
/** Seeded run ids, oldest first. */
const made: Array<{ runId: string; connectorId: string; instanceId: string; status: RunStatus }> = [];
const base = Date.parse('2031-05-01T08:00:00.000Z');
const STATUSES: TerminalRunStatus[] = ['Completed', 'CompletedWithErrors', 'Failed', 'Rejected'];

function expectProblem(res: Answer, status: number, code: string): void {
  expect({ status: res.status, code: res.body?.code }).toEqual({ status, code });
  expect(res.headers.get('content-type')).toMatch(/^application\/problem\+json/);
}

const ids = (res: Answer) => (res.body.items as Array<{ runId: string }>).map((r) => r.runId);
const newestFirst = (pred: (m: (typeof made)[number]) => boolean) =>
  made
    .filter(pred)
    .map((m) => m.runId)
    .reverse();

beforeAll(async () => {
  // Started first: it points this process's repositories at the service's tables, where the runs are seeded.
  rt = await startService({ env: { Engine__InstanceName: `runs-${randomUUID().slice(0, 8)}` } });
  for (let i = 0; i < 30; i++) {
    const connectorId = i % 3 === 0 ? c2 : c1;
    const instanceId = i % 2 === 0 ? instA : instB;
    const run = await createRun({
      connectorId,
      instanceId,
      instanceName: instanceId === instA ? 'A' : 'B',
      runType: i % 5 === 0 ? 'FullImport' : 'DeltaImport',
      status: 'Running',
      startedAt: new Date(base + i * 60_000),
    });
    const status = STATUSES[i % STATUSES.length];
    await completeRun(run.runId, {
      status,
      stats: { ...emptyStats(), objectsProcessed: i, errors: status === 'CompletedWithErrors' ? 1 : 0 },
      errors: status === 'CompletedWithErrors' ? [{ object: `uid=u${i}`, message: 'attribute too long' }] : undefined,
      error: status === 'Failed' ? 'connection refused' : undefined,
      completedAt: new Date(base + i * 60_000 + 5000),
    });
    made.push({ runId: run.runId, connectorId, instanceId, status });
  }
  // One run still going, on connector 2 (newest of all).
  const running = await createRun({
    connectorId: c2,
    instanceId: instA,
    instanceName: 'A',
    runType: 'Export',
    status: 'Queued',
    startedAt: new Date(base + 31 * 60_000),
  });
  await updateRun(running.runId, { status: 'Running', stats: { ...emptyStats(), objectsProcessed: 7 } });
  made.push({ runId: running.runId, connectorId: c2, instanceId: instA, status: 'Running' });
});

afterAll(async () => {
  await rt?.dispose();
});

describe('GET /runs/{id}', () => {
  test('200 with the run', async () => {
    const m = made[3];
    const res = await rt.call('GET', `runs/${m.runId}`, { role: 'Viewer' });
    expect(res.status).toBe(200);
    expect(res.body).toEqual({
      runId: m.runId,
      connectorId: c2,
      instanceId: instB,
      instanceName: 'B',
      runType: 'DeltaImport',
      status: 'Rejected',
      startedAt: new Date(base + 3 * 60_000).toISOString(),
      completedAt: new Date(base + 3 * 60_000 + 5000).toISOString(),
      stats: { objectsProcessed: 3, objectsCreated: 0, objectsUpdated: 0, objectsDeleted: 0, errors: 0 },
      // seeded without a trigger: a manual run by an unknown caller
      trigger: { type: 'manual', actorUpn: null },
    });
    const failed = await rt.call('GET', `runs/${made[2].runId}`, { role: 'Viewer' });
    expect(failed.body).toMatchObject({ status: 'Failed', error: 'connection refused' });
    const withErrors = await rt.call('GET', `runs/${made[1].runId}`, { role: 'Viewer' });
    expect(withErrors.body).toMatchObject({
      status: 'CompletedWithErrors',
      stats: { errors: 1 },
      errors: [{ object: 'uid=u1', message: 'attribute too long' }],
    });
    const running = await rt.call('GET', `runs/${made[30].runId}`, { role: 'Viewer' });
    expect(running.body).toMatchObject({ status: 'Running', runType: 'Export', stats: { objectsProcessed: 7 } });
    expect(running.body.completedAt).toBeUndefined();
  });

  test('unknown run or a non-GUID id is 404; no token is 401', async () => {
    expectProblem(await rt.call('GET', `runs/${randomUUID()}`, { role: 'Viewer' }), 404, 'not_found');
    expectProblem(await rt.call('GET', 'runs/not-a-guid', { role: 'Viewer' }), 404, 'not_found');
    expectProblem(await rt.call('GET', `runs/${made[0].runId}`, { role: null }), 401, 'unauthenticated');
  });
});

describe('GET /runs', () => {
  test('newest first, default take 50, exact totalCount', async () => {
    const res = await rt.call('GET', 'runs', { role: 'Viewer' });
    expect(res.status).toBe(200);
    expect(res.body.totalCount).toBe(31);
    expect(ids(res)).toEqual(newestFirst(() => true));
  });

  test('filters by connector, instance and status, alone and combined', async () => {
    const byConnector = await rt.call('GET', `runs?connectorId=${c2}`, { role: 'Viewer' });
    expect(ids(byConnector)).toEqual(newestFirst((m) => m.connectorId === c2));
    expect(byConnector.body.totalCount).toBe(made.filter((m) => m.connectorId === c2).length);
    const byInstance = await rt.call('GET', `runs?instanceId=${instB.toUpperCase()}`, { role: 'Viewer' });
    expect(ids(byInstance)).toEqual(newestFirst((m) => m.instanceId === instB));
    const byStatus = await rt.call('GET', 'runs?status=failed', { role: 'Viewer' });
    expect(ids(byStatus)).toEqual(newestFirst((m) => m.status === 'Failed'));
    const all3 = await rt.call('GET', `runs?connectorId=${c1}&instanceId=${instA}&status=Completed`, { role: 'Viewer' });
    const expected = newestFirst((m) => m.connectorId === c1 && m.instanceId === instA && m.status === 'Completed');
    expect(expected.length).toBeGreaterThan(0);
    expect(ids(all3)).toEqual(expected);
    expect(all3.body.totalCount).toBe(expected.length);
    const running = await rt.call('GET', `runs?status=Running&instanceId=${instA}`, { role: 'Viewer' });
    expect(ids(running)).toEqual([made[30].runId]);
    const none = await rt.call('GET', `runs?connectorId=${randomUUID()}`, { role: 'Viewer' });
    expect(none.body).toEqual({ items: [], totalCount: 0 });
  });

  test('skip and take page through the history without gaps or repeats', async () => {
    const all = newestFirst(() => true);
    const seen: string[] = [];
    for (let skip = 0; skip < all.length; skip += 7) {
      const res = await rt.call('GET', `runs?skip=${skip}&take=7`, { role: 'Viewer' });
      expect(res.body.totalCount).toBe(31);
      seen.push(...ids(res));
    }
    expect(seen).toEqual(all);
    const past = await rt.call('GET', 'runs?skip=100&take=200', { role: 'Viewer' });
    expect(past.body).toEqual({ items: [], totalCount: 31 });
    const zero = await rt.call('GET', 'runs?take=0', { role: 'Viewer' });
    expect(zero.body).toEqual({ items: [], totalCount: 31 });
  });

  test.each([
    ['take=201', 'take'],
    ['take=-1', 'take'],
    ['take=1.5', 'take'],
    ['take=abc', 'take'],
    ['skip=-3', 'skip'],
    ['skip=', 'skip'],
    ['status=Done', 'status'],
    ['connectorId=123', 'connectorId'],
    ['instanceId=has%20space', 'instanceId'],
    ['take=5&take=6', 'take'],
  ])('?%s is a 400 naming %s', async (query, param) => {
    const res = await rt.call('GET', `runs?${query}`, { role: 'Viewer' });
    expectProblem(res, 400, 'validation_failed');
    expect((res.body.errors as Array<{ path: string }>).map((e) => e.path)).toContain(param);
  });
});
