import { dumpTable, startService, USERS, type ServiceUnderTest, SECOND_ADMIN } from '../../support/service';
import { meshsync, newHome } from '../cli/cliSupport';
import { fileConnector, folder, meshByAnchor, runImport, sourceRules, writeCsv } from '../sync/syncSupport';

/**
 * The configuration roads to a mass change, against the built service (file connectors, real runs, the CLI as
 * a real process, two Admins from the test issuer):
 * - DELETE /connectors/{id} of a connector that holds objects or that a schedule runs is a 409 naming the
 *   counts and the schedules, nothing changed; forced, the schedules are disabled with a note, and a delete
 *   over the connector's deletes threshold is held for a second Admin (its requester: 403), within it is made;
 * - a save that loosens a guard rail (a threshold made larger or removed, a shorter grace, four-eyes off) is
 *   held (202) until another Admin approves it; tightening applies at once; an approval after the target
 *   changed is a 409; config import and history restore take the same path;
 * - a body nested deeper than 32 levels is a 400 on every JSON route, and the process keeps answering.
 */
jest.setTimeout(240_000);

// eslint-disable-next-line @typescript-eslint/no-explicit-any
type Json = any;

let svc: ServiceUnderTest;

beforeAll(async () => {
  svc = await startService();
});

afterAll(async () => {
  await svc?.dispose();
});

async function call(method: string, route: string, body?: unknown, as?: typeof SECOND_ADMIN): Promise<Json> {
  return svc.call(method, route, { body, ...(as ? { as, role: 'Admin' as const } : {}) });
}

async function expectProblem(res: Json, status: number, code: string): Promise<void> {
  if (res.status !== status) throw new Error(`expected ${status}, got ${res.status} ${res.text}`);
  expect(res.headers.get('content-type')).toBe('application/problem+json');
  expect(res.body.code).toBe(code);
}

const people = (n: number, prefix: string) => Array.from({ length: n }, (_, i) => ({ id: `${prefix}${i}`, name: `Person ${prefix}${i}` }));

async function source(name: string, n: number, prefix: string): Promise<string> {
  const dir = folder();
  writeCsv(dir, 'people.csv', ['id', 'name'], people(n, prefix));
  const id = await fileConnector(svc, name, dir);
  await sourceRules(svc, id, 'id', ['name']);
  expect(await runImport(svc, id)).toMatchObject({ status: 'Completed' });
  return id;
}

async function schedule(name: string, connectorId: string): Promise<string> {
  const res = await call('POST', 'schedules', { name, cron: '0 0 3 * * *', isEnabled: true, steps: [{ runType: 'FullImport', connectorIds: [connectorId] }] });
  expect(res.status).toBe(201);
  return res.body.scheduleId;
}

const meshCount = async (prefix: string) => [...(await meshByAnchor()).keys()].filter((k) => k.startsWith(prefix)).length;

