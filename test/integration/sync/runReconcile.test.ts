import { existsSync, rmSync, unlinkSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { randomUUID } from 'node:crypto';
import { createRun, findActiveRun, getRun, type StoredRun } from '../../../lib/storage/runs';
import { startService, type Answer, type Role, type ServiceUnderTest } from '../../support/service';
import { folder, waitRun } from './syncSupport';

/**
 * Runs whose orchestration ends outside the engine, over HTTP against the local runtime on Azurite: an Admin
 * terminates or purges a run's orchestration through the Durable Functions HTTP API (the runtime's management
 * API), or the service restarts with a run whose orchestration does not exist. The run must end (Cancelled or
 * Failed, with a reason), release its connector's run lock and leave an audit record, when it is read, when a
 * trigger or a delete meets its lock, and at start-up.
 *
 * A run is kept Running by the test connector test/fixtures/connectors/gated-source.js (its import waits while a
 * gate file exists). What the service stored is read from its tables directly (no reconciliation there), so a
 * check of storage never triggers the behaviour it checks.
 */
jest.setTimeout(240_000);

const GATED = path.join(__dirname, '..', '..', 'fixtures', 'connectors', 'gated-source.js');
const INSTANCE_NAME = `reconcile-${randomUUID().slice(0, 8)}`;

let rt: ServiceUnderTest;
const gates: string[] = [];

beforeAll(async () => {
  rt = await startService({ env: { Engine__InstanceName: INSTANCE_NAME, NODE_OPTIONS: `${process.env.NODE_OPTIONS ?? ''} --require "${GATED}"`.trim() } });
});

afterAll(async () => {
  for (const g of gates) rmSync(g, { force: true });
  await rt?.dispose();
});

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** The Durable Functions HTTP API of the service (same listener, under /runtime/webhooks/durabletask/). */
function management(method: string, route: string, role: Role | null = 'Admin'): Promise<Answer> {
  return rt.call(method, `../runtime/webhooks/durabletask/${route}`, { role });
}

async function until<T>(what: string, probe: () => Promise<T | undefined>, timeoutMs = 30_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const v = await probe();
    if (v !== undefined) return v;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}\n${rt.logs().slice(-3000)}`);
    await sleep(100);
  }
}

/** A connector whose imports wait while its gate file exists. */
async function gatedConnector(name: string): Promise<{ id: string; gate: string }> {
  const gate = path.join(folder('ims-gate-'), 'gate');
  writeFileSync(gate, '');
  gates.push(gate);
  const res = await rt.call('POST', 'connectors', {
    body: { name, type: 'custom', config: { implementation: 'gated', objectType: 'User', settings: { gate, count: 2 } } },
  });
  if (res.status !== 201) throw new Error(`create connector: ${res.status} ${res.text}`);
  return { id: res.body.id as string, gate };
}

/** Trigger a full import and wait until its page activity is inside the connector (held by the gate). */
async function startHeldRun(connectorId: string, gate: string): Promise<string> {
  rmSync(`${gate}.entered`, { force: true });
  const res = await rt.call('POST', `connectors/${connectorId}/import`, { role: 'Operator', body: { runType: 'FullImport' } });
  if (res.status !== 202) throw new Error(`import: ${res.status} ${res.text}`);
  await until('the import to reach the connector', async () => (existsSync(`${gate}.entered`) ? true : undefined));
  return res.body.runId as string;
}

async function orchestrationStatus(runId: string): Promise<string | null> {
  const res = await management('GET', `instances/${runId}`);
  if (res.status === 404) return null;
  expect([200, 202]).toContain(res.status);
  return res.body.runtimeStatus as string;
}

/** Terminate the run's orchestration through the management API and wait until it is Terminated. */
async function terminate(runId: string, reason: string): Promise<void> {
  const res = await management('POST', `instances/${runId}/terminate?reason=${encodeURIComponent(reason)}`);
  expect(res.status).toBe(202);
  await until('the orchestration to be Terminated', async () => ((await orchestrationStatus(runId)) === 'Terminated' ? true : undefined));
}

/** The run as stored (no reconciliation on this path). */
async function stored(runId: string): Promise<StoredRun> {
  const run = await getRun(runId);
  if (!run) throw new Error(`run ${runId} is not stored`);
  return run;
}

async function auditOf(runId: string): Promise<Array<Record<string, unknown>>> {
  const res = await rt.call('GET', `audit?targetType=run&targetId=${runId}`);
  expect(res.status).toBe(200);
  return res.body.items as Array<Record<string, unknown>>;
}

describe('the durable management API', () => {
  test('requires the Admin role: anonymous 401 (with the schemes), Viewer and Operator 403, Admin served', async () => {
    const anonymous = await management('GET', 'instances', null);
    expect(anonymous.status).toBe(401);
    expect(anonymous.headers.get('www-authenticate')).toMatch(/Bearer/);
    for (const role of ['Viewer', 'Operator'] as const) {
      const read = await management('GET', 'instances', role);
      expect({ role, status: read.status, code: read.body?.code }).toEqual({ role, status: 403, code: 'forbidden' });
      const write = await management('POST', `instances/${randomUUID()}/terminate?reason=x`, role);
      expect({ role, status: write.status }).toEqual({ role, status: 403 });
    }
    const admin = await management('GET', 'instances');
    expect(admin.status).toBe(200);
    expect(Array.isArray(admin.body)).toBe(true);
    expect((await management('POST', `instances/${randomUUID()}/terminate?reason=x`)).status).toBe(404);
  });
});

describe('a run whose orchestration is terminated through the management API', () => {
  test('is read as Cancelled with the reason, audited as system:reconcile; its connector takes a new run', async () => {
    const c = await gatedConnector('Held for GET');
    const runId = await startHeldRun(c.id, c.gate);
    // A Running orchestration never reconciles: the run reads Running.
    expect((await rt.call('GET', `runs/${runId}`, { role: 'Viewer' })).body).toMatchObject({ status: 'Running' });

    await terminate(runId, 'stuck on the HR share');
    expect((await stored(runId)).status).toBe('Running');

    const read = await rt.call('GET', `runs/${runId}`, { role: 'Viewer' });
    expect(read.status).toBe(200);
    expect(read.body).toMatchObject({ runId, status: 'Cancelled' });
    expect(read.body.error).toMatch(/terminated outside the engine/);
    expect(read.body.error).toContain('stuck on the HR share');
    expect(read.body.completedAt).toEqual(expect.stringMatching(/Z$/));
    expect(read.body).not.toHaveProperty('dispatch');
    expect(await stored(runId)).toMatchObject({ status: 'Cancelled', error: read.body.error });
    expect(await findActiveRun(c.id)).toBeNull();
    expect(await auditOf(runId)).toEqual([
      expect.objectContaining({ action: 'cancel', targetType: 'run', targetId: runId, actorUpn: 'system:reconcile', actorSid: null, outcome: 'success' }),
    ]);
    // The list shows it as stored now.
    const list = await rt.call('GET', `runs?connectorId=${c.id}`);
    expect(list.body.items).toEqual([expect.objectContaining({ runId, status: 'Cancelled' })]);

    // The lock is free: a new run is accepted, and (the gate opened) completes.
    const next = await rt.call('POST', `connectors/${c.id}/import`, { role: 'Operator', body: { runType: 'FullImport' } });
    expect(next.status).toBe(202);
    unlinkSync(c.gate);
    expect(await waitRun(rt, next.body.runId)).toMatchObject({ status: 'Completed' });
    // The cancelled run stays cancelled.
    expect(await stored(runId)).toMatchObject({ status: 'Cancelled' });
  });

  test('a trigger that meets its lock is accepted (202), and so is the delete of its connector (204), without reading the run first', async () => {
    const c = await gatedConnector('Held for trigger and delete');
    const first = await startHeldRun(c.id, c.gate);
    await terminate(first, 'operator stopped it');
    expect((await stored(first)).status).toBe('Running');

    // Trigger: the 409 path reconciles the run holding the lock, then takes it.
    rmSync(`${c.gate}.entered`, { force: true });
    const second = await rt.call('POST', `connectors/${c.id}/import`, { role: 'Operator', body: { runType: 'FullImport' } });
    expect(second.status).toBe(202);
    expect(second.body).toMatchObject({ status: 'Running' });
    expect(await stored(first)).toMatchObject({ status: 'Cancelled', error: expect.stringContaining('operator stopped it') });
    expect(await auditOf(first)).toEqual([expect.objectContaining({ action: 'cancel', actorUpn: 'system:reconcile' })]);

    // While the second run really runs, the delete is refused.
    const secondId = second.body.runId as string;
    await until('the second import to reach the connector', async () => (existsSync(`${c.gate}.entered`) ? true : undefined));
    const refused = await rt.call('DELETE', `connectors/${c.id}`);
    expect(refused.status).toBe(409);
    expect((await stored(secondId)).status).toBe('Running');

    // Delete: the same once its orchestration is terminated.
    await terminate(secondId, 'making room for the delete');
    expect((await stored(secondId)).status).toBe('Running');
    // Forced: the connector holds what its first import read (without force, a 409 naming it).
    const deleted = await rt.call('DELETE', `connectors/${c.id}?force=true`);
    expect(deleted.status).toBe(204);
    expect(await stored(secondId)).toMatchObject({ status: 'Cancelled' });
    expect(await auditOf(secondId)).toEqual([expect.objectContaining({ action: 'cancel', actorUpn: 'system:reconcile' })]);
    expect((await rt.call('GET', `connectors/${c.id}`)).status).toBe(404);
  });
});

test('an orchestration started again through the management API for a run that is over applies nothing', async () => {
  const c = await gatedConnector('Held then restarted');
  const runId = await startHeldRun(c.id, c.gate);
  await terminate(runId, 'stopped');
  expect((await rt.call('GET', `runs/${runId}`)).body).toMatchObject({ status: 'Cancelled' });

  rmSync(`${c.gate}.entered`, { force: true });
  const again = `again-${randomUUID()}`;
  const started = await rt.call('POST', `../runtime/webhooks/durabletask/orchestrators/syncRun/${again}`, {
    body: JSON.stringify(runId),
    headers: { 'content-type': 'application/json' },
  });
  expect(started.status).toBe(202);
  // The gate is still closed: a run that went on would now wait in the connector.
  expect(
    await until('the restarted orchestration to end', async () => {
      const status = await orchestrationStatus(again);
      return status === 'Completed' || status === 'Failed' ? status : undefined;
    }),
  ).toBe('Completed');
  expect(existsSync(`${c.gate}.entered`)).toBe(false);
  expect(await stored(runId)).toMatchObject({ status: 'Cancelled' });
  expect(await findActiveRun(c.id)).toBeNull();
});

test('a run whose orchestration history is purged reads as Failed, and its lock is released', async () => {
  const c = await gatedConnector('Held for purge');
  const runId = await startHeldRun(c.id, c.gate);
  await terminate(runId, 'before the purge');
  const purged = await management('DELETE', `instances/${runId}`);
  expect(purged.status).toBe(200);
  expect(await orchestrationStatus(runId)).toBeNull();
  expect((await stored(runId)).status).toBe('Running');

  const read = await rt.call('GET', `runs/${runId}`);
  expect(read.body).toMatchObject({ status: 'Failed', error: expect.stringMatching(/orchestration no longer exists/) });
  expect(await findActiveRun(c.id)).toBeNull();
  expect(await auditOf(runId)).toEqual([expect.objectContaining({ action: 'fail', actorUpn: 'system:reconcile' })]);
});

test('a restart reconciles a run left Running whose orchestration does not exist; a run of another instance is left alone', async () => {
  for (const g of gates) rmSync(g, { force: true });
  const instances = (await rt.call('GET', 'instances')).body.items as Array<{ id: string; name: string }>;
  const here = instances.find((i) => i.name === INSTANCE_NAME)!.id;
  const mine = await gatedConnector('Stuck before the restart');
  const other = await gatedConnector('Run of another instance');
  await rt.kill();

  // As a crash between a run's creation and its dispatch would leave it: Running, no orchestration, no dispatch row.
  const stuck = await createRun({
    connectorId: mine.id,
    instanceId: here,
    instanceName: INSTANCE_NAME,
    runType: 'FullImport',
    status: 'Running',
    startedAt: new Date(Date.now() - 10 * 60_000),
  });
  const elsewhere = await createRun({
    connectorId: other.id,
    instanceId: randomUUID(),
    instanceName: 'elsewhere',
    runType: 'FullImport',
    status: 'Running',
    startedAt: new Date(Date.now() - 10 * 60_000),
  });

  await rt.start();
  // Storage is read directly: no API read is involved, so this is the start-up pass.
  const ended = await until('the start-up reconciliation', async () => {
    const run = await stored(stuck.runId);
    return run.status === 'Running' ? undefined : run;
  });
  expect(ended).toMatchObject({ status: 'Failed', error: expect.stringMatching(/never started or no longer exists/) });
  expect(ended.completedAt).toBeDefined();
  expect(await findActiveRun(mine.id)).toBeNull();
  // The audit record is written right after the run's end: wait for it as for the run.
  const audit = await until('the reconciliation audit record', async () => {
    const records = await auditOf(stuck.runId);
    return records.length ? records : undefined;
  });
  expect(audit).toEqual([expect.objectContaining({ action: 'fail', actorUpn: 'system:reconcile' })]);

  // Another instance's run lives in that instance's task hub: neither the start-up pass nor a read touches it.
  expect((await rt.call('GET', `runs/${elsewhere.runId}`)).body).toMatchObject({ status: 'Running' });
  expect(await stored(elsewhere.runId)).toMatchObject({ status: 'Running' });
  expect(await auditOf(elsewhere.runId)).toEqual([]);
});
