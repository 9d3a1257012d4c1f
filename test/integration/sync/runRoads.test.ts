import type { Client } from 'ldapts';
import { iterateMesh } from '../../../lib/mesh/store';
import type { MeshObject } from '../../../lib/mesh/model';
import { startPostgres, type Postgres } from '../../support/postgres';
import { serverAvailable } from '../../support/servers';
import { startService, USERS, type ServiceUnderTest, SECOND_ADMIN } from '../../support/service';
import { startSlapd, type Slapd } from '../../support/slapd';
import { ldapConnector, stopSlapdSuite } from '../ldap/e2eSupport';
import { SlapdFixture } from '../ldap/ldapFixture';
import { hrSqlSource, rule, waitRun } from './syncSupport';

/**
 * The roads to a mass change that go around a run's own thresholds, each tried against the running service
 * (a real PostgreSQL HR table as the source, a real slapd as the target, over HTTP):
 * - a plan bound to its configuration: an import plan and an export plan applied after a flow rule changed are
 *   a 409 naming the rule, who changed it and when; nothing applied (mesh and LDAP read back); the same plan
 *   applies once the rule is back as it was;
 * - a held run bound to its configuration: alice's import waits for approval with 5 title changes, she edits
 *   the flow rule, bob's approval is a 409 naming the rule, nothing written, the run still waits and can be
 *   rejected;
 * - one-object sync: refused while the object's change is held (naming the run, its connector and who asked),
 *   still refused after the parked run is cancelled or rejected, allowed once a run passed the gate; refused when
 *   it would delete an object in the target (LDAP read back);
 * - restores: the adds they cause in a target are exports, counted by its `adds` threshold (the export parks).
 */
jest.setTimeout(400_000);

// eslint-disable-next-line @typescript-eslint/no-explicit-any
type Json = any;

const N = 8;
const ids = Array.from({ length: N }, (_, i) => `E${String(i + 1).padStart(3, '0')}`);
/** bob: a second Admin (another person, another oid). */
const BOB = { oid: 'b0000000-0000-4000-8000-0000000000b0', upn: 'bob@example.test', preferred_username: 'bob@example.test' };

