import { randomBytes } from 'node:crypto';
import { startService, type ServiceUnderTest } from '../../support/service';
import { fileConnector, folder, rule, waitRun, writeCsv } from '../sync/syncSupport';
import { OtlpReceiver } from './otlpReceiver';

/**
 * OpenTelemetry end to end: the service runs with OTEL_EXPORTER_OTLP_ENDPOINT pointing at a real OTLP/HTTP
 * receiver started here, and the spans it receives are checked: server spans that honour `traceparent`, the
 * problem's traceId, a run with its activities in one trace, and the spans left at a graceful stop.
 */
jest.setTimeout(180_000);

const receiver = new OtlpReceiver();
let rt: ServiceUnderTest;
let endpoint = '';
beforeAll(async () => {
  endpoint = await receiver.start();
  rt = await startService({ env: { OTEL_EXPORTER_OTLP_ENDPOINT: endpoint, OTEL_BSP_SCHEDULE_DELAY: '100', OTEL_SERVICE_NAME: 'meshsync-test' } });
});
afterAll(async () => {
  await rt?.dispose();
  await receiver.stop();
});

// The activity names of orchestrations/syncRun.ts (not imported: importing it registers functions).
const BEGIN_RUN = 'syncBeginRun';
const FULL_IMPORT_PAGE = 'syncFullImportPage';
const FINISH_RUN = 'syncFinishRun';

const hex = (n: number) => randomBytes(n).toString('hex');
const SERVER = 2;

test('a request with a traceparent yields a server span in that trace, child of the caller’s span', async () => {
  const traceId = hex(16);
  const parent = hex(8);
  const res = await rt.call('GET', 'connectors', { role: 'Viewer', headers: { traceparent: `00-${traceId}-${parent}-01` } });
  expect(res.status).toBe(200);
  const [span] = await receiver.waitFor((all) => all.filter((s) => s.traceId === traceId), `in trace ${traceId}`);
  expect(span).toMatchObject({
    parentSpanId: parent,
    kind: SERVER,
    name: 'GET connectors',
    service: 'meshsync-test',
    attributes: { 'http.request.method': 'GET', 'http.route': 'connectors', 'http.response.status_code': 200 },
  });
  expect(receiver.contentTypes).toEqual(new Set(['application/json']));
});

test('a problem’s traceId is the trace id of the request’s span (given or new)', async () => {
  const traceId = hex(16);
  const given = await rt.call('GET', 'connectors/00000000-0000-4000-8000-000000000000', {
    role: 'Viewer',
    headers: { traceparent: `00-${traceId}-${hex(8)}-01` },
  });
  expect(given.status).toBe(404);
  expect(given.body.traceId).toBe(traceId);
  const [span] = await receiver.waitFor((all) => all.filter((s) => s.traceId === traceId), `in trace ${traceId}`);
  expect(span.attributes).toMatchObject({ 'http.route': 'connectors/{id}', 'http.response.status_code': 404 });

  // No traceparent (and a malformed one) start a trace of their own, which the problem names.
  for (const headers of [{}, { traceparent: 'not-a-traceparent' }] as Record<string, string>[]) {
    const own = await rt.call('GET', 'metrics', { role: null, headers });
    expect(own.status).toBe(401);
    expect(own.body.traceId).toMatch(/^[0-9a-f]{32}$/);
    const [s] = await receiver.waitFor((all) => all.filter((x) => x.traceId === own.body.traceId), `in trace ${own.body.traceId}`);
    expect(s).toMatchObject({ parentSpanId: '', kind: SERVER, attributes: { 'http.route': 'metrics', 'http.response.status_code': 401 } });
  }
});

test('a run is one trace: the trigger request, the run’s span under it, every activity under the run', async () => {
  const src = folder();
  writeCsv(
    src,
    'hr.csv',
    ['id', 'employeeId'],
    [1, 2, 3].map((i) => ({ id: `p${i}`, employeeId: `E${i}` })),
  );
  const hr = await fileConnector(rt, 'Traced HR', src);
  await rule(rt, { ruleType: 'ProjectionRule', connectorId: hr, sourceAttribute: 'employeeId', objectType: 'User' });
  const traceId = hex(16);
  const caller = hex(8);
  const res = await rt.call('POST', `connectors/${hr}/import`, {
    role: 'Operator',
    body: { runType: 'FullImport' },
    headers: { traceparent: `00-${traceId}-${caller}-01` },
  });
  expect(res.status).toBe(202);
  expect(await waitRun(rt, res.body.runId)).toMatchObject({ status: 'Completed', stats: { objectsProcessed: 3 } });

  const [runSpan] = await receiver.waitFor((all) => all.filter((s) => s.traceId === traceId && s.name === 'run FullImport'), 'of the run');
  // The last activity's span ends after the run's, which it writes.
  await receiver.waitFor((all) => all.filter((s) => s.traceId === traceId && s.name === FINISH_RUN), 'of the last activity');
  const spans = receiver.spans.filter((s) => s.traceId === traceId);
  const request = spans.find((s) => s.kind === SERVER)!;
  expect(request).toMatchObject({ parentSpanId: caller, name: 'POST connectors/{id}/import', attributes: { 'http.response.status_code': 202 } });
  expect(runSpan).toMatchObject({
    parentSpanId: request.spanId,
    attributes: {
      'meshsync.run.id': res.body.runId,
      'meshsync.run.type': 'FullImport',
      'meshsync.run.status': 'Completed',
      'meshsync.connector.name': 'Traced HR',
      'meshsync.run.objects_processed': 3,
    },
  });
  const activities = spans.filter((s) => s !== request && s !== runSpan);
  const names = activities.map((s) => s.name);
  expect(names).toEqual(expect.arrayContaining([BEGIN_RUN, FULL_IMPORT_PAGE, FINISH_RUN]));
  for (const a of activities) expect({ name: a.name, parent: a.parentSpanId }).toEqual({ name: a.name, parent: runSpan.spanId });
  expect(activities.filter((a) => a.name !== BEGIN_RUN).every((a) => a.attributes['meshsync.run.id'] === res.body.runId)).toBe(true);
  // Every span id of the trace is distinct, and nothing but these spans is in it.
  expect(new Set(spans.map((s) => s.spanId)).size).toBe(spans.length);
  // Attributes: names, types, statuses and ids; never the connector's configuration.
  for (const s of spans) for (const v of Object.values(s.attributes)) expect(String(v)).not.toContain(src);
});

test('a graceful stop sends the spans still waiting in the batch', async () => {
  await rt.stop();
  // A batch delay far longer than the test: only the stop can send the span.
  await rt.start({ OTEL_BSP_SCHEDULE_DELAY: '600000' });
  const traceId = hex(16);
  expect((await rt.call('GET', 'health', { role: null, headers: { traceparent: `00-${traceId}-${hex(8)}-01` } })).status).toBe(200);
  await new Promise((r) => setTimeout(r, 500));
  expect(receiver.spans.filter((s) => s.traceId === traceId)).toEqual([]);
  await rt.stop();
  await receiver.waitFor(
    (all) => all.filter((s) => s.traceId === traceId && s.attributes['http.route'] === 'health'),
    'of the request before the stop',
    30_000,
  );
});
