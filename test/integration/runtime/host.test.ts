import { TableClient } from '@azure/data-tables';
import { randomBytes, randomUUID } from 'node:crypto';
import { readFileSync } from 'node:fs';
import http from 'node:http';
import path from 'node:path';
import { TIMER_STATUS_TABLE } from '../../../lib/runtime/timers';
import { startRuntime, type RuntimeProcess } from './runtimeProcess';

interface Problem {
  type: string;
  title: string;
  status: number;
  detail: string;
  instance: string;
  traceId: string;
}

async function problem(res: Response, status: number): Promise<Problem> {
  expect(res.status).toBe(status);
  expect(res.headers.get('content-type')).toBe('application/problem+json');
  const body = (await res.json()) as Problem;
  expect(body).toMatchObject({
    status,
    type: expect.any(String),
    title: expect.any(String),
    detail: expect.any(String),
    instance: expect.any(String),
    traceId: expect.any(String),
  });
  return body;
}

/** POST a body the raw way (fetch would buffer it all first); resolves with status and body of the answer. */
function rawPost(url: string, headers: Record<string, string | number>, write: (req: http.ClientRequest) => void): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const req = http.request(url, { method: 'POST', headers }, (res) => {
      let body = '';
      res.on('data', (d: Buffer) => (body += d.toString()));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
      res.on('error', reject);
    });
    // The server answers 413 and closes without reading the rest: writes after that may fail.
    req.on('error', (err: NodeJS.ErrnoException) => {
      if (err.code !== 'EPIPE' && err.code !== 'ECONNRESET') reject(err);
    });
    write(req);
  });
}

