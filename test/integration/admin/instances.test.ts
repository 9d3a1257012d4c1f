import os from 'node:os';
import { randomUUID } from 'node:crypto';
import { getAssignment } from '../../../lib/storage/assignments';
import { getInstance, getNameClaim, getPauseSettings, getRenameJournal } from '../../../lib/storage/instances';
import { completeRun, createRun, emptyStats, instanceNamesInRuns } from '../../../lib/storage/runs';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { USERS, startService, type Answer, type ServiceUnderTest } from '../../support/service';

// A folder of the file connector must be inside its roots (the test service's are the temporary folder).
const HR_FOLDER = path.join(os.tmpdir(), 'hr-exports');

/**
 * Engine instances over HTTP against real runtime processes on Azurite: list, pause/resume, rename (with
 * truly concurrent conflicting requests and a crash in the middle of the cascade), offline detection with a
 * second runtime that is stopped, removal, and connector assignment.
 */
jest.setTimeout(180_000);

type Runtime = ServiceUnderTest;

/** The engine instance id of a runtime: the local runtime keeps it in its data dir. */
const instanceIdOf = (rt: Runtime) => readFileSync(path.join(rt.dataDir, 'runtime', 'instance-id'), 'utf8').trim();

/** Poll `probe` until it returns a value (not undefined); fail after `timeoutMs`. */
async function eventually<T>(probe: () => Promise<T | undefined>, timeoutMs: number, what: string): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const v = await probe();
    if (v !== undefined) return v;
    if (Date.now() > deadline) throw new Error(`Timed out waiting for ${what}.`);
    await new Promise((r) => setTimeout(r, 200));
  }
}

const uniq = () => randomUUID().slice(0, 8);
const FAST = { Engine__HeartbeatSeconds: '1', Engine__OfflineAfterSeconds: '4' };

let r1: Runtime;
let r2: Runtime;
let id1: string;
let id2: string;
const name1 = `alpha-${uniq()}`;
const name2 = `beta-${uniq()}`;

function expectProblem(res: Answer, status: number, code: string): void {
  expect({ status: res.status, code: res.body?.code }).toEqual({ status, code });
  expect(res.headers.get('content-type')).toMatch(/^application\/problem\+json/);
}

async function createConnector(rt: Runtime): Promise<string> {
  const res = await rt.call('POST', 'connectors', {
    body: { name: `conn-${uniq()}`, type: 'custom', config: { implementation: 'file', settings: { path: HR_FOLDER, anchorColumn: 'id' } } },
  });
  expect(res.status).toBe(201);
  return res.body.id as string;
}

async function listed(rt: Runtime, id: string) {
  const res = await rt.call('GET', 'instances', { role: 'Viewer' });
  expect(res.status).toBe(200);
  return (res.body.items as Array<Record<string, unknown>>).find((i) => i.id === id);
}

beforeAll(async () => {
  r1 = await startService({ env: { ...FAST, Engine__InstanceName: name1 } });
  r2 = await startService({ prefix: r1.prefix, env: { ...FAST, Engine__InstanceName: name2 } });
  id1 = instanceIdOf(r1);
  id2 = instanceIdOf(r2);
});

afterAll(async () => {
  await Promise.all([r1?.dispose(), r2?.dispose()]);
});

