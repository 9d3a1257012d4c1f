import { startService, type ServiceUnderTest } from '../../support/service';
import { fileConnector, folder, rule, waitRun, writeCsv } from './syncSupport';

/**
 * Two engine instances (two runtime processes, each with its own task hub) on one storage: a run executes on
 * the connector's assigned instance, whichever instance received the trigger; an unassigned connector's run
 * executes on the instance that received it. Where an orchestration ran is asked of each instance's own
 * durable task hub (the Durable Functions HTTP API).
 */
jest.setTimeout(180_000);

let a: ServiceUnderTest;
let b: ServiceUnderTest;
beforeAll(async () => {
  a = await startService({ env: { Engine__InstanceName: 'engine-a' } });
  b = await startService({ prefix: a.prefix, env: { Engine__InstanceName: 'engine-b' } });
});
afterAll(async () => {
  await b?.dispose();
  await a?.dispose();
});

/**
 * The orchestration of `runId` in `rt`'s own task hub once it has ended: its runtime status, or null when that
 * hub has none. The run's record says Completed from the orchestration's last activity, a moment before the
 * orchestration itself ends (the status API answers 202 until then).
 */
async function orchestrationIn(rt: ServiceUnderTest, runId: string): Promise<string | null> {
  const deadline = Date.now() + 30_000;
  for (;;) {
    const res = await rt.call('GET', `../runtime/webhooks/durabletask/instances/${runId}`);
    if (res.status === 404) return null;
    if (res.status !== 202 || Date.now() > deadline) {
      expect(res.status).toBe(200);
      return res.body.runtimeStatus as string;
    }
    await new Promise((r) => setTimeout(r, 100));
  }
}

test('a run triggered on A for a connector assigned to B executes on B; unassigned, it executes on A', async () => {
  const instances = (await a.call('GET', 'instances')).body.items as { id: string; name: string }[];
  const idB = instances.find((i) => i.name === 'engine-b')!.id;
  const idA = instances.find((i) => i.name === 'engine-a')!.id;
  const dir = folder();
  writeCsv(
    dir,
    'people.csv',
    ['id', 'personId'],
    [
      { id: 'p1', personId: 'Q1' },
      { id: 'p2', personId: 'Q2' },
    ],
  );
  const c = await fileConnector(a, 'Assigned', dir);
  await rule(a, { ruleType: 'ProjectionRule', connectorId: c, sourceAttribute: 'personId' });
  expect((await a.call('PUT', `connectors/${c}/instance`, { body: { instanceId: idB } })).status).toBe(200);

  const res = await a.call('POST', `connectors/${c}/import`, { body: { runType: 'FullImport' } });
  expect(res.status).toBe(202);
  expect(res.body).toMatchObject({ status: 'Running', instanceId: idB, instanceName: 'engine-b' });
  expect(await waitRun(a, res.body.runId)).toMatchObject({ status: 'Completed', stats: { objectsCreated: 2 } });
  expect(await orchestrationIn(b, res.body.runId)).toBe('Completed');
  expect(await orchestrationIn(a, res.body.runId)).toBeNull();

  // Unassigned: the receiving instance runs it.
  expect((await a.call('DELETE', `connectors/${c}/instance`)).status).toBe(204);
  const here = await a.call('POST', `connectors/${c}/import`, { body: { runType: 'FullImport' } });
  expect(here.body).toMatchObject({ instanceId: idA });
  expect(await waitRun(a, here.body.runId)).toMatchObject({ status: 'Completed' });
  expect(await orchestrationIn(a, here.body.runId)).toBe('Completed');
  expect(await orchestrationIn(b, here.body.runId)).toBeNull();
});
