import { randomUUID } from 'node:crypto';
import { queryAudit } from '../../../lib/storage/audit';
import { completeRun, createRun, emptyStats, findActiveRun, getRun, markRunDispatched, updateRun } from '../../../lib/storage/runs';
import { reconcileRun, type OrchestrationState, type RunOrchestrations } from '../../../lib/runs/runs';
import { useTestStorage } from '../../unit/instances/storageEnv';

/**
 * Races of the reconciliation on the real runs repository (Azurite): the run changes between the moment it is
 * read and the moment its orchestration's state is known. The durable client's answer is scripted here (the
 * whole path through a real task hub is test/integration/sync/runReconcile.test.ts); the engine's writes in
 * the gap are the repository calls the engine makes.
 */
beforeAll(() => useTestStorage());

const HUB = 'hubRaces';

async function dispatchedRun() {
  const run = await createRun({
    connectorId: randomUUID(),
    instanceId: randomUUID(),
    runType: 'FullImport',
    status: 'Running',
    startedAt: new Date(Date.now() - 3_600_000),
  });
  await markRunDispatched(run.runId, HUB);
  return (await getRun(run.runId))!;
}

/** A durable client that answers `state`, the first time after running `between` (what the engine writes meanwhile). */
function scripted(state: OrchestrationState | null, between: () => Promise<unknown> = async () => undefined): RunOrchestrations {
  let first = true;
  return {
    taskHub: HUB,
    async status() {
      if (first) await between();
      first = false;
      return state;
    },
  };
}

async function auditOf(runId: string) {
  return (await queryAudit({ targetType: 'run', targetId: runId, skip: 0, take: 10 })).items;
}

test('a run the engine finishes while its orchestration is read is not overwritten', async () => {
  const read = await dispatchedRun();
  // The orchestration completed long ago as far as the answer says; the engine's last step lands in between.
  const long = new Date(Date.now() - 3_600_000);
  const after = await reconcileRun(
    read,
    scripted({ runtimeStatus: 'Completed', lastUpdatedTime: long }, () =>
      completeRun(read.runId, { status: 'Completed', stats: { ...emptyStats(), objectsProcessed: 5 } }),
    ),
  );
  expect(after).toMatchObject({ status: 'Completed', stats: { objectsProcessed: 5 } });
  expect(after.error).toBeUndefined();
  expect(await getRun(read.runId)).toMatchObject({ status: 'Completed' });
  expect(await auditOf(read.runId)).toEqual([]);
});

test('a run whose progress moves while its terminated orchestration is read ends Cancelled with that progress', async () => {
  const read = await dispatchedRun();
  const after = await reconcileRun(
    read,
    scripted({ runtimeStatus: 'Terminated', output: 'stop' }, () => updateRun(read.runId, { stats: { ...emptyStats(), objectsProcessed: 7 } })),
  );
  expect(after).toMatchObject({ status: 'Cancelled', stats: { objectsProcessed: 7 }, error: expect.stringContaining('reason: stop') });
  expect(await findActiveRun(read.connectorId)).toBeNull();
  expect(await auditOf(read.runId)).toEqual([expect.objectContaining({ action: 'cancel', actorUpn: 'system:reconcile' })]);
});

test('a run of another task hub is not read or changed', async () => {
  const read = await dispatchedRun();
  let asked = false;
  const other: RunOrchestrations = {
    taskHub: 'someOtherHub',
    async status() {
      asked = true;
      return null;
    },
  };
  expect(await reconcileRun(read, other)).toMatchObject({ status: 'Running' });
  expect(asked).toBe(false);
  expect(await findActiveRun(read.connectorId)).toMatchObject({ runId: read.runId });
});
