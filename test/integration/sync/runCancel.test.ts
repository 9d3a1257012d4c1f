import { readSyncState } from '../../../lib/sync/run/state';
import { startPostgres, type Postgres } from '../../support/postgres';
import { describeWithServer } from '../../support/servers';
import { startService, USERS, type ServiceUnderTest } from '../../support/service';
import { pgServer, SqlContractFixture } from '../sql/sqlFixture';
import { rule, runImport, waitRun } from './syncSupport';

/**
 * Runs that report where they are and can be stopped, against a real PostgreSQL source and the running
 * service: `progress` and `trigger` on a Running run, POST /runs/{id}/cancel of a full import and of a delta
 * import in the middle of their pages (Cancelled within 10 s, what was applied kept and counted, no watermark
 * committed, the connector free for the next run), of a Queued run (ended at once, never started), and the
 * refusals (finished run 409, unknown 404, Viewer 403).
 */
jest.setTimeout(600_000);

const ROWS = 30_000;
const bulk = (from: number, to: number) =>
  `INSERT INTO people (employee_id, given_name, sn) SELECT 'C' || lpad(i::text, 6, '0'), 'Bulk', 'Row' || i FROM generate_series(${from}, ${to}) i`;

describeWithServer('postgres')('run progress and cancel (PostgreSQL source)', () => {
  let pg: Postgres;
  let rt: ServiceUnderTest;
  let f: SqlContractFixture;
  let connectorId: string;

  beforeAll(async () => {
    pg = await startPostgres();
    rt = await startService();
    f = await SqlContractFixture.create(pgServer(pg));
    await f.exec(bulk(1, ROWS));
    const res = await rt.call('POST', 'connectors', { body: { name: 'HR cancel', type: 'sql', config: f.config() } });
    expect(res.status).toBe(201);
    connectorId = res.body.id;
    await rule(rt, { ruleType: 'ProjectionRule', connectorId, sourceAttribute: 'employee_id', objectType: 'User' });
    for (const [s, t] of [
      ['employee_id', 'employeeId'],
      ['given_name', 'givenName'],
      ['sn', 'sn'],
    ])
      await rule(rt, { ruleType: 'FlowRule', connectorId, sourceAttribute: s, targetAttribute: t, confidence: 50 });
  });
  afterAll(async () => {
    await rt?.dispose();
    await f?.cleanup();
    await pg?.stop();
  });

  /** Poll the run until `until` holds for it; the run as it was then. */
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  async function watch(runId: string, until: (run: any) => boolean, timeoutMs = 120_000): Promise<any> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const res = await rt.call('GET', `runs/${runId}`);
      expect(res.status).toBe(200);
      if (until(res.body)) return res.body;
      if (Date.now() > deadline) throw new Error(`run ${runId}: condition not met: ${res.text}`);
      await new Promise((r) => setTimeout(r, 100));
    }
  }

  test('a full import shows its progress and trigger, and a cancel in the middle ends it Cancelled within 10 s, keeping what it applied and no watermark', async () => {
    const started = await rt.call('POST', `connectors/${connectorId}/import`, { role: 'Operator', body: { runType: 'FullImport' } });
    expect(started.status).toBe(202);
    const runId = started.body.runId as string;
    expect(started.body.trigger).toEqual({ type: 'manual', actorUpn: USERS.Operator.upn });
    // Running from its first answer, with progress from that moment.
    expect(started.body.status).toBe('Running');
    expect(started.body.progress).toMatchObject({ phase: 'reading', objectsTotal: null, updatedOn: expect.any(String) });

    // Two page reports: the progress moves with the stats.
    const first = await watch(runId, (r) => r.status !== 'Running' || r.progress.objectsProcessed > 0);
    expect(first.status).toBe('Running');
    const second = await watch(runId, (r) => r.status !== 'Running' || r.progress.objectsProcessed > first.progress.objectsProcessed);
    expect(second.status).toBe('Running');
    expect(second.progress.phase).toBe('reading');
    expect(second.progress.objectsProcessed).toBe(second.stats.objectsProcessed);
    expect(Date.parse(second.progress.updatedOn)).toBeGreaterThanOrEqual(Date.parse(first.progress.updatedOn));
    const watermarkBefore = (await readSyncState(connectorId)).watermark;

    const asked = Date.now();
    const cancel = await rt.call('POST', `runs/${runId}/cancel`, { role: 'Operator' });
    expect(cancel.status).toBe(202);
    expect(cancel.body.runId).toBe(runId);
    const ended = await waitRun(rt, runId, 30_000);
    expect(Date.now() - asked).toBeLessThan(10_000);
    expect(ended.status).toBe('Cancelled');
    expect(ended.error).toContain(USERS.Operator.upn);
    // What was applied stays and is counted: some pages, not all of them.
    expect(ended.stats.objectsCreated).toBeGreaterThan(0);
    expect(ended.stats.objectsCreated).toBeLessThan(ROWS);
    expect((await readSyncState(connectorId)).watermark).toBe(watermarkBefore);
    // A second cancel, and a cancel of any finished run: 409.
    const again = await rt.call('POST', `runs/${runId}/cancel`, { role: 'Operator' });
    expect(again.status).toBe(409);
    expect(again.headers.get('content-type')).toContain('application/problem+json');

    // The connector is free: the next full import runs to the end and sees every row.
    const next = await runImport(rt, connectorId);
    expect(next.status).toBe('Completed');
    expect(next.stats.objectsCreated + ended.stats.objectsCreated).toBe(ROWS);
    expect((await readSyncState(connectorId)).watermark).not.toBe(watermarkBefore);

    const audit = await rt.call('GET', `audit?targetType=run&targetId=${runId}`);
    expect(audit.body.items).toEqual([expect.objectContaining({ action: 'cancel', actorUpn: USERS.Operator.upn })]);
  });

  test('a delta import cancelled between its pages keeps the committed watermark; the next delta applies the rest', async () => {
    const before = (await readSyncState(connectorId)).watermark;
    await f.exec("UPDATE people SET given_name = 'Changed'");
    const started = await rt.call('POST', `connectors/${connectorId}/import`, { body: { runType: 'DeltaImport' } });
    expect(started.status).toBe(202);
    const runId = started.body.runId as string;
    const applying = await watch(runId, (r) => r.status !== 'Running' || (r.progress.phase === 'applying' && r.progress.objectsProcessed > 0));
    expect(applying.status).toBe('Running');
    // The delta knows how many changes it read.
    expect(applying.progress.objectsTotal).toBe(ROWS);
    const cancel = await rt.call('POST', `runs/${runId}/cancel`);
    expect(cancel.status).toBe(202);
    const ended = await waitRun(rt, runId, 30_000);
    expect(ended.status).toBe('Cancelled');
    expect(ended.stats.objectsUpdated).toBeGreaterThan(0);
    expect(ended.stats.objectsUpdated).toBeLessThan(ROWS);
    expect((await readSyncState(connectorId)).watermark).toBe(before);

    const next = await runImport(rt, connectorId, { runType: 'DeltaImport' });
    expect(next.status).toBe('Completed');
    // The delta is read again from the old watermark: what the cancelled run applied is unchanged now.
    expect(next.stats.objectsUpdated + ended.stats.objectsUpdated).toBe(ROWS);
  });

  test('a Queued run (its instance paused) is cancelled at once and never starts', async () => {
    const instances = await rt.call('GET', 'instances');
    const instanceId = instances.body.items[0].id as string;
    expect((await rt.call('POST', `instances/${instanceId}/pause`)).status).toBe(200);
    let runId: string;
    try {
      const started = await rt.call('POST', `connectors/${connectorId}/import`, { body: { runType: 'FullImport' } });
      expect(started.status).toBe(202);
      expect(started.body.status).toBe('Queued');
      expect(started.body.progress).toBeUndefined();
      runId = started.body.runId;
      const cancel = await rt.call('POST', `runs/${runId}/cancel`, { role: 'Operator' });
      expect(cancel.status).toBe(202);
      expect(cancel.body).toMatchObject({ status: 'Cancelled', completedAt: expect.any(String) });
    } finally {
      expect((await rt.call('POST', `instances/${instanceId}/resume`)).status).toBe(200);
    }
    // The dispatcher runs every 2 s: after several of its passes the run is still Cancelled, with nothing done.
    await new Promise((r) => setTimeout(r, 6_000));
    const after = await rt.call('GET', `runs/${runId}`);
    expect(after.body).toMatchObject({ status: 'Cancelled', stats: { objectsProcessed: 0 } });
    // And the connector is free.
    expect((await runImport(rt, connectorId, { runType: 'DeltaImport' })).status).toBe('Completed');
  });

  test('refusals: unknown run 404, malformed id 404, Viewer 403, each a problem and nothing changed', async () => {
    const unknown = await rt.call('POST', 'runs/00000000-0000-4000-8000-000000000000/cancel');
    expect(unknown.status).toBe(404);
    expect(unknown.headers.get('content-type')).toContain('application/problem+json');
    expect((await rt.call('POST', 'runs/not-a-guid/cancel')).status).toBe(404);
    const history = await rt.call('GET', `runs?connectorId=${connectorId}&take=1`);
    const viewer = await rt.call('POST', `runs/${history.body.items[0].runId}/cancel`, { role: 'Viewer' });
    expect(viewer.status).toBe(403);
    expect((await rt.call('GET', `runs/${history.body.items[0].runId}`)).body.status).toBe(history.body.items[0].status);
  });
});
