import type { SqlConfig } from '../../../lib/connectors/sql/schema';
import { startPostgres, type Postgres } from '../../support/postgres';
import { describeWithServer } from '../../support/servers';
import { startService, type ServiceUnderTest } from '../../support/service';
import { runImport } from '../sync/syncSupport';
import { createPeopleSchema, peopleConfig, pgServer, type SqlServer } from '../sql/sqlFixture';

/**
 * Configuration history and configuration as code over HTTP, against a real PostgreSQL (the SQL connector's
 * live test on save, connection tests and imports) and two services on their own tables:
 * - every create, update and delete of a connector, rule and schedule is a version, secrets as `********`;
 * - restore of an update and of a delete (a deleted SQL connector comes back with its id and its password,
 *   and connects), and a restore that would be invalid today is refused, nothing changed;
 * - the configuration exported from one service and imported into an empty second one gives the same
 *   connectors, rules and schedules, and the same mesh after an import from PostgreSQL on both;
 * - a dry run lists the changes and changes nothing; prune; a new connector with only the placeholder secret
 *   is a 400 naming it; a document that fails validation, or fails at a write halfway, changes nothing.
 */
jest.setTimeout(300_000);

// eslint-disable-next-line @typescript-eslint/no-explicit-any
type Json = any;

describeWithServer('postgres')('configuration history, restore, export and import', () => {
  let pg: Postgres;
  let server: SqlServer;
  let db: string;
  let a: ServiceUnderTest;
  let b: ServiceUnderTest;
  let hr: string;
  let flowRule: string;
  let schedule: string;
  const config = (overrides: Partial<SqlConfig> = {}) => peopleConfig(server, db, overrides);

  beforeAll(async () => {
    pg = await startPostgres();
    server = pgServer(pg);
    db = await server.newDatabase();
    await createPeopleSchema(server, db);
    await server.exec(
      db,
      `INSERT INTO people (employee_id, given_name, sn, mail, department) VALUES
         ('C1', 'Ada', 'Lovelace', 'ada@example.test', 'R&D'), ('C2', 'Alan', 'Turing', 'alan@example.test', 'R&D'),
         ('C3', 'Grace', 'Hopper', 'grace@example.test', 'Navy')`,
    );
    a = await startService();
    b = await startService();
  });

  afterAll(async () => {
    await a?.dispose();
    await b?.dispose();
    await pg?.stop();
  });

  const history = async (svc: ServiceUnderTest, query: string): Promise<Json[]> => {
    const res = await svc.call('GET', `config/history?take=200&${query}`, { role: 'Viewer' });
    expect(res.status).toBe(200);
    expect(res.body.totalCount).toBe(res.body.items.length);
    return res.body.items;
  };
  const ok = async (svc: ServiceUnderTest, method: string, route: string, body?: unknown, status = 200): Promise<Json> => {
    const res = await svc.call(method, route, { body });
    if (res.status !== status) throw new Error(`${method} ${route}: ${res.status} ${res.text}`);
    return res.body;
  };
  const exported = async (svc: ServiceUnderTest): Promise<Json> => {
    const { exportedOn: _e, ...doc } = await ok(svc, 'GET', 'config/export');
    return doc;
  };

  test('every create, update and delete of a connector, rule and schedule is a version, newest first, secrets masked', async () => {
    hr = (await ok(a, 'POST', 'connectors', { name: 'HR', type: 'sql', config: config() }, 201)).id;
    await ok(a, 'PUT', `connectors/${hr}`, { name: 'HR database', config: config({ password: '********' }) });
    let items = await history(a, `targetType=connector&targetId=${hr}`);
    expect(items.map((v) => v.action)).toEqual(['update', 'create']);
    expect(items[1]).toMatchObject({
      targetType: 'connector',
      targetId: hr,
      actorUpn: 'admin.upn@example.test',
      before: null,
      after: { id: hr, name: 'HR', type: 'sql' },
    });
    expect(items[1].after.config).toMatchObject({ password: '********', database: db });
    expect(items[0]).toMatchObject({ before: { name: 'HR' }, after: { name: 'HR database', config: { password: '********' } } });
    expect(JSON.stringify(items)).not.toContain(server.password);
    expect(JSON.stringify(items)).not.toContain('sealed');

    await ok(a, 'POST', 'rules', { ruleName: 'project', ruleType: 'ProjectionRule', connectorId: hr, sourceAttribute: 'employee_id', objectType: 'User' }, 201);
    for (const attr of ['given_name', 'sn', 'mail']) {
      const id = (
        await ok(
          a,
          'POST',
          'rules',
          { ruleName: `flow ${attr}`, ruleType: 'FlowRule', connectorId: hr, sourceAttribute: attr, targetAttribute: attr, confidence: 50 },
          201,
        )
      ).ruleId;
      if (attr === 'mail') flowRule = id;
    }
    await ok(a, 'PUT', `rules/${flowRule}`, {
      ruleName: 'flow mail',
      ruleType: 'FlowRule',
      connectorId: hr,
      sourceAttribute: 'mail',
      targetAttribute: 'mail',
      confidence: 70,
    });
    const temp = (
      await ok(
        a,
        'POST',
        'rules',
        { ruleName: 'temp', ruleType: 'JoinRule', connectorId: hr, sourceAttribute: 'employee_id', targetAttribute: 'employeeId' },
        201,
      )
    ).ruleId;
    await ok(a, 'DELETE', `rules/${temp}`, undefined, 204);
    items = await history(a, `targetType=rule&targetId=${flowRule}`);
    expect(items.map((v) => [v.action, v.before?.confidence ?? null, v.after?.confidence ?? null])).toEqual([
      ['update', 50, 70],
      ['create', null, 50],
    ]);
    items = await history(a, `targetId=${temp}`);
    expect(items.map((v) => v.action)).toEqual(['delete', 'create']);
    expect(items[0]).toMatchObject({ targetType: 'rule', before: { ruleId: temp, ruleName: 'temp' }, after: null });

    const body = { name: 'nightly', cron: '0 0 3 * * *', isEnabled: false, steps: [{ runType: 'FullImport', connectorIds: [hr] }] };
    schedule = (await ok(a, 'POST', 'schedules', body, 201)).scheduleId;
    await ok(a, 'PUT', `schedules/${schedule}`, { ...body, cron: '0 30 3 * * *' });
    const gone = (await ok(a, 'POST', 'schedules', { ...body, name: 'gone' }, 201)).scheduleId;
    await ok(a, 'DELETE', `schedules/${gone}`, undefined, 204);
    items = await history(a, 'targetType=schedule');
    expect(items.map((v) => [v.action, v.targetId])).toEqual([
      ['delete', gone],
      ['create', gone],
      ['update', schedule],
      ['create', schedule],
    ]);
    expect(items[2]).toMatchObject({ before: { cron: '0 0 3 * * *' }, after: { cron: '0 30 3 * * *' } });

    // All of it, newest first; Viewer reads it, only Admin restores.
    const all = await history(a, '');
    expect(all[0]).toMatchObject({ targetType: 'schedule', action: 'delete' });
    expect(all.map((v) => v.timestamp)).toEqual([...all.map((v) => v.timestamp)].sort().reverse());
    // Milliseconds, as every other timestamp of the API (not the table's own 7 fractional digits).
    for (const v of all) expect(v.timestamp).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
    expect((await a.call('POST', `config/history/${all[0].versionId}/restore`, { role: 'Viewer' })).status).toBe(403);
    expect((await a.call('POST', `config/history/${all[0].versionId}/restore`, { role: 'Operator' })).status).toBe(403);
    expect((await a.call('GET', 'config/export', { role: 'Viewer' })).status).toBe(403);
    expect((await a.call('POST', 'config/history/00000000-0000-4000-8000-000000000000/restore')).status).toBe(404);
  });

  test('restore of an update and of a delete: a deleted SQL connector comes back with its id and its password', async () => {
    // An update undone: the rule's create version puts confidence 50 back.
    const [update, create] = await history(a, `targetId=${flowRule}`);
    expect(update.action).toBe('update');
    const restored = await ok(a, 'POST', `config/history/${create.versionId}/restore`);
    expect(restored).toMatchObject({ targetType: 'rule', targetId: flowRule, action: 'restore', before: { confidence: 70 }, after: { confidence: 50 } });
    expect((await ok(a, 'GET', `rules/${flowRule}`)).confidence).toBe(50);
    expect((await history(a, `targetId=${flowRule}`)).map((v) => v.action)).toEqual(['restore', 'update', 'create']);

    // A connector deleted (with its rule), restored from its delete version with the same id and password.
    const spare = (await ok(a, 'POST', 'connectors', { name: 'Spare', type: 'sql', config: config() }, 201)).id;
    const spareRule = (
      await ok(
        a,
        'POST',
        'rules',
        { ruleName: 'spare flow', ruleType: 'FlowRule', connectorId: spare, sourceAttribute: 'sn', targetAttribute: 'surname', confidence: 10 },
        201,
      )
    ).ruleId;
    await ok(a, 'DELETE', `connectors/${spare}`, undefined, 204);
    expect((await a.call('GET', `connectors/${spare}`)).status).toBe(404);
    const [ruleDelete] = await history(a, `targetId=${spareRule}`);
    expect(ruleDelete).toMatchObject({ action: 'delete', actorUpn: 'system:connectorDelete', after: null });

    // Invalid today: the rule names a connector that no longer exists. 400, nothing changed.
    const before = await history(a, '');
    const refused = await a.call('POST', `config/history/${ruleDelete.versionId}/restore`);
    expect(refused.status).toBe(400);
    expect(refused.body.detail).toMatch(/cannot be restored.*nothing was changed.*connector that does not exist/);
    expect((await a.call('GET', `rules/${spareRule}`)).status).toBe(404);
    expect(await history(a, '')).toEqual(before);

    const [connectorDelete] = await history(a, `targetId=${spare}`);
    expect(connectorDelete).toMatchObject({ action: 'delete', before: { id: spare, name: 'Spare', config: { password: '********' } }, after: null });
    const back = await ok(a, 'POST', `config/history/${connectorDelete.versionId}/restore`);
    expect(back).toMatchObject({ action: 'restore', targetId: spare, before: null, after: { id: spare, name: 'Spare', config: { password: '********' } } });
    expect(JSON.stringify(back)).not.toContain(server.password);
    expect(await ok(a, 'GET', `connectors/${spare}`)).toMatchObject({ id: spare, name: 'Spare', config: { password: '********' } });
    const test = await ok(a, 'POST', `connectors/${spare}/test`);
    expect(test).toMatchObject({ ok: true });
    // Now its rule can come back too.
    await ok(a, 'POST', `config/history/${ruleDelete.versionId}/restore`);
    expect(await ok(a, 'GET', `rules/${spareRule}`)).toMatchObject({ ruleId: spareRule, connectorId: spare, targetAttribute: 'surname' });
    const audit = await ok(a, 'GET', `audit?targetType=connector&targetId=${spare}`);
    expect(audit.items.map((r: Json) => r.action)).toEqual(['restore', 'delete', 'create']);
    await ok(a, 'DELETE', `connectors/${spare}`, undefined, 204);
  });

  test('export from one service, import into an empty one: the same configuration and the same mesh', async () => {
    const doc = await ok(a, 'GET', 'config/export');
    expect(doc).toMatchObject({ formatVersion: 1, exportedOn: expect.any(String) });
    expect(doc.connectors).toEqual([{ id: hr, name: 'HR database', type: 'sql', config: expect.objectContaining({ password: '********' }) }]);
    expect(doc.rules).toHaveLength(4);
    expect(doc.schedules).toEqual([expect.objectContaining({ scheduleId: schedule, name: 'nightly', cron: '0 30 3 * * *' })]);
    expect(JSON.stringify(doc)).not.toContain(server.password);

    // B has no secret for HR: the placeholder alone is a 400 naming it, nothing written.
    const empty = await exported(b);
    const refused = await b.call('POST', 'config/import', { body: doc });
    expect(refused.status).toBe(400);
    expect(refused.body.errors).toContainEqual({ path: '/connectors/0/config/password', message: expect.stringMatching(/placeholder/) });
    expect(refused.body.detail).toContain('/connectors/0/config/password');
    expect(await exported(b)).toEqual(empty);

    doc.connectors[0].config.password = server.password;
    const dry = await ok(b, 'POST', 'config/import?dryRun=true', doc);
    expect(dry.applied).toBe(false);
    expect(dry.changes).toHaveLength(6);
    expect(dry.changes.every((c: Json) => c.action === 'create')).toBe(true);
    expect(dry.changes[0]).toEqual({ targetType: 'connector', targetId: hr, name: 'HR database', action: 'create' });
    expect(await exported(b)).toEqual(empty);
    expect(await history(b, '')).toEqual([]);

    const done = await ok(b, 'POST', 'config/import', doc);
    expect(done).toEqual({ changes: dry.changes, applied: true });
    expect(await exported(b)).toEqual(await exported(a));
    expect((await history(b, '')).map((v) => v.action)).toEqual(Array(6).fill('create'));
    expect((await ok(b, 'GET', 'audit?targetType=connector')).items).toContainEqual(expect.objectContaining({ action: 'create', targetId: hr }));
    // The same document again: every item unchanged, nothing written.
    const again = await ok(b, 'POST', 'config/import', {
      ...doc,
      connectors: [{ ...doc.connectors[0], config: { ...doc.connectors[0].config, password: '********' } }],
    });
    expect(again.changes.map((c: Json) => c.action)).toEqual(Array(6).fill('unchanged'));
    expect(await history(b, '')).toHaveLength(6);

    // The same sync result: a full import from PostgreSQL on both gives the same mesh.
    for (const svc of [a, b]) expect((await runImport(svc, hr)).status).toBe('Completed');
    const mesh = async (svc: ServiceUnderTest) => {
      const list = await ok(svc, 'GET', 'mesh/objects?take=200');
      const out: Record<string, unknown> = {};
      for (const o of list.items) {
        // Each value with its confidence and source (the connector's id, the same on both services), not its time.
        const attributes = (await ok(svc, 'GET', `mesh/objects/${o.meshObjectId}`)).attributes as Json[];
        out[o.anchorValue] = Object.fromEntries(
          attributes.map((x) => [x.attributeName, { value: x.attributeValue, confidence: x.confidence, source: x.source }]),
        );
      }
      return out;
    };
    const meshA = await mesh(a);
    expect(Object.keys(meshA).sort()).toEqual(['C1', 'C2', 'C3']);
    expect(meshA.C1).toEqual({
      given_name: { value: 'Ada', confidence: 50, source: hr },
      sn: { value: 'Lovelace', confidence: 50, source: hr },
      mail: { value: 'ada@example.test', confidence: 50, source: hr },
    });
    expect(await mesh(b)).toEqual(meshA);
  });

  test('prune: without it nothing is deleted, with it what the document lacks is', async () => {
    const doc = await ok(b, 'GET', 'config/export');
    const extra = (
      await ok(
        b,
        'POST',
        'rules',
        { ruleName: 'extra', ruleType: 'FlowRule', connectorId: hr, sourceAttribute: 'department', targetAttribute: 'department', confidence: 5 },
        201,
      )
    ).ruleId;
    const kept = await ok(b, 'POST', 'config/import', doc);
    expect(kept.changes.map((c: Json) => c.action)).toEqual(Array(6).fill('unchanged'));
    expect((await b.call('GET', `rules/${extra}`)).status).toBe(200);

    const dry = await ok(b, 'POST', 'config/import?dryRun=true&prune=true', doc);
    expect(dry.changes.filter((c: Json) => c.action !== 'unchanged')).toEqual([{ targetType: 'rule', targetId: extra, name: 'extra', action: 'delete' }]);
    expect((await b.call('GET', `rules/${extra}`)).status).toBe(200);
    const pruned = await ok(b, 'POST', 'config/import?prune=true', doc);
    expect(pruned).toEqual({ changes: dry.changes, applied: true });
    expect((await b.call('GET', `rules/${extra}`)).status).toBe(404);
    expect((await history(b, `targetId=${extra}`)).map((v) => v.action)).toEqual(['delete', 'create']);
  });

  test('a dry run lists what changes in each updated item, field by field (secrets as ********), and changes nothing', async () => {
    const doc = await ok(b, 'GET', 'config/export');
    const before = await exported(b);
    const rule = doc.rules.find((r: Json) => r.ruleType === 'FlowRule');
    rule.priority = (rule.priority ?? 0) + 7;
    doc.schedules[0].cron = '0 45 4 * * *';
    const query = doc.connectors[0].config.fullImportQuery as string;
    doc.connectors[0].config.fullImportQuery = `${query} AND 1 = 1`;
    // The password given in clear, the value stored: no change (and never shown).
    doc.connectors[0].config.password = server.password;
    const res = await b.call('POST', 'config/import?dryRun=true', { body: doc });
    expect(res.status).toBe(200);
    expect(res.text).not.toContain(server.password);
    const byType = (t: string) => res.body.changes.find((c: Json) => c.targetType === t && c.action === 'update');
    expect(byType('connector')).toEqual({
      targetType: 'connector',
      targetId: hr,
      name: 'HR database',
      action: 'update',
      fields: [{ path: '/config/fullImportQuery', before: query, after: `${query} AND 1 = 1` }],
    });
    expect(byType('rule')).toMatchObject({ targetId: rule.ruleId, fields: [{ path: '/priority', before: rule.priority - 7, after: rule.priority }] });
    expect(byType('schedule')).toMatchObject({ fields: [{ path: '/cron', before: '0 30 3 * * *', after: '0 45 4 * * *' }] });
    // Unchanged items and a dry run's creates carry no fields; nothing was written.
    for (const c of res.body.changes) if (c.action !== 'update') expect(c.fields).toBeUndefined();
    expect(await exported(b)).toEqual(before);
  });

  test('all or nothing: a document that fails validation, or fails at a write halfway, changes nothing', async () => {
    const base = await ok(b, 'GET', 'config/export');
    const before = { config: await exported(b), history: await history(b, ''), audit: (await ok(b, 'GET', 'audit?take=200')).totalCount };
    const unchanged = async () => {
      expect(await exported(b)).toEqual(before.config);
      expect(await history(b, '')).toEqual(before.history);
      expect((await ok(b, 'GET', 'audit?take=200')).totalCount).toBe(before.audit);
    };

    // Validation: a good change next to a rule naming an unknown connector and a schedule with a bad cron.
    const invalid = structuredClone(base);
    invalid.rules[0].priority = 7;
    invalid.rules.push({
      ruleName: 'orphan',
      ruleType: 'FlowRule',
      connectorId: '00000000-0000-4000-8000-0000000000aa',
      sourceAttribute: 'x',
      targetAttribute: 'x',
      confidence: 1,
    });
    invalid.schedules[0].cron = 'every day';
    const res = await b.call('POST', 'config/import', { body: invalid });
    expect(res.status).toBe(400);
    expect(res.body.errors.map((e: Json) => e.path)).toEqual(expect.arrayContaining(['/rules/4/connectorId', '/schedules/0/cron']));
    await unchanged();

    // Valid for validation, refused at a write halfway: two schedules swap names (each name is free in the
    // final configuration, but the first rename finds the other still holding it). The connector and rule
    // changes made before it are undone.
    const second = (
      await ok(b, 'POST', 'schedules', { name: 'weekly', cron: '0 0 4 * * 0', isEnabled: false, steps: [{ runType: 'FullImport', connectorIds: [hr] }] }, 201)
    ).scheduleId;
    const withTwo = await ok(b, 'GET', 'config/export');
    before.config = await exported(b);
    before.history = await history(b, '');
    before.audit = (await ok(b, 'GET', 'audit?take=200')).totalCount;
    const swap = structuredClone(withTwo);
    swap.connectors[0].name = 'HR renamed';
    swap.rules[0].priority = 7;
    for (const s of swap.schedules) s.name = s.scheduleId === second ? 'nightly' : 'weekly';
    const dry = await ok(b, 'POST', 'config/import?dryRun=true', swap);
    expect(dry.changes.filter((c: Json) => c.action === 'update').map((c: Json) => c.targetType)).toEqual(['connector', 'rule', 'schedule', 'schedule']);
    const failed = await b.call('POST', 'config/import', { body: swap });
    expect(failed.status).toBe(409);
    expect(failed.body.detail).toMatch(/^The import failed and was undone, nothing was changed: /);
    await unchanged();
    expect((await ok(b, 'GET', `connectors/${hr}`)).name).toBe('HR database');
    // The connector still works with its password after the undo.
    expect(await ok(b, 'POST', `connectors/${hr}/test`)).toMatchObject({ ok: true });
  });
});
