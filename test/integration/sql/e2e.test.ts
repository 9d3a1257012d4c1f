import { readSyncState } from '../../../lib/sync/run/state';
import type { SqlConfig } from '../../../lib/connectors/sql/schema';
import { PEOPLE, type ContractPerson } from '../../support/connectorContract';
import { startMariaDb, type MariaDb } from '../../support/mariadb';
import { startPostgres, type Postgres } from '../../support/postgres';
import { describeWithServer } from '../../support/servers';
import { startService, type ServiceUnderTest } from '../../support/service';
import { rule, runExport, runImport, waitRun } from '../sync/syncSupport';
import { mariaServer, pgServer, SqlContractFixture, type SqlServer } from './sqlFixture';

/**
 * The SQL connector end to end: the running service over HTTP (connectors and rules made with the Admin API,
 * runs triggered with POST /connectors/{id}/import and /export and followed with GET /runs/{id}, the mesh read
 * with GET /mesh/objects, POST /mesh/objects/search and GET /mesh/objects/{id}) against a real PostgreSQL and
 * a real MariaDB. The same scenarios run on both servers:
 * - three import connectors, one per delta/delete-detection pairing (row version + deletes query, timestamp
 *   with overlap + anchor diff every 2nd delta, row version + soft-delete column): full import with manager
 *   references resolved to relationships, then a delta with an add, an update and a delete;
 * - export: an HR database is the source, a second database the target (outbound flow rules, a
 *   provisioningCondition): insert, update, delete, each confirmed by an import of the target; values that
 *   look like SQL injection are stored and exported literally;
 * - failures: a wrong password is refused at create (400, nothing stored); the server killed in the middle
 *   of a full import fails the run and keeps the committed watermark (PostgreSQL: restarted, the next delta
 *   goes on from it and nothing is lost).
 * Each connector's people carry their own key prefix, so anchors (which relationships resolve against)
 * never collide in the one mesh of the suite.
 */
jest.setTimeout(300_000);

const INJECTION = "x'); DROP TABLE people; --";

type DeltaKind = 'rowVersion' | 'timestamp';
type DeleteKind = 'query' | 'anchorDiff' | 'softDelete';
interface Variant {
  prefix: string;
  delta: DeltaKind;
  deletes: DeleteKind;
}
const VARIANTS: Variant[] = [
  { prefix: 'R', delta: 'rowVersion', deletes: 'query' },
  { prefix: 'T', delta: 'timestamp', deletes: 'anchorDiff' },
  { prefix: 'S', delta: 'rowVersion', deletes: 'softDelete' },
];

/** PEOPLE with the key prefix `E` (keys and managers) replaced by `prefix`. */
const people = (prefix: string): ContractPerson[] =>
  PEOPLE.map((p) => ({ ...p, key: prefix + p.key.slice(1), ...(p.manager ? { manager: prefix + p.manager.slice(1) } : {}) }));

/**
 * MariaDB's people schema has no maintained row version: a sequence and triggers give it one (on insert and
 * update of people, and on the delete log), like PostgreSQL's `row_version`.
 */
async function addRowVersion(f: SqlContractFixture): Promise<void> {
  if (f.server.dialect !== 'mysql') return;
  await f.exec(
    `CREATE SEQUENCE people_rv;
     ALTER TABLE people_deleted ADD COLUMN row_version bigint NOT NULL DEFAULT 0;
     CREATE TRIGGER people_rv_ins BEFORE INSERT ON people FOR EACH ROW SET NEW.row_version = NEXT VALUE FOR people_rv;
     CREATE TRIGGER people_rv_upd BEFORE UPDATE ON people FOR EACH ROW SET NEW.row_version = NEXT VALUE FOR people_rv;
     CREATE TRIGGER people_deleted_rv BEFORE INSERT ON people_deleted FOR EACH ROW SET NEW.row_version = NEXT VALUE FOR people_rv;`,
  );
}

function variantConfig(v: Variant): Partial<SqlConfig> {
  const dc = v.delta === 'rowVersion' ? 'row_version' : 'updated_at';
  const soft = v.deletes === 'softDelete';
  const cols = `employee_id, given_name, sn, mail, manager_employee_id, department, ${dc}${soft ? ', deleted' : ''}`;
  const deleteDetection =
    v.deletes === 'query'
      ? { mode: 'query', query: 'SELECT employee_id FROM people_deleted WHERE row_version > :watermark' }
      : v.deletes === 'anchorDiff'
        ? { mode: 'anchorDiff', everyNthDelta: 2 }
        : { mode: 'softDeleteColumn', column: 'deleted', value: true };
  return {
    fullImportQuery: `SELECT ${cols} FROM people${soft ? '' : ' WHERE deleted = false'}`,
    deltaImportQuery: `SELECT ${cols} FROM people WHERE ${dc === 'row_version' ? 'row_version > :watermark' : 'updated_at >= :watermark'}${soft ? '' : ' AND deleted = false'}`,
    deltaColumn: dc,
    deltaOverlapSeconds: v.delta === 'timestamp' ? 5 : undefined,
    deleteDetection,
  } as Partial<SqlConfig>;
}

