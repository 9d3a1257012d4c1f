import type { Client } from 'ldapts';
import { iterateMesh } from '../../../lib/mesh/store';
import type { MeshObject } from '../../../lib/mesh/model';
import { startPostgres, type Postgres } from '../../support/postgres';
import { serverAvailable } from '../../support/servers';
import { startService, USERS, type ServiceUnderTest } from '../../support/service';
import { startSlapd, type Slapd } from '../../support/slapd';
import { ldapConnector, stopSlapdSuite } from '../ldap/e2eSupport';
import { SlapdFixture } from '../ldap/ldapFixture';
import { hrSqlSource, rule, waitRun, outboundRule } from './syncSupport';

/**
 * Thresholds, approval and plans end to end (the running service over HTTP, a real PostgreSQL HR table as the
 * source, a real slapd as the target): a truncated HR export (80 % of the rows missing) parks the import
 * AwaitingApproval with nothing deleted in the mesh or in LDAP; the Admin who started it cannot approve it
 * (four-eyes, on any alias: the token's oid or its UPN); a second Admin approves and exactly the planned deletes happen, then the
 * export to LDAP parks and is approved the same way; a reject; a dry run applied after one of its rows was
 * edited (that object drifted, the others applied); the changes list's filters and paging; the 409s.
 */
jest.setTimeout(300_000);

// eslint-disable-next-line @typescript-eslint/no-explicit-any
type Json = any;

const N = 20;
const ids = Array.from({ length: N }, (_, i) => `E${String(i + 1).padStart(3, '0')}`);
/** A second Admin: another person (another oid) with the same display name as the test Admin. */
const SECOND_ADMIN = { oid: 'b0000000-0000-4000-8000-00000000000b', upn: 'second.admin@example.test', preferred_username: 'second.admin@example.test' };