describe('local runtime hosting the sample app (buffered HTTP)', () => {
  let rt: RuntimeProcess;
  let api: string;

  beforeAll(async () => {
    rt = await startRuntime({ env: { SAMPLE_GREETING: 'from the environment' } });
    api = `${rt.baseUrl}/api`;
  });

  afterAll(async () => {
    await rt?.stop();
  });

  it('prints the Functions list like func start, and the listening URL', () => {
    const out = rt.stdout();
    expect(out).toMatch(/^Functions:$/m);
    expect(out).toContain(`        hello: [GET,POST] ${rt.baseUrl}/api/hello/{name?}\n`);
    expect(out).toContain(`        itemInt: [GET] ${rt.baseUrl}/api/items/{id:int}\n`);
    expect(out).toContain('        startupTick: timerTrigger\n');
    expect(out).toContain(`Now listening on: ${rt.baseUrl}`);
    expect(out).toContain('local.settings.json not found');
  });

  it('passes route params, query, headers, method and URL; the environment beats local settings', async () => {
    const res = await fetch(`${api}/hello/ada?x=1&y=two`, { headers: { 'x-sample': 'header value' } });
    expect(res.status).toBe(200);
    expect(await res.json()).toEqual({
      name: 'ada',
      greeting: 'from the environment',
      query: { x: '1', y: 'two' },
      sampleHeader: 'header value',
      method: 'GET',
      url: `${api}/hello/ada?x=1&y=two`,
    });
    const optional = (await (await fetch(`${api}/hello`)).json()) as { name: string };
    expect(optional.name).toBe('world');
  });

  it('matches constraints, literal precedence and catch-all routes', async () => {
    const kind = async (p: string) => ((await (await fetch(`${api}/${p}`)).json()) as { kind: string }).kind;
    expect(await kind('items/new')).toBe('literal');
    expect(await kind('items/42')).toBe('int');
    expect(await kind('items/3f2504e0-4f89-11d3-9a0c-0305e82c3301')).toBe('guid');
    expect(await kind('items/abc')).toBe('alpha');
    expect(await (await fetch(`${api}/items/42`, { method: 'DELETE' })).json()).toEqual({ kind: 'delete', params: { id: '42' } });
    expect(await (await fetch(`${api}/files/a/b/c.txt`)).json()).toEqual({ path: 'a/b/c.txt' });
    await problem(await fetch(`${api}/items/abc-1`), 404);
  });

  it('echoes JSON and binary bodies byte for byte', async () => {
    const json = await fetch(`${api}/echo`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ a: [1, 'x'] }) });
    expect(await json.json()).toEqual({ received: { a: [1, 'x'] } });
    const bytes = randomBytes(64 * 1024);
    const bin = await fetch(`${api}/echo`, { method: 'PUT', headers: { 'content-type': 'application/octet-stream' }, body: bytes });
    expect(bin.headers.get('x-length')).toBe(String(bytes.length));
    expect(Buffer.from(await bin.arrayBuffer()).equals(bytes)).toBe(true);
  });

  it('answers unknown routes 404 and wrong methods 405 with Allow, as problem+json', async () => {
    const notFound = await problem(await fetch(`${api}/nope`), 404);
    expect(notFound.instance).toBe('/api/nope');
    await problem(await fetch(`${rt.baseUrl}/elsewhere`), 404);
    await problem(await fetch(`${rt.baseUrl}/runtime/unknown`), 404);
    const wrong = await fetch(`${api}/items/5`, { method: 'PUT' });
    expect(wrong.headers.get('allow')).toBe('GET, DELETE');
    await problem(wrong, 405);
  });

  it('refuses bodies over the limit with 413 without reading them (declared and chunked)', async () => {
    const declared = await rawPost(`${api}/echo`, { 'content-type': 'application/octet-stream', 'content-length': 2 * 1024 * 1024 }, (req) => {
      req.write(Buffer.alloc(64 * 1024));
    });
    expect(declared.status).toBe(413);
    expect(JSON.parse(declared.body)).toMatchObject({ status: 413, instance: '/api/echo' });
    const chunked = await rawPost(`${api}/echo`, { 'content-type': 'application/octet-stream', 'transfer-encoding': 'chunked' }, (req) => {
      const chunk = Buffer.alloc(256 * 1024);
      let sent = 0;
      const pump = () => {
        while (sent < 8 && req.write(chunk)) sent++;
        if (sent < 8 && !req.destroyed) req.once('drain', pump);
      };
      pump();
    });
    expect(chunked.status).toBe(413);
  });

  it('turns a throwing handler into a generic 500 and logs it', async () => {
    const res = await fetch(`${api}/boom`);
    const body = await problem(res, 500);
    expect(JSON.stringify(body)).not.toMatch(/hunter2|secret internal/);
    await rt.waitFor(new RegExp(`Executed 'Functions\\.boom' \\(Failed, Id=${body.traceId}, Duration=\\d+ms\\)`));
    expect(rt.stdout()).toContain('boom is about to throw');
  });

  it('sets cookies and status from the response, hooks and appStart ran', async () => {
    const res = await fetch(`${api}/cookie`);
    expect(res.status).toBe(201);
    expect(res.headers.get('set-cookie')).toBe('session=abc%20123; Path=/; HttpOnly');
    expect(res.headers.get('x-hooks')).toBe('pre,post,appStart');
    const state = (await (await fetch(`${api}/state`)).json()) as {
      appStart: { startedAt: string } | null;
      preInvocations: number;
      postInvocations: number;
      instanceId: string;
      storageIsConnectionString: boolean;
    };
    expect(state.appStart?.startedAt).toEqual(expect.any(String));
    expect(state.preInvocations).toBeGreaterThan(1);
    // The state function itself is still running: its postInvocation hook has not run yet.
    expect(state.postInvocations).toBe(state.preInvocations - 1);
    expect(state.storageIsConnectionString).toBe(true);
    expect(state.instanceId).toBe(readFileSync(path.join(rt.dataDir, 'runtime/instance-id'), 'utf8').trim());
  });

  it('an HTTP request is one line at Information, naming the function and the invocation id', async () => {
    const before = rt.stdout().length;
    const res = await fetch(`${api}/state`);
    expect(res.status).toBe(200);
    // This request's line: the first one after `before` (earlier tests asked for /state too).
    const requestLine = /HTTP GET \/api\/state 200 [\d.]+ms \(Functions\.state, Id=([0-9a-f-]{36})\)/;
    const deadline = Date.now() + 10_000;
    let m: RegExpMatchArray | null = null;
    while (!(m = rt.stdout().slice(before).match(requestLine)) && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20));
    expect(m).not.toBeNull();
    const lines = rt
      .stdout()
      .slice(before)
      .split('\n')
      .filter((l) => l.includes(m![1]));
    expect(lines).toHaveLength(1);
  });

  it('with the function at Debug: Executing/Executed lines around handler logs, one request line, and never headers or bodies', async () => {
    const res = await fetch(`${api}/hello/logs`, {
      method: 'POST',
      headers: { authorization: 'Bearer top-secret-token', 'content-type': 'text/plain' },
      body: 'body-secret-value',
    });
    expect(res.status).toBe(200);
    const executed = await rt.waitFor(
      /Executed 'Functions\.hello' \(Succeeded, Id=([0-9a-f-]{36}), Duration=\d+ms\)\n(?:.*\n)*?.*HTTP POST \/api\/hello\/\{name\?\} 200 [\d.]+ms \(Functions\.hello, Id=\1\)/,
    );
    const id = executed[1];
    const out = rt.stdout();
    const executing = out.indexOf(`Executing 'Functions.hello' (Reason='This function was programmatically called via the host APIs.', Id=${id})`);
    const handlerLine = out.indexOf('hello handler greeting logs', executing);
    expect(executing).toBeGreaterThan(-1);
    expect(handlerLine).toBeGreaterThan(executing);
    expect(out.indexOf(`(Succeeded, Id=${id}`)).toBeGreaterThan(handlerLine);
    expect(out).not.toContain('top-secret-token');
    expect(out).not.toContain('body-secret-value');
  });

  it('applies host.json log levels to handler logs', async () => {
    await fetch(`${api}/noisy`);
    await rt.waitFor(/noisy warning line/);
    expect(rt.stdout()).not.toContain('noisy information line');
  });

  it('ran the runOnStartup timer with the timer input the library expects', async () => {
    await rt.waitFor(/startupTick fired \(isPastDue=false\)/);
    const state = (await (await fetch(`${api}/state`)).json()) as { ticks: { name: string; isPastDue: boolean; scheduleStatus: unknown }[] };
    expect(state.ticks.find((t) => t.name === 'startupTick')).toMatchObject({
      isPastDue: false,
      scheduleStatus: { last: expect.any(String), next: expect.any(String), lastUpdated: expect.any(String) },
    });
  });
});

