import { startService, type ServiceUnderTest } from '../../support/service';
import { fileConnector, folder, rule, waitRun, writeCsv } from './syncSupport';

/**
 * Two engine instances (two runtime processes, each with its own task hub) on one storage: a run executes on
 * the connector's assigned instance, whichever instance received the trigger; an unassigned connector's run
 * executes on the instance that received it. Where an orchestration ran is asked of each instance's own
 * durable task hub (the Durable Functions HTTP API). Then two connectors, one assigned to each instance, run at
 * once: each process's read model (in memory, following the shared change feed) shows the objects the other
 * process wrote, through that process's own API.
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

/** Poll `probe` until it returns a value (not undefined); fail after `timeoutMs` with `what`. */
async function eventually<T>(probe: () => Promise<T | undefined>, timeoutMs: number, what: () => string): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const v = await probe();
    if (v !== undefined) return v;
    if (Date.now() > deadline) throw new Error(`Timed out: ${what()}`);
    await new Promise((r) => setTimeout(r, 200));
  }
}

test("two connectors, one on each instance, run at once: each instance's API shows both sources' objects", async () => {
  const instances = (await a.call('GET', 'instances')).body.items as { id: string; name: string }[];
  const idOf = (name: string) => instances.find((i) => i.name === name)!.id;
  const source = async (name: string, prefix: string, instanceId: string) => {
    const dir = folder();
    const rows = Array.from({ length: 30 }, (_, i) => ({ id: `${prefix}${i}`, personId: `twin-${prefix}${i}`, sn: `Sn${i}` }));
    writeCsv(dir, 'people.csv', ['id', 'personId', 'sn'], rows);
    const c = await fileConnector(a, name, dir);
    await rule(a, { ruleType: 'ProjectionRule', connectorId: c, sourceAttribute: 'personId' });
    await rule(a, { ruleType: 'FlowRule', connectorId: c, sourceAttribute: 'sn', targetAttribute: 'sn', confidence: 50 });
    expect((await a.call('PUT', `connectors/${c}/instance`, { body: { instanceId } })).status).toBe(200);
    return c;
  };
  const onA = await source('Twin A', 'ta', idOf('engine-a'));
  const onB = await source('Twin B', 'tb', idOf('engine-b'));

  // Both triggered through B's API, together.
  const [ra, rb] = await Promise.all([onA, onB].map((c) => b.call('POST', `connectors/${c}/import`, { body: { runType: 'FullImport' } })));
  expect([ra.status, rb.status]).toEqual([202, 202]);
  expect(ra.body.instanceName).toBe('engine-a');
  expect(rb.body.instanceName).toBe('engine-b');
  expect(await waitRun(b, ra.body.runId)).toMatchObject({ status: 'Completed', stats: { objectsCreated: 30 } });
  expect(await waitRun(a, rb.body.runId)).toMatchObject({ status: 'Completed', stats: { objectsCreated: 30 } });
  expect(await orchestrationIn(a, ra.body.runId)).toBe('Completed');
  expect(await orchestrationIn(b, rb.body.runId)).toBe('Completed');

  // Each process's read model follows the feed: both show the 60 objects (each process wrote 30 of them).
  for (const rt of [a, b]) {
    let last: unknown;
    const page = await eventually(
      async () => {
        const res = await rt.call('GET', 'mesh/objects?search=twin-&take=200', { role: 'Viewer' });
        last = res.body;
        return res.status === 200 && res.body.totalCount === 60 ? res.body : undefined;
      },
      30_000,
      () => `the mesh listing of one instance: ${JSON.stringify(last).slice(0, 300)}`,
    );
    const anchors = (page.items as { anchorValue: string }[]).map((o) => o.anchorValue);
    expect(anchors.filter((x) => x.startsWith('twin-ta'))).toHaveLength(30);
    expect(anchors.filter((x) => x.startsWith('twin-tb'))).toHaveLength(30);
    // One object written by the other process, read whole (attributes) from this one.
    const other = (page.items as { anchorValue: string; meshObjectId: string }[]).find((o) => o.anchorValue === (rt === a ? 'twin-tb7' : 'twin-ta7'))!;
    const one = await rt.call('GET', `mesh/objects/${other.meshObjectId}`, { role: 'Viewer' });
    expect(one.status).toBe(200);
    expect(JSON.stringify(one.body)).toContain('Sn7');
  }
});
