import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { RuntimeProcess } from './durableSupport';

/**
 * The durable task hub end to end: the local runtime hosts test/fixtures/durable-app on the test Azurite;
 * orchestrations are started and managed through the Durable Functions HTTP API and through the app's own
 * HTTP functions that use the durableClient binding (df.getClient).
 */
describe('durable task hub (runtime + Azurite)', () => {
  let dir: string;
  let rt: RuntimeProcess;

  beforeAll(async () => {
    dir = mkdtempSync(path.join(os.tmpdir(), 'durable-it-'));
    rt = new RuntimeProcess(dir);
    await rt.start();
  });

  afterAll(async () => {
    await rt?.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  it('starts through the HTTP API with the management payload, and completes a sequence', async () => {
    const r = await rt.start202('sequence', 'seq-1', ['Ann', 'Bob']);
    expect(r.status).toBe(202);
    const body = (await r.json()) as Record<string, string>;
    expect(body.id).toBe('seq-1');
    expect(r.headers.get('location')).toBe(body.statusQueryGetUri);
    for (const k of ['statusQueryGetUri', 'sendEventPostUri', 'terminatePostUri', 'purgeHistoryDeleteUri', 'suspendPostUri', 'resumePostUri']) {
      expect(body[k]).toContain(`${rt.api}/instances/seq-1`);
    }
    const done = await rt.waitFor('seq-1');
    expect(done).toMatchObject({
      name: 'sequence',
      instanceId: 'seq-1',
      runtimeStatus: 'Completed',
      input: ['Ann', 'Bob'],
      output: ['Hello Ann!', 'Hello Bob!'],
    });
    const withHistory = await rt.status('seq-1', '?showHistory=true&showHistoryOutput=true');
    expect(withHistory.status).toBe(200);
    const events = withHistory.body.historyEvents as { EventType: string; FunctionName?: string; Result?: unknown }[];
    expect(events.map((e) => e.EventType)).toEqual(['ExecutionStarted', 'TaskCompleted', 'TaskCompleted', 'ExecutionCompleted']);
    expect(events[1]).toMatchObject({ FunctionName: 'hello', Result: 'Hello Ann!' });
  });

  it('starts through the durableClient binding (createCheckStatusResponse) and reads status through it', async () => {
    const r = await fetch(`${rt.base}/api/start/markMany/fan-1`, { method: 'POST', body: JSON.stringify({ tag: 'fan-1', count: 40 }) });
    expect(r.status).toBe(202);
    const payload = (await r.json()) as Record<string, string>;
    expect(payload.id).toBe('fan-1');
    await rt.waitFor('fan-1');
    const s = await fetch(`${rt.base}/api/client/status/fan-1`);
    const status = (await s.json()) as Record<string, unknown>;
    expect(status).toMatchObject({ runtimeStatus: 'Completed', output: 2 * ((39 * 40) / 2), customStatus: { done: 40 } });
    const missing = await fetch(`${rt.base}/api/client/status/nope`);
    expect(missing.status).toBe(404);
  });

  it('waitForCompletionOrCreateCheckStatusResponse returns the output', async () => {
    const r = await fetch(`${rt.base}/api/client/wait/sequence`, { method: 'POST', body: JSON.stringify(['Zed']) });
    expect(r.status).toBe(200);
    expect(await r.json()).toEqual(['Hello Zed!']);
  });

  it('retries a failing activity until it succeeds, and gives up after maxNumberOfAttempts', async () => {
    await rt.start202('retrying', 'retry-ok', { key: 'retry-ok', failTimes: 2, maxAttempts: 5 });
    await rt.start202('retrying', 'retry-ko', { key: 'retry-ko', failTimes: 9, maxAttempts: 2 });
    expect((await rt.waitFor('retry-ok')).output).toEqual({ ok: true, attempts: 3 });
    const ko = (await rt.waitFor('retry-ko')).output as { ok: boolean; message: string };
    expect(ko.ok).toBe(false);
    expect(ko.message).toContain('flaky attempt 2 failed');
  });

  it('fails an orchestration whose activity throws, without leaking stack paths', async () => {
    await rt.start202('failing', 'fail-1', 'kaputt');
    const s = await rt.waitFor('fail-1');
    expect(s.runtimeStatus).toBe('Failed');
    expect(String(s.output)).toContain("Activity function 'boom' failed: kaputt");
    expect(String(s.output)).not.toContain('/work/');
  });

  it('an activity result too large for a task hub row fails the activity with a clear message (it is not retried forever)', async () => {
    await rt.start202('hugeResult', 'huge-ok', 300_000);
    await rt.start202('hugeResult', 'huge-ko', 2_000_000);
    expect((await rt.waitFor('huge-ok')).output).toEqual({ ok: true, length: 300_000 });
    const ko = (await rt.waitFor('huge-ko')).output as { ok: boolean; message: string };
    expect(ko.ok).toBe(false);
    expect(ko.message).toContain("Activity function 'huge' failed: its result is 2000002 characters of JSON");
  });

  it('durable timers, and an external event raised through the client binding racing a timer', async () => {
    await rt.start202('sleeper', 'sleep-1', 300);
    await rt.start202('approval', 'appr-yes', { timeoutMs: 60000 });
    await rt.start202('approval', 'appr-timeout', { timeoutMs: 200 });
    await rt.waitFor('appr-yes', ['Running']);
    const raised = await fetch(`${rt.base}/api/client/raise/appr-yes`, { method: 'POST', body: JSON.stringify({ event: 'Approval', data: { by: 'alice' } }) });
    expect(raised.status).toBe(202);
    expect((await rt.waitFor('sleep-1')).output).toBe('woke');
    expect(await rt.waitFor('appr-yes')).toMatchObject({ output: { approved: { by: 'alice' } }, customStatus: 'approved' });
    expect(await rt.waitFor('appr-timeout')).toMatchObject({ output: 'timeout', customStatus: 'timed out' });
  });

  it('raises an event through the operator API', async () => {
    await rt.start202('waiter', 'wait-op');
    await rt.waitFor('wait-op', ['Running']);
    const r = await fetch(`${rt.api}/instances/wait-op/raiseEvent/go`, { method: 'POST', body: '7', headers: { 'content-type': 'application/json' } });
    expect(r.status).toBe(202);
    expect((await rt.waitFor('wait-op')).output).toBe(14);
    const gone = await fetch(`${rt.api}/instances/wait-op/raiseEvent/go`, { method: 'POST', body: '7' });
    expect(gone.status).toBe(410);
    const missing = await fetch(`${rt.api}/instances/no-such/raiseEvent/go`, { method: 'POST', body: '7' });
    expect(missing.status).toBe(404);
  });

  it('runs sub-orchestrations and ContinueAsNew', async () => {
    await rt.start202('parent', 'par-1');
    await rt.start202('counter', 'cnt-1', { n: 0, until: 4 });
    const par = (await rt.waitFor('par-1')).output as Record<string, unknown>;
    expect(par.seq).toEqual(['Hello A!', 'Hello B!']);
    expect(par.kids).toEqual([
      { child: 'par-1:1', parent: 'par-1', value: 2 },
      { child: 'par-1-named', parent: 'par-1', value: 4 },
    ]);
    expect(String(par.childError)).toContain("Orchestrator function 'failing' failed");
    expect((await rt.status('par-1:1')).body.runtimeStatus).toBe('Completed');
    expect(await rt.waitFor('cnt-1')).toMatchObject({ output: { n: 4 }, customStatus: { n: 4 }, input: { n: 3, until: 4 } });
  });

  it('suspend, resume and terminate through the client binding', async () => {
    await rt.start202('waiter', 'sus-1');
    await rt.start202('waiter', 'term-1');
    await rt.waitFor('sus-1', ['Running']);
    await rt.waitFor('term-1', ['Running']);
    expect((await fetch(`${rt.base}/api/client/suspend/sus-1`, { method: 'POST' })).status).toBe(202);
    await rt.waitFor('sus-1', ['Suspended']);
    expect((await fetch(`${rt.base}/api/client/raise/sus-1`, { method: 'POST', body: JSON.stringify({ event: 'go', data: 4 }) })).status).toBe(202);
    // The event reached the task hub: the raise answers once its message is stored in the hub and handed to
    // the dispatcher (which starts the instance's episode for it then and there), and it waits there, unconsumed.
    const storedEvents = async () => (await rt.storedMessages('sus-1')).filter((m) => m.kind === 'event');
    const eventMessage = expect.objectContaining({ kind: 'event', name: 'go', data: '4' });
    expect(await storedEvents()).toEqual([eventMessage]);
    const suspended = await rt.status('sus-1', '?showHistory=true');
    expect(suspended.body.runtimeStatus).toBe('Suspended');
    expect((suspended.body.historyEvents as { EventType: string }[]).map((e) => e.EventType)).toEqual(['ExecutionStarted', 'ExecutionSuspended']);
    expect(await storedEvents()).toEqual([eventMessage]);
    expect((await fetch(`${rt.base}/api/client/resume/sus-1`, { method: 'POST' })).status).toBe(202);
    expect((await rt.waitFor('sus-1')).output).toBe(8);
    // The event entered the history only after the resume. An instance that consumed it while suspended (in
    // the episode the raise started, before the reads above) would show EventRaised before ExecutionResumed.
    const resumed = await rt.status('sus-1', '?showHistory=true');
    expect((resumed.body.historyEvents as { EventType: string }[]).map((e) => e.EventType)).toEqual([
      'ExecutionStarted',
      'ExecutionSuspended',
      'ExecutionResumed',
      'EventRaised',
      'TaskCompleted',
      'ExecutionCompleted',
    ]);
    expect(await storedEvents()).toEqual([]);

    expect((await fetch(`${rt.base}/api/client/terminate/term-1`, { method: 'POST', body: JSON.stringify({ reason: 'enough' }) })).status).toBe(202);
    expect(await rt.waitFor('term-1')).toMatchObject({ runtimeStatus: 'Terminated', output: 'enough' });
    const again = await fetch(`${rt.api}/instances/term-1/terminate?reason=x`, { method: 'POST' });
    expect(again.status).toBe(410);
  });

  it('lists with filters, purges one (client binding) and purges by filter (API)', async () => {
    const list = await fetch(`${rt.api}/instances?runtimeStatus=Failed`);
    expect(list.status).toBe(200);
    const failed = (await list.json()) as { instanceId: string; runtimeStatus: string }[];
    expect(failed.map((i) => i.instanceId)).toContain('fail-1');
    expect(failed.every((i) => i.runtimeStatus === 'Failed')).toBe(true);

    const page = await fetch(`${rt.api}/instances?top=2`);
    expect(((await page.json()) as unknown[]).length).toBe(2);
    const token = page.headers.get('x-ms-continuation-token');
    expect(token).toBeTruthy();
    const next = await fetch(`${rt.api}/instances?top=2`, { headers: { 'x-ms-continuation-token': token! } });
    expect(((await next.json()) as unknown[]).length).toBe(2);

    const purged = await fetch(`${rt.base}/api/client/purge/seq-1`, { method: 'POST' });
    expect(await purged.json()).toEqual({ instancesDeleted: 1 });
    expect((await rt.status('seq-1')).status).toBe(404);

    const byFilter = await fetch(`${rt.api}/instances?runtimeStatus=Failed,Terminated`, { method: 'DELETE' });
    expect(byFilter.status).toBe(200);
    expect(((await byFilter.json()) as { instancesDeleted: number }).instancesDeleted).toBeGreaterThanOrEqual(2);
    expect((await rt.status('fail-1')).status).toBe(404);
  });

  it('rejects bad input with 4xx and changes nothing', async () => {
    expect((await rt.start202('noSuchOrchestrator', 'x1')).status).toBe(404);
    expect((await fetch(`${rt.api}/orchestrators/sequence/bad%23id`, { method: 'POST' })).status).toBe(400);
    const badJson = await fetch(`${rt.api}/orchestrators/sequence/bad-json`, { method: 'POST', body: '{nope' });
    expect(badJson.status).toBe(400);
    expect((await rt.status('bad-json')).status).toBe(404);
    expect((await fetch(`${rt.api}/instances?runtimeStatus=Sleeping`)).status).toBe(400);
    expect((await fetch(`${rt.api}/instances?createdTimeFrom=yesterday`)).status).toBe(400);
    expect((await fetch(`${rt.api}/instances/par-1?showHistory=maybe`)).status).toBe(400);
    await rt.start202('waiter', 'dup-1');
    expect((await rt.start202('waiter', 'dup-1')).status).toBe(409);
    expect((await fetch(`${rt.api}/instances/dup-1`, { method: 'DELETE' })).status).toBe(409);
    expect((await fetch(`${rt.api}/rpc-0000/instances/dup-1`)).status).toBe(404);
    await fetch(`${rt.api}/instances/dup-1/terminate`, { method: 'POST' });
  });

  it('runs many orchestrations concurrently', async () => {
    const ids = Array.from({ length: 8 }, (_, i) => `conc-${i}`);
    await Promise.all(ids.map((id, i) => rt.start202('markMany', id, { tag: id, count: 10 + i })));
    const outs = await Promise.all(ids.map((id) => rt.waitFor(id)));
    outs.forEach((s, i) => expect(s).toMatchObject({ runtimeStatus: 'Completed', output: (9 + i) * (10 + i) }));
  });
});