describe('connector delete', () => {
  let hr: string;
  let nightly: string;

  beforeAll(async () => {
    hr = await source('HR', 10, 'H');
    nightly = await schedule('nightly HR', hr);
  });

  test('409 naming the objects, the tombstones and the schedules; nothing deleted', async () => {
    const res = await call('DELETE', `connectors/${hr}`);
    await expectProblem(res, 409, 'conflict');
    expect(res.body).toMatchObject({ connectorSpaceObjects: 10, meshObjects: 10, tombstones: 10, schedules: ['nightly HR'] });
    expect(res.body.detail).toContain("The connector 'HR' holds 10 connector-space objects joined to 10 mesh objects");
    expect(res.body.detail).toContain('10 mesh objects would lose their last connector and become tombstones');
    expect(res.body.detail).toContain("the schedules 'nightly HR' run it");
    expect(res.body.detail).toContain('?force=true');
    expect((await call('GET', `connectors/${hr}`)).status).toBe(200);
    expect(await meshCount('H')).toBe(10);
    expect((await call('GET', `schedules/${nightly}`)).body).toMatchObject({ isEnabled: true });
    expect((await call('DELETE', `connectors/${hr}?force=maybe`)).status).toBe(400);
  });

  test('the CLI shows the counts without --force and exits 6 (conflict); with --force the delete is held (exit 8)', async () => {
    const env = { MESHSYNC_HOME: newHome(), MESHSYNC_URL: svc.baseUrl, MESHSYNC_TOKEN: await svc.token('Admin') };
    const refused = await meshsync(['connectors', 'delete', hr], env);
    expect(refused.code).toBe(6);
    expect(refused.stderr).toContain('10 connector-space objects');
    expect(refused.stderr).toContain("'nightly HR'");
    expect((await call('GET', `connectors/${hr}`)).status).toBe(200);

    // Forced: 10 mesh deletes of 10 objects is over the default deletes threshold (20 %): held.
    const held = await meshsync(['connectors', 'delete', hr, '--force', '-o', 'json'], env);
    expect(held.code).toBe(8);
    const change = JSON.parse(held.stdout);
    expect(change).toMatchObject({
      status: 'AwaitingApproval',
      targetType: 'connector',
      targetId: hr,
      targetName: 'HR',
      action: 'delete',
      reasons: [{ operation: 'deletes', count: 10, limit: 2 }],
      requestedBy: USERS.Admin.upn,
    });
    expect((await call('GET', `connectors/${hr}`)).status).toBe(200);
    expect(await meshCount('H')).toBe(10);
    // The schedule is disabled either way, with a note.
    const s = (await call('GET', `schedules/${nightly}`)).body;
    expect(s.isEnabled).toBe(false);
    expect(s.nextRunOn).toBeNull();
    expect(s.disabledReason).toContain("the connector 'HR'");
    expect(s.disabledReason).toContain('deleted with force');

    // The requester cannot approve it: 403 naming the rule and who asked, audited, nothing changed.
    const self = await call('POST', `config/changes/${change.changeId}/approve`);
    await expectProblem(self, 403, 'forbidden');
    expect(self.body.detail).toContain(`the change was asked for by ${USERS.Admin.upn}`);
    expect(self.body.detail).toContain('another Admin must');
    expect((await call('GET', `config/changes/${change.changeId}`)).body.status).toBe('AwaitingApproval');
    expect((await call('GET', `connectors/${hr}`)).status).toBe(200);
    const audit = (await call('GET', `audit?targetType=configChange&targetId=${change.changeId}`)).body.items;
    expect(audit.map((a: Json) => [a.action, a.outcome])).toEqual([
      ['approve', 'failure'],
      ['request', 'success'],
    ]);

    // The CLI lists it, and the requester's approval through it is refused too (exit 4, the 403's detail).
    // Wide enough for the two whole ids (CHANGE ID, TARGET) and every header uncut.
    const listed = await meshsync(['config', 'changes', 'ls', '--status', 'AwaitingApproval'], { ...env, COLUMNS: '200' });
    expect(listed.code).toBe(0);
    expect(listed.stdout.split('\n')[0]).toMatch(/^CHANGE ID\s+STATUS\s+ACTION\s+TARGET TYPE\s+TARGET\s+NAME\s+REQUESTED BY\s+EXPIRES$/);
    expect(listed.stdout).toMatch(new RegExp(`^${change.changeId}\\s+AwaitingApproval\\s+delete\\s+connector\\s+${hr}\\s+HR\\s`, 'm'));
    const selfCli = await meshsync(['config', 'changes', 'approve', change.changeId], env);
    expect(selfCli.code).toBe(4);
    expect(selfCli.stderr).toContain('another Admin must');

    // Another Admin approves (the CLI, signed in as them): the delete is made, the mesh objects it was the last
    // connector of are deleted.
    const secondToken = await svc.mint({ ...SECOND_ADMIN, roles: ['Service.Admin'] });
    const approvedCli = await meshsync(['config', 'changes', 'approve', change.changeId, '-o', 'json'], { ...env, MESHSYNC_TOKEN: secondToken });
    expect(approvedCli.code).toBe(0);
    expect(JSON.parse(approvedCli.stdout)).toMatchObject({ status: 'Applied', decidedBy: SECOND_ADMIN.upn });
    expect((await call('GET', `connectors/${hr}`)).status).toBe(404);
    expect(await meshCount('H')).toBe(0);
    const again = await call('POST', `config/changes/${change.changeId}/approve`, undefined, SECOND_ADMIN);
    await expectProblem(again, 409, 'conflict');
  });

  test('forced within the threshold: deleted at once, its schedule disabled with a note', async () => {
    // A new connector holds nothing yet: its create applies at once, whatever its thresholds.
    const dir = folder();
    writeCsv(dir, 'people.csv', ['id', 'name'], people(3, 'C'));
    const create = await call('POST', 'connectors', {
      name: 'Contractors',
      type: 'custom',
      config: { implementation: 'file', objectType: 'User', settings: { path: dir, anchorColumn: 'id' }, thresholds: { deletes: { count: 50, percent: 100 } } },
    });
    expect(create.status).toBe(201);
    const id = create.body.id;
    await sourceRules(svc, id, 'id', ['name']);
    expect(await runImport(svc, id)).toMatchObject({ status: 'Completed' });
    const weekly = await schedule('weekly contractors', id);

    const res = await call('DELETE', `connectors/${id}?force=true`);
    expect(res.status).toBe(204);
    expect((await call('GET', `connectors/${id}`)).status).toBe(404);
    expect(await meshCount('C')).toBe(0);
    const s = (await call('GET', `schedules/${weekly}`)).body;
    expect(s).toMatchObject({ isEnabled: false, disabledReason: expect.stringContaining("the connector 'Contractors'") });
  });

  test('an empty connector that no schedule runs deletes as before (204)', async () => {
    const id = await fileConnector(svc, 'Empty', folder());
    expect((await call('DELETE', `connectors/${id}`)).status).toBe(204);
    expect((await call('GET', `connectors/${id}`)).status).toBe(404);
  });
});