(serverAvailable('postgres') && serverAvailable('slapd') ? describe : describe.skip)('the roads around the gate (PostgreSQL source, slapd target)', () => {
  let pg: Postgres;
  let slapd: Slapd;
  let rt: ServiceUnderTest;
  let f: SlapdFixture;
  let admin: Client;
  let db = '';
  let hr = '';
  let dir = '';
  let hrTitle = '';
  let dirTitle = '';

  const sql = (text: string, values: unknown[] = []) => pg.query(text, values, db);
  const setTitle = (title: string, list: string[]) => sql('UPDATE hr SET title = $1 WHERE employee_id = ANY($2)', [title, list]);
  const hrMesh = async (): Promise<Map<string, MeshObject>> => {
    const out = new Map<string, MeshObject>();
    for await (const page of iterateMesh()) for (const o of page) if (o.links[hr] !== undefined) out.set(o.anchorValue, o);
    return out;
  };
  const titles = async (list: string[]) => {
    const mesh = await hrMesh();
    return list.map((id) => mesh.get(id)?.attributes.title?.value ?? null);
  };
  const ldapTitle = async (id: string) =>
    (await admin.search(`uid=${id},ou=Engineering,${f.base}`, { scope: 'base', attributes: ['title'] })).searchEntries[0]?.title;
  const entries = async (): Promise<string[]> =>
    (await admin.search(`ou=Engineering,${f.base}`, { scope: 'one', filter: '(objectClass=inetOrgPerson)', attributes: ['uid'] })).searchEntries
      .map((e) => String(e.uid))
      .sort();
  const start = async (path: string, body: Record<string, unknown> = {}, role: 'Admin' | 'Operator' = 'Admin') => {
    const res = await rt.call('POST', path, { body, role });
    expect(res.status).toBe(202);
    return waitRun(rt, res.body.runId);
  };
  const importHr = (body: Record<string, unknown> = {}) => start(`connectors/${hr}/import`, { runType: 'FullImport', ...body });
  /** A rule as it is, then changed by `patch` (PUT as the Admin, alice). */
  const ruleFields = async (ruleId: string): Promise<Json> => {
    const res = await rt.call('GET', `rules/${ruleId}`);
    expect(res.status).toBe(200);
    const { ruleId: _id, createdOn: _c, updatedOn: _u, ...fields } = res.body;
    return fields;
  };
  const putRule = async (ruleId: string, fields: Json) => {
    const res = await rt.call('PUT', `rules/${ruleId}`, { body: fields });
    expect(res.status).toBe(200);
  };
  const csObjectId = async (connectorId: string, anchor: string): Promise<string> => {
    const res = await rt.call('GET', `connectors/${connectorId}/space?search=${anchor}`);
    expect(res.status).toBe(200);
    const item = res.body.items.find((i: Json) => i.anchor === anchor);
    expect(item).toBeDefined();
    return item.csObjectId;
  };
  const syncOne = async (anchor: string) => rt.call('POST', `connectors/${hr}/space/${await csObjectId(hr, anchor)}/sync`, { role: 'Operator' });
  const problem = (res: { status: number; headers: Headers; body: Json }, status: number) => {
    expect(res.status).toBe(status);
    expect(res.headers.get('content-type')).toMatch(/application\/problem\+json/);
    return String(res.body.detail);
  };

  beforeAll(async () => {
    [pg, slapd] = await Promise.all([startPostgres(), startSlapd()]);
    rt = await startService();
    f = await new SlapdFixture(slapd).init();
    admin = await f.client();
    db = await pg.createDatabase(`roads${process.pid}`);
    await sql('CREATE TABLE hr (employee_id varchar(20) PRIMARY KEY, given_name text, sn text, title text)');
    for (const id of ids) await sql('INSERT INTO hr VALUES ($1, $2, $3, $4)', [id, `Given${id}`, `Sn${id}`, 'Engineer']);
    hr = await hrSqlSource(rt, pg, db, 'hr', [
      ['employee_id', 'employeeId'],
      ['given_name', 'givenName'],
      ['sn', 'sn'],
      ['title', 'title'],
    ]);
    // HR: more than 3 updates wait for approval; deletes up to 10 (looser than the default for 6 people: a
    // guard-rail change another Admin approves, docs/safety.md).
    const current = (await rt.call('GET', `connectors/${hr}`)).body;
    const put = await rt.call('PUT', `connectors/${hr}`, {
      body: { name: 'HR', config: { ...current.config, thresholds: { updates: { count: 3 }, deletes: { count: 10, percent: 100 } } } },
    });
    expect(put.status).toBe(202);
    const second = SECOND_ADMIN;
    expect((await rt.call('POST', `config/changes/${put.body.changeId}/approve`, { as: second })).status).toBe(200);
    const hrRules = (await rt.call('GET', `rules?connectorId=${hr}`)).body.items as Json[];
    hrTitle = hrRules.find((r) => r.targetAttribute === 'title').ruleId;
    await putRule(hrTitle, { ...(await ruleFields(hrTitle)), ruleName: 'HR title' });

    dir = await ldapConnector(rt, 'Directory', {
      ...f.config({ exportDnTemplate: '"uid=" + dnEscape(source.uid) + ",ou=Engineering," + baseDN' }),
      // A person whose title is "Gone" is deleted from the directory.
      provisioningCondition: 'source.title != "Gone"',
      deprovisioning: { action: 'delete', onConditionFalse: true },
      thresholds: { deletes: { count: 10, percent: 100 } },
    });
    const out = (sourceAttribute: string, targetAttribute: string, extra: Record<string, unknown> = {}) =>
      rule(rt, { ruleType: 'FlowRule', connectorId: dir, direction: 'outbound', sourceAttribute, targetAttribute, confidence: 50, ...extra });
    await out('employeeId', 'uid');
    await out('employeeId', 'employeeNumber');
    await out('givenName', 'givenName');
    await out('sn', 'sn');
    await out('givenName', 'cn', { transformScript: 'object.givenName + " " + object.sn' });
    dirTitle = await out('title', 'title', { ruleName: 'Directory title' });
    await rule(rt, { ruleType: 'JoinRule', connectorId: dir, sourceAttribute: 'employeeNumber', targetAttribute: 'employeeId' });

    expect(await importHr()).toMatchObject({ status: 'Completed', stats: { objectsCreated: N, errors: 0 } });
    expect(await start(`connectors/${dir}/export`)).toMatchObject({ status: 'Completed', stats: { objectsCreated: N, errors: 0 } });
    expect(await start(`connectors/${dir}/import`, { runType: 'FullImport' })).toMatchObject({ status: 'Completed', stats: { errors: 0 } });
    expect(await entries()).toEqual(ids);
  });
  afterAll(async () => {
    await stopSlapdSuite({ admin, rt, f, slapd });
    await pg?.stop();
  });

  test('an import plan applied after its flow rule changed: 409 naming the rule, who and when; nothing applied; the rule back as it was, the plan applies', async () => {
    await setTitle('Lead', ['E001', 'E002']);
    const plan = await importHr({ dryRun: true });
    expect(plan).toMatchObject({ status: 'Completed', dryRun: true, stats: { objectsUpdated: 2 } });
    const original = await ruleFields(hrTitle);
    await putRule(hrTitle, { ...original, transformScript: 'source.toUpperCase()' });

    const refused = await rt.call('POST', `runs/${plan.runId}/apply`, { role: 'Operator' });
    const detail = problem(refused, 409);
    expect(detail).toMatch(new RegExp(`rule 'HR title' \\(FlowRule, id ${hrTitle}\\) was changed on \\S+ by ${USERS.Admin.upn.replace(/\./g, '\\.')}`));
    expect(detail).toMatch(/Nothing was applied and the plan stays unapplied: make a new dry run/);
    // Nothing applied, no run started.
    expect(await titles(['E001', 'E002'])).toEqual(['Engineer', 'Engineer']);
    expect((await rt.call('GET', `runs?connectorId=${hr}&status=Running`)).body.totalCount).toBe(0);

    // The rule as it was: the configuration is the plan's again, and the same plan applies.
    await putRule(hrTitle, original);
    const applied = await rt.call('POST', `runs/${plan.runId}/apply`, { role: 'Operator' });
    expect(applied.status).toBe(202);
    expect(await waitRun(rt, applied.body.runId)).toMatchObject({ status: 'Completed', stats: { objectsUpdated: 2 } });
    expect(await titles(['E001', 'E002'])).toEqual(['Lead', 'Lead']);
  });

  test('an export plan applied after the outbound rule changed: 409 naming the rule; LDAP unchanged', async () => {
    const plan = await start(`connectors/${dir}/export`, { dryRun: true });
    expect(plan).toMatchObject({ status: 'Completed', dryRun: true });
    const original = await ruleFields(dirTitle);
    await putRule(dirTitle, { ...original, transformScript: '"Chief " + source' });
    const detail = problem(await rt.call('POST', `runs/${plan.runId}/apply`, { role: 'Operator' }), 409);
    expect(detail).toMatch(new RegExp(`rule 'Directory title' \\(FlowRule, id ${dirTitle}\\) was changed on `));
    expect([await ldapTitle('E001'), await ldapTitle('E002')]).toEqual(['Engineer', 'Engineer']);
    await putRule(dirTitle, original);
    expect(await start(`connectors/${dir}/export`)).toMatchObject({ status: 'Completed', stats: { objectsUpdated: 2 } });
    expect([await ldapTitle('E001'), await ldapTitle('E002')]).toEqual(['Lead', 'Lead']);
  });

  let held: Json;

  test("alice's run waits for approval with 5 title changes; a one-object sync of one of them is a 409 naming the run", async () => {
    await setTitle('Manager', ids.slice(0, 5));
    held = await importHr();
    expect(held).toMatchObject({
      status: 'AwaitingApproval',
      approval: { reasons: [{ operation: 'updates', count: 5, limit: 3 }], requestedBy: USERS.Admin.upn },
    });
    const detail = problem(await syncOne('E001'), 409);
    expect(detail).toContain(`is held for approval: run ${held.runId} of connector 'HR' (FullImport, requested by ${USERS.Admin.upn})`);
    // An object outside the plan: the connector is still held by its waiting run.
    expect(problem(await syncOne('E008'), 409)).toContain(`Run ${held.runId} of this connector is AwaitingApproval`);
    expect(await titles(ids.slice(0, 5))).toEqual(['Lead', 'Lead', 'Engineer', 'Engineer', 'Engineer']);
  });

  test('alice edits the flow rule while it waits: bob approves the plan he reviewed and gets a 409 naming the rule; nothing written; reject still works', async () => {
    const original = await ruleFields(hrTitle);
    await putRule(hrTitle, { ...original, transformScript: 'source.toUpperCase()' });
    const refused = await rt.call('POST', `runs/${held.runId}/approve`, { as: BOB });
    const detail = problem(refused, 409);
    expect(detail).toMatch(/The configuration changed since this run was held for approval/);
    expect(detail).toMatch(new RegExp(`rule 'HR title' \\(FlowRule, id ${hrTitle}\\) was changed on \\S+ by ${USERS.Admin.upn.replace(/\./g, '\\.')}`));
    expect(detail).toMatch(/the run stays AwaitingApproval: reject it and start a new run/);
    expect((await rt.call('GET', `runs/${held.runId}`)).body).toMatchObject({ status: 'AwaitingApproval' });
    expect(await titles(ids.slice(0, 5))).toEqual(['Lead', 'Lead', 'Engineer', 'Engineer', 'Engineer']);
    expect([await ldapTitle('E003')]).toEqual(['Engineer']);

    const rejected = await rt.call('POST', `runs/${held.runId}/reject`, { as: BOB });
    expect(rejected.status).toBe(200);
    expect(rejected.body.status).toBe('Rejected');
    expect(await titles(ids.slice(0, 5))).toEqual(['Lead', 'Lead', 'Engineer', 'Engineer', 'Engineer']);
    // Rejected: its objects still go through a run, not one by one.
    const detailAfter = problem(await syncOne('E003'), 409);
    expect(detailAfter).toContain(`is in the plan of run ${held.runId} of connector 'HR'`);
    expect(detailAfter).toMatch(/which the gate stopped \(rejected by bob@example\.test\), and no run of that connector has passed the gate since/);
    expect(await titles(['E003'])).toEqual(['Engineer']);
  });

  test('the parked run cancelled by an Operator: its objects are still refused one by one; after an approved run they are allowed', async () => {
    const parked = await importHr();
    expect(parked).toMatchObject({ status: 'AwaitingApproval', approval: { reasons: [{ operation: 'updates', count: N, limit: 3 }] } });
    const cancelled = await rt.call('POST', `runs/${parked.runId}/cancel`, { role: 'Operator' });
    expect(cancelled.status).toBe(202);
    expect(cancelled.body.status).toBe('Cancelled');
    for (const id of ['E003', 'E007']) {
      const detail = problem(await syncOne(id), 409);
      expect(detail).toContain(`is in the plan of run ${parked.runId} of connector 'HR'`);
      expect(detail).toContain('cancelled while it waited for approval');
    }
    expect(await titles(['E003', 'E007'])).toEqual(['Engineer', 'Engineer']);

    // Unchanged configuration: the approval works as before, and then one-object syncs are allowed.
    const next = await importHr();
    expect(next).toMatchObject({ status: 'AwaitingApproval' });
    expect((await rt.call('POST', `runs/${next.runId}/approve`, { as: BOB })).status).toBe(202);
    expect(await waitRun(rt, next.runId)).toMatchObject({ status: 'Completed', stats: { objectsUpdated: N } });
    expect(await titles(['E003', 'E007'])).toEqual(['MANAGER', 'ENGINEER']);
    const ok = await syncOne('E003');
    expect(ok.status).toBe(200);
    expect(ok.body).toMatchObject({ applied: true, meshChanges: [] });
  });

  test("an object whose change a target's export holds for approval: the source's one-object sync is a 409 naming the target's run", async () => {
    const setDirThresholds = async (thresholds: Record<string, unknown>) => {
      const current = (await rt.call('GET', `connectors/${dir}`)).body;
      const put = await rt.call('PUT', `connectors/${dir}`, { body: { name: 'Directory', config: { ...current.config, thresholds } } });
      // Tightening applies at once; removing the updates limit again loosens a guard rail: a second Admin approves.
      if (put.status === 202) expect((await rt.call('POST', `config/changes/${put.body.changeId}/approve`, { as: SECOND_ADMIN })).status).toBe(200);
      else expect(put.status).toBe(200);
    };
    await setDirThresholds({ deletes: { count: 10, percent: 100 }, updates: { count: 1 } });
    // Every title changed in the mesh since the last export: the directory's export waits.
    const exportRun = await start(`connectors/${dir}/export`);
    expect(exportRun).toMatchObject({ status: 'AwaitingApproval', approval: { reasons: [{ operation: 'updates', count: N, limit: 1 }] } });
    const detail = problem(await syncOne('E004'), 409);
    expect(detail).toContain(`is held for approval: run ${exportRun.runId} of connector 'Directory' (Export, requested by ${USERS.Admin.upn})`);
    expect(await ldapTitle('E004')).toBe('Engineer');
    expect((await rt.call('POST', `runs/${exportRun.runId}/approve`, { as: BOB })).status).toBe(202);
    expect(await waitRun(rt, exportRun.runId)).toMatchObject({ status: 'Completed', stats: { objectsUpdated: N } });
    expect(await ldapTitle('E004')).toBe('MANAGER');
    expect((await syncOne('E004')).status).toBe(200);
    await setDirThresholds({ deletes: { count: 10, percent: 100 } });
  });

  test('restores are exports to the targets: counted by their adds threshold (the export parks), nothing added until approved', async () => {
    await sql('DELETE FROM hr WHERE employee_id = ANY($1)', [['E006', 'E007']]);
    const gone = [...(await hrMesh())].filter(([anchor]) => anchor === 'E006' || anchor === 'E007').map(([, o]) => o.id);
    expect(gone).toHaveLength(2);
    expect(await importHr()).toMatchObject({ status: 'Completed', stats: { objectsDeleted: 2 } });
    expect(await start(`connectors/${dir}/export`)).toMatchObject({ status: 'Completed' });
    expect(await entries()).not.toContain('E006');
    const current = (await rt.call('GET', `connectors/${dir}`)).body;
    const put = await rt.call('PUT', `connectors/${dir}`, {
      body: { name: 'Directory', config: { ...current.config, thresholds: { ...current.config.thresholds, adds: { count: 1 } } } },
    });
    expect(put.status).toBe(200);
    for (const id of gone) expect((await rt.call('POST', `mesh/objects/${id}/restore`)).status).toBe(200);
    const exportRun = await start(`connectors/${dir}/export`);
    expect(exportRun).toMatchObject({ status: 'AwaitingApproval', approval: { reasons: [{ operation: 'adds', count: 2, limit: 1 }] } });
    expect(await entries()).not.toContain('E006');
    expect(await entries()).not.toContain('E007');
    expect((await rt.call('POST', `runs/${exportRun.runId}/approve`, { as: BOB })).status).toBe(202);
    expect(await waitRun(rt, exportRun.runId)).toMatchObject({ status: 'Completed', stats: { objectsCreated: 2 } });
    expect(await entries()).toEqual(expect.arrayContaining(['E006', 'E007']));
  });

  test('a one-object sync that would delete the object in a target is a 409 naming the connector; nothing deleted in LDAP', async () => {
    // Under this rule the managers leave the directory's provisioning condition ("Gone"): their deprovisioning is a delete.
    const current = await ruleFields(hrTitle);
    await putRule(hrTitle, { ...current, transformScript: 'source == "Manager" ? "Gone" : source.toUpperCase()' });
    const preview = await rt.call('POST', `connectors/${hr}/space/${await csObjectId(hr, 'E005')}/preview`, { role: 'Operator' });
    expect(preview.status).toBe(200);
    expect(preview.body.exports).toEqual([expect.objectContaining({ connectorId: dir, operation: 'Delete' })]);
    const detail = problem(await syncOne('E005'), 409);
    expect(detail).toMatch(/^A one-object sync does not delete or disable: this one would delete 'uid=E005,ou=Engineering,[^']+' in connector 'Directory'/i);
    expect(detail).toContain("deletes and disables go through a run (an export of connector 'Directory')");
    expect(await entries()).toContain('E005');
    expect(await titles(['E005'])).toEqual(['MANAGER']);

    // The same with a deprovisioning that disables: refused as well, the entry untouched.
    const directory = (await rt.call('GET', `connectors/${dir}`)).body;
    const put = await rt.call('PUT', `connectors/${dir}`, {
      body: {
        name: 'Directory',
        config: { ...directory.config, deprovisioning: { action: 'disable', onConditionFalse: true, disableAttributes: { description: 'disabled' } } },
      },
    });
    expect(put.status).toBe(200);
    const disabling = problem(await syncOne('E005'), 409);
    expect(disabling).toMatch(/this one would disable 'uid=E005,ou=Engineering,[^']+' in connector 'Directory'/i);
    const entry = (await admin.search(`uid=E005,ou=Engineering,${f.base}`, { scope: 'base', attributes: ['description', 'title'] })).searchEntries[0];
    expect(entry).toMatchObject({ title: 'MANAGER' });
    expect(entry.description ?? []).toEqual([]);
    expect(await titles(['E005'])).toEqual(['MANAGER']);
  });
});
