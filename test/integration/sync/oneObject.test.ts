import { randomUUID } from 'node:crypto';
import { mkdirSync } from 'node:fs';
import path from 'node:path';
import { TableClient } from '@azure/data-tables';
import { closeParkedSearches } from '../../../lib/connectors/ldap';
import { schemaErrors } from '../../../lib/core/validation/ajv';
import { projectedMeshId } from '../../../lib/mesh/model';
import { OneObjectSync } from '../../../lib/schemas/connectorSpace';
import { storageConnectionString, tableService } from '../../../lib/storage/tables';
import { anchoredCsObjectId, indexCsObjectIds } from '../../../lib/sync/space/csIds';
import { startPostgres, type Postgres } from '../../support/postgres';
import { serverAvailable } from '../../support/servers';
import { startService, type ServiceUnderTest } from '../../support/service';
import { startSlapd, type Slapd } from '../../support/slapd';
import { SlapdFixture } from '../ldap/ldapFixture';
import { ldapConnector, meshOf, outboundFlows, PEOPLE_OUTBOUND, waitRun } from '../ldap/e2eSupport';
import { createPeopleSchema, peopleConfig, pgServer, type SqlServer } from '../sql/sqlFixture';
import { fileConnector, rule, runExport, runImport, writeCsv } from './syncSupport';

/**
 * One object: preview and sync, against a real PostgreSQL (the HR source, SQL connector) and a real slapd (the
 * target, outbound rules and a DN template), over HTTP. The HR rows are first imported while HR has no
 * projection rule (its objects stay disconnectors: staged, not in the mesh); with the projection rule made,
 * a preview of one of them shows its projection, its inbound values with their rules and the directory add
 * with its DN, and changes nothing (every table of the service: same rows, same ETags; no run; no audit
 * record); the sync then does it (the mesh object exists; the directory's next export adds it).
 */
jest.setTimeout(300_000);

type Snapshot = Map<string, string>;

/** Every row of the service's tables (its prefix), by table and key, with its ETag. */
async function snapshot(prefix: string): Promise<Snapshot> {
  const out: Snapshot = new Map();
  const cs = storageConnectionString();
  for await (const t of tableService().listTables()) {
    const name = t.name!;
    if (!name.startsWith(prefix)) continue;
    const client = TableClient.fromConnectionString(cs, name, { allowInsecureConnection: true });
    for await (const e of client.listEntities({ queryOptions: { select: ['PartitionKey', 'RowKey'] } }))
      out.set(`${name}/${e.partitionKey}/${e.rowKey}`, e.etag);
  }
  return out;
}

/**
 * Rows added, removed or changed between two snapshots, leaving out what the service's background tasks write on
 * their own clock: the engine instances' heartbeats, and the history purge's mark of how far it got (a pass a minute).
 */