/** Retry `check` (it throws while the expectation fails) until it passes: the mesh read model follows the feed. */
async function eventually<T>(check: () => Promise<T>, timeoutMs = 30_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    try {
      return await check();
    } catch (err) {
      if (Date.now() > deadline) throw err;
      await new Promise((r) => setTimeout(r, 200));
    }
  }
}

function e2e(label: string, server: () => SqlServer, kill: () => Promise<void>, restart: (() => Promise<void>) | null) {
  let rt: ServiceUnderTest;
  const fixtures: SqlContractFixture[] = [];

  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  const listMesh = async (search: string): Promise<{ totalCount: number; items: any[] }> => {
    const res = await rt.call('GET', `mesh/objects?objectType=User&take=200&search=${encodeURIComponent(search)}`);
    expect(res.status).toBe(200);
    return res.body;
  };
  /**
   * The mesh objects whose anchor contains `search`, by anchor, once there are `count` of them and (when
   * given) exactly these anchors: the read model follows the feed, so a count alone can be a stale view.
   */
  const meshWith = (search: string, count: number, anchors?: string[]) =>
    eventually(async () => {
      const page = await listMesh(search);
      expect(page.totalCount).toBe(count);
      // eslint-disable-next-line @typescript-eslint/no-explicit-any
      const map = new Map<string, any>(page.items.map((i) => [i.anchorValue as string, i]));
      if (anchors) expect([...map.keys()].sort()).toEqual([...anchors].sort());
      return map;
    });
  const detail = async (id: string) => {
    const res = await rt.call('GET', `mesh/objects/${id}`);
    expect(res.status).toBe(200);
    return res.body;
  };
  const fixture = async (): Promise<SqlContractFixture> => {
    const f = await SqlContractFixture.create(server());
    fixtures.push(f);
    await addRowVersion(f);
    return f;
  };
  const createConnector = async (name: string, config: SqlConfig): Promise<string> => {
    const res = await rt.call('POST', 'connectors', { body: { name, type: 'sql', config } });
    if (res.status !== 201) throw new Error(`create connector: ${res.status} ${res.text}`);
    expect(res.text).not.toContain(config.password);
    return res.body.id as string;
  };
  /** Projection on the employee id and the inbound flows a HR source would have. */
  const sourceRules = async (id: string) => {
    await rule(rt, { ruleType: 'ProjectionRule', connectorId: id, sourceAttribute: 'employee_id', objectType: 'User' });
    const flows = [
      ['employee_id', 'employeeId'],
      ['given_name', 'givenName'],
      ['sn', 'sn'],
      ['mail', 'mail'],
      ['manager_employee_id', 'managerId'],
      ['department', 'department'],
      ['proxyAddresses', 'proxyAddresses'],
    ];
    for (const [s, t] of flows) await rule(rt, { ruleType: 'FlowRule', connectorId: id, sourceAttribute: s, targetAttribute: t, confidence: 50 });
    // The reference column is resolved through the connector space (the row it names, then that row's mesh
    // object); this rule names the relationship `manager` instead of the column's name.
    await rule(rt, { ruleType: 'MeshComposerRule', connectorId: id, relationshipType: 'manager', sourceAttribute: 'manager_employee_id' });
  };

  beforeAll(async () => {
    rt = await startService();
  });
  afterAll(async () => {
    await rt?.dispose();
    for (const f of fixtures) await f.cleanup();
  });

  for (const v of VARIANTS) {
    test(`${label}: ${v.delta} delta, deletes by ${v.deletes}: full import with manager relationships, then a delta with an add, an update and a delete`, async () => {
      const p = v.prefix;
      const f = await fixture();
      await f.seed(people(p));
      const id = await createConnector(`HR ${p}`, f.config(variantConfig(v)));
      await sourceRules(id);

      const full = await runImport(rt, id);
      expect(full).toMatchObject({ status: 'Completed', runType: 'FullImport', stats: { objectsProcessed: 5, objectsCreated: 5, errors: 0 } });
      let mesh = await meshWith(
        p + '00',
        5,
        people(p).map((x) => x.key),
      );
      expect(mesh.get(`${p}005`).attributeValues).toMatchObject({ givenName: 'Ängel 😀', sn: 'Ørsted "Quote"', department: 'Sales' });
      const e004 = await eventually(() => detail(mesh.get(`${p}004`).meshObjectId));
      expect(e004.relationships).toEqual([
        expect.objectContaining({ relationshipType: 'manager', targetMeshObjectId: mesh.get(`${p}002`).meshObjectId, targetAnchorValue: `${p}002` }),
      ]);
      const e001 = await detail(mesh.get(`${p}001`).meshObjectId);
      expect(
        e001.attributes
          // eslint-disable-next-line @typescript-eslint/no-explicit-any
          .filter((a: any) => a.attributeName === 'proxyAddresses')
          // eslint-disable-next-line @typescript-eslint/no-explicit-any
          .map((a: any) => a.attributeValue)
          .sort(),
      ).toEqual(['smtp:ada@example.test', 'smtp:countess@example.test']);
      const found = await rt.call('POST', 'mesh/objects/search', {
        body: { objectType: 'User', anchorSearch: `${p}00`, criteria: [{ attributeName: 'mail', operator: 'equals', value: 'li@example.test' }] },
      });
      expect(found.status).toBe(200);
      // eslint-disable-next-line @typescript-eslint/no-explicit-any
      expect(found.body.items.map((i: any) => i.anchorValue)).toEqual([`${p}003`]);

      await f.seed([...people(p), { key: `${p}950`, givenName: 'Delta', sn: 'Added', manager: `${p}001` }]);
      await f.update(`${p}003`, { mail: 'li.new@example.test' });
      if (v.deletes === 'softDelete') await f.exec('UPDATE people SET deleted = true WHERE employee_id = ?', [`${p}005`]);
      else await f.remove(`${p}005`);
      const delta = await runImport(rt, id, { runType: 'DeltaImport' });
      const deletedNow = v.deletes === 'anchorDiff' ? 0 : 1;
      expect(delta).toMatchObject({
        status: 'Completed',
        runType: 'DeltaImport',
        stats: { objectsCreated: 1, objectsUpdated: 1, objectsDeleted: deletedNow, errors: 0 },
      });
      if (v.deletes === 'anchorDiff') {
        // The 1st delta after the full import does not diff anchors; the 2nd does.
        expect((await listMesh(`${p}005`)).totalCount).toBe(1);
        const second = await runImport(rt, id, { runType: 'DeltaImport' });
        expect(second).toMatchObject({ status: 'Completed', stats: { objectsCreated: 0, objectsUpdated: 0, objectsDeleted: 1, errors: 0 } });
      }
      mesh = await meshWith(p, 5, [`${p}001`, `${p}002`, `${p}003`, `${p}004`, `${p}950`]);
      await eventually(async () => expect((await listMesh(`${p}003`)).items[0].attributeValues.mail).toBe('li.new@example.test'));
      await eventually(async () =>
        expect((await detail(mesh.get(`${p}950`).meshObjectId)).relationships).toEqual([
          expect.objectContaining({ relationshipType: 'manager', targetMeshObjectId: mesh.get(`${p}001`).meshObjectId, targetAnchorValue: `${p}001` }),
        ]),
      );

      // Nothing changed since: the next delta changes nothing.
      const idle = await runImport(rt, id, { runType: 'DeltaImport' });
      expect(idle).toMatchObject({ status: 'Completed', stats: { objectsCreated: 0, objectsUpdated: 0, objectsDeleted: 0, errors: 0 } });
    });
  }

  test(`${label}: export insert, update and delete to a second database, each confirmed by an import; injection strings stay literal`, async () => {
    const hr = await fixture();
    const evil: ContractPerson = {
      key: "H9'--",
      givenName: INJECTION,
      sn: "Robert'); DROP TABLE people_proxy;--",
      mail: "'; DELETE FROM people; --",
      manager: 'H001',
      container: 'Sales',
    };
    await hr.seed([...people('H'), evil]);
    const hrId = await createConnector('HR export source', hr.config());
    await sourceRules(hrId);
    const target = await fixture();
    const targetId = await createConnector('Target database', target.config({ provisioningCondition: 'source.employeeId.startsWith("H")' }));
    const out = (sourceAttribute: string, targetAttribute: string) =>
      rule(rt, { ruleType: 'FlowRule', connectorId: targetId, direction: 'outbound', sourceAttribute, targetAttribute, confidence: 50 });
    for (const [s, t] of [
      ['employeeId', 'employee_id'],
      ['givenName', 'given_name'],
      ['sn', 'sn'],
      ['mail', 'mail'],
      ['managerId', 'manager_employee_id'],
      ['department', 'department'],
    ])
      await out(s, t);
    const byKey = (a: Record<string, unknown>, b: Record<string, unknown>) => (String(a.employee_id) < String(b.employee_id) ? -1 : 1);
    const rows = async () => (await target.exec('SELECT employee_id, given_name, sn, mail, manager_employee_id, department FROM people')).sort(byKey);
    const expected = (ps: ContractPerson[]) =>
      ps
        .map((x) => ({
          employee_id: x.key,
          given_name: x.givenName,
          sn: x.sn,
          mail: x.mail ?? null,
          manager_employee_id: x.manager ?? null,
          department: x.container ?? null,
        }))
        .sort(byKey);

    expect(await runImport(rt, hrId)).toMatchObject({ status: 'Completed', stats: { objectsCreated: 6, errors: 0 } });
    const mesh = await meshWith('H', 6);
    expect(mesh.get("H9'--").attributeValues).toMatchObject({ givenName: INJECTION, sn: evil.sn, mail: evil.mail });

    // insert
    const add = await runExport(rt, targetId);
    expect(add).toMatchObject({ status: 'Completed', runType: 'Export', stats: { objectsCreated: 6, objectsUpdated: 0, objectsDeleted: 0, errors: 0 } });
    expect(await rows()).toEqual(expected([...people('H'), evil]));
    const confirmAdd = await runImport(rt, targetId);
    expect(confirmAdd).toMatchObject({ status: 'Completed', stats: { objectsProcessed: 6, errors: 0 } });
    expect(confirmAdd.errors ?? []).toEqual([]);
    expect(await runExport(rt, targetId)).toMatchObject({ status: 'Completed', stats: { objectsCreated: 0, objectsUpdated: 0, objectsDeleted: 0, errors: 0 } });

    // update (one of them to another injection string)
    await hr.update('H003', { mail: 'li.changed@example.test' });
    await hr.update("H9'--", { mail: ":mail' OR '1'='1" });
    expect(await runImport(rt, hrId, { runType: 'DeltaImport' })).toMatchObject({ status: 'Completed', stats: { objectsUpdated: 2, errors: 0 } });
    await eventually(async () => expect((await listMesh('H003')).items[0].attributeValues.mail).toBe('li.changed@example.test'));
    const upd = await runExport(rt, targetId);
    expect(upd).toMatchObject({ status: 'Completed', stats: { objectsCreated: 0, objectsUpdated: 2, objectsDeleted: 0, errors: 0 } });
    const changed = people('H').map((x) => (x.key === 'H003' ? { ...x, mail: 'li.changed@example.test' } : x));
    expect(await rows()).toEqual(expected([...changed, { ...evil, mail: ":mail' OR '1'='1" }]));
    const confirmUpd = await runImport(rt, targetId, { runType: 'DeltaImport' });
    expect(confirmUpd).toMatchObject({ status: 'Completed', stats: { errors: 0 } });
    expect(confirmUpd.errors ?? []).toEqual([]);
    expect(await runExport(rt, targetId)).toMatchObject({ status: 'Completed', stats: { objectsCreated: 0, objectsUpdated: 0, objectsDeleted: 0, errors: 0 } });

    // delete: gone from HR, the provisioned link does not keep the mesh object, the export deprovisions it
    await hr.remove('H005');
    expect(await runImport(rt, hrId, { runType: 'DeltaImport' })).toMatchObject({ status: 'Completed', stats: { objectsDeleted: 1, errors: 0 } });
    await meshWith('H', 5, ['H001', 'H002', 'H003', 'H004', "H9'--"]);
    const del = await runExport(rt, targetId);
    expect(del).toMatchObject({ status: 'Completed', stats: { objectsCreated: 0, objectsUpdated: 0, objectsDeleted: 1, errors: 0 } });
    expect(await rows()).toEqual(expected([...changed.filter((x) => x.key !== 'H005'), { ...evil, mail: ":mail' OR '1'='1" }]));
    const confirmDel = await runImport(rt, targetId, { runType: 'DeltaImport' });
    expect(confirmDel).toMatchObject({ status: 'Completed', stats: { errors: 0 } });
    expect(confirmDel.errors ?? []).toEqual([]);
    expect(await runExport(rt, targetId)).toMatchObject({ status: 'Completed', stats: { objectsCreated: 0, objectsUpdated: 0, objectsDeleted: 0, errors: 0 } });

    // The injection strings did nothing: every table is still there in both databases.
    for (const db of [hr, target]) {
      expect(await db.exec('SELECT COUNT(*) AS n FROM people_proxy')).toHaveLength(1);
      expect(Number((await db.exec('SELECT COUNT(*) AS n FROM people'))[0].n)).toBe(6 - 1);
    }
  });

  test(`${label}: a wrong password is refused at create (400, nothing stored, no secret in the answer)`, async () => {
    const f = await fixture();
    const before = await rt.call('GET', 'connectors');
    const wrong = 'wrong-' + f.server.password;
    const res = await rt.call('POST', 'connectors', { body: { name: 'Wrong password', type: 'sql', config: f.config({ password: wrong }) } });
    expect(res.status).toBe(400);
    expect(res.body).toMatchObject({ code: 'validation_failed' });
    expect(res.body.detail).toMatch(/The test connection failed, nothing was saved: .*credentials/);
    expect(res.text).not.toContain(wrong);
    expect(res.text).not.toContain(f.server.password);
    const after = await rt.call('GET', 'connectors');
    expect(after.body).toEqual(before.body);
  });

  test(`${label}: the server killed in the middle of a full import: run Failed, the watermark kept${restart ? '; after a restart the next delta goes on from it' : ''}`, async () => {
    const f = await fixture();
    await f.seed(people('K'));
    const id = await createConnector('HR gone', f.config());
    await sourceRules(id);
    expect(await runImport(rt, id)).toMatchObject({ status: 'Completed', stats: { objectsCreated: 5 } });
    const kept = (await readSyncState(id)).watermark;
    expect(kept).toEqual(expect.any(String));

    // 6,000 rows: three pages of the engine's 2,000; the server dies once the first page is committed.
    await f.exec(
      f.server.dialect === 'postgres'
        ? "INSERT INTO people (employee_id, given_name, sn) SELECT 'KB' || lpad(i::text, 5, '0'), 'Bulk', 'Row' || i FROM generate_series(1, 6000) i"
        : "INSERT INTO people (employee_id, given_name, sn) SELECT CONCAT('KB', LPAD(seq, 5, '0')), 'Bulk', CONCAT('Row', seq) FROM seq_1_to_6000",
    );
    const started = await rt.call('POST', `connectors/${id}/import`, { body: { runType: 'FullImport' } });
    expect(started.status).toBe(202);
    const runId = started.body.runId as string;
    for (;;) {
      const r = await rt.call('GET', `runs/${runId}`);
      if (r.body.status !== 'Running' && r.body.status !== 'Queued') throw new Error(`the run ended before the server could be killed: ${r.text}`);
      if (r.body.stats?.objectsProcessed > 0) break;
      await new Promise((res) => setTimeout(res, 100));
    }
    await kill();
    const failed = await waitRun(rt, runId);
    expect(failed.status).toBe('Failed');
    expect(failed.stats.objectsProcessed).toBeLessThan(6005);
    expect(JSON.stringify(failed)).toMatch(/connection_failed|reach the database|closed the connection/);
    expect(JSON.stringify(failed)).not.toContain(f.server.password);
    expect((await readSyncState(id)).watermark).toBe(kept);
    const connector = await rt.call('GET', `connectors/${id}`);
    expect(connector.text).not.toContain(f.server.password);
    if (!restart) return;

    await restart();
    const delta = await runImport(rt, id, { runType: 'DeltaImport' });
    expect(delta).toMatchObject({ status: 'Completed', stats: { objectsDeleted: 0, errors: 0 } });
    // Every row arrives exactly once: what the failed run committed plus what the delta added.
    expect(failed.stats.objectsCreated + delta.stats.objectsCreated).toBe(6000);
    expect((await meshWith('KB', 6000)).size).toBe(200);
    expect((await readSyncState(id)).watermark).not.toBe(kept);
  });
}

describeWithServer('postgres')('sql connector end to end over HTTP (PostgreSQL)', () => {
  let pg: Postgres;
  beforeAll(async () => {
    pg = await startPostgres();
  });
  afterAll(async () => {
    await pg?.stop();
  });
  e2e(
    'postgres',
    () => pgServer(pg),
    () => pg.kill(),
    () => pg.start(),
  );
});

describeWithServer('mariadb')('sql connector end to end over HTTP (MariaDB)', () => {
  let db: MariaDb;
  beforeAll(async () => {
    db = await startMariaDb();
  });
  afterAll(async () => {
    await db?.stop();
  });
  // The MariaDB fixture cannot start again after a kill: the watermark is checked in storage only.
  e2e(
    'mariadb',
    () => mariaServer(db),
    () => db.kill(),
    null,
  );
});
