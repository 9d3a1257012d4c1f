import path from 'node:path';
import { PEOPLE } from '../../support/connectorContract';
import { startPostgres, type Postgres } from '../../support/postgres';
import { describeWithServer } from '../../support/servers';
import { startService, type ServiceUnderTest } from '../../support/service';
import { meshByAnchor, rule, runImport, valueOf } from '../sync/syncSupport';
import { pgServer, SqlContractFixture } from './sqlFixture';

/**
 * The SQL connector through the sync engine over HTTP: a connector of type `sql` created with the Admin API,
 * full and delta imports as runs of the running service, manager references resolved to relationships.
 *
 * The service does not register type `sql` by itself yet (no app module imports lib/connectors/sql): the
 * service process here preloads it with NODE_OPTIONS=--require, which is what that import will do.
 */
jest.setTimeout(180_000);

describeWithServer('postgres')('sql connector through the engine (PostgreSQL)', () => {
  let pg: Postgres;
  let rt: ServiceUnderTest;
  let f: SqlContractFixture;
  let id = '';

  beforeAll(async () => {
    pg = await startPostgres();
    f = await SqlContractFixture.create(pgServer(pg));
    await f.seed(PEOPLE);
    const preload = path.resolve(__dirname, '../../../dist/lib/connectors/sql/index.js');
    rt = await startService({ env: { NODE_OPTIONS: `${process.env.NODE_OPTIONS ?? ''} --require ${preload}`.trim() } });
    const res = await rt.call('POST', 'connectors', { body: { name: 'HR database', type: 'sql', config: f.config() } });
    if (res.status !== 201) throw new Error(`create connector: ${res.status} ${res.text}`);
    id = res.body.id as string;
    expect(JSON.stringify(res.body)).not.toContain(pg.password);
    await rule(rt, { ruleType: 'ProjectionRule', connectorId: id, sourceAttribute: 'employee_id', objectType: 'User' });
    for (const [s, t] of [['given_name', 'givenName'], ['sn', 'sn'], ['mail', 'mail'], ['manager_employee_id', 'managerId'], ['proxyAddresses', 'proxyAddresses']]) {
      await rule(rt, { ruleType: 'FlowRule', connectorId: id, sourceAttribute: s, targetAttribute: t, confidence: 50 });
    }
    await rule(rt, { ruleType: 'MeshComposerRule', relationshipType: 'manager', sourceAttribute: 'managerId' });
  });
  afterAll(async () => {
    await rt?.dispose();
    await f?.cleanup();
    await pg?.stop();
  });

  test('a full import projects every row, with multi-valued attributes and manager relationships', async () => {
    const run = await runImport(rt, id);
    expect(run).toMatchObject({ status: 'Completed', runType: 'FullImport', stats: { objectsProcessed: PEOPLE.length, objectsCreated: PEOPLE.length, errors: 0 } });
    const mesh = await meshByAnchor();
    expect([...mesh.keys()].sort()).toEqual(PEOPLE.map((p) => p.key).sort());
    expect(valueOf(mesh.get('E005'), 'sn')).toBe('Ørsted "Quote"');
    expect(mesh.get('E004')!.relationships).toEqual([expect.objectContaining({ type: 'manager', targetId: mesh.get('E002')!.id })]);
  });

  test('a delta import brings an update, an add and a delete', async () => {
    await f.seed([...PEOPLE, { key: 'E950', givenName: 'Delta', sn: 'Added', manager: 'E001' }]);
    await f.update('E003', { mail: 'li.new@example.test' });
    await f.remove('E005');
    const run = await runImport(rt, id, { runType: 'DeltaImport' });
    expect(run).toMatchObject({ status: 'Completed', runType: 'DeltaImport', stats: { objectsCreated: 1, objectsUpdated: 1, objectsDeleted: 1, errors: 0 } });
    const mesh = await meshByAnchor();
    expect(valueOf(mesh.get('E003'), 'mail')).toBe('li.new@example.test');
    expect(mesh.get('E950')!.relationships).toEqual([expect.objectContaining({ type: 'manager', targetId: mesh.get('E001')!.id })]);
    expect(mesh.has('E005')).toBe(false);
  });

  test('the database gone: the run fails with connection_failed and the watermark is kept for the next delta', async () => {
    await pg.kill();
    const failed = await runImport(rt, id, { runType: 'DeltaImport' });
    expect(failed.status).toBe('Failed');
    expect(JSON.stringify(failed)).toMatch(/connection_failed|reach the database/);
    expect(JSON.stringify(failed)).not.toContain(pg.password);
    await pg.start();
    await f.update('E001', { sn: 'Byron' });
    const run = await runImport(rt, id, { runType: 'DeltaImport' });
    expect(run).toMatchObject({ status: 'Completed', stats: { objectsUpdated: 1, errors: 0 } });
    expect(valueOf((await meshByAnchor()).get('E001'), 'sn')).toBe('Byron');
  });
});