describe('local runtime with HTTP streaming (app.setup({ enableHttpStream: true }))', () => {
  let rt: RuntimeProcess;
  beforeAll(async () => {
    rt = await startRuntime({ env: { SAMPLE_HTTP_STREAM: 'true' } });
  });
  afterAll(async () => {
    await rt?.stop();
  });

  it('streams a ReadableStream body: the first chunk arrives before the handler produces the rest', async () => {
    expect(rt.stdout()).toContain('HTTP streaming');
    const res = await fetch(`${rt.baseUrl}/api/stream?wait=true`);
    expect(res.status).toBe(200);
    const reader = res.body!.getReader();
    const first = await reader.read();
    expect(Buffer.from(first.value!).toString()).toBe('first chunk\n');
    // Only now does the handler get to write the rest.
    expect(await (await fetch(`${rt.baseUrl}/api/release`, { method: 'POST' })).json()).toEqual({ released: true });
    let rest = '';
    for (;;) {
      const { value, done } = await reader.read();
      if (done) break;
      rest += Buffer.from(value).toString();
    }
    expect(rest).toBe('chunk 0\nchunk 1\nchunk 2\n');
  });

  it('passes params, query, headers and bodies through the proxy, and keeps the error contract', async () => {
    const hello = await fetch(`${rt.baseUrl}/api/hello/zoe?q=1`, { headers: { 'x-sample': 'yes' } });
    expect(await hello.json()).toMatchObject({ name: 'zoe', query: { q: '1' }, sampleHeader: 'yes', url: `${rt.baseUrl}/api/hello/zoe?q=1` });
    expect(hello.headers.get('x-hooks')).toBe('pre,post,appStart');
    const bytes = randomBytes(100_000);
    const echo = await fetch(`${rt.baseUrl}/api/echo`, { method: 'POST', headers: { 'content-type': 'application/octet-stream' }, body: bytes });
    expect(Buffer.from(await echo.arrayBuffer()).equals(bytes)).toBe(true);
    await problem(await fetch(`${rt.baseUrl}/api/boom`), 500);
    const tooBig = await rawPost(`${rt.baseUrl}/api/echo`, { 'content-type': 'application/octet-stream', 'content-length': 2 * 1024 * 1024 }, (req) =>
      req.write(Buffer.alloc(1024)),
    );
    expect(tooBig.status).toBe(413);
  });
});