(serverAvailable('postgres') && serverAvailable('slapd') ? describe : describe.skip)('plans, thresholds and approval (PostgreSQL source, slapd target)', () => {
  let pg: Postgres;
  let slapd: Slapd;
  let rt: ServiceUnderTest;
  let f: SlapdFixture;
  let admin: Client;
  let db = '';
  let hr = '';
  let dir = '';

  const sql = (text: string, values: unknown[] = []) => pg.query(text, values, db);
  const insert = (id: string, title = 'Engineer') =>
    sql('INSERT INTO hr (employee_id, given_name, sn, title) VALUES ($1, $2, $3, $4)', [id, `Given${id}`, `Sn${id}`, title]);
  const hrMesh = async (): Promise<Map<string, MeshObject>> => {
    const out = new Map<string, MeshObject>();
    for await (const page of iterateMesh()) for (const o of page) if (o.links[hr] !== undefined) out.set(o.anchorValue, o);
    return out;
  };
  const entries = async (): Promise<string[]> =>
    (await admin.search(`ou=Engineering,${f.base}`, { scope: 'one', filter: '(objectClass=inetOrgPerson)', attributes: ['uid'] })).searchEntries
      .map((e) => String(e.uid))
      .sort();
  const trigger = async (path: string, body: Record<string, unknown> = {}, role: 'Admin' | 'Operator' = 'Admin') => {
    const res = await rt.call('POST', path, { body, role });
    expect(res.status).toBe(202);
    return waitRun(rt, res.body.runId);
  };
  const changes = async (runId: string, query = ''): Promise<Json> => {
    const res = await rt.call('GET', `runs/${runId}/changes${query}`, { role: 'Viewer' });
    expect(res.status).toBe(200);
    return res.body;
  };
  const approve = (runId: string, as?: typeof SECOND_ADMIN) => rt.call('POST', `runs/${runId}/approve`, as ? { as } : {});

  beforeAll(async () => {
    [pg, slapd] = await Promise.all([startPostgres(), startSlapd()]);
    rt = await startService();
    f = await new SlapdFixture(slapd).init();
    admin = await f.client();
    db = await pg.createDatabase(`plans${process.pid}`);
    await sql('CREATE TABLE hr (employee_id varchar(20) PRIMARY KEY, given_name text, sn text, title text)');
    for (const id of ids) await insert(id);
    hr = await hrSqlSource(rt, pg, db, 'hr', [
      ['employee_id', 'employeeId'],
      ['given_name', 'givenName'],
      ['sn', 'sn'],
      ['title', 'title'],
    ]);
    dir = await ldapConnector(rt, 'Directory', f.config({ exportDnTemplate: '"uid=" + dnEscape(source.uid) + ",ou=Engineering," + baseDN' }));
    const out = outboundRule(rt, dir, { confidence: 50 });
    await out('employeeId', 'uid');
    await out('employeeId', 'employeeNumber');
    await out('givenName', 'givenName');
    await out('sn', 'sn');
    await out('givenName', 'cn', 'object.givenName + " " + object.sn');
    await out('title', 'title');
    await rule(rt, { ruleType: 'JoinRule', connectorId: dir, sourceAttribute: 'employeeNumber', targetAttribute: 'employeeId' });

    expect(await trigger(`connectors/${hr}/import`, { runType: 'FullImport' })).toMatchObject({ status: 'Completed', stats: { objectsCreated: N, errors: 0 } });
    expect(await trigger(`connectors/${dir}/export`)).toMatchObject({ status: 'Completed', stats: { objectsCreated: N, errors: 0 } });
    expect(await trigger(`connectors/${dir}/import`, { runType: 'FullImport' })).toMatchObject({ status: 'Completed', stats: { errors: 0 } });
    expect(await entries()).toEqual(ids);
  });
  afterAll(async () => {
    await stopSlapdSuite({ admin, rt, f, slapd });
    await pg?.stop();
  });

  let truncatedRun: Json;

  test('every run lists its changes: the first import added 20 mesh objects, the export 20 entries', async () => {
    const runs = (await rt.call('GET', `runs?connectorId=${hr}`)).body.items;
    const first = runs[runs.length - 1];
    const list = await changes(first.runId);
    expect(list.totalCount).toBe(N);
    expect(list.items[0]).toMatchObject({
      target: 'mesh',
      operation: 'Add',
      outcome: 'applied',
      error: null,
      dn: null,
      csObjectId: expect.any(String),
      meshObjectId: expect.any(String),
    });
    expect(list.items.map((i: Json) => i.anchor).sort()).toEqual(ids);
    expect(list.items.find((i: Json) => i.anchor === 'E001').attributes).toEqual({
      employeeId: { old: null, new: 'E001' },
      givenName: { old: null, new: 'GivenE001' },
      sn: { old: null, new: 'SnE001' },
      title: { old: null, new: 'Engineer' },
    });
    const exports = (await rt.call('GET', `runs?connectorId=${dir}`)).body.items.find((r: Json) => r.runType === 'Export');
    const exported = await changes(exports.runId);
    expect(exported.totalCount).toBe(N);
    expect(exported.items.every((i: Json) => i.target === 'connector' && i.operation === 'Add' && i.outcome === 'applied')).toBe(true);
    expect(exported.items.find((i: Json) => i.dn === `uid=E001,ou=Engineering,${f.base}`).attributes).toMatchObject({
      uid: { old: null, new: 'E001' },
      title: { old: null, new: 'Engineer' },
    });
  });

  test('a truncated HR export (80 % of the rows missing) parks the import: AwaitingApproval, nothing deleted in the mesh or in LDAP', async () => {
    await sql('DELETE FROM hr WHERE employee_id > $1', ['E004']);
    truncatedRun = await trigger(`connectors/${hr}/import`, { runType: 'FullImport' });
    expect(truncatedRun).toMatchObject({
      status: 'AwaitingApproval',
      stats: { objectsDeleted: 0 },
      approval: { reasons: [{ operation: 'deletes', count: 16, limit: 4 }], requestedBy: USERS.Admin.upn, expiresOn: expect.any(String) },
    });
    expect(Date.parse(truncatedRun.approval.expiresOn) - Date.now()).toBeGreaterThan(23 * 3_600_000);
    expect((await hrMesh()).size).toBe(N);
    expect(await entries()).toEqual(ids);
    // The plan: the 16 mesh deletes, planned, with the values they would remove; and the 16 LDAP entries the
    // export that follows would delete (the target's side of the plan).
    const planned = await changes(truncatedRun.runId, '?operation=Delete');
    expect(planned.totalCount).toBe(32);
    expect(planned.items.every((i: Json) => i.outcome === 'planned')).toBe(true);
    const meshDeletes = planned.items.filter((i: Json) => i.target === 'mesh');
    expect(meshDeletes.every((i: Json) => i.connectorId === hr)).toBe(true);
    expect(meshDeletes.map((i: Json) => i.anchor).sort()).toEqual(ids.slice(4));
    expect(meshDeletes.find((i: Json) => i.anchor === 'E005').attributes.title).toEqual({ old: 'Engineer', new: null });
    const ldapDeletes = planned.items.filter((i: Json) => i.target === 'connector');
    expect(ldapDeletes.every((i: Json) => i.connectorId === dir)).toBe(true);
    expect(ldapDeletes.map((i: Json) => i.dn).sort()).toEqual(ids.slice(4).map((id) => `uid=${id},ou=Engineering,${f.base}`));
    expect(ldapDeletes.find((i: Json) => i.dn.startsWith('uid=E005,')).attributes.title).toEqual({ old: 'Engineer', new: null });
    // The connector stays locked while it waits.
    expect((await rt.call('POST', `connectors/${hr}/import`, { body: { runType: 'FullImport' } })).status).toBe(409);
    expect((await rt.call('GET', `runs?connectorId=${hr}&status=AwaitingApproval`)).body.totalCount).toBe(1);
    // The mass-change alarm's series.
    const metrics = await rt.call('GET', 'metrics', { role: 'Viewer' });
    expect(metrics.text).toMatch(/^meshsync_runs_awaiting_approval_total\{connector="HR",run_type="FullImport",operation="deletes"\} 1$/m);
  });

  test('the Admin who started it cannot approve it (four-eyes: the same oid under another name, or the same UPN under another oid); an Operator cannot either', async () => {
    const self = await approve(truncatedRun.runId);
    expect(self.status).toBe(403);
    expect(self.headers.get('content-type')).toMatch(/application\/problem\+json/);
    expect(self.body.detail).toMatch(/four-eyes rule \(Approvals__RequireSecondPerson\)/);
    // The same person under another name is still the same person; and another oid with the same UPN too.
    const renamed = await approve(truncatedRun.runId, { oid: USERS.Admin.oid, upn: 'renamed@example.test', preferred_username: 'someone.else@example.test' });
    expect(renamed.status).toBe(403);
    const sameUpn = await approve(truncatedRun.runId, {
      oid: 'd0000000-0000-4000-8000-00000000000d',
      upn: USERS.Admin.upn,
      preferred_username: 'someone.else@example.test',
    });
    expect(sameUpn.status).toBe(403);
    expect((await rt.call('POST', `runs/${truncatedRun.runId}/approve`, { role: 'Operator' })).status).toBe(403);
    expect((await rt.call('POST', `runs/${truncatedRun.runId}/reject`, { role: 'Operator' })).status).toBe(403);
    expect((await rt.call('GET', `runs/${truncatedRun.runId}`)).body.status).toBe('AwaitingApproval');
  });

  test('a second Admin approves: exactly the planned deletes happen; the export to LDAP waits and is approved the same way', async () => {
    const ok = await approve(truncatedRun.runId, SECOND_ADMIN);
    expect(ok.status).toBe(202);
    expect(ok.body).toMatchObject({ runId: truncatedRun.runId, status: 'Running', trigger: truncatedRun.trigger });
    const done = await waitRun(rt, truncatedRun.runId);
    expect(done).toMatchObject({ status: 'Completed', stats: { objectsDeleted: 16, errors: 0 }, approval: truncatedRun.approval });
    expect([...(await hrMesh()).keys()].sort()).toEqual(ids.slice(0, 4));
    const applied = await changes(truncatedRun.runId, '?operation=Delete&outcome=applied');
    expect(applied.totalCount).toBe(16);
    expect(applied.items.map((i: Json) => i.anchor).sort()).toEqual(ids.slice(4));
    expect((await changes(truncatedRun.runId, '?outcome=planned')).totalCount).toBe(0);
    const audit = await rt.call('GET', `audit?targetType=run&targetId=${truncatedRun.runId}`);
    // The approval, and before it the three approvals the four-eyes rule refused (newest first), each naming its principal.
    expect(audit.body.items).toEqual([
      expect.objectContaining({
        action: 'approve',
        outcome: 'success',
        actorSid: SECOND_ADMIN.oid,
        actorUpn: SECOND_ADMIN.upn,
        actorKey: `upn:${SECOND_ADMIN.upn}`,
        actorKind: 'person',
        scheme: 'Bearer',
        details: 'Reasons: 16 deletes (limit 4).',
      }),
      ...[USERS.Admin.upn, 'renamed@example.test', USERS.Admin.upn].map((upn) =>
        expect.objectContaining({ action: 'approve', outcome: 'failure', actorUpn: upn, details: expect.stringMatching(/^Refused: The four-eyes rule/) }),
      ),
    ]);
    expect((await rt.call('GET', `runs/${truncatedRun.runId}`)).body.approvedBy).toBe(SECOND_ADMIN.upn);

    // The export would delete 16 of the 20 entries: it waits too, nothing deleted in LDAP.
    const exportRun = await trigger(`connectors/${dir}/export`);
    expect(exportRun).toMatchObject({ status: 'AwaitingApproval', approval: { reasons: [{ operation: 'deletes', count: 16, limit: 4 }] } });
    expect(await entries()).toEqual(ids);
    const plannedDeletes = await changes(exportRun.runId, '?operation=Delete');
    expect(plannedDeletes.totalCount).toBe(16);
    expect(plannedDeletes.items.map((i: Json) => i.dn).sort()).toEqual(ids.slice(4).map((id) => `uid=${id},ou=Engineering,${f.base}`));
    expect((await approve(exportRun.runId, SECOND_ADMIN)).status).toBe(202);
    expect(await waitRun(rt, exportRun.runId)).toMatchObject({ status: 'Completed', stats: { objectsDeleted: 16, errors: 0 } });
    expect(await entries()).toEqual(ids.slice(0, 4));
    expect((await changes(exportRun.runId, '?outcome=applied')).totalCount).toBe(16);
  });

  test('approve or reject of a run that does not await: 409', async () => {
    expect((await approve(truncatedRun.runId, SECOND_ADMIN)).status).toBe(409);
    const rejected = await rt.call('POST', `runs/${truncatedRun.runId}/reject`);
    expect(rejected.status).toBe(409);
    expect(rejected.body.detail).toMatch(/only a run that is AwaitingApproval can be rejected/);
    expect((await rt.call('POST', 'runs/00000000-0000-4000-8000-000000000000/approve')).status).toBe(404);
  });

  test('a reject ends the run Rejected with nothing applied, audited with the reasons, and frees the connector', async () => {
    // The 16 come back (adds are not limited), then 10 go again.
    for (const id of ids.slice(4)) await insert(id);
    expect(await trigger(`connectors/${hr}/import`, { runType: 'FullImport' })).toMatchObject({ status: 'Completed', stats: { objectsCreated: 16 } });
    await sql('DELETE FROM hr WHERE employee_id > $1', ['E010']);
    const parked = await trigger(`connectors/${hr}/import`, { runType: 'FullImport' });
    expect(parked).toMatchObject({ status: 'AwaitingApproval', approval: { reasons: [{ operation: 'deletes', count: 10, limit: 4 }] } });
    const res = await rt.call('POST', `runs/${parked.runId}/reject`);
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ status: 'Rejected', stats: { objectsDeleted: 0 }, completedAt: expect.any(String) });
    expect(res.body.error).toBe(`Rejected by ${USERS.Admin.upn}: nothing was applied (10 deletes (limit 4)).`);
    expect((await hrMesh()).size).toBe(N);
    const audit = await rt.call('GET', `audit?targetType=run&targetId=${parked.runId}`);
    expect(audit.body.items).toEqual([expect.objectContaining({ action: 'reject', actorSid: USERS.Admin.oid, details: 'Reasons: 10 deletes (limit 4).' })]);
    // The plan of a rejected run stays listed as planned; the connector is free again. (LDAP gets no deletes:
    // the 10 came back to the mesh as new objects and were never exported.)
    expect((await changes(parked.runId, '?outcome=planned')).totalCount).toBe(10);
    for (const id of ids.slice(10)) await insert(id);
    expect(await trigger(`connectors/${hr}/import`, { runType: 'FullImport' })).toMatchObject({
      status: 'Completed',
      stats: { objectsCreated: 0, objectsDeleted: 0 },
    });
  });

  test('a dry run is a plan; applied after one of its rows was edited, that object is drifted and the others applied', async () => {
    for (const id of ['E001', 'E002', 'E003']) await sql('UPDATE hr SET title = $1 WHERE employee_id = $2', ['Lead', id]);
    const plan = await trigger(`connectors/${hr}/import`, { runType: 'FullImport', dryRun: true });
    expect(plan).toMatchObject({ status: 'Completed', dryRun: true, plan: { expiresOn: expect.any(String) }, stats: { objectsUpdated: 3 } });
    const planned = await changes(plan.runId);
    expect(planned.totalCount).toBe(6);
    expect(planned.items.filter((i: Json) => i.target === 'mesh').map((i: Json) => [i.anchor, i.operation, i.outcome, i.attributes])).toEqual(
      ['E001', 'E002', 'E003'].map((id) => [id, 'Update', 'planned', { title: { old: 'Engineer', new: 'Lead' } }]),
    );
    // What LDAP would then get: the flowed title, old and new, on each entry.
    expect(planned.items.filter((i: Json) => i.target === 'connector').map((i: Json) => [i.connectorId, i.dn, i.operation, i.attributes])).toEqual(
      ['E001', 'E002', 'E003'].map((id) => [dir, `uid=${id},ou=Engineering,${f.base}`, 'Update', { title: { old: 'Engineer', new: 'Lead' } }]),
    );
    expect(valueOf((await hrMesh()).get('E001'), 'title')).toBe('Engineer');
    // Between plan and apply: E002 is edited again in HR, and a new row arrives.
    await sql('UPDATE hr SET title = $1 WHERE employee_id = $2', ['Director', 'E002']);
    await insert('E099');
    const started = await rt.call('POST', `runs/${plan.runId}/apply`, { role: 'Operator' });
    expect(started.status).toBe(202);
    expect(started.headers.get('location')).toMatch(new RegExp(`/api/runs/${started.body.runId}$`));
    expect(started.body.trigger).toEqual({ type: 'apply', actorUpn: USERS.Operator.upn, planRunId: plan.runId });
    const applied = await waitRun(rt, started.body.runId);
    expect(applied).toMatchObject({ status: 'Completed', runType: 'FullImport', stats: { objectsUpdated: 2, objectsCreated: 0 } });
    const list = await changes(applied.runId);
    expect(list.items.map((i: Json) => [i.anchor, i.outcome]).sort()).toEqual([
      ['E001', 'applied'],
      ['E002', 'drifted'],
      ['E003', 'applied'],
    ]);
    expect(list.items.find((i: Json) => i.anchor === 'E002').error).toMatch(/changed since the plan/);
    const mesh = await hrMesh();
    expect([valueOf(mesh.get('E001'), 'title'), valueOf(mesh.get('E002'), 'title'), valueOf(mesh.get('E003'), 'title')]).toEqual(['Lead', 'Engineer', 'Lead']);
    // Outside the plan: the new row waits for the next run.
    expect(mesh.has('E099')).toBe(false);
    // A plan is applied once; a run that is not a dry run is not a plan.
    const again = await rt.call('POST', `runs/${plan.runId}/apply`, { role: 'Operator' });
    expect(again.status).toBe(409);
    expect(again.body.detail).toMatch(new RegExp(`already applied by run ${applied.runId}`));
    const notDry = await rt.call('POST', `runs/${applied.runId}/apply`, { role: 'Operator' });
    expect(notDry.status).toBe(409);
    expect(notDry.body.detail).toMatch(/not a dry run/);
    expect((await rt.call('POST', `runs/${plan.runId}/apply`, { role: 'Viewer' })).status).toBe(403);
    // The next run picks up what the apply left out.
    expect(await trigger(`connectors/${hr}/import`, { runType: 'FullImport' })).toMatchObject({
      status: 'Completed',
      stats: { objectsUpdated: 1, objectsCreated: 1 },
    });
    expect(valueOf((await hrMesh()).get('E002'), 'title')).toBe('Director');
  });

  test('limits beyond deletes: the run plans everything first, applies nothing over a limit, and applies its plan once approved', async () => {
    const current = await rt.call('GET', `connectors/${hr}`);
    const put = await rt.call('PUT', `connectors/${hr}`, {
      body: { name: 'HR', config: { ...current.body.config, thresholds: { updates: { count: 2 }, blanks: { count: 0 } } } },
    });
    expect(put.status).toBe(200);
    expect(put.body.config.thresholds).toEqual({ updates: { count: 2 }, blanks: { count: 0 } });
    for (const id of ['E004', 'E005', 'E006']) await sql('UPDATE hr SET title = $1 WHERE employee_id = $2', ['Architect', id]);
    const parked = await trigger(`connectors/${hr}/import`, { runType: 'FullImport' });
    expect(parked).toMatchObject({ status: 'AwaitingApproval', approval: { reasons: [{ operation: 'updates', count: 3, limit: 2 }] } });
    const mesh = await hrMesh();
    expect(['E004', 'E005', 'E006'].map((id) => valueOf(mesh.get(id), 'title'))).toEqual(['Engineer', 'Engineer', 'Engineer']);
    const planned = await changes(parked.runId, '?outcome=planned');
    expect(planned.items.filter((i: Json) => i.target === 'connector')).toHaveLength(3);
    expect(
      planned.items
        .filter((i: Json) => i.target === 'mesh')
        .map((i: Json) => [i.anchor, i.operation])
        .sort(),
    ).toEqual([
      ['E004', 'Update'],
      ['E005', 'Update'],
      ['E006', 'Update'],
    ]);
    expect((await approve(parked.runId, SECOND_ADMIN)).status).toBe(202);
    expect(await waitRun(rt, parked.runId)).toMatchObject({ status: 'Completed', stats: { objectsUpdated: 3 } });
    expect((await changes(parked.runId, '?outcome=applied')).totalCount).toBe(3);
    // Applied, the plan's preview of LDAP leaves the list: the export that follows lists what it sends.
    expect((await changes(parked.runId, '?outcome=planned')).totalCount).toBe(0);
    const after = await hrMesh();
    expect(['E004', 'E005', 'E006'].map((id) => valueOf(after.get(id), 'title'))).toEqual(['Architect', 'Architect', 'Architect']);

    // An update that empties a value is a blank: over `blanks: { count: 0 }`.
    await sql('UPDATE hr SET title = NULL WHERE employee_id = $1', ['E007']);
    const blank = await trigger(`connectors/${hr}/import`, { runType: 'FullImport' });
    expect(blank).toMatchObject({ status: 'AwaitingApproval', approval: { reasons: [{ operation: 'blanks', count: 1, limit: 0 }] } });
    expect((await changes(blank.runId)).items).toEqual([
      expect.objectContaining({ anchor: 'E007', operation: 'Update', outcome: 'planned', attributes: { title: { old: 'Engineer', new: null } } }),
      // E007 left LDAP with the approved deletes above: the export that follows adds it back, without a title.
      expect.objectContaining({
        target: 'connector',
        connectorId: dir,
        dn: `uid=E007,ou=Engineering,${f.base}`,
        operation: 'Add',
        attributes: expect.objectContaining({ uid: { old: null, new: 'E007' }, title: { old: null, new: null } }),
      }),
    ]);
    // An Operator cannot reject it, but can cancel it: it ends Cancelled, nothing applied, the connector free.
    const cancelled = await rt.call('POST', `runs/${blank.runId}/cancel`, { role: 'Operator' });
    expect(cancelled.status).toBe(202);
    expect(cancelled.body).toMatchObject({
      status: 'Cancelled',
      error: expect.stringMatching(/while it waited for approval: nothing of its plan was applied/),
    });
    expect(valueOf((await hrMesh()).get('E007'), 'title')).toBe('Engineer');
    expect((await rt.call('POST', `runs/${blank.runId}/cancel`)).status).toBe(409);
  });

  test('the changes list: filters, paging with an exact total, bad queries are 400, an unknown run 404', async () => {
    const all = await changes(truncatedRun.runId);
    const total = all.totalCount;
    expect(total).toBe(16);
    const page1 = await changes(truncatedRun.runId, '?take=5');
    const page4 = await changes(truncatedRun.runId, '?skip=15&take=5');
    expect(page1).toMatchObject({ totalCount: 16 });
    expect(page1.items).toHaveLength(5);
    expect(page4.items).toHaveLength(1);
    expect(page1.items).toEqual(all.items.slice(0, 5));
    expect(page4.items).toEqual(all.items.slice(15));
    expect(await changes(truncatedRun.runId, '?operation=Add')).toEqual({ items: [], totalCount: 0 });
    for (const q of ['operation=Remove', 'outcome=done', 'take=201', 'skip=-1', 'take=x']) {
      const res = await rt.call('GET', `runs/${truncatedRun.runId}/changes?${q}`);
      expect(res.status).toBe(400);
      expect(res.headers.get('content-type')).toMatch(/application\/problem\+json/);
    }
    expect((await rt.call('GET', 'runs/00000000-0000-4000-8000-000000000000/changes')).status).toBe(404);
    expect((await rt.call('GET', `runs/${truncatedRun.runId}/changes`, { role: null })).status).toBe(401);
  });

  test('an export dry run is a plan too: applied in LDAP, an object whose mesh values changed since is drifted', async () => {
    await sql('UPDATE hr SET title = $1 WHERE employee_id = $2', ['Engineer', 'E007']);
    const plan = await trigger(`connectors/${dir}/export`, { dryRun: true });
    expect(plan).toMatchObject({ status: 'Completed', dryRun: true, plan: { expiresOn: expect.any(String) } });
    const planned = await changes(plan.runId, '?take=200');
    const updates = planned.items.filter((i: Json) => i.operation === 'Update');
    expect(updates.find((i: Json) => i.dn === `uid=E001,ou=Engineering,${f.base}`)).toMatchObject({
      target: 'connector',
      outcome: 'planned',
      attributes: { title: { old: 'Engineer', new: 'Lead' } },
    });
    expect(
      planned.items
        .filter((i: Json) => i.operation === 'Add')
        .map((i: Json) => i.attributes.uid.new)
        .sort(),
    ).toEqual([...ids.slice(4), 'E099']);
    expect(await entries()).toEqual(ids.slice(0, 4));
    // Between plan and apply: E003's title changes in HR and reaches the mesh.
    await sql('UPDATE hr SET title = $1 WHERE employee_id = $2', ['CTO', 'E003']);
    expect(await trigger(`connectors/${hr}/import`, { runType: 'FullImport' })).toMatchObject({ status: 'Completed', stats: { objectsUpdated: 1 } });
    const started = await rt.call('POST', `runs/${plan.runId}/apply`, { role: 'Operator' });
    expect(started.status).toBe(202);
    const applied = await waitRun(rt, started.body.runId);
    expect(applied).toMatchObject({ status: 'Completed', runType: 'Export', stats: { objectsCreated: 17, errors: 0 } });
    const list = await changes(applied.runId, '?take=200');
    const e003 = list.items.find((i: Json) => i.outcome === 'drifted');
    expect(e003).toMatchObject({ target: 'connector', operation: 'Update', dn: `uid=E003,ou=Engineering,${f.base}` });
    expect(list.items.filter((i: Json) => i.outcome === 'drifted')).toHaveLength(1);
    const title = async (id: string) =>
      (await admin.search(`uid=${id},ou=Engineering,${f.base}`, { scope: 'base', attributes: ['title'] })).searchEntries[0]?.title;
    expect([await title('E001'), await title('E003'), await title('E004')]).toEqual(['Lead', 'Engineer', 'Architect']);
    expect(await entries()).toEqual([...ids, 'E099'].sort());
    // The next export sends what the apply left out.
    expect(await trigger(`connectors/${dir}/export`)).toMatchObject({ status: 'Completed', stats: { objectsUpdated: 1 } });
    expect(await title('E003')).toBe('CTO');
  });
});

const valueOf = (o: MeshObject | undefined, attr: string) => o?.attributes[attr]?.value;
