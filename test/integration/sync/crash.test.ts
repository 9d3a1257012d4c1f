import { startService, type ServiceUnderTest } from '../../support/service';
import { fileConnector, folder, meshByAnchor, rule, waitRun, writeCsv } from './syncSupport';

/**
 * kill -9 of the runtime in the middle of a 10,000-object full import, then a restart: durable replay
 * resumes the run, which completes, and the mesh equals the mesh an uninterrupted run builds (compared by
 * content: anchors, consolidated values, relationships by target anchor).
 */
jest.setTimeout(900_000);

const N = 10_000;
const HEADER = ['id', 'employeeId', 'givenName', 'sn', 'mail', 'managerId'];
const rows = Array.from({ length: N }, (_, i) => ({
  id: `u${i}`,
  employeeId: `E${i}`,
  givenName: `G${i}`,
  sn: `S${i}`,
  mail: `u${i}@example.test`,
  managerId: i === 0 ? null : `E${(i * 7919) % N === i ? 0 : (i * 7919) % N}`,
}));

async function setup(rt: ServiceUnderTest): Promise<string> {
  const dir = folder();
  writeCsv(dir, 'users.csv', HEADER, rows);
  const c = await fileConnector(rt, 'Users', dir);
  await rule(rt, { ruleType: 'ProjectionRule', connectorId: c, sourceAttribute: 'employeeId' });
  for (const a of ['employeeId', 'givenName', 'sn', 'mail', 'managerId'])
    await rule(rt, { ruleType: 'FlowRule', connectorId: c, sourceAttribute: a, targetAttribute: a, confidence: 50 });
  await rule(rt, { ruleType: 'MeshComposerRule', targetAttribute: 'displayName', transformScript: 'source.givenName + " " + source.sn' });
  await rule(rt, { ruleType: 'MeshComposerRule', relationshipType: 'manager', sourceAttribute: 'managerId', targetAttribute: 'employeeId' });
  return c;
}

async function normalizedMesh(): Promise<string[]> {
  const mesh = await meshByAnchor();
  const anchorOf = new Map([...mesh.values()].map((o) => [o.id, o.anchorValue]));
  return [...mesh.values()]
    .map((o) =>
      JSON.stringify([
        o.anchorValue,
        o.objectType,
        Object.entries(o.attributes)
          .sort()
          .map(([k, a]) => [k, a.value]),
        o.relationships.map((r) => [r.type, r.targetAnchor, anchorOf.get(r.targetId)]).sort(),
        o.pendingReferences,
      ]),
    )
    .sort();
}

test('a run killed mid-import completes after restart with the same mesh as an uninterrupted run', async () => {
  let crashed: string[] = [];
  const rt = await startService();
  try {
    const c = await setup(rt);
    const res = await rt.call('POST', `connectors/${c}/import`, { body: { runType: 'FullImport' } });
    expect(res.status).toBe(202);
    const runId = res.body.runId as string;
    // A run is Queued until it is dispatched, then Running. Today the trigger dispatches it before answering
    // (its instance is this one and not paused), but a run left to the dispatcher reads Queued first; either
    // way it must never go back to Queued, nor be over, before the kill.
    let running = false;
    for (;;) {
      const r = await rt.call('GET', `runs/${runId}`);
      expect(running ? ['Running'] : ['Queued', 'Running']).toContain(r.body.status);
      running = r.body.status === 'Running';
      if (running && r.body.stats.objectsProcessed >= 3000) break;
      await new Promise((s) => setTimeout(s, 100));
    }
    await rt.kill();
    await rt.start();
    const run = await waitRun(rt, runId, 600_000);
    expect({ status: run.status, error: run.error }).toEqual({ status: 'Completed', error: undefined });
    expect(run.stats.objectsProcessed).toBeGreaterThanOrEqual(N);
    crashed = await normalizedMesh();
    expect(crashed).toHaveLength(N);
  } finally {
    await rt.dispose();
  }

  const clean = await startService();
  try {
    const c = await setup(clean);
    const res = await clean.call('POST', `connectors/${c}/import`, { body: { runType: 'FullImport' } });
    const run = await waitRun(clean, res.body.runId, 600_000);
    expect(run).toMatchObject({ status: 'Completed', stats: { objectsProcessed: N, objectsCreated: N } });
    const uninterrupted = await normalizedMesh();
    expect(crashed).toEqual(uninterrupted);
  } finally {
    await clean.dispose();
  }
});
