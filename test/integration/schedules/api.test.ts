import { rmSync } from 'node:fs';
import { startService, type ServiceUnderTest } from '../../support/service';
import { fileConnector, folder, rule, writeCsv } from '../sync/syncSupport';
import { createSchedule, cronAt, secondsFromNow, waitScheduleRun } from './scheduleSupport';

/**
 * Schedules over HTTP against the running service (real Azurite, file connectors): validation (every invalid
 * field a 400 naming it, nothing written), names (409), 404s, permissions, run-now on a disabled schedule,
 * stopOnFailure both ways, a paused instance (the step waits Queued, resume completes it), cancel, audit.
 */
jest.setTimeout(180_000);

let rt: ServiceUnderTest;
let okA: string;
let okB: string;
let broken: string;
beforeAll(async () => {
  rt = await startService({ env: { Schedules__MinIntervalSeconds: '5' } });
  const dir = folder();
  writeCsv(
    dir,
    'people.csv',
    ['id', 'personId'],
    [
      { id: 'p1', personId: 'S1' },
      { id: 'p2', personId: 'S2' },
    ],
  );
  okA = await fileConnector(rt, 'Sched A', dir);
  await rule(rt, { ruleType: 'ProjectionRule', connectorId: okA, sourceAttribute: 'personId' });
  const dirB = folder();
  writeCsv(dirB, 'people.csv', ['id', 'personId'], [{ id: 'q1', personId: 'T1' }]);
  okB = await fileConnector(rt, 'Sched B', dirB);
  await rule(rt, { ruleType: 'ProjectionRule', connectorId: okB, sourceAttribute: 'personId' });
  const gone = folder();
  writeCsv(gone, 'people.csv', ['id', 'personId'], [{ id: 'x', personId: 'X' }]);
  broken = await fileConnector(rt, 'Sched broken', gone);
  rmSync(gone, { recursive: true, force: true }); // its runs fail: the folder is gone
});
afterAll(async () => {
  await rt?.dispose();
});

const valid = () => ({ name: `s-${Math.random().toString(36).slice(2, 8)}`, cron: '0 0 3 * * *', steps: [{ runType: 'FullImport', connectorIds: [okA] }] });
const count = async () => (await rt.call('GET', 'schedules?take=200')).body.totalCount as number;