describe('GET /instances', () => {
  test('lists every registered instance with effective status, heartbeat and connector ids', async () => {
    const res = await r1.call('GET', 'instances', { role: 'Viewer' });
    expect(res.status).toBe(200);
    expect(res.body.totalCount).toBe(res.body.items.length);
    const one = res.body.items.find((i: { id: string }) => i.id === id1);
    expect(one).toEqual({
      id: id1,
      name: name1,
      status: 'active',
      lastHeartbeat: expect.stringMatching(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/),
      connectorIds: [],
    });
    expect(res.body.items.find((i: { id: string }) => i.id === id2)).toMatchObject({ name: name2, status: 'active' });
  });

  test('needs authentication', async () => {
    const res = await r1.call('GET', 'instances', { role: null });
    expectProblem(res, 401, 'unauthenticated');
    expect(res.headers.get('www-authenticate')).toBeTruthy();
  });

  test('heartbeats move lastHeartbeat forward', async () => {
    const first = (await listed(r1, id1))!.lastHeartbeat as string;
    const later = await eventually(
      async () => {
        const beat = (await listed(r1, id1))!.lastHeartbeat as string;
        return beat > first ? beat : undefined;
      },
      20_000,
      'a newer heartbeat',
    );
    expect(Date.parse(later)).toBeGreaterThan(Date.parse(first));
  });
});

describe('pause and resume', () => {
  test('pause then resume, each idempotent, 200 with the instance; Operator may, Viewer may not', async () => {
    const p1 = await r1.call('POST', `instances/${id2}/pause`, { role: 'Operator' });
    expect(p1.status).toBe(200);
    expect(p1.body).toMatchObject({ id: id2, name: name2, status: 'paused' });
    const p2 = await r1.call('POST', `instances/${id2}/pause`, { role: 'Operator' });
    expect(p2.status).toBe(200);
    expect(p2.body.status).toBe('paused');
    expect((await listed(r2, id2))!.status).toBe('paused');
    expect(await getPauseSettings(id2)).toMatchObject({ paused: true, instanceName: name2, updatedBy: USERS.Operator.upn });
    const r = await r1.call('POST', `instances/${id2}/resume`, { role: 'Admin' });
    expect(r.status).toBe(200);
    expect(r.body.status).toBe('active');
    const r2b = await r1.call('POST', `instances/${id2}/resume`, { role: 'Operator', body: {} });
    expect(r2b.status).toBe(200);
    expect(r2b.body.status).toBe('active');
    expectProblem(await r1.call('POST', `instances/${id2}/pause`, { role: 'Viewer' }), 403, 'forbidden');
    expect((await listed(r1, id2))!.status).toBe('active');
  });

  test('unknown or malformed ids are 404; a body with anything in it is 400', async () => {
    expectProblem(await r1.call('POST', `instances/${randomUUID()}/pause`, { role: 'Operator' }), 404, 'not_found');
    expectProblem(await r1.call('POST', `instances/${encodeURIComponent('bad id!')}/resume`, { role: 'Operator' }), 404, 'not_found');
    const bad = await r1.call('POST', `instances/${id2}/pause`, { role: 'Operator', body: { paused: true } });
    expectProblem(bad, 400, 'validation_failed');
    expect(bad.body.errors).toEqual([{ path: '/paused', message: 'is not a known property' }]);
    expect((await listed(r1, id2))!.status).toBe('active');
  });
});