describe('guard-rail changes need a second Admin', () => {
  let target: string;
  let dir: string;
  const body = (extra: Record<string, unknown> = {}, name = 'Target') => ({
    name,
    config: { implementation: 'file', objectType: 'User', settings: { path: dir, anchorColumn: 'id' }, ...extra },
  });

  beforeAll(async () => {
    dir = folder();
    target = await fileConnector(svc, 'Target', dir);
  });

  test('a larger delete threshold is held (202), unchanged until another Admin approves; a smaller one applies at once', async () => {
    // { count: 10, percent: 20 } is never looser than the default { count: 500, percent: 20 }; { count: 10 } alone
    // is, for a connector space under 50 objects (20 % of it is less than 10).
    const alone = await call('PUT', `connectors/${target}`, body({ thresholds: { deletes: { count: 10 } } }));
    expect(alone.status).toBe(202);
    expect(alone.body.reasons).toEqual([{ setting: 'thresholds.deletes.percent', before: 20, after: null }]);
    await call('POST', `config/changes/${alone.body.changeId}/reject`);
    const never = await call('PUT', `connectors/${target}`, body({ thresholds: { deletes: { count: 10, percent: 20 } } }));
    expect(never.status).toBe(200);
    const back = await call('PUT', `connectors/${target}`, body());
    expect(back.status).toBe(202);
    expect(back.body.reasons).toEqual([{ setting: 'thresholds.deletes.count', before: 10, after: 500 }]);
    expect((await call('POST', `config/changes/${back.body.changeId}/approve`, undefined, SECOND_ADMIN)).status).toBe(200);
    const listed = (await call('GET', 'config/changes?status=Applied')).body.items;
    expect(listed.map((c: Json) => c.changeId)).toContain(back.body.changeId);

    const versionsBefore = await dumpTable('ConfigVersions');
    const held = await call('PUT', `connectors/${target}`, body({ thresholds: { deletes: { count: 5000, percent: 20 } } }));
    expect(held.status).toBe(202);
    expect(held.body).toMatchObject({
      status: 'AwaitingApproval',
      targetType: 'connector',
      targetId: target,
      action: 'update',
      reasons: [{ setting: 'thresholds.deletes.count', before: 500, after: 5000 }],
      requestedBy: USERS.Admin.upn,
    });
    expect(Date.parse(held.body.expiresOn)).toBeGreaterThan(Date.now() + 23 * 3_600_000);
    expect((await call('GET', `connectors/${target}`)).body.config.thresholds).toBeUndefined();
    expect(await dumpTable('ConfigVersions')).toEqual(versionsBefore);
    const detail = (await call('GET', `config/changes/${held.body.changeId}`)).body;
    expect(detail.changes).toEqual([expect.objectContaining({ targetType: 'connector', action: 'update' })]);
    expect(detail.changes[0].after.config.thresholds).toEqual({ deletes: { count: 5000, percent: 20 } });

    await expectProblem(await call('POST', `config/changes/${held.body.changeId}/approve`), 403, 'forbidden');
    expect((await call('GET', `connectors/${target}`)).body.config.thresholds).toBeUndefined();
    const approved = await call('POST', `config/changes/${held.body.changeId}/approve`, undefined, SECOND_ADMIN);
    expect(approved.status).toBe(200);
    expect((await call('GET', `connectors/${target}`)).body.config.thresholds).toEqual({ deletes: { count: 5000, percent: 20 } });
    // The version is the requester's change; the audit names the approver.
    const history = (await call('GET', `config/history?targetId=${target}`)).body.items;
    expect(history[0]).toMatchObject({ action: 'update', actorUpn: USERS.Admin.upn });

    const tighter = await call('PUT', `connectors/${target}`, body({ thresholds: { deletes: { count: 100, percent: 20 } } }));
    expect(tighter.status).toBe(200);
    expect(tighter.body.config.thresholds).toEqual({ deletes: { count: 100, percent: 20 } });
  });

  test('removing a threshold, a shorter grace and four-eyes off are held; a longer grace applies at once', async () => {
    const base = { thresholds: { deletes: { count: 100, percent: 20 } } };
    const removed = await call('PUT', `connectors/${target}`, body({ thresholds: { deletes: {} } }));
    expect(removed.status).toBe(202);
    expect(removed.body.reasons).toEqual([
      { setting: 'thresholds.deletes.count', before: 100, after: null },
      { setting: 'thresholds.deletes.percent', before: 20, after: null },
    ]);
    const longer = await call('PUT', `connectors/${target}`, body({ ...base, deprovisioning: { graceDays: 10 } }));
    expect(longer.status).toBe(200);
    const shorter = await call('PUT', `connectors/${target}`, body({ ...base, deprovisioning: { graceDays: 1 } }));
    expect(shorter.status).toBe(202);
    expect(shorter.body.reasons).toEqual([{ setting: 'deprovisioning.graceDays', before: 10, after: 1 }]);
    const off = await call('PUT', `connectors/${target}`, body({ ...base, deprovisioning: { graceDays: 10 }, approvals: { requireSecondPerson: false } }));
    expect(off.status).toBe(202);
    expect(off.body.reasons).toEqual([{ setting: 'approvals.requireSecondPerson', before: true, after: false }]);
    expect((await call('GET', `connectors/${target}`)).body.config).toMatchObject({ ...base, deprovisioning: { graceDays: 10 } });

    // Rejected: nothing applied. Approved after the target changed: 409, nothing applied, the change Failed.
    const rejected = await call('POST', `config/changes/${off.body.changeId}/reject`, undefined, SECOND_ADMIN);
    expect(rejected.body).toMatchObject({ status: 'Rejected', decidedBy: SECOND_ADMIN.upn });
    await expectProblem(await call('POST', `config/changes/${off.body.changeId}/approve`, undefined, SECOND_ADMIN), 409, 'conflict');
    const renamed = await call('PUT', `connectors/${target}`, body({ ...base, deprovisioning: { graceDays: 10 } }, 'Target renamed'));
    expect(renamed.status).toBe(200);
    const stale = await call('POST', `config/changes/${shorter.body.changeId}/approve`, undefined, SECOND_ADMIN);
    await expectProblem(stale, 409, 'conflict');
    expect(stale.body.detail).toContain('changed since this change was requested, nothing was applied');
    expect(stale.body.detail).toContain('a new request and a new approval');
    expect((await call('GET', `config/changes/${shorter.body.changeId}`)).body.status).toBe('Failed');
    expect((await call('GET', `connectors/${target}`)).body).toMatchObject({ name: 'Target renamed', config: { deprovisioning: { graceDays: 10 } } });
    await call('POST', `config/changes/${removed.body.changeId}/reject`);
  });

  test('a config import that loosens a threshold: dryRun lists it as needing approval; the import is held whole', async () => {
    const doc = (await call('GET', 'config/export')).body;
    const entry = doc.connectors.find((c: Json) => c.id === target);
    entry.config.thresholds = { deletes: { count: 100000, percent: 100 } };
    entry.name = 'Target imported';
    // The schedules of the connectors deleted above name connectors that are gone: not part of this document.
    doc.schedules = doc.schedules.filter((x: Json) => !x.disabledReason && !/HR|contractors/.test(x.name));
    const dry = await call('POST', 'config/import?dryRun=true', doc);
    expect(dry.status).toBe(200);
    const planned = dry.body.changes.find((c: Json) => c.targetId === target);
    expect(planned).toMatchObject({
      action: 'update',
      needsApproval: [
        expect.objectContaining({ setting: 'thresholds.deletes.count', connectorId: target, before: 100, after: 100000 }),
        expect.objectContaining({ setting: 'thresholds.deletes.percent', connectorName: 'Target imported', before: 20, after: 100 }),
      ],
    });

    const held = await call('POST', 'config/import', doc);
    expect(held.status).toBe(202);
    expect(held.body).toMatchObject({ status: 'AwaitingApproval', targetType: 'config', targetId: 'import', action: 'import' });
    expect((await call('GET', `connectors/${target}`)).body).toMatchObject({
      name: 'Target renamed',
      config: { thresholds: { deletes: { count: 100, percent: 20 } } },
    });
    await expectProblem(await call('POST', `config/changes/${held.body.changeId}/approve`), 403, 'forbidden');
    expect((await call('POST', `config/changes/${held.body.changeId}/approve`, undefined, SECOND_ADMIN)).status).toBe(200);
    expect((await call('GET', `connectors/${target}`)).body).toMatchObject({
      name: 'Target imported',
      config: { thresholds: { deletes: { count: 100000, percent: 100 } } },
    });
  });

  test('a history restore of a version with looser thresholds is held', async () => {
    const tighter = await call(
      'PUT',
      `connectors/${target}`,
      body({ thresholds: { deletes: { count: 10, percent: 20 } }, deprovisioning: { graceDays: 10 } }, 'Target'),
    );
    expect(tighter.status).toBe(200);
    const history = (await call('GET', `config/history?targetId=${target}&take=200`)).body.items;
    const loose = history.find((v: Json) => v.after?.config?.thresholds?.deletes?.count === 100000);
    const held = await call('POST', `config/history/${loose.versionId}/restore`);
    expect(held.status).toBe(202);
    expect(held.body).toMatchObject({
      action: 'restore',
      targetId: target,
      reasons: [
        { setting: 'thresholds.deletes.count', before: 10, after: 100000 },
        { setting: 'thresholds.deletes.percent', before: 20, after: 100 },
      ],
    });
    expect((await call('GET', `connectors/${target}`)).body.config.thresholds).toEqual({ deletes: { count: 10, percent: 20 } });
    expect((await call('POST', `config/changes/${held.body.changeId}/approve`, undefined, SECOND_ADMIN)).status).toBe(200);
    expect((await call('GET', `connectors/${target}`)).body.config.thresholds).toEqual({ deletes: { count: 100000, percent: 100 } });
  });

  test('a Viewer or Operator cannot see or decide held changes (403)', async () => {
    for (const role of ['Viewer', 'Operator'] as const) {
      expect((await svc.call('GET', 'config/changes', { role })).status).toBe(403);
    }
  });
});