describe('validation', () => {
  test('defaults, the resource, Location; GET by id and the list', async () => {
    const res = await rt.call('POST', 'schedules', { body: { ...valid(), name: 'Nightly' } });
    expect(res.status).toBe(201);
    expect(res.headers.get('location')).toBe(`/api/schedules/${res.body.scheduleId}`);
    expect(res.body).toMatchObject({
      name: 'Nightly',
      cron: '0 0 3 * * *',
      timeZone: 'UTC',
      isEnabled: true,
      stopOnFailure: true,
      lastRun: null,
      steps: [{ runType: 'FullImport', connectorIds: [okA] }],
    });
    expect(Date.parse(res.body.nextRunOn)).toBeGreaterThan(Date.now());
    expect(new Date(res.body.nextRunOn).getUTCHours()).toBe(3);
    expect(Object.keys(res.body).sort()).toEqual([
      'createdOn',
      'cron',
      'isEnabled',
      'lastRun',
      'name',
      'nextRunOn',
      'scheduleId',
      'steps',
      'stopOnFailure',
      'timeZone',
      'updatedOn',
    ]);
    expect((await rt.call('GET', `schedules/${res.body.scheduleId}`)).body).toMatchObject({ name: 'Nightly' });
    const list = await rt.call('GET', 'schedules?skip=0&take=1');
    expect(list.status).toBe(200);
    expect(list.body.items).toHaveLength(1);
    expect(list.body.totalCount).toBeGreaterThanOrEqual(1);
    expect((await rt.call('GET', 'schedules?take=201')).status).toBe(400);
    expect((await rt.call('GET', 'schedules?skip=-1')).status).toBe(400);
  });

  test('every invalid field is a 400 naming it, and nothing is written', async () => {
    const before = await count();
    const bad: [Record<string, unknown>, string][] = [
      [{ cron: '* * * * * *' }, '/cron'],
      [{ cron: '*/2 * * * * *' }, '/cron'],
      [{ cron: 'every day' }, '/cron'],
      [{ cron: '0 0 0 * * * *' }, '/cron'],
      [{ cron: 42 }, '/cron'],
      [{ timeZone: 'Mars/Olympus' }, '/timeZone'],
      [{ timeZone: '' }, '/timeZone'],
      [{ name: '' }, '/name'],
      [{ isEnabled: 'yes' }, '/isEnabled'],
      [{ stopOnFailure: 1 }, '/stopOnFailure'],
      [{ steps: [] }, '/steps'],
      [{ steps: [{ runType: 'Nap', connectorIds: [okA] }] }, '/steps/0/runType'],
      [{ steps: [{ runType: 'Export', connectorIds: [] }] }, '/steps/0/connectorIds'],
      [{ steps: [{ runType: 'Export', connectorIds: [okA], extra: 1 }] }, '/steps/0/extra'],
      [
        {
          steps: [
            { runType: 'Export', connectorIds: [okA] },
            { runType: 'Export', connectorIds: [okA, 'c0ffee00-0000-4000-8000-000000000000'] },
          ],
        },
        '/steps/1/connectorIds/1',
      ],
      [{ steps: [{ runType: 'Export', connectorIds: ['not-a-guid'] }] }, '/steps/0/connectorIds/0'],
      [{ unknown: true }, '/unknown'],
    ];
    for (const [change, path] of bad) {
      const res = await rt.call('POST', 'schedules', { body: { ...valid(), ...change } });
      expect([JSON.stringify(change), res.status, res.headers.get('content-type')]).toEqual([JSON.stringify(change), 400, 'application/problem+json']);
      const paths = (res.body.errors as { path: string }[]).map((e) => e.path);
      expect([JSON.stringify(change), paths.some((p) => p === path || (path === '/' && p === ''))]).toEqual([JSON.stringify(change), true]);
    }
    const { cron: _cron, ...noCron } = valid();
    expect((await rt.call('POST', 'schedules', { body: noCron })).status).toBe(400);
    expect(await count()).toBe(before);
  });

  test('five fields are read with second 0; names are unique case-insensitively (409); PUT renames and validates', async () => {
    const a = await createSchedule(rt, { ...valid(), name: 'Unique One', cron: '30 4 * * *', timeZone: 'Europe/Berlin' });
    expect(a.cron).toBe('30 4 * * *');
    expect(new Date(a.nextRunOn).getUTCMinutes()).toBe(30);
    const dup = await rt.call('POST', 'schedules', { body: { ...valid(), name: 'UNIQUE one' } });
    expect(dup.status).toBe(409);
    const b = await createSchedule(rt, { ...valid(), name: 'Unique Two' });
    expect((await rt.call('PUT', `schedules/${b.scheduleId}`, { body: { ...valid(), name: 'unique ONE' } })).status).toBe(409);
    const bad = await rt.call('PUT', `schedules/${b.scheduleId}`, { body: { ...valid(), name: 'Unique Two', cron: '* * * * * *' } });
    expect(bad.status).toBe(400);
    expect((await rt.call('GET', `schedules/${b.scheduleId}`)).body.cron).toBe('0 0 3 * * *');
    const renamed = await rt.call('PUT', `schedules/${b.scheduleId}`, { body: { ...valid(), name: 'Unique Three', isEnabled: false } });
    expect(renamed.status).toBe(200);
    expect(renamed.body).toMatchObject({ name: 'Unique Three', isEnabled: false, nextRunOn: null });
    // the old name is free again
    await createSchedule(rt, { ...valid(), name: 'unique two' });
  });

  test('404s, and permissions: Viewer reads but cannot write, Operator runs but cannot change', async () => {
    const s = await createSchedule(rt, valid());
    const missing = 'c0ffee00-0000-4000-8000-000000000001';
    expect((await rt.call('GET', `schedules/${missing}`)).status).toBe(404);
    expect((await rt.call('GET', 'schedules/nope')).status).toBe(404);
    expect((await rt.call('PUT', `schedules/${missing}`, { body: valid() })).status).toBe(404);
    expect((await rt.call('DELETE', `schedules/${missing}`)).status).toBe(404);
    expect((await rt.call('POST', `schedules/${missing}/run`)).status).toBe(404);
    expect((await rt.call('GET', `schedules/${missing}/runs`)).status).toBe(404);
    expect((await rt.call('GET', `schedules/${s.scheduleId}/runs/${missing}`)).status).toBe(404);
    expect((await rt.call('POST', `schedules/${s.scheduleId}/runs/${missing}/cancel`)).status).toBe(404);

    expect((await rt.call('GET', `schedules/${s.scheduleId}`, { role: 'Viewer' })).status).toBe(200);
    expect((await rt.call('GET', `schedules/${s.scheduleId}/runs`, { role: 'Viewer' })).status).toBe(200);
    expect((await rt.call('POST', 'schedules', { role: 'Viewer', body: valid() })).status).toBe(403);
    expect((await rt.call('PUT', `schedules/${s.scheduleId}`, { role: 'Viewer', body: valid() })).status).toBe(403);
    expect((await rt.call('DELETE', `schedules/${s.scheduleId}`, { role: 'Viewer' })).status).toBe(403);
    expect((await rt.call('POST', `schedules/${s.scheduleId}/run`, { role: 'Viewer' })).status).toBe(403);
    expect((await rt.call('POST', 'schedules', { role: 'Operator', body: valid() })).status).toBe(403);
    expect((await rt.call('GET', 'schedules', { role: null })).status).toBe(401);

    expect((await rt.call('DELETE', `schedules/${s.scheduleId}`)).status).toBe(204);
    expect((await rt.call('GET', `schedules/${s.scheduleId}`)).status).toBe(404);
    const audit = (await rt.call('GET', `audit?targetType=schedule&targetId=${s.scheduleId}`)).body.items.map((i: { action: string }) => i.action);
    expect(audit.sort()).toEqual(['create', 'delete']);
  });
});