function changes(a: Snapshot, b: Snapshot): string[] {
  const diff: string[] = [];
  for (const [k, v] of a) if (b.get(k) !== v) diff.push(k);
  for (const k of b.keys()) if (!a.has(k)) diff.push(k);
  return diff.filter((k) => !/Instances\//i.test(k) && !/MeshHistory[0-9a-f]\/purged\//.test(k));
}

(serverAvailable('slapd') && serverAvailable('postgres') ? describe : describe.skip)(
  'one object: preview and sync (PostgreSQL HR, slapd target, Azurite, over HTTP)',
  () => {
    let slapd: Slapd;
    let pg: Postgres;
    let server: SqlServer;
    let db: string;
    let rt: ServiceUnderTest;
    let f: SlapdFixture;
    let hr: string;
    let dir: string;
    let prefix: string;
    const flowIds: Record<string, string> = {};

    const csId = async (anchor: string) => {
      const id = anchoredCsObjectId(hr, anchor);
      await indexCsObjectIds(hr, [{ csObjectId: id, anchor }]);
      return id;
    };
    const runsOf = async (connectorId: string) => (await rt.call('GET', `runs?connectorId=${connectorId}`)).body.totalCount as number;
    const audits = async () =>
      (await rt.call('GET', 'audit?targetType=connectorSpaceObject')).body.items as { action: string; targetId: string; actorUpn: string }[];
    const insert = (id: string, given: string, sn: string, department: string) =>
      server.exec(db, 'INSERT INTO people (employee_id, given_name, sn, department) VALUES (?, ?, ?, ?)', [id, given, sn, department]);

    beforeAll(async () => {
      [slapd, pg] = await Promise.all([startSlapd(), startPostgres()]);
      server = pgServer(pg);
      db = await server.newDatabase();
      await createPeopleSchema(server, db);
      rt = await startService();
      prefix = process.env.Storage__TablePrefix ?? '';
      f = await new SlapdFixture(slapd).init();
      const res = await rt.call('POST', 'connectors', { body: { name: 'HR', type: 'sql', config: peopleConfig(server, db) } });
      expect(res.status).toBe(201);
      hr = res.body.id as string;
      for (const [source, target] of [
        ['employee_id', 'employeeId'],
        ['given_name', 'givenName'],
        ['sn', 'sn'],
        ['department', 'department'],
      ]) {
        flowIds[target] = await rule(rt, { ruleType: 'FlowRule', connectorId: hr, sourceAttribute: source, targetAttribute: target, confidence: 50 });
      }
      dir = await ldapConnector(rt, 'Directory', f.config());
      await outboundFlows(rt, dir, PEOPLE_OUTBOUND);
      await insert('P001', 'Ada', 'Lovelace', 'Engineering');
      await insert('P002', 'Alan', 'Turing', 'Engineering');
      await insert('P003', 'Grace', 'Hopper', 'Engineering');
      // Imported before HR projects: the rows are in HR's connector space, joined to nothing.
      expect(await runImport(rt, hr)).toMatchObject({ status: 'Completed', stats: { objectsCreated: 3, errors: 0 } });
    });
    afterAll(async () => {
      await rt?.dispose();
      await f?.cleanup();
      await closeParkedSearches();
      await slapd?.stop();
      await pg?.stop();
    });

    test('preview of a new HR row shows the projection and the LDAP add with its DN; nothing changes until sync; sync applies it and the next export adds it', async () => {
      const projection = await rule(rt, { ruleType: 'ProjectionRule', connectorId: hr, sourceAttribute: 'employee_id', objectType: 'User' });
      const id = await csId('P001');
      const meshId = projectedMeshId(hr, 'P001');
      const dn = `uid=P001,ou=Engineering,${f.base}`;
      const runsBefore = await runsOf(hr);
      const before = await snapshot(prefix);

      const res = await rt.call('POST', `connectors/${hr}/space/${id}/preview`, { role: 'Operator' });
      expect(res.status).toBe(200);
      expect(schemaErrors(OneObjectSync, res.body)).toEqual([]);
      expect(res.body).toMatchObject({ csObjectId: id, meshObjectId: meshId, join: { outcome: 'projected', ruleId: projection, candidates: [] } });
      expect(res.body.applied).toBeUndefined();
      expect(res.body.meshChanges).toEqual([
        { attribute: 'department', old: null, new: 'Engineering', ruleId: flowIds.department },
        { attribute: 'employeeId', old: null, new: 'P001', ruleId: flowIds.employeeId },
        { attribute: 'givenName', old: null, new: 'Ada', ruleId: flowIds.givenName },
        { attribute: 'sn', old: null, new: 'Lovelace', ruleId: flowIds.sn },
      ]);
      expect(res.body.exports).toEqual([
        {
          connectorId: dir,
          operation: 'Add',
          csObjectId: expect.any(String),
          dn,
          attributes: {
            uid: { old: null, new: 'P001' },
            givenName: { old: null, new: 'Ada' },
            sn: { old: null, new: 'Lovelace' },
            cn: { old: null, new: 'Lovelace' },
            departmentNumber: { old: null, new: 'Engineering' },
          },
        },
      ]);

      // Nothing written: every row of every table as it was (same ETags), no run, no audit record.
      expect(changes(before, await snapshot(prefix))).toEqual([]);
      expect(await runsOf(hr)).toBe(runsBefore);
      expect(await audits()).toEqual([]);
      expect((await meshOf(hr)).size).toBe(0);
      // A second preview says the same (no cache was left changed by the first).
      expect((await rt.call('POST', `connectors/${hr}/space/${id}/preview`)).body).toEqual(res.body);

      const synced = await rt.call('POST', `connectors/${hr}/space/${id}/sync`, { role: 'Operator' });
      expect(synced.status).toBe(200);
      expect(schemaErrors(OneObjectSync, synced.body)).toEqual([]);
      expect(synced.body).toEqual({ ...res.body, applied: true });
      const mesh = await meshOf(hr);
      expect([...mesh.keys()]).toEqual(['P001']);
      expect(mesh.get('P001')!.id).toBe(meshId);
      expect(mesh.get('P001')!.attributes.givenName.value).toBe('Ada');
      expect(await runsOf(hr)).toBe(runsBefore);
      expect(await audits()).toEqual([expect.objectContaining({ action: 'sync', targetId: id, actorUpn: 'operator.upn@example.test' })]);

      // The directory's next export adds it, where the preview said.
      expect(await runExport(rt, dir)).toMatchObject({ status: 'Completed', stats: { objectsCreated: 1, errors: 0 } });
      const { searchEntries } = await (await f.client()).search(dn, { scope: 'base' });
      expect(searchEntries).toHaveLength(1);
      // Synced again: nothing left to do.
      const again = await rt.call('POST', `connectors/${hr}/space/${id}/preview`);
      expect(again.body).toMatchObject({ join: { outcome: 'joined', ruleId: null, candidates: [meshId] }, meshChanges: [], exports: [] });
    });

    test('preview of a joined object shows attribute-level mesh changes with their rules, and the target update with old and new', async () => {
      const id = await csId('P001');
      const meshId = projectedMeshId(hr, 'P001');
      const display = await rule(rt, {
        ruleType: 'FlowRule',
        connectorId: hr,
        sourceAttribute: 'sn',
        targetAttribute: 'displayName',
        transformScript: 'source.toUpperCase()',
        confidence: 50,
      });
      await rule(rt, {
        ruleType: 'FlowRule',
        connectorId: dir,
        direction: 'outbound',
        sourceAttribute: 'displayName',
        targetAttribute: 'displayName',
        confidence: 50,
      });
      const before = await snapshot(prefix);
      const res = await rt.call('POST', `connectors/${hr}/space/${id}/preview`);
      expect(res.status).toBe(200);
      expect(res.body).toMatchObject({ meshObjectId: meshId, join: { outcome: 'joined', ruleId: null, candidates: [meshId] } });
      expect(res.body.meshChanges).toEqual([{ attribute: 'displayName', old: null, new: 'LOVELACE', ruleId: display }]);
      expect(res.body.exports).toEqual([
        {
          connectorId: dir,
          operation: 'Update',
          csObjectId: expect.any(String),
          dn: `uid=P001,ou=Engineering,${f.base}`,
          attributes: { displayName: { old: null, new: 'LOVELACE' } },
        },
      ]);
      expect(changes(before, await snapshot(prefix))).toEqual([]);
    });

    test('an ambiguous join names its rule and candidates, and joins nothing', async () => {
      // Two badge records (another source) in Engineering; a join of HR on department finds both for P002.
      const badgeDir = path.join(rt.dataDir, 'files', 'badges');
      mkdirSync(badgeDir, { recursive: true });
      writeCsv(
        badgeDir,
        'badges.csv',
        ['id', 'department'],
        [
          { id: 'B1', department: 'Engineering' },
          { id: 'B2', department: 'Engineering' },
        ],
      );
      const badges = await fileConnector(rt, 'Badges', badgeDir);
      await rule(rt, { ruleType: 'ProjectionRule', connectorId: badges, sourceAttribute: 'id', objectType: 'User' });
      await rule(rt, { ruleType: 'FlowRule', connectorId: badges, sourceAttribute: 'department', targetAttribute: 'department', confidence: 10 });
      expect(await runImport(rt, badges)).toMatchObject({ status: 'Completed', stats: { objectsCreated: 2 } });
      const join = await rule(rt, { ruleType: 'JoinRule', connectorId: hr, sourceAttribute: 'department', targetAttribute: 'department', priority: 1 });
      const p2 = await csId('P002');
      const before = await snapshot(prefix);
      const res = await rt.call('POST', `connectors/${hr}/space/${p2}/preview`);
      expect(res.status).toBe(200);
      expect(res.body).toMatchObject({
        meshObjectId: null,
        join: { outcome: 'ambiguous', ruleId: join, candidates: [projectedMeshId(badges, 'B1'), projectedMeshId(badges, 'B2')].sort() },
        meshChanges: [],
        exports: [],
      });
      expect(changes(before, await snapshot(prefix))).toEqual([]);
      expect((await rt.call('DELETE', `rules/${join}`)).status).toBe(204);
    });

    test('errors: 404 unknown connector or object, 400 malformed id, 403 Viewer, 409 sync while a run waits (preview answers)', async () => {
      const id = await csId('P002');
      const problem = (r: { status: number; headers: Headers }) => [r.status, r.headers.get('content-type')?.split(';')[0]];
      expect(problem(await rt.call('POST', `connectors/${randomUUID()}/space/${id}/preview`))).toEqual([404, 'application/problem+json']);
      expect(problem(await rt.call('POST', `connectors/${hr}/space/${randomUUID()}/preview`))).toEqual([404, 'application/problem+json']);
      expect(problem(await rt.call('POST', `connectors/${hr}/space/${randomUUID()}/sync`))).toEqual([404, 'application/problem+json']);
      expect(problem(await rt.call('POST', `connectors/${hr}/space/not-a-guid/preview`))).toEqual([400, 'application/problem+json']);
      expect(problem(await rt.call('POST', `connectors/${hr}/space/not-a-guid/sync`))).toEqual([400, 'application/problem+json']);
      expect(problem(await rt.call('POST', `connectors/${hr}/space/${id}/preview`, { role: 'Viewer' }))).toEqual([403, 'application/problem+json']);
      expect(problem(await rt.call('POST', `connectors/${hr}/space/${id}/sync`, { role: 'Viewer' }))).toEqual([403, 'application/problem+json']);

      // The run is held Queued (its instance paused), so the sync meets it however fast the import would be.
      const instance = (await rt.call('GET', 'instances')).body.items[0].id as string;
      expect((await rt.call('POST', `instances/${instance}/pause`)).status).toBe(200);
      const started = await rt.call('POST', `connectors/${hr}/import`, { body: { runType: 'FullImport' } });
      expect(started.status).toBe(202);
      expect(started.body.status).toBe('Queued');
      const before = await snapshot(prefix);
      const during = await rt.call('POST', `connectors/${hr}/space/${id}/sync`);
      const duringPreview = await rt.call('POST', `connectors/${hr}/space/${id}/preview`);
      expect((await rt.call('POST', `instances/${instance}/resume`)).status).toBe(200);
      const run = await waitRun(rt, started.body.runId);
      expect(during.status).toBe(409);
      expect(during.body).toMatchObject({ status: 409, title: 'Conflict' });
      expect(duringPreview.status).toBe(200);
      expect({ status: run.status, errors: run.errors }).toEqual({ status: 'Completed', errors: [] });
      expect((await audits()).filter((a) => a.targetId === id && a.action === 'sync')).toEqual([]);
      expect(before.size).toBeGreaterThan(0);
    });
  },
);