describe('nesting and size limits', () => {
  const nested = (levels: number) => '{"a":'.repeat(levels) + '1' + '}'.repeat(levels);

  test('a body nested 10,000 levels deep is a 400 on every JSON route; nothing written; the process answers', async () => {
    const tables = ['Connectors', 'Rules', 'Schedules', 'ConfigVersions', 'ConfigChanges'];
    const before = await Promise.all(tables.map(dumpTable));
    const deep = nested(10_000);
    const settings = `{"name":"deep","type":"custom","config":{"implementation":"file","settings":${deep}}}`;
    const doc = `{"formatVersion":1,"connectors":[{"name":"deep","type":"custom","config":{"settings":${deep}}}],"rules":[],"schedules":[]}`;
    const requests: [string, string, string][] = [
      ['POST', 'connectors', settings],
      ['PUT', 'connectors/00000000-0000-4000-8000-000000000001', settings],
      ['POST', 'config/import', doc],
      ['POST', 'config/import?dryRun=true', doc],
      ['POST', 'rules', `{"ruleName":"deep","ruleType":"FlowRule","x":${deep}}`],
      ['POST', 'schedules', `{"name":"deep","steps":${'['.repeat(10_000)}${']'.repeat(10_000)}}`],
      ['POST', 'mesh/objects/search', `{"filter":${deep}}`],
    ];
    for (const [method, route, text] of requests) {
      const res = await svc.call(method, route, { body: text, headers: { 'content-type': 'application/json' } });
      await expectProblem(res, 400, 'validation_failed');
      expect(res.body.detail).toContain('more than 32 levels deep');
    }
    // 32 levels is read (and refused for its content, not its depth); 33 is not.
    const at = (levels: number) =>
      `{"name":"d","type":"custom","config":{"implementation":"file","settings":{"path":"/tmp","anchorColumn":"id","x":${nested(levels - 3)}}}}`;
    const ok32 = await svc.call('POST', 'connectors', { body: at(32), headers: { 'content-type': 'application/json' } });
    expect(ok32.status).toBe(400);
    expect(ok32.body.detail).not.toContain('levels deep');
    const over = await svc.call('POST', 'connectors', { body: at(33), headers: { 'content-type': 'application/json' } });
    expect(over.body.detail).toContain('more than 32 levels deep');
    // Brackets inside strings do not count.
    const strings = await svc.call('POST', 'connectors', { body: { name: '['.repeat(100), type: 'nope', config: { x: '{'.repeat(5000) } } });
    await expectProblem(strings, 400, 'validation_failed');
    expect(strings.body.detail).not.toContain('levels deep');
    // Larger than 1 MiB: 413.
    const big = await svc.call('POST', 'config/import', { body: { formatVersion: 1, connectors: [], rules: [], schedules: [], pad: 'x'.repeat(1_100_000) } });
    expect(big.status).toBe(413);
    expect(big.headers.get('content-type')).toBe('application/problem+json');

    expect(svc.running).toBe(true);
    expect((await svc.call('GET', 'health', { role: null })).status).toBe(200);
    const after = await Promise.all(tables.map(dumpTable));
    tables.forEach((t, i) => expect({ table: t, rows: after[i] }).toEqual({ table: t, rows: before[i] }));
  });
});
