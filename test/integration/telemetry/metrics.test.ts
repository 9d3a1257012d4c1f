import { ROUTES } from '../../../lib/api/routes';
import { startService, type ServiceUnderTest } from '../../support/service';
import { fileConnector, folder, meshByAnchor, rule, runExport, runImport, writeCsv } from '../sync/syncSupport';
import { parseExposition, valueOf, type Sample } from './prometheus';

/**
 * GET /api/metrics on the local runtime with real Azurite: the counters move by exactly what a real import run
 * did, the state gauges match storage, the HTTP series carry route templates only, and the endpoint is for
 * Viewers unless Metrics__AllowAnonymous opens it.
 */
jest.setTimeout(180_000);

let rt: ServiceUnderTest;
beforeAll(async () => {
  rt = await startService({ env: { Metrics__StateMaxAgeSeconds: '1' } });
});
afterAll(async () => {
  await rt?.dispose();
});

const GUID = /[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}/i;

async function scrape(): Promise<Sample[]> {
  const res = await rt.call('GET', 'metrics', { role: 'Viewer' });
  expect(res.status).toBe(200);
  expect(res.headers.get('content-type')).toMatch(/^text\/plain; version=0\.0\.4/);
  return parseExposition(res.text);
}

/** Scrape until `ok` holds (counters move when the run's last step has counted it; gauges every second). */
async function scrapeUntil(ok: (s: Sample[]) => boolean, what: string): Promise<Sample[]> {
  const deadline = Date.now() + 30_000;
  for (;;) {
    const s = await scrape();
    if (ok(s)) return s;
    if (Date.now() > deadline)
      throw new Error(
        `metrics never showed ${what}:\n${s
          .filter((x) => x.name.startsWith('meshsync_'))
          .map((x) => `${x.name} ${JSON.stringify(x.labels)} ${x.value}`)
          .join('\n')}`,
      );
    await new Promise((r) => setTimeout(r, 250));
  }
}