describe('rename', () => {
  test('renames, cascading to the name index; the old name becomes free', async () => {
    const newName = `gamma-${uniq()}`;
    const res = await r1.call('POST', `instances/${id1}/rename`, { body: { name: newName } });
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ id: id1, name: newName, status: 'active' });
    expect((await listed(r2, id1))!.name).toBe(newName);
    expect(await getNameClaim(name1)).toBeNull();
    // Back, and to the same name again (200, no change).
    expect((await r1.call('POST', `instances/${id1}/rename`, { body: { name: name1 } })).body.name).toBe(name1);
    expect((await r1.call('POST', `instances/${id1}/rename`, { body: { name: name1 } })).status).toBe(200);
  });

  test('409 when the name is taken, case-insensitively; nothing changes', async () => {
    const res = await r1.call('POST', `instances/${id1}/rename`, { body: { name: name2.toUpperCase() } });
    expectProblem(res, 409, 'conflict');
    expect((await listed(r1, id1))!.name).toBe(name1);
    expect(await getRenameJournal(id1)).toBeNull();
  });

  test('two concurrent renames to one name (served by two processes): exactly one succeeds, the other is 409', async () => {
    for (let round = 0; round < 5; round++) {
      const target = `Shared-${uniq()}`;
      const [a, b] = await Promise.all([
        r1.call('POST', `instances/${id1}/rename`, { body: { name: target } }),
        r2.call('POST', `instances/${id2}/rename`, { body: { name: target.toLowerCase() } }),
      ]);
      expect([a.status, b.status].sort()).toEqual([200, 409]);
      const [winner, loser] = a.status === 200 ? [id1, id2] : [id2, id1];
      expect((await getNameClaim(target))?.instanceId).toBe(winner);
      expect((await listed(r1, loser))!.name).toBe(loser === id1 ? name1 : name2);
      expect(await getRenameJournal(loser)).toBeNull();
      // Restore the winner's name for the next round and the other tests.
      const restore = await r1.call('POST', `instances/${winner}/rename`, { body: { name: winner === id1 ? name1 : name2 } });
      expect(restore.status).toBe(200);
    }
  });

  test('bad bodies are 400/415, other roles 403, unknown instance 404; nothing changes', async () => {
    const route = `instances/${id1}/rename`;
    expectProblem(await r1.call('POST', route, { body: {} }), 400, 'validation_failed');
    expectProblem(await r1.call('POST', route, { body: { name: '' } }), 400, 'validation_failed');
    expectProblem(await r1.call('POST', route, { body: { name: '   ' } }), 400, 'validation_failed');
    expectProblem(await r1.call('POST', route, { body: { name: 42 } }), 400, 'validation_failed');
    expectProblem(await r1.call('POST', route, { body: { name: 'x'.repeat(257) } }), 400, 'validation_failed');
    expectProblem(await r1.call('POST', route, { body: { name: 'ok', extra: 1 } }), 400, 'validation_failed');
    expectProblem(await r1.call('POST', route, { body: '{"name":', headers: { 'content-type': 'application/json' } }), 400, 'malformed_json');
    expectProblem(await r1.call('POST', route, { body: 'name=x', headers: { 'content-type': 'text/plain' } }), 415, 'unsupported_media_type');
    expectProblem(await r1.call('POST', route), 400, 'validation_failed');
    expectProblem(await r1.call('POST', route, { role: 'Operator', body: { name: 'op' } }), 403, 'forbidden');
    expectProblem(await r1.call('POST', `instances/${randomUUID()}/rename`, { body: { name: `n-${uniq()}` } }), 404, 'not_found');
    expect((await listed(r1, id1))!.name).toBe(name1);
  });
});

