import { readFileSync, writeFileSync as writeFileSyncText } from 'node:fs';
import path from 'node:path';
import { readFeed } from '../../../lib/mesh/store';
import { startService, type ServiceUnderTest, SECOND_ADMIN } from '../../support/service';
import { fileConnector, folder, meshByAnchor, rule, runExport, runImport, valueOf, waitRun, writeCsv } from './syncSupport';

/**
 * The sync engine end to end over HTTP on the local runtime: file connectors, rules, import and export runs
 * as durable orchestrations, the mesh read back from storage.
 */
jest.setTimeout(180_000);

let rt: ServiceUnderTest;
beforeAll(async () => {
  // The dispatcher's Executing/Executed lines (host.json keeps them at Warning), as text lines, are the
  // evidence that it ran.
  rt = await startService({ env: { 'AzureFunctionsJobHost__logging__logLevel__Function.syncDispatcher': 'Information', LOG_FORMAT: 'text' } });
});

/**
 * Wait until `count` runs of the dispatcher (the syncDispatcher timer, every 2 s) that began after `since`
 * (epoch ms, same clock as the service's log times) have completed, from its Executing/Executed lines
 * written after `mark`.
 */
async function dispatcherRuns(mark: number, since: number, count: number): Promise<void> {
  const deadline = Date.now() + 30_000;
  for (;;) {
    const logs = rt.logsSince(mark);
    const began = new Set<string>();
    for (const m of logs.matchAll(/^\[(\S+)\] Executing 'Functions\.syncDispatcher' \(.*Id=([\w-]+)\)$/gm)) {
      if (Date.parse(m[1]) > since) began.add(m[2]);
    }
    const done = [...logs.matchAll(/Executed 'Functions\.syncDispatcher' \(Succeeded, Id=([\w-]+)/g)].filter((m) => began.has(m[1])).length;
    if (done >= count) return;
    if (Date.now() > deadline) throw new Error(`the dispatcher did not run ${count} times (${done}):\n${logs.slice(-3000)}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}
afterAll(async () => {
  await rt?.dispose();
});

const HR = ['id', 'employeeId', 'givenName', 'sn', 'mail', 'department', 'managerId'];
const IT = ['id', 'employeeId', 'mail', 'phone'];

describe('two sources joined on employee id', () => {
  const hrDir = folder();
  const itDir = folder();
  let hr = '';
  let it = '';

  beforeAll(async () => {
    writeCsv(hrDir, 'hr.csv', HR, [
      { id: 'h1', employeeId: 'E1', givenName: 'Ada', sn: 'Lovelace', mail: 'ada@hr.test', department: 'R&D', managerId: 'E3' },
      { id: 'h2', employeeId: 'E2', givenName: 'Alan', sn: 'Turing', mail: 'alan@hr.test', department: 'R&D', managerId: 'E1' },
      { id: 'h3', employeeId: 'E3', givenName: 'Grace', sn: 'Hopper', mail: 'grace@hr.test', department: 'Navy', managerId: null },
      { id: 'h4', employeeId: 'E4', givenName: 'Edsger', sn: 'Dijkstra', mail: null, department: 'R&D', managerId: 'E9' },
    ]);
    writeCsv(itDir, 'it.csv', IT, [
      { id: 'i1', employeeId: 'e1', mail: 'ada@it.test', phone: '100' },
      { id: 'i2', employeeId: 'E2', mail: 'alan@it.test', phone: '200' },
      { id: 'i7', employeeId: 'X7', mail: 'x7@it.test', phone: '700' },
      { id: 'i8', employeeId: 'X8', mail: 'x8@it.test', phone: '800' },
      { id: 'i9', employeeId: 'X9', mail: 'x9@it.test', phone: '900' },
    ]);
    hr = await fileConnector(rt, 'HR', hrDir);
    it = await fileConnector(rt, 'IT', itDir);
    await rule(rt, { ruleType: 'ProjectionRule', connectorId: hr, sourceAttribute: 'employeeId', objectType: 'User' });
    for (const a of ['employeeId', 'givenName', 'sn', 'department', 'managerId']) {
      await rule(rt, { ruleType: 'FlowRule', connectorId: hr, sourceAttribute: a, targetAttribute: a, confidence: 50 });
    }
    await rule(rt, { ruleType: 'FlowRule', connectorId: hr, sourceAttribute: 'mail', targetAttribute: 'mail', confidence: 40 });
    await rule(rt, {
      ruleType: 'JoinRule',
      connectorId: it,
      sourceAttribute: 'employeeId',
      targetAttribute: 'employeeId',
      transformScript: 'source.toUpperCase()',
    });
    await rule(rt, { ruleType: 'FlowRule', connectorId: it, sourceAttribute: 'mail', targetAttribute: 'mail', confidence: 80 });
    await rule(rt, { ruleType: 'FlowRule', connectorId: it, sourceAttribute: 'phone', targetAttribute: 'phone', confidence: 80 });
    await rule(rt, { ruleType: 'MeshComposerRule', targetAttribute: 'displayName', transformScript: 'source.givenName + " " + source.sn' });
    await rule(rt, { ruleType: 'MeshComposerRule', relationshipType: 'manager', sourceAttribute: 'managerId' });
  });

  test('a full import projects every HR row into the mesh, with computed attributes and manager relationships', async () => {
    const run = await runImport(rt, hr);
    expect(run).toMatchObject({ status: 'Completed', runType: 'FullImport', stats: { objectsProcessed: 4, objectsCreated: 4, errors: 0 } });
    const mesh = await meshByAnchor();
    expect([...mesh.keys()].sort()).toEqual(['E1', 'E2', 'E3', 'E4']);
    const e1 = mesh.get('E1')!;
    expect(valueOf(e1, 'displayName')).toBe('Ada Lovelace');
    expect(e1.attributes.givenName).toMatchObject({ value: 'Ada', sourceConnectorId: hr, confidence: 50 });
    // E1's manager E3 comes later in the file: resolved when it arrived.
    expect(e1.relationships).toEqual([{ type: 'manager', targetId: mesh.get('E3')!.id, targetAnchor: 'E3', targetType: 'User' }]);
    expect(mesh.get('E2')!.relationships[0]).toMatchObject({ type: 'manager', targetId: e1.id });
    // E9 does not exist: pending.
    expect(mesh.get('E4')!.relationships).toEqual([]);
    expect(mesh.get('E4')!.pendingReferences).toEqual([{ type: 'manager', value: 'E9' }]);
    const conn = await rt.call('GET', `connectors/${hr}`);
    expect(conn.body.lastSync).toEqual(expect.any(String));
  });

  test('the same full import again writes nothing', async () => {
    const before = await meshByAnchor();
    const run = await runImport(rt, hr);
    expect(run).toMatchObject({ status: 'Completed', stats: { objectsProcessed: 4, objectsCreated: 0, objectsUpdated: 0, objectsDeleted: 0 } });
    const after = await meshByAnchor();
    expect([...after.values()].map((o) => o.updatedOn)).toEqual([...before.values()].map((o) => o.updatedOn));
  });

  test('the second source joins (case-folded by its transform) and wins mail by confidence', async () => {
    const run = await runImport(rt, it);
    // Rows that join nothing and have no projection rule stay in the connector space only.
    expect(run).toMatchObject({ status: 'Completed', stats: { objectsProcessed: 5, errors: 0 } });
    const mesh = await meshByAnchor();
    expect(mesh.size).toBe(4);
    expect(mesh.get('E1')!.links).toEqual({ [hr]: 'h1', [it]: 'i1' });
    expect(mesh.get('E1')!.attributes.mail).toMatchObject({ value: 'ada@it.test', sourceConnectorId: it, confidence: 80 });
    expect(valueOf(mesh.get('E1'), 'phone')).toBe('100');
    expect(valueOf(mesh.get('E3'), 'mail')).toBe('grace@hr.test');
  });

  test('a late-arriving manager resolves the pending relationship', async () => {
    writeCsv(hrDir, 'hr2.csv', HR, [{ id: 'h9', employeeId: 'E9', givenName: 'Barbara', sn: 'Liskov', mail: null, department: 'R&D', managerId: null }]);
    const run = await runImport(rt, hr, { runType: 'DeltaImport' });
    expect(run).toMatchObject({ status: 'Completed', runType: 'DeltaImport', stats: { objectsCreated: 1 } });
    const mesh = await meshByAnchor();
    expect(mesh.get('E4')!.relationships).toEqual([{ type: 'manager', targetId: mesh.get('E9')!.id, targetAnchor: 'E9', targetType: 'User' }]);
    expect(mesh.get('E4')!.pendingReferences).toEqual([]);
  });

  test('deleting the winning contributor recalls its value: the next contributor takes over', async () => {
    writeCsv(itDir, 'it.csv', IT, [
      { id: 'i2', employeeId: 'E2', mail: 'alan@it.test', phone: '200' },
      { id: 'i7', employeeId: 'X7', mail: 'x7@it.test', phone: '700' },
      { id: 'i8', employeeId: 'X8', mail: 'x8@it.test', phone: '800' },
      { id: 'i9', employeeId: 'X9', mail: 'x9@it.test', phone: '900' },
    ]);
    const run = await runImport(rt, it, { runType: 'DeltaImport' });
    expect(run).toMatchObject({ status: 'Completed', stats: { objectsDeleted: 1 } });
    const mesh = await meshByAnchor();
    expect(mesh.get('E1')!.links).toEqual({ [hr]: 'h1' });
    expect(mesh.get('E1')!.attributes.mail).toMatchObject({ value: 'ada@hr.test', sourceConnectorId: hr, confidence: 40 });
    expect(mesh.get('E1')!.attributes.phone).toBeUndefined();
  });

  test('an object deleted from its last source leaves the mesh, and relationships to it become pending', async () => {
    const before = await meshByAnchor();
    writeCsv(hrDir, 'hr2.csv', HR, []);
    const run = await runImport(rt, hr, { runType: 'FullImport' });
    expect(run).toMatchObject({ status: 'Completed', stats: { objectsDeleted: 1 } });
    const gone = before.get('E9')!.id;
    const mesh = await meshByAnchor();
    expect(mesh.has('E9')).toBe(false);
    // The change feed carries the tombstone, after the states it replaced, with gapless sequence numbers.
    const feed = await readFeed(0, { limit: 10_000 });
    expect(feed.map((r) => r.seq)).toEqual(feed.map((_, i) => i + 1));
    const entries = feed.flatMap((r) => r.entries.filter((e) => e.id === gone));
    expect(entries[entries.length - 1]).toEqual({ id: gone, objectType: 'User', deleted: true });
    expect('state' in entries[0] && entries[0].state.anchorValue).toBe('E9');
    expect(mesh.get('E4')!.relationships).toEqual([]);
    expect(mesh.get('E4')!.pendingReferences).toEqual([{ type: 'manager', value: 'E9' }]);
  });

  const outDir = folder();
  let out = '';

  test('export provisions mesh objects into a third connector; the confirming import joins them', async () => {
    writeCsv(outDir, 'export.csv', ['id', 'uid', 'email', 'name'], []);
    out = await fileConnector(rt, 'Directory', outDir, { anchorColumn: 'uid' });
    await rule(rt, { ruleType: 'FlowRule', connectorId: out, direction: 'outbound', sourceAttribute: 'employeeId', targetAttribute: 'uid', confidence: 50 });
    await rule(rt, { ruleType: 'FlowRule', connectorId: out, direction: 'outbound', sourceAttribute: 'mail', targetAttribute: 'email', confidence: 50 });
    await rule(rt, { ruleType: 'FlowRule', connectorId: out, direction: 'outbound', sourceAttribute: 'displayName', targetAttribute: 'name', confidence: 50 });
    const dry = await runExport(rt, out, { dryRun: true });
    expect(dry).toMatchObject({ status: 'Completed', dryRun: true, stats: { objectsCreated: 4 } });
    expect(readFileSync(path.join(outDir, 'export.csv'), 'utf8').trim().split('\n')).toHaveLength(1);
    const run = await runExport(rt, out);
    expect(run).toMatchObject({ status: 'Completed', runType: 'Export', stats: { objectsCreated: 4, errors: 0 } });
    const lines = readFileSync(path.join(outDir, 'export.csv'), 'utf8').trim().split('\n');
    expect(lines).toHaveLength(5);
    expect(lines.join('\n')).toContain('ada@hr.test');
    const mesh = await meshByAnchor();
    expect(mesh.get('E1')!.links[out]).toBe('E1');
    const confirm = await runImport(rt, out, { runType: 'FullImport' });
    expect(confirm).toMatchObject({ status: 'Completed', stats: { objectsProcessed: 4, errors: 0 } });
    const again = await runExport(rt, out);
    expect(again).toMatchObject({ status: 'Completed', stats: { objectsCreated: 0, objectsUpdated: 0 } });
  });

  test('an exported update the target does not keep is flagged by the confirming import, and exported again', async () => {
    const exportFile = path.join(outDir, 'export.csv');
    const before = readFileSync(exportFile, 'utf8');
    // A new mail in IT (it wins for mail) flows out as an update...
    const itRows = readFileSync(path.join(itDir, 'it.csv'), 'utf8').replace('alan@it.test', 'alan.turing@it.test');
    writeFileSyncText(path.join(itDir, 'it.csv'), itRows);
    expect(await runImport(rt, it, { runType: 'FullImport' })).toMatchObject({ status: 'Completed', stats: { objectsUpdated: 1 } });
    expect(await runExport(rt, out)).toMatchObject({ status: 'Completed', stats: { objectsUpdated: 1, errors: 0 } });
    expect(readFileSync(exportFile, 'utf8')).toContain('alan.turing@it.test');
    // ...that the target silently undoes: the row is what the last import saw (an unchanged object).
    writeFileSyncText(exportFile, before);
    const confirm = await runImport(rt, out, { runType: 'FullImport' });
    expect(confirm).toMatchObject({ status: 'CompletedWithErrors', stats: { errors: 1 } });
    expect(confirm.errors).toEqual([{ object: 'E2', message: 'Exported values did not come back in the confirming import: email.' }]);
    // The difference is seen again by the next export, which confirms this time.
    expect(await runExport(rt, out)).toMatchObject({ status: 'Completed', stats: { objectsUpdated: 1, errors: 0 } });
    expect(await runImport(rt, out, { runType: 'FullImport' })).toMatchObject({ status: 'Completed', stats: { errors: 0 } });
  });
});

describe('runs: threshold, dry run, per-object errors, API answers', () => {
  const dir = folder();
  let c = '';
  const H = ['id', 'employeeId', 'givenName', 'dept'];
  const rows = (n: number, from = 0) =>
    Array.from({ length: n }, (_, i) => ({ id: `p${from + i}`, employeeId: `P${from + i}`, givenName: `Name${from + i}`, dept: 'Ops' }));

  beforeAll(async () => {
    writeCsv(dir, 'people.csv', H, rows(10));
    c = await fileConnector(rt, 'People', dir);
    await rule(rt, { ruleType: 'ProjectionRule', connectorId: c, sourceAttribute: 'employeeId' });
    await rule(rt, { ruleType: 'FlowRule', connectorId: c, sourceAttribute: 'givenName', targetAttribute: 'givenName', confidence: 50 });
    await rule(rt, { ruleType: 'FlowRule', connectorId: c, sourceAttribute: 'dept', targetAttribute: 'department', confidence: 50 });
    await rule(rt, { ruleType: 'FlowRule', connectorId: c, sourceAttribute: 'employeeId', targetAttribute: 'personId', confidence: 50 });
  });

  test('a dry run reports what would change and writes nothing', async () => {
    const run = await runImport(rt, c, { runType: 'FullImport', dryRun: true });
    expect(run).toMatchObject({ status: 'Completed', dryRun: true, stats: { objectsProcessed: 10, objectsCreated: 10 } });
    const mesh = await meshByAnchor();
    expect([...mesh.keys()].filter((k) => k.startsWith('P'))).toEqual([]);
    const conn = await rt.call('GET', `connectors/${c}`);
    expect(conn.body.lastSync).toBeNull();
  });

  test('the import itself, then a full import that would delete 30 % waits for approval before deleting anything', async () => {
    expect(await runImport(rt, c)).toMatchObject({ status: 'Completed', stats: { objectsCreated: 10 } });
    writeCsv(dir, 'people.csv', H, rows(7));
    const run = await runImport(rt, c);
    expect(run).toMatchObject({ status: 'AwaitingApproval', approval: { reasons: [{ operation: 'deletes', count: 3, limit: 2 }] } });
    expect(run.stats.objectsDeleted).toBe(0);
    const mesh = await meshByAnchor();
    expect(['P7', 'P8', 'P9'].every((a) => mesh.has(a))).toBe(true);
    // The connector stays locked while the run waits; a reject ends it and releases it.
    expect((await rt.call('POST', `connectors/${c}/import`, { body: { runType: 'FullImport' } })).status).toBe(409);
    const rejected = await rt.call('POST', `runs/${run.runId}/reject`);
    expect(rejected.status).toBe(200);
    expect(rejected.body).toMatchObject({ status: 'Rejected', stats: { objectsDeleted: 0 } });
    expect(rejected.body.error).toMatch(/nothing was applied \(3 deletes \(limit 2\)\)/);
  });

  test('join ambiguity is a per-object error naming the candidates; the run completes with errors', async () => {
    writeCsv(dir, 'people.csv', H, rows(10));
    const amb = folder();
    writeCsv(amb, 'x.csv', ['id', 'dept'], [{ id: 'x1', dept: 'Ops' }]);
    const x = await fileConnector(rt, 'Ambiguous', amb);
    await rule(rt, { ruleType: 'JoinRule', connectorId: x, sourceAttribute: 'dept', targetAttribute: 'department' });
    const run = await runImport(rt, x);
    expect(run.status).toBe('CompletedWithErrors');
    expect(run.stats.errors).toBe(1);
    expect(run.errors[0].object).toBe('x1');
    expect(run.errors[0].message).toMatch(/matched 10 mesh objects/);
  });

  test('a row that cannot be read and a script that fails are per-object errors', async () => {
    const bad = folder();
    writeFileSyncText(path.join(bad, 'b.csv'), 'id,n\nb1,5\nb2,oops,extra\nb3,abc\n');
    const b = await fileConnector(rt, 'Bad', bad);
    await rule(rt, { ruleType: 'ProjectionRule', connectorId: b, sourceAttribute: 'id' });
    await rule(rt, { ruleType: 'FlowRule', connectorId: b, sourceAttribute: 'n', targetAttribute: 'n', confidence: 10, transformScript: 'source.toFixed(1)' });
    const run = await runImport(rt, b);
    expect(run.status).toBe('CompletedWithErrors');
    expect(run.stats.errors).toBe(3);
    expect(run.errors.map((e: { object?: string }) => e.object).sort()).toEqual(expect.arrayContaining(['b1', 'b3']));
  });

  test('404 for an unknown connector, 400 for a bad body, 409 while a run is active, 403 for a Viewer', async () => {
    expect((await rt.call('POST', `connectors/${'0'.repeat(8)}-0000-4000-8000-${'0'.repeat(12)}/import`, { body: {} })).status).toBe(404);
    expect((await rt.call('POST', `connectors/${c}/import`, { body: { runType: 'Export' } })).status).toBe(400);
    expect((await rt.call('POST', `connectors/${c}/import`, { body: { extra: 1 } })).status).toBe(400);
    expect((await rt.call('POST', `connectors/${c}/export`, { body: {}, role: 'Viewer' })).status).toBe(403);
    const first = await rt.call('POST', `connectors/${c}/import`, { role: 'Operator' });
    expect(first.status).toBe(202);
    expect(first.headers.get('location')).toBe(`/api/runs/${first.body.runId}`);
    expect(first.body).toMatchObject({ status: 'Running', runType: 'DeltaImport', connectorId: c });
    const second = await rt.call('POST', `connectors/${c}/import`, { body: {} });
    expect(second.status).toBe(409);
    await waitRun(rt, first.body.runId);
  });

  test('a paused instance queues the run; resume starts it', async () => {
    const inst = (await rt.call('GET', 'instances')).body.items.find((i: { status: string }) => i.status === 'active');
    expect((await rt.call('POST', `instances/${inst.id}/pause`)).status).toBe(200);
    try {
      const mark = rt.logMark();
      const res = await rt.call('POST', `connectors/${c}/import`, { body: { runType: 'FullImport' } });
      const answered = Date.now();
      expect(res.status).toBe(202);
      expect(res.body.status).toBe('Queued');
      // The run's dispatch row is written before the trigger answers: a dispatcher run that began after that
      // saw it waiting on the paused instance, and left it.
      await dispatcherRuns(mark, answered, 1);
      expect((await rt.call('GET', `runs/${res.body.runId}`)).body.status).toBe('Queued');
      // One run at a time per connector: a Queued one counts.
      const again = await rt.call('POST', `connectors/${c}/export`, { body: {} });
      expect(again.status).toBe(409);
      expect(again.headers.get('content-type')).toBe('application/problem+json');
      expect((await rt.call('POST', `instances/${inst.id}/resume`)).status).toBe(200);
      expect(await waitRun(rt, res.body.runId)).toMatchObject({ status: 'Completed' });
    } finally {
      await rt.call('POST', `instances/${inst.id}/resume`);
    }
  });

  test('deleting a connector withdraws its contributions from the mesh', async () => {
    // It holds objects: a 409 unless forced; forced, its mesh deletes are over its threshold and wait for a
    // second Admin, whose approval makes the delete.
    expect((await rt.call('DELETE', `connectors/${c}`)).status).toBe(409);
    const held = await rt.call('DELETE', `connectors/${c}?force=true`);
    expect(held.status).toBe(202);
    const second = SECOND_ADMIN;
    const del = await rt.call('POST', `config/changes/${held.body.changeId}/approve`, { as: second });
    expect(del.status).toBe(200);
    expect((await rt.call('GET', `connectors/${c}`)).status).toBe(404);
    const mesh = await meshByAnchor();
    expect([...mesh.keys()].filter((k) => /^P\d/.test(k))).toEqual([]);
  });
});

describe('export: deprovisioning stops at the deletion threshold', () => {
  const src = folder();
  const dst = folder();
  let hr = '';
  let target = '';
  const H = ['id', 'contractorId', 'name'];
  const people = (n: number) => Array.from({ length: n }, (_, i) => ({ id: `c${i}`, contractorId: `C${i}`, name: `Contractor ${i}` }));
  const dataRows = () => readFileSync(path.join(dst, 'export.csv'), 'utf8').trim().split('\n').length - 1;
  const targetConfig = (deletionThreshold?: unknown) => ({
    implementation: 'file',
    objectType: 'Contractor',
    settings: { path: dst, anchorColumn: 'uid' },
    ...(deletionThreshold ? { deletionThreshold } : {}),
  });

  beforeAll(async () => {
    writeCsv(src, 'contractors.csv', H, people(10));
    const created = await rt.call('POST', 'connectors', {
      body: {
        name: 'Contractors',
        type: 'custom',
        config: {
          implementation: 'file',
          objectType: 'Contractor',
          settings: { path: src, anchorColumn: 'id' },
          deletionThreshold: { objects: 100, percent: 100 },
        },
      },
    });
    hr = created.body.id;
    await rule(rt, { ruleType: 'ProjectionRule', connectorId: hr, sourceAttribute: 'contractorId', objectType: 'Contractor' });
    await rule(rt, { ruleType: 'FlowRule', connectorId: hr, sourceAttribute: 'name', targetAttribute: 'name', confidence: 50 });
    await rule(rt, { ruleType: 'FlowRule', connectorId: hr, sourceAttribute: 'contractorId', targetAttribute: 'contractorId', confidence: 50 });
    writeCsv(dst, 'export.csv', ['uid', 'name'], []);
    const t = await rt.call('POST', 'connectors', { body: { name: 'Contractor directory', type: 'custom', config: targetConfig() } });
    target = t.body.id;
    await rule(rt, {
      ruleType: 'FlowRule',
      connectorId: target,
      direction: 'outbound',
      sourceAttribute: 'contractorId',
      targetAttribute: 'uid',
      confidence: 50,
    });
    await rule(rt, { ruleType: 'FlowRule', connectorId: target, direction: 'outbound', sourceAttribute: 'name', targetAttribute: 'name', confidence: 50 });
  });

  test('4 of 10 provisioned objects gone: the export stops before deleting any; a higher threshold lets it through', async () => {
    expect(await runImport(rt, hr)).toMatchObject({ status: 'Completed', stats: { objectsCreated: 10 } });
    expect(await runExport(rt, target)).toMatchObject({ status: 'Completed', stats: { objectsCreated: 10 } });
    expect(await runImport(rt, target)).toMatchObject({ status: 'Completed', stats: { errors: 0 } });
    expect(dataRows()).toBe(10);
    // Four contractors leave the source: their mesh objects go (the provisioned copies do not keep them).
    writeCsv(src, 'contractors.csv', H, people(6));
    expect(await runImport(rt, hr)).toMatchObject({ status: 'Completed', stats: { objectsDeleted: 4 } });
    const stopped = await runExport(rt, target);
    expect(stopped).toMatchObject({ status: 'AwaitingApproval', approval: { reasons: [{ operation: 'deletes', count: 4, limit: 2 }] } });
    expect(stopped.stats.objectsDeleted).toBe(0);
    expect(dataRows()).toBe(10);
    // The planned deletes are listed, nothing applied; rejecting it releases the connector.
    const planned = await rt.call('GET', `runs/${stopped.runId}/changes?operation=Delete`);
    expect(planned.body).toMatchObject({ totalCount: 4 });
    expect(planned.body.items.every((i: { target: string; outcome: string }) => i.target === 'connector' && i.outcome === 'planned')).toBe(true);
    expect((await rt.call('POST', `runs/${stopped.runId}/reject`)).body).toMatchObject({ status: 'Rejected' });
    // The connector's own threshold, raised: a looser guard rail, applied once a second Admin approves it.
    const put = await rt.call('PUT', `connectors/${target}`, { body: { name: 'Contractor directory', config: targetConfig({ objects: 500, percent: 50 }) } });
    expect(put.status).toBe(202);
    const second = SECOND_ADMIN;
    expect((await rt.call('POST', `config/changes/${put.body.changeId}/approve`, { as: second })).status).toBe(200);
    const through = await runExport(rt, target);
    expect(through).toMatchObject({ status: 'Completed', stats: { objectsDeleted: 4 } });
    expect(dataRows()).toBe(6);
    // The connector's configuration changed, so this export was a full one in reference order (10 objects): its one
    // page step ran the deletes at its end, with no step of their own.
    expect(await activitiesOf(through.runId)).toEqual(['syncBeginRun', 'syncExportPlan', 'syncExportIds', 'syncFinishRun']);
  });

  test('a full export whose last page step finds too many deletes waits for approval; approved, it deletes them', async () => {
    // 4 of the 6 leave (the limit is 50 % of 6: 3). A tighter threshold (no second Admin needed) changes the
    // connector's configuration: the next export is a full one, in reference order.
    writeCsv(src, 'contractors.csv', H, people(2));
    expect(await runImport(rt, hr)).toMatchObject({ status: 'Completed', stats: { objectsDeleted: 4 } });
    const put = await rt.call('PUT', `connectors/${target}`, { body: { name: 'Contractor directory', config: targetConfig({ objects: 400, percent: 50 }) } });
    expect(put.status).toBe(200);
    const stopped = await runExport(rt, target);
    expect(stopped).toMatchObject({ status: 'AwaitingApproval', approval: { reasons: [{ operation: 'deletes', count: 4, limit: 3 }] } });
    expect(dataRows()).toBe(6);
    // Parked by its page step, which ran the deletes pass at its end: no deletes step of its own.
    const approved = await rt.call('POST', `runs/${stopped.runId}/approve`, { as: SECOND_ADMIN });
    expect(approved.status).toBe(202);
    expect(await waitRun(rt, stopped.runId)).toMatchObject({ status: 'Completed', stats: { objectsDeleted: 4, errors: 0 } });
    expect(dataRows()).toBe(2);
    const steps = await activitiesOf(stopped.runId);
    expect(steps.slice(0, 4)).toEqual(['syncBeginRun', 'syncExportPlan', 'syncExportIds', 'syncParkRun']);
    expect(steps).not.toContain('syncExportDeletes');
    expect(steps[steps.length - 1]).toBe('syncFinishRun');
  });
});

/** The activities a run's orchestration completed, in order, once it has ended (202 until then). */
async function activitiesOf(runId: string): Promise<string[]> {
  const deadline = Date.now() + 30_000;
  for (;;) {
    const res = await rt.call('GET', `../runtime/webhooks/durabletask/instances/${runId}?showHistory=true`);
    if (res.status !== 202 || Date.now() > deadline) {
      expect(res.status).toBe(200);
      const events = res.body.historyEvents as { EventType: string; FunctionName?: string }[];
      return events.filter((e) => e.EventType === 'TaskCompleted').map((e) => String(e.FunctionName));
    }
    await new Promise((r) => setTimeout(r, 100));
  }
}

describe('delta import over the deletes threshold', () => {
  const dir = folder();
  const H = ['id', 'employeeId', 'givenName'];
  const rows = (n: number) => Array.from({ length: n }, (_, i) => ({ id: `d${i}`, employeeId: `D${i}`, givenName: `Delta${i}` }));
  let c = '';

  beforeAll(async () => {
    writeCsv(dir, 'people.csv', H, rows(10));
    c = await fileConnector(rt, 'Delta people', dir);
    await rule(rt, { ruleType: 'ProjectionRule', connectorId: c, sourceAttribute: 'employeeId' });
    await rule(rt, { ruleType: 'FlowRule', connectorId: c, sourceAttribute: 'givenName', targetAttribute: 'givenName', confidence: 50 });
    expect(await runImport(rt, c)).toMatchObject({ status: 'Completed', stats: { objectsCreated: 10 } });
  });

  test('the whole delta is planned, nothing applied; approved by another Admin, the second pass applies the plan and commits the watermark', async () => {
    // 4 of 10 gone (over 20 %), one renamed: nothing of it is applied while the run waits.
    writeCsv(
      dir,
      'people.csv',
      H,
      rows(6).map((r) => (r.id === 'd0' ? { ...r, givenName: 'Changed' } : r)),
    );
    const run = await runImport(rt, c, { runType: 'DeltaImport' });
    expect(run).toMatchObject({ status: 'AwaitingApproval', runType: 'DeltaImport', approval: { reasons: [{ operation: 'deletes', count: 4, limit: 2 }] } });
    const planned = await rt.call('GET', `runs/${run.runId}/changes?outcome=planned`);
    type Item = { target: string; anchor: string; operation: string; meshObjectId: string };
    const meshItems = planned.body.items.filter((i: Item) => i.target === 'mesh');
    expect(meshItems.map((i: Item) => `${i.operation} ${i.anchor}`).sort()).toEqual(['Delete d6', 'Delete d7', 'Delete d8', 'Delete d9', 'Update d0']);
    // The plan's target side: an export target of this service (outbound flows, suites above) has not got D0 yet,
    // so its next export would add it; the deleted ones were never exported.
    const targetItems = planned.body.items.filter((i: Item) => i.target === 'connector');
    expect(targetItems.map((i: Item) => [i.operation, i.meshObjectId])).toEqual([['Add', meshItems.find((i: Item) => i.anchor === 'd0').meshObjectId]]);
    let mesh = await meshByAnchor();
    expect(['D6', 'D7', 'D8', 'D9'].every((a) => mesh.has(a))).toBe(true);
    expect(valueOf(mesh.get('D0'), 'givenName')).toBe('Delta0');
    const approved = await rt.call('POST', `runs/${run.runId}/approve`, {
      as: { oid: 'c0000000-0000-4000-8000-00000000000c', upn: 'other.admin@example.test', preferred_username: 'other.admin@example.test' },
    });
    expect(approved.status).toBe(202);
    expect(await waitRun(rt, run.runId)).toMatchObject({ status: 'Completed', stats: { objectsDeleted: 4, objectsUpdated: 1 } });
    mesh = await meshByAnchor();
    expect(['D6', 'D7', 'D8', 'D9'].some((a) => mesh.has(a))).toBe(false);
    expect(valueOf(mesh.get('D0'), 'givenName')).toBe('Changed');
    // Everything planned was applied, so the watermark moved: the next delta has nothing to do.
    expect(await runImport(rt, c, { runType: 'DeltaImport' })).toMatchObject({
      status: 'Completed',
      stats: { objectsCreated: 0, objectsUpdated: 0, objectsDeleted: 0 },
    });
  });
});