describe('schedule runs', () => {
  test('run-now on a disabled schedule: 202 with Location, two steps in order, every run triggered by the schedule and audited as it', async () => {
    const s = await createSchedule(rt, {
      name: 'Disabled two-step',
      cron: '0 0 3 * * *',
      isEnabled: false,
      steps: [
        { runType: 'FullImport', connectorIds: [okA, okB] },
        { runType: 'FullSync', connectorIds: [okA] },
      ],
    });
    expect(s.nextRunOn).toBeNull();
    const res = await rt.call('POST', `schedules/${s.scheduleId}/run`, { role: 'Operator' });
    expect(res.status).toBe(202);
    expect(res.headers.get('location')).toBe(`/api/schedules/${s.scheduleId}/runs/${res.body.scheduleRunId}`);
    expect(res.body).toMatchObject({ scheduleId: s.scheduleId, trigger: 'manual', status: 'Running', completedOn: null });
    expect(Object.keys(res.body).sort()).toEqual(['completedOn', 'scheduleId', 'scheduleRunId', 'startedOn', 'status', 'steps', 'trigger']);
    const done = await waitScheduleRun(rt, s.scheduleId, res.body.scheduleRunId);
    expect(done).toMatchObject({
      status: 'Completed',
      steps: [
        { runType: 'FullImport', status: 'Completed' },
        { runType: 'FullSync', status: 'Completed' },
      ],
    });
    expect(done.steps[0].runs.map((r: { connectorId: string }) => r.connectorId)).toEqual([okA, okB]);
    const runs = await Promise.all(
      done.steps.flatMap((st: { runs: { runId: string }[] }) => st.runs).map(async (r: { runId: string }) => (await rt.call('GET', `runs/${r.runId}`)).body),
    );
    for (const r of runs) {
      expect(r.status).toBe('Completed');
      expect(r.trigger).toEqual({ type: 'schedule', actorUpn: 'schedule:Disabled two-step', scheduleId: s.scheduleId, scheduleRunId: done.scheduleRunId });
    }
    // step 2 began after step 1 ended
    const end1 = Math.max(...runs.slice(0, 2).map((r) => Date.parse(r.completedAt)));
    expect(Date.parse(runs[2].startedAt)).toBeGreaterThanOrEqual(end1);
    const audit = await rt.call('GET', `audit?actor=${encodeURIComponent('schedule:Disabled two-step')}&take=200`);
    expect(audit.body.items.filter((i: { action: string; targetType: string }) => i.action === 'trigger' && i.targetType === 'connector')).toHaveLength(3);
    const view = (await rt.call('GET', `schedules/${s.scheduleId}`)).body;
    expect(view.lastRun).toEqual({ scheduleRunId: done.scheduleRunId, status: 'Completed', startedOn: done.startedOn });
    const list = (await rt.call('GET', `schedules/${s.scheduleId}/runs`)).body;
    expect(list).toMatchObject({ totalCount: 1, items: [{ scheduleRunId: done.scheduleRunId }] });
  });

  test('stopOnFailure true: a Failed run ends the sequence Failed, later steps not run; false: CompletedWithErrors and the next step runs', async () => {
    const steps = [
      { runType: 'FullImport', connectorIds: [broken, okA] },
      { runType: 'FullImport', connectorIds: [okB] },
    ];
    const stop = await createSchedule(rt, { name: 'Stops', cron: '0 0 3 * * *', steps });
    const r1 = (await rt.call('POST', `schedules/${stop.scheduleId}/run`)).body;
    const d1 = await waitScheduleRun(rt, stop.scheduleId, r1.scheduleRunId);
    expect(d1.status).toBe('Failed');
    expect(d1.steps[0].status).toBe('Failed');
    expect(d1.steps[0].runs.map((r: { status: string }) => r.status)).toEqual(['Failed', 'Completed']);
    expect(d1.steps[1]).toEqual({ runType: 'FullImport', status: 'NotRun', runs: [{ connectorId: okB, runId: null, status: 'NotRun' }] });

    const goOn = await createSchedule(rt, { name: 'Goes on', cron: '0 0 3 * * *', steps, stopOnFailure: false });
    const r2 = (await rt.call('POST', `schedules/${goOn.scheduleId}/run`)).body;
    const d2 = await waitScheduleRun(rt, goOn.scheduleId, r2.scheduleRunId);
    expect(d2.status).toBe('CompletedWithErrors');
    expect(d2.steps.map((s: { status: string }) => s.status)).toEqual(['Failed', 'Completed']);
  });

  test('paused instance: the run waits Queued and so does its step; resume and the schedule run completes', async () => {
    const id = (await rt.call('GET', 'instances')).body.items[0].id;
    const s = await createSchedule(rt, {
      name: 'Paused',
      cron: '0 0 3 * * *',
      steps: [
        { runType: 'FullImport', connectorIds: [okA] },
        { runType: 'FullImport', connectorIds: [okB] },
      ],
    });
    expect((await rt.call('POST', `instances/${id}/pause`)).status).toBe(200);
    try {
      const r = (await rt.call('POST', `schedules/${s.scheduleId}/run`)).body;
      const waiting = await waitScheduleRun(rt, s.scheduleId, r.scheduleRunId, (x) => x.steps[0].status === 'Queued');
      expect(waiting.status).toBe('Running');
      expect(waiting.steps[0].runs[0].status).toBe('Queued');
      await new Promise((res) => setTimeout(res, 4000));
      const still = (await rt.call('GET', `schedules/${s.scheduleId}/runs/${r.scheduleRunId}`)).body;
      expect(still).toMatchObject({ status: 'Running', steps: [{ status: 'Queued' }, { status: 'NotStarted' }] });
      expect((await rt.call('POST', `instances/${id}/resume`)).status).toBe(200);
      const done = await waitScheduleRun(rt, s.scheduleId, r.scheduleRunId);
      expect(done).toMatchObject({ status: 'Completed', steps: [{ status: 'Completed' }, { status: 'Completed' }] });
    } finally {
      await rt.call('POST', `instances/${id}/resume`);
    }
  });

  test('cancel: the schedule run ends Cancelled, its waiting run is cancelled, no further step starts; again: 409; run-now while one runs: 409', async () => {
    const id = (await rt.call('GET', 'instances')).body.items[0].id;
    const s = await createSchedule(rt, {
      name: 'Cancelled',
      cron: '0 0 3 * * *',
      steps: [
        { runType: 'FullImport', connectorIds: [okA] },
        { runType: 'FullImport', connectorIds: [okB] },
      ],
    });
    await rt.call('POST', `instances/${id}/pause`);
    try {
      const r = (await rt.call('POST', `schedules/${s.scheduleId}/run`)).body;
      const waiting = await waitScheduleRun(rt, s.scheduleId, r.scheduleRunId, (x) => x.steps[0].runs[0].runId !== null);
      expect((await rt.call('POST', `schedules/${s.scheduleId}/run`)).status).toBe(409);
      expect((await rt.call('DELETE', `schedules/${s.scheduleId}`)).status).toBe(409);
      expect((await rt.call('POST', `schedules/${s.scheduleId}/runs/${r.scheduleRunId}/cancel`, { role: 'Viewer' })).status).toBe(403);
      const cancel = await rt.call('POST', `schedules/${s.scheduleId}/runs/${r.scheduleRunId}/cancel`, { role: 'Operator' });
      expect(cancel.status).toBe(202);
      expect(cancel.body.status).toBe('Cancelled');
      expect(cancel.body.steps[1]).toEqual({ runType: 'FullImport', status: 'NotRun', runs: [{ connectorId: okB, runId: null, status: 'NotRun' }] });
      const run = (await rt.call('GET', `runs/${waiting.steps[0].runs[0].runId}`)).body;
      expect(run.status).toBe('Cancelled');
      expect((await rt.call('POST', `schedules/${s.scheduleId}/runs/${r.scheduleRunId}/cancel`)).status).toBe(409);
      await rt.call('POST', `instances/${id}/resume`);
      await new Promise((res) => setTimeout(res, 4000));
      const after = (await rt.call('GET', `schedules/${s.scheduleId}/runs/${r.scheduleRunId}`)).body;
      expect(after).toMatchObject({ status: 'Cancelled', steps: [{ status: 'Cancelled' }, { status: 'NotRun' }] });
      const ofB = (await rt.call('GET', `runs?connectorId=${okB}&take=200`)).body.items.filter(
        (x: { trigger: { scheduleRunId?: string } }) => x.trigger.scheduleRunId === r.scheduleRunId,
      );
      expect(ofB).toHaveLength(0);
    } finally {
      await rt.call('POST', `instances/${id}/resume`);
    }
  });

  test('a schedule runs by itself on its cron, its first run created within 3 s of the tick', async () => {
    const at = secondsFromNow(4);
    const s = await createSchedule(rt, { name: 'By itself', cron: cronAt(at), steps: [{ runType: 'FullImport', connectorIds: [okA] }] });
    expect(s.nextRunOn).toBe(at.toISOString());
    const runs = await (async () => {
      const deadline = Date.now() + 30_000;
      for (;;) {
        const items = (await rt.call('GET', `schedules/${s.scheduleId}/runs`)).body.items;
        if (items.length && items[0].status !== 'Running') return items;
        if (Date.now() > deadline) throw new Error('no schedule run');
        await new Promise((r) => setTimeout(r, 250));
      }
    })();
    expect(runs).toHaveLength(1);
    expect(runs[0]).toMatchObject({ trigger: 'schedule', status: 'Completed' });
    expect(Date.parse(runs[0].startedOn) - at.getTime()).toBeLessThan(3000);
    await rt.call('PUT', `schedules/${s.scheduleId}`, {
      body: { name: 'By itself', cron: cronAt(at), isEnabled: false, steps: [{ runType: 'FullImport', connectorIds: [okA] }] },
    });
  });
});