describe('connector assignment', () => {
  let c1: string;
  let c2: string;
  beforeAll(async () => {
    c1 = await createConnector(r1);
    c2 = await createConnector(r1);
  });

  test('assign: 200 with the assignment; same instance again 200; another instance 409; shows on both resources', async () => {
    const res = await r1.call('PUT', `connectors/${c1}/instance`, { body: { instanceId: id1 } });
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ connectorId: c1, instanceId: id1, instanceName: name1, assignedOn: expect.any(String) });
    const again = await r1.call('PUT', `connectors/${c1}/instance`, { body: { instanceId: id1.toUpperCase() } });
    expect(again.status).toBe(200);
    expect(again.body.assignedOn).toBe(res.body.assignedOn);
    expectProblem(await r1.call('PUT', `connectors/${c1}/instance`, { body: { instanceId: id2 } }), 409, 'conflict');
    expect((await listed(r1, id1))!.connectorIds).toContain(c1);
    expect((await r1.call('GET', `connectors/${c1}`, { role: 'Viewer' })).body.instanceId).toBe(id1);
  });

  test('two concurrent assigns of one connector to different instances: exactly one succeeds', async () => {
    for (let round = 0; round < 5; round++) {
      const [a, b] = await Promise.all([
        r1.call('PUT', `connectors/${c2}/instance`, { body: { instanceId: id1 } }),
        r2.call('PUT', `connectors/${c2}/instance`, { body: { instanceId: id2 } }),
      ]);
      expect([a.status, b.status].sort()).toEqual([200, 409]);
      const winner = a.status === 200 ? id1 : id2;
      expect((await getAssignment(c2))?.instanceId).toBe(winner);
      expect((await r1.call('DELETE', `connectors/${c2}/instance`)).status).toBe(204);
    }
  });

  test('errors: unknown connector 404, unknown instance 400 on /instanceId, bad bodies 400, Operator 403', async () => {
    expectProblem(await r1.call('PUT', `connectors/${randomUUID()}/instance`, { body: { instanceId: id1 } }), 404, 'not_found');
    expectProblem(await r1.call('PUT', 'connectors/not-a-guid/instance', { body: { instanceId: id1 } }), 404, 'not_found');
    const unknown = await r1.call('PUT', `connectors/${c1}/instance`, { body: { instanceId: randomUUID() } });
    expectProblem(unknown, 400, 'validation_failed');
    expect(unknown.body.errors).toEqual([{ path: '/instanceId', message: 'is not a registered engine instance' }]);
    expectProblem(await r1.call('PUT', `connectors/${c1}/instance`, { body: {} }), 400, 'validation_failed');
    expectProblem(await r1.call('PUT', `connectors/${c1}/instance`, { body: { instanceId: 'has space' } }), 400, 'validation_failed');
    expectProblem(await r1.call('PUT', `connectors/${c1}/instance`, { body: { instanceId: id1, x: 1 } }), 400, 'validation_failed');
    expectProblem(await r1.call('PUT', `connectors/${c1}/instance`, { role: 'Operator', body: { instanceId: id1 } }), 403, 'forbidden');
    expectProblem(await r1.call('DELETE', `connectors/${randomUUID()}/instance`), 404, 'not_found');
    expect((await getAssignment(c1))?.instanceId).toBe(id1);
  });

  test('unassign: 204, idempotent; the connector can then go to another instance', async () => {
    expect((await r1.call('DELETE', `connectors/${c1}/instance`)).status).toBe(204);
    expect((await r1.call('DELETE', `connectors/${c1}/instance`)).status).toBe(204);
    expect(await getAssignment(c1)).toBeNull();
    expect((await listed(r1, id1))!.connectorIds).not.toContain(c1);
    expect((await r1.call('PUT', `connectors/${c1}/instance`, { body: { instanceId: id2 } })).status).toBe(200);
  });

  test('every write is audited with the caller', async () => {
    const res = await r1.call('GET', `audit?targetType=connector&targetId=${c1}`);
    expect(res.status).toBe(200);
    const actions = (res.body.items as Array<{ action: string; actorUpn: string }>).map((a) => a.action);
    expect(actions).toEqual(expect.arrayContaining(['assign', 'unassign']));
    const inst = await r1.call('GET', `audit?targetType=instance&targetId=${id2}`);
    expect((inst.body.items as Array<{ action: string; actorUpn: string }>).map((a) => `${a.action}:${a.actorUpn}`)).toEqual(
      expect.arrayContaining([`pause:${USERS.Operator.upn}`, `resume:${USERS.Admin.upn}`]),
    );
  });
});