describe('GET /api/metrics', () => {
  const COLS = ['id', 'employeeId', 'name'];
  const src = folder();
  const dst = folder();
  let hr = '';
  let target = '';

  beforeAll(async () => {
    writeCsv(
      src,
      'hr.csv',
      COLS,
      [1, 2, 3].map((i) => ({ id: `p${i}`, employeeId: `E${i}`, name: `Person ${i}` })),
    );
    writeCsv(dst, 'export.csv', ['uid', 'name'], []);
    hr = await fileConnector(rt, 'Metrics HR', src);
    await rule(rt, { ruleType: 'ProjectionRule', connectorId: hr, sourceAttribute: 'employeeId', objectType: 'User' });
    for (const a of ['employeeId', 'name']) await rule(rt, { ruleType: 'FlowRule', connectorId: hr, sourceAttribute: a, targetAttribute: a, confidence: 50 });
    target = await fileConnector(rt, 'Metrics target', dst, { anchorColumn: 'uid' });
    await rule(rt, { ruleType: 'FlowRule', connectorId: target, direction: 'outbound', sourceAttribute: 'employeeId', targetAttribute: 'uid' });
    await rule(rt, { ruleType: 'FlowRule', connectorId: target, direction: 'outbound', sourceAttribute: 'name', targetAttribute: 'name' });
  });

  test('an import run moves the run counters by exactly one run and its objects; the gauges follow storage', async () => {
    const labels = { connector: 'Metrics HR', run_type: 'FullImport' };
    const before = await scrape();
    const run = await runImport(rt, hr);
    expect(run).toMatchObject({ status: 'Completed', stats: { objectsProcessed: 3, objectsCreated: 3 } });
    const completed = { ...labels, status: 'Completed' };
    const after = await scrapeUntil((s) => valueOf(s, 'meshsync_runs_total', completed) > valueOf(before, 'meshsync_runs_total', completed), 'the run counted');
    expect(valueOf(after, 'meshsync_runs_total', completed) - valueOf(before, 'meshsync_runs_total', completed)).toBe(1);
    expect(valueOf(after, 'meshsync_objects_processed_total', labels) - valueOf(before, 'meshsync_objects_processed_total', labels)).toBe(3);
    expect(valueOf(after, 'meshsync_run_duration_seconds_count', labels) - valueOf(before, 'meshsync_run_duration_seconds_count', labels)).toBe(1);
    expect(valueOf(after, 'meshsync_run_duration_seconds_sum', labels)).toBeGreaterThan(0);
    // Other statuses did not move.
    expect(after.filter((s) => s.name === 'meshsync_runs_total' && s.labels.connector === 'Metrics HR').map((s) => s.labels.status)).toEqual(['Completed']);

    // The mesh gauge is the mesh in storage; the target never exported, so all three wait for it.
    const users = [...(await meshByAnchor()).values()].filter((o) => o.objectType === 'User').length;
    expect(users).toBe(3);
    const gauges = await scrapeUntil(
      (s) =>
        valueOf(s, 'meshsync_mesh_objects', { object_type: 'User' }) === users && valueOf(s, 'meshsync_pending_exports', { connector: 'Metrics target' }) === 3,
      'the mesh objects and pending exports',
    );
    expect(gauges.find((s) => s.name === 'meshsync_pending_exports' && s.labels.connector === 'Metrics HR')).toMatchObject({ value: 0 });
    expect(gauges.find((s) => s.name === 'meshsync_connector_space_errors' && s.labels.connector === 'Metrics HR')).toMatchObject({ value: 0 });
    const age = gauges.find((s) => s.name === 'meshsync_instance_heartbeat_age_seconds' && s.labels.instance === `admin-test-${rt.prefix}`);
    expect(age?.value).toBeGreaterThanOrEqual(0);
    expect(age?.value).toBeLessThan(60);
    expect(gauges.some((s) => s.name === 'process_cpu_seconds_total')).toBe(true);

    // Once exported, nothing waits.
    expect(await runExport(rt, target)).toMatchObject({ status: 'Completed', stats: { objectsCreated: 3 } });
    await scrapeUntil(
      (s) => s.some((x) => x.name === 'meshsync_pending_exports' && x.labels.connector === 'Metrics target' && x.value === 0),
      'no pending export after the export',
    );
  });

  test('a run with per-object errors: counted as CompletedWithErrors, its objects in error on the gauge', async () => {
    const dir = folder();
    writeCsv(
      dir,
      'people.csv',
      ['id', 'mail'],
      [
        { id: 'q1', mail: 'Q1@EXAMPLE.TEST' },
        { id: 'q2', mail: null },
        { id: 'q3', mail: null },
      ],
    );
    const src = await fileConnector(rt, 'Metrics errors', dir);
    await rule(rt, { ruleType: 'ProjectionRule', connectorId: src, sourceAttribute: 'id', objectType: 'Contact' });
    await rule(rt, {
      ruleType: 'FlowRule',
      connectorId: src,
      sourceAttribute: 'mail',
      targetAttribute: 'email',
      confidence: 50,
      evaluateWhenAbsent: true,
      transformScript: 'source.toLowerCase()',
    });
    expect(await runImport(rt, src)).toMatchObject({ status: 'CompletedWithErrors', stats: { objectsProcessed: 3, errors: 2 } });
    // The run is counted just after its final status is stored (its connector's name read first): the scrape waits for it.
    const s = await scrapeUntil(
      (x) =>
        valueOf(x, 'meshsync_connector_space_errors', { connector: 'Metrics errors' }) === 2 &&
        valueOf(x, 'meshsync_runs_total', { connector: 'Metrics errors', run_type: 'FullImport', status: 'CompletedWithErrors' }) === 1,
      'two objects in error and the run counted',
    );
    expect(valueOf(s, 'meshsync_runs_total', { connector: 'Metrics errors', run_type: 'FullImport', status: 'Completed' })).toBe(0);
    const contacts = [...(await meshByAnchor()).values()].filter((o) => o.objectType === 'Contact').length;
    await scrapeUntil((x) => valueOf(x, 'meshsync_mesh_objects', { object_type: 'Contact' }) === contacts, `${contacts} Contact objects`);
  });

  test('HTTP durations carry route templates, never ids; no label anywhere carries a GUID', async () => {
    await rt.call('GET', `connectors/${hr}`);
    await rt.call('GET', 'connectors/00000000-0000-4000-8000-000000000000');
    await rt.call('GET', 'no/such/route');
    const samples = await scrape();
    const http = samples.filter((s) => s.name === 'meshsync_http_request_duration_seconds_count');
    const templates = new Set(ROUTES.map((r) => r.route));
    for (const s of http) {
      expect({ route: s.labels.route, known: templates.has(s.labels.route) }).toEqual({ route: s.labels.route, known: true });
      expect(s.labels.method).toMatch(/^(GET|HEAD|POST|PUT|PATCH|DELETE|OPTIONS|OTHER)$/);
      expect(s.labels.status).toMatch(/^\d{3}$/);
    }
    const has = (route: string, method: string, status: string) =>
      http.some((s) => s.labels.route === route && s.labels.method === method && s.labels.status === status && s.value >= 1);
    expect(has('connectors/{id}', 'GET', '200')).toBe(true);
    expect(has('connectors/{id}', 'GET', '404')).toBe(true);
    expect(has('connectors/{id}/import', 'POST', '202')).toBe(true);
    expect(has('runs/{id}', 'GET', '200')).toBe(true);
    // Anonymous routes count too (the test harness waits on /health).
    expect(has('health', 'GET', '200')).toBe(true);
    expect(has('metrics', 'GET', '200')).toBe(true);
    for (const s of samples)
      for (const v of Object.values(s.labels)) expect({ series: s.name, value: v, guid: GUID.test(v) }).toEqual({ series: s.name, value: v, guid: false });
  });

  test('Viewers only: 401 problem+json without a token, 200 for every role', async () => {
    const anon = await rt.call('GET', 'metrics', { role: null });
    expect(anon.status).toBe(401);
    expect(anon.headers.get('content-type')).toMatch(/^application\/problem\+json/);
    expect(anon.headers.get('www-authenticate')).toMatch(/Bearer/);
    for (const role of ['Viewer', 'Operator', 'Admin'] as const) expect((await rt.call('GET', 'metrics', { role })).status).toBe(200);
  });

  test('Metrics__AllowAnonymous=true opens it to anonymous callers', async () => {
    await rt.stop();
    await rt.start({ Metrics__AllowAnonymous: 'true', Metrics__StateMaxAgeSeconds: '1' });
    const anon = await rt.call('GET', 'metrics', { role: null });
    expect(anon.status).toBe(200);
    expect(anon.text).toContain('# TYPE meshsync_runs_total counter');
    // A new process, a new registry: counters start again (Prometheus handles the reset).
    expect(valueOf(parseExposition(anon.text), 'meshsync_runs_total', { connector: 'Metrics HR' })).toBe(0);
    // Other routes keep their permissions.
    expect((await rt.call('GET', 'connectors', { role: null })).status).toBe(401);
  });
});