describe('local runtime: JSON logs', () => {
  it('writes every line as JSON with LOG_FORMAT=json, request lines with the invocation id', async () => {
    const rt = await startRuntime({ env: { LOG_FORMAT: 'json' } });
    try {
      const res = await fetch(`${rt.baseUrl}/api/noisy`);
      expect(res.status).toBe(200);
      await rt.waitFor(/"category":"Host.Http"/);
    } finally {
      expect((await rt.stop()).code).toBe(0);
    }
    const entries = rt
      .stdout()
      .split('\n')
      .filter((l) => l.trim() !== '')
      .map((l) => JSON.parse(l) as Record<string, unknown>);
    const request = entries.find((e) => e.category === 'Host.Http');
    expect(request).toMatchObject({
      level: 'Information',
      method: 'GET',
      route: '/api/noisy',
      status: 200,
      invocationId: expect.any(String),
      durationMs: expect.any(Number),
    });
    expect(entries.find((e) => e.category === 'Function.noisy.User')).toMatchObject({
      level: 'Warning',
      message: 'noisy warning line',
      invocationId: request!.invocationId,
    });
    expect(entries.some((e) => String(e.message).startsWith("Executing 'Functions.noisy'"))).toBe(true);
    expect(entries.some((e) => String(e.message).includes('Functions:'))).toBe(true);
  });
});

describe('local runtime: lifecycle', () => {
  it('on SIGTERM finishes the request in flight, then exits 0', async () => {
    const rt = await startRuntime();
    const pending = fetch(`${rt.baseUrl}/api/slow?ms=1500`);
    await rt.waitFor(/Executing 'Functions\.slow'/);
    rt.proc.kill('SIGTERM');
    const res = await pending;
    expect(res.status).toBe(200);
    expect(await res.text()).toBe('done after 1500ms');
    expect(await rt.exited).toEqual({ code: 0, signal: null });
    expect(rt.stdout()).toMatch(/SIGTERM received[\s\S]*Executed 'Functions\.slow' \(Succeeded[\s\S]*Host stopped\./);
  });

  it('refuses to start when the app throws at load: exit code 1 and the message naming the setting', async () => {
    const rt = await startRuntime({ env: { SAMPLE_FAIL_AT_LOAD: 'true' }, waitForStart: false });
    expect((await rt.exited).code).toBe(1);
    expect(rt.stderr()).toContain("Configuration error in setting 'Sample__Required'");
    expect(rt.stderr()).not.toMatch(/\n\s+at /);
  });

  it('runs a monitored timer whose occurrence was missed while down, with isPastDue', async () => {
    const instanceId = randomUUID();
    const table = TableClient.fromConnectionString(process.env.TEST_STORAGE_CONNECTION_STRING!, TIMER_STATUS_TABLE, { allowInsecureConnection: true });
    await table.createTable().catch(() => undefined);
    const missed = new Date(Date.now() - 10 * 60_000);
    missed.setUTCSeconds(0, 0);
    await table.upsertEntity({
      partitionKey: instanceId,
      rowKey: 'monitoredtick',
      Last: new Date(missed.getTime() - 5 * 60_000).toISOString(),
      Next: missed.toISOString(),
      LastUpdated: missed.toISOString(),
    });
    const rt = await startRuntime({ env: { WEBSITE_INSTANCE_ID: instanceId } });
    try {
      await rt.waitFor(/monitoredTick fired \(isPastDue=true\)/);
      const state = (await (await fetch(`${rt.baseUrl}/api/state`)).json()) as {
        instanceId: string;
        ticks: { name: string; isPastDue: boolean; scheduleStatus: { next: string } }[];
      };
      expect(state.instanceId).toBe(instanceId);
      expect(state.ticks.find((t) => t.name === 'monitoredTick')).toMatchObject({ isPastDue: true, scheduleStatus: { next: missed.toISOString() } });
      const row = await table.getEntity<{ Last: string; Next: string }>(instanceId, 'monitoredtick');
      expect(row.Last).toBe(missed.toISOString());
      expect(new Date(row.Next).getTime()).toBeGreaterThan(missed.getTime());
    } finally {
      await rt.stop();
    }
  });
});
