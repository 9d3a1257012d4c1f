import { existsSync, rmSync } from 'node:fs';
import path from 'node:path';
import { randomUUID } from 'node:crypto';
import { TaskHubStore } from '../../../lib/runtime/durable/store';
import { getRun } from '../../../lib/storage/runs';
import { startService, type ServiceUnderTest } from '../../support/service';
import { folder, waitRun } from './syncSupport';

/**
 * A page of a run delivered again after the run ended: work items are at-least-once (a crash between storing
 * a page's result and deleting its work item leaves the item to run again at the next start, on the local
 * runtime as on the real host's queues). The page must do nothing: a 1M restart re-ran a finished HR import's
 * page for two and a half minutes beside the start-up.
 *
 * Real service over HTTP on Azurite. The page's work item is put back into the service's own task hub with the
 * runtime's store while the service is stopped, exactly as the run's orchestration scheduled it (name and input
 * from its history), and the service started again. The test
 * connector test/fixtures/connectors/gated-source.js writes `<gate>.entered` whenever its import is entered.
 */
jest.setTimeout(180_000);

const GATED = path.join(__dirname, '..', '..', 'fixtures', 'connectors', 'gated-source.js');
const PAGE = 'syncFullImportPage';

let rt: ServiceUnderTest;

beforeAll(async () => {
  rt = await startService({
    env: { Engine__InstanceName: `redeliver-${randomUUID().slice(0, 8)}`, NODE_OPTIONS: `${process.env.NODE_OPTIONS ?? ''} --require "${GATED}"`.trim() },
  });
});

afterAll(async () => {
  await rt?.dispose();
});

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const executedPages = (since: number) => rt.logsSince(since).split(`Executed 'Functions.${PAGE}' (Succeeded`).length - 1;

function hub(): TaskHubStore {
  const m = /Durable task hub '([^']+)' started/.exec(rt.logs());
  if (!m) throw new Error(`the service did not log its task hub's name:\n${rt.logs().slice(-3000)}`);
  return new TaskHubStore(process.env.TEST_STORAGE_CONNECTION_STRING ?? '', m[1]);
}

test('a full import page delivered again after its run completed imports nothing and leaves the run as it was', async () => {
  // No gate file: the import is not held; it only marks that it was entered.
  const gate = path.join(folder('ims-redeliver-'), 'gate');
  const created = await rt.call('POST', 'connectors', {
    body: { name: 'Redelivered', type: 'custom', config: { implementation: 'gated', objectType: 'User', settings: { gate, count: 2 } } },
  });
  expect(created.status).toBe(201);
  const trigger = await rt.call('POST', `connectors/${created.body.id}/import`, { role: 'Operator', body: { runType: 'FullImport' } });
  expect(trigger.status).toBe(202);
  const runId = trigger.body.runId as string;
  const done = await waitRun(rt, runId);
  expect(done).toMatchObject({ status: 'Completed', stats: { objectsProcessed: 2 } });
  expect(existsSync(`${gate}.entered`)).toBe(true);
  rmSync(`${gate}.entered`);
  const before = await getRun(runId);

  // The page as the orchestration scheduled it, from the instance's own history.
  const store = hub();
  // The run record ends in the orchestration's last activity; the instance itself completes just after.
  let instance = await store.getInstance(runId);
  for (const deadline = Date.now() + 30_000; instance?.runtimeStatus !== 'Completed' && Date.now() < deadline; instance = await store.getInstance(runId))
    await new Promise((r) => setTimeout(r, 50));
  expect(instance?.runtimeStatus).toBe('Completed');
  const history = await store.loadHistory(runId, instance!.executionId);
  const scheduled = history.find((e) => e.Name === PAGE && e.Input !== undefined);
  expect(scheduled).toBeDefined();
  // The work item left behind by a crash, as it was: the service stops, the item is back, the service starts
  // and takes it (the process that deleted it remembers doing so for a while and would not look at it).
  await rt.stop();
  const now = Date.now();
  const rk = `${instance!.executionId}.${scheduled!.EventId}`;
  await store.putWork([
    {
      pk: 'a',
      rk,
      instanceId: runId,
      kind: 'activity',
      executionId: instance!.executionId,
      taskId: scheduled!.EventId,
      name: PAGE,
      data: scheduled!.Input,
      enqueuedAt: now,
      visibleAt: now,
    },
  ]);
  const mark = rt.logMark();
  await rt.start();

  // The runtime takes the item, runs the page function, stores its result and deletes the item.
  for (;;) {
    const left = (await store.listWork('a')).some((m) => m.rk === rk);
    if (!left && executedPages(mark) > 0) break;
    await sleep(100);
  }
  expect(executedPages(mark)).toBe(1);
  // It never reached the connector, and the run is as it ended.
  expect(existsSync(`${gate}.entered`)).toBe(false);
  const after = await getRun(runId);
  expect(after).toEqual(before);
  const read = await rt.call('GET', `runs/${runId}`, { role: 'Viewer' });
  expect(read.body).toMatchObject({ status: 'Completed', stats: done.stats, completedAt: done.completedAt });
});
