import { appendFileSync } from 'node:fs';
import { purgeAllHistory, writeHistory } from '../../../lib/mesh/history';
import { getMeshObject } from '../../../lib/mesh/store';
import { startPostgres, type Postgres } from '../../support/postgres';
import { anchoredCsObjectId } from '../../../lib/sync/space/csIds';
import { serverAvailable } from '../../support/servers';
import { startService, type ServiceUnderTest } from '../../support/service';
import { startSlapd, type Slapd } from '../../support/slapd';
import { SlapdFixture } from '../ldap/ldapFixture';
import { ldapConnector, stopSlapdSuite } from '../ldap/e2eSupport';
import { pgServer, SqlContractFixture } from '../sql/sqlFixture';
import { meshByAnchor, rule, runExport, runImport } from '../sync/syncSupport';

/**
 * Explain and history over HTTP, against the running service, a real PostgreSQL HR source and a real slapd
 * that is both a source (mail at lower confidence, department at a better priority, sn at equal precedence)
 * and the target of mail. One person, E001, flows through every case.
 */
jest.setTimeout(300_000);

(serverAvailable('slapd') && serverAvailable('postgres') ? describe : describe.skip)('explain and history (PostgreSQL HR, slapd directory)', () => {
  let slapd: Slapd;
  let pg: Postgres;
  let rt: ServiceUnderTest;
  let dirF: SlapdFixture;
  let hrF: SqlContractFixture;
  let hr = '';
  let dir = '';
  let hrMailRule = '';
  let composerRule = '';
  let hrRun = '';
  let dirRun = '';
  let id = '';
  // EXPLAIN_EXAMPLES=<file>: keep the answers (docs/troubleshooting.md quotes them).
  const keep = (path: string, body: unknown) =>
    process.env.EXPLAIN_EXAMPLES && appendFileSync(process.env.EXPLAIN_EXAMPLES, `GET /api/${path}\n${JSON.stringify(body, null, 2)}\n\n`);
  const explain = async (attr: string) => {
    const res = await rt.call('GET', `mesh/objects/${id}/attributes/${attr}/explain`);
    keep(`mesh/objects/${id}/attributes/${attr}/explain`, res.body);
    return res;
  };
  const outcomes = (body: { candidates: { connectorId: string | null; outcome: string }[] }) =>
    Object.fromEntries(body.candidates.map((c) => [c.connectorId === hr ? 'hr' : c.connectorId === dir ? 'dir' : 'composer', c.outcome]));

  beforeAll(async () => {
    slapd = await startSlapd();
    pg = await startPostgres();
    rt = await startService();
    dirF = await new SlapdFixture(slapd).init();
    await dirF.seed([{ key: 'E001', givenName: 'Ada', sn: 'Lovelace-King', mail: 'ada@ldap.test', container: 'Engineering' }]);
    hrF = await SqlContractFixture.create(pgServer(pg));
    await hrF.seed([
      { key: 'E001', givenName: 'Ada', sn: 'Lovelace', mail: 'ada@hr.test', container: 'Research' },
      { key: 'E002', givenName: 'Bo', sn: 'Berg', mail: 'bo@hr.test', container: 'Research' },
    ]);
    const res = await rt.call('POST', 'connectors', {
      body: { name: 'HR', type: 'sql', config: hrF.config({ referenceColumns: undefined, multiValueQueries: undefined, exportStatements: undefined }) },
    });
    expect(res.status).toBe(201);
    hr = res.body.id;
    await rule(rt, { ruleType: 'ProjectionRule', connectorId: hr, sourceAttribute: 'employee_id', objectType: 'User' });
    await rule(rt, { ruleType: 'FlowRule', connectorId: hr, sourceAttribute: 'employee_id', targetAttribute: 'employeeId', confidence: 80 });
    await rule(rt, { ruleType: 'FlowRule', connectorId: hr, sourceAttribute: 'given_name', targetAttribute: 'givenName', confidence: 80 });
    await rule(rt, { ruleType: 'FlowRule', connectorId: hr, sourceAttribute: 'sn', targetAttribute: 'sn', confidence: 80, priority: 100 });
    hrMailRule = await rule(rt, { ruleType: 'FlowRule', connectorId: hr, sourceAttribute: 'mail', targetAttribute: 'mail', confidence: 80 });
    await rule(rt, { ruleType: 'FlowRule', connectorId: hr, sourceAttribute: 'department', targetAttribute: 'department', confidence: 50, priority: 100 });
    composerRule = await rule(rt, { ruleType: 'MeshComposerRule', targetAttribute: 'displayName', transformScript: 'source.givenName + " " + source.sn' });

    // The directory: joins on employeeNumber, never provisions (only E001 is there), exports mail.
    dir = await ldapConnector(rt, 'Directory', dirF.config({ provisioningCondition: 'false' }));
    await rule(rt, { ruleType: 'JoinRule', connectorId: dir, sourceAttribute: 'employeeNumber', targetAttribute: 'employeeId' });
    await rule(rt, { ruleType: 'FlowRule', connectorId: dir, sourceAttribute: 'mail', targetAttribute: 'mail', confidence: 50 });
    await rule(rt, { ruleType: 'FlowRule', connectorId: dir, sourceAttribute: 'container', targetAttribute: 'department', confidence: 50, priority: 1 });
    await rule(rt, { ruleType: 'FlowRule', connectorId: dir, sourceAttribute: 'sn', targetAttribute: 'sn', confidence: 80, priority: 100 });
    await rule(rt, { ruleType: 'FlowRule', connectorId: dir, direction: 'outbound', sourceAttribute: 'mail', targetAttribute: 'mail' });

    const a = await runImport(rt, hr);
    expect(a).toMatchObject({ status: 'Completed', stats: { objectsCreated: 2, errors: 0 } });
    hrRun = a.runId;
    const b = await runImport(rt, dir);
    expect(b).toMatchObject({ status: 'Completed', stats: { errors: 0 } });
    dirRun = b.runId;
    id = (await meshByAnchor()).get('E001')!.id;
  });
  afterAll(async () => {
    await hrF?.cleanup();
    await pg?.stop();
    await stopSlapdSuite({ rt, f: dirF, slapd });
  });

  test('higher confidence wins: explain names the HR winner (its rule, run, connector-space object) and the directory loser (lowerConfidence)', async () => {
    const res = await explain('mail');
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ meshObjectId: id, attribute: 'mail', value: 'ada@hr.test', composedBy: null });
    expect(res.body.winner).toMatchObject({
      connectorId: hr,
      connectorName: 'HR',
      csObjectId: anchoredCsObjectId(hr, 'E001'),
      sourceAttribute: 'mail',
      value: 'ada@hr.test',
      ruleId: hrMailRule,
      ruleType: 'FlowRule',
      confidence: 80,
      runId: hrRun,
      outcome: 'won',
    });
    expect(res.body.candidates).toHaveLength(2);
    expect(res.body.candidates[0]).toEqual(res.body.winner);
    expect(res.body.candidates[1]).toMatchObject({
      connectorId: dir,
      connectorName: 'Directory',
      value: 'ada@ldap.test',
      confidence: 50,
      runId: dirRun,
      outcome: 'lowerConfidence',
    });
  });

  test('equal confidence: the better priority wins (lowerPriority); equal priority: the newer wins (older)', async () => {
    const dept = (await explain('department')).body;
    expect({ value: dept.value, outcomes: outcomes(dept) }).toEqual({ value: `ou=Engineering,${dirF.base}`, outcomes: { dir: 'won', hr: 'lowerPriority' } });
    const sn = (await explain('sn')).body;
    expect({ value: sn.value, outcomes: outcomes(sn) }).toEqual({ value: 'Lovelace-King', outcomes: { dir: 'won', hr: 'older' } });
  });

  test('a composed attribute names its composer rule and inputs', async () => {
    const res = await explain('displayName');
    expect(res.status).toBe(200);
    expect(res.body.value).toBe('Ada Lovelace-King');
    expect(res.body.composedBy).toEqual({ ruleId: composerRule, inputs: ['givenName', 'sn'] });
    expect(res.body.winner).toMatchObject({
      connectorId: null,
      connectorName: null,
      csObjectId: null,
      ruleId: composerRule,
      ruleType: 'MeshComposerRule',
      outcome: 'won',
    });
  });

  test('exports: pendingExport before the export, awaitingConfirmation after it, confirmed after the confirming import', async () => {
    const state = async () => (await explain('mail')).body.exports;
    expect(await state()).toEqual([{ connectorId: dir, connectorName: 'Directory', targetAttribute: 'mail', value: 'ada@hr.test', state: 'pendingExport' }]);
    expect(await runExport(rt, dir)).toMatchObject({ status: 'Completed', stats: { objectsUpdated: 1, errors: 0 } });
    expect(await state()).toEqual([
      { connectorId: dir, connectorName: 'Directory', targetAttribute: 'mail', value: 'ada@hr.test', state: 'awaitingConfirmation' },
    ]);
    expect(await runImport(rt, dir)).toMatchObject({ status: 'Completed', stats: { errors: 0 } });
    expect(await state()).toEqual([{ connectorId: dir, connectorName: 'Directory', targetAttribute: 'mail', value: 'ada@hr.test', state: 'confirmed' }]);
  });

  test('history: Created then Updated with old and new values and their runs, newest first, paged', async () => {
    const res = await rt.call('GET', `mesh/objects/${id}/history`);
    keep(`mesh/objects/${id}/history`, res.body);
    expect(res.status).toBe(200);
    const { items, totalCount } = res.body;
    // The HR import created it, the directory's first import changed sn and department (its confirming import
    // brought back the exported mail: the value did not change, so no entry).
    expect(totalCount).toBe(2);
    expect(items.map((i: { operation: string; runId: string; connectorId: string }) => [i.operation, i.runId, i.connectorId])).toEqual([
      ['Updated', dirRun, dir],
      ['Created', hrRun, hr],
    ]);
    expect(items[0].changes).toEqual([
      { attribute: 'department', old: 'Research', new: `ou=Engineering,${dirF.base}` },
      { attribute: 'displayName', old: 'Ada Lovelace', new: 'Ada Lovelace-King' },
      { attribute: 'sn', old: 'Lovelace', new: 'Lovelace-King' },
    ]);
    expect(items[1].changes).toEqual(
      expect.arrayContaining([
        { attribute: 'mail', old: null, new: 'ada@hr.test' },
        { attribute: 'employeeId', old: null, new: 'E001' },
      ]),
    );
    expect(Date.parse(items[0].timestamp)).toBeGreaterThan(Date.parse(items[1].timestamp));
    const page = await rt.call('GET', `mesh/objects/${id}/history?skip=1&take=1`);
    expect(page.body).toEqual({ items: [items[1]], totalCount: 2 });
    expect((await rt.call('GET', `mesh/objects/${id}/history?take=500`)).status).toBe(400);
  });

  test('a disabled rule: the other contribution wins and explain says ruleDisabled', async () => {
    const current = (await rt.call('GET', `rules/${hrMailRule}`)).body;
    const { ruleId: _id, createdOn: _c, updatedOn: _u, ...fields } = current;
    const put = await rt.call('PUT', `rules/${hrMailRule}`, { body: { ...fields, isEnabled: false } });
    expect({ status: put.status, body: put.status === 200 ? 'ok' : put.body }).toEqual({ status: 200, body: 'ok' });
    const res = (await explain('mail')).body;
    expect(res.winner).toMatchObject({ connectorId: dir, value: 'ada@hr.test', outcome: 'won' });
    expect(outcomes(res)).toEqual({ dir: 'won', hr: 'ruleDisabled' });
  });

  test('unknown object, unknown attribute, malformed id: 404 problem+json', async () => {
    for (const path of [
      'mesh/objects/00000000-0000-4000-8000-000000000000/attributes/mail/explain',
      `mesh/objects/${id}/attributes/noSuchAttribute/explain`,
      'mesh/objects/not-a-guid/attributes/mail/explain',
      'mesh/objects/00000000-0000-4000-8000-000000000000/history',
    ]) {
      const res = await rt.call('GET', path);
      expect({ path, status: res.status, type: res.headers.get('content-type') }).toEqual({
        path,
        status: 404,
        type: expect.stringContaining('application/problem+json'),
      });
    }
  });

  test('a commit written again (a replayed page) leaves one row per object and run', async () => {
    const doc = (await getMeshObject(id))!;
    const change = [{ id, before: { ...doc, attributes: {} }, after: doc }];
    const at = '2026-01-01T00:00:00.000Z';
    await writeHistory('11111111-1111-4111-8111-111111111111', hr, at, change);
    await writeHistory('11111111-1111-4111-8111-111111111111', hr, at, change);
    const res = await rt.call('GET', `mesh/objects/${id}/history`);
    expect(res.body.totalCount).toBe(3);
    expect(res.body.items[2]).toMatchObject({ timestamp: at, operation: 'Updated' });
  });

  test('retention: rows older than Mesh__HistoryRetentionDays are purged', async () => {
    // Seen from two days on, with a retention of one day, every row is past it: the stored rows (E001's two
    // Updated; creations store none) are deleted, and the derived Created entries are dropped with them.
    expect(await purgeAllHistory(1, new Date(Date.now() + 2 * 86_400_000))).toBeGreaterThanOrEqual(2);
    expect((await rt.call('GET', `mesh/objects/${id}/history`)).body).toEqual({ items: [], totalCount: 0 });
  });
});