describe('offline detection and removal', () => {
  test('an instance whose process stopped goes offline; only then can it be removed, which unassigns its connectors', async () => {
    const c = await createConnector(r1);
    expect((await r1.call('PUT', `connectors/${c}/instance`, { body: { instanceId: id2 } })).status).toBe(200);
    expectProblem(await r1.call('DELETE', `instances/${id2}`), 409, 'conflict');
    expectProblem(await r1.call('DELETE', `instances/${id1}`), 409, 'conflict');
    await r2.stop();
    await eventually(async () => ((await listed(r1, id2))?.status === 'offline' ? true : undefined), 30_000, 'instance 2 offline');
    expect((await listed(r1, id1))!.status).toBe('active');
    expectProblem(await r1.call('DELETE', `instances/${id2}`, { role: 'Operator' }), 403, 'forbidden');
    expect((await r1.call('DELETE', `instances/${id2}`)).status).toBe(204);
    expect(await listed(r1, id2)).toBeUndefined();
    expect(await getAssignment(c)).toBeNull();
    expect(await getInstance(id2)).toBeNull();
    expect(await getNameClaim(name2)).toBeNull();
    expectProblem(await r1.call('DELETE', `instances/${id2}`), 404, 'not_found');
    expectProblem(await r1.call('DELETE', 'instances/no%20such'), 404, 'not_found');
    // The name of a removed instance is free again.
    expect((await r1.call('POST', `instances/${id1}/rename`, { body: { name: name2 } })).status).toBe(200);
    expect((await r1.call('POST', `instances/${id1}/rename`, { body: { name: name1 } })).status).toBe(200);
    // A removed instance that comes back re-registers (with its configured name) at its next heartbeat or start.
    await r2.start();
    expect(await listed(r1, id2)).toMatchObject({ name: name2, status: 'active', connectorIds: [] });
  });
});

describe('rename interrupted by a crash', () => {
  test('kill -9 in the middle of the cascade leaves a mixed state that the next start finishes', async () => {
    const oldName = `crashy-${uniq()}`;
    const newName = `survivor-${uniq()}`;
    const r3 = await startService({ prefix: r1.prefix, env: { ...FAST, Engine__InstanceName: oldName, Engine__TestHooks__RenamePauseMs: '120000' } });
    try {
      const id3 = instanceIdOf(r3);
      const c = await createConnector(r1);
      expect((await r1.call('PUT', `connectors/${c}/instance`, { body: { instanceId: id3 } })).status).toBe(200);
      expect((await r1.call('POST', `instances/${id3}/pause`, { role: 'Operator' })).status).toBe(200);
      for (let i = 0; i < 3; i++) {
        const run = await createRun({ connectorId: c, instanceId: id3, instanceName: oldName, runType: 'DeltaImport', status: 'Running' });
        await completeRun(run.runId, { status: 'Completed', stats: emptyStats() });
      }
      // The rename is served by the instance being renamed, which pauses after journal, claim and record.
      const pending = r3.call('POST', `instances/${id3}/rename`, { body: { name: newName } }).catch((err: Error) => err);
      await eventually(async () => ((await getInstance(id3))?.name === newName ? true : undefined), 30_000, 'the cascade to start');
      await r3.kill();
      // The request dies with its process: no answer at all.
      const outcome = await pending;
      expect(outcome).toHaveProperty('message');
      expect(outcome).not.toHaveProperty('status');
      // Mixed: journal present, record renamed, assignment, pause settings and runs not.
      expect(await getRenameJournal(id3)).toMatchObject({ oldName, newName });
      expect((await getAssignment(c))?.instanceName).toBe(oldName);
      expect((await getPauseSettings(id3))?.instanceName).toBe(oldName);
      expect(await instanceNamesInRuns(id3)).toEqual(new Set([oldName]));

      await r3.start();
      expect(await getRenameJournal(id3)).toBeNull();
      expect((await getInstance(id3))?.name).toBe(newName);
      expect((await getAssignment(c))?.instanceName).toBe(newName);
      expect((await getPauseSettings(id3))?.instanceName).toBe(newName);
      expect(await instanceNamesInRuns(id3)).toEqual(new Set([newName]));
      expect((await getNameClaim(newName))?.instanceId).toBe(id3);
      expect(await getNameClaim(oldName)).toBeNull();
      expect(await listed(r1, id3)).toMatchObject({ name: newName, status: 'paused', connectorIds: [c] });
      const runs = await r1.call('GET', `runs?instanceId=${id3}`, { role: 'Viewer' });
      expect((runs.body.items as Array<{ instanceName: string }>).map((r) => r.instanceName)).toEqual([newName, newName, newName]);
    } finally {
      await r3.dispose();
    }
  });
});
