import { randomBytes } from 'node:crypto';
import { startPostgres, type Postgres } from '../../support/postgres';
import { describeWithServer } from '../../support/servers';
import { rawTable, startService, type ServiceUnderTest } from '../../support/service';
import { createPeopleSchema, peopleConfig, pgServer } from '../sql/sqlFixture';
import { rule, waitRun } from './syncSupport';

/**
 * Two engine instances on one storage account and connector secrets: a connector saved through instance A
 * (its password sealed with the secrets key) runs on instance B, which opens the password with the same key and
 * reads a real PostgreSQL server. A process whose `Secrets:Key` is not the one the storage account's instances
 * use refuses to start, naming the setting, and writes nothing.
 */
jest.setTimeout(180_000);

describeWithServer('postgres')('engine instances sharing one storage account share the secrets key', () => {
  let pg: Postgres;
  let a: ServiceUnderTest;
  let b: ServiceUnderTest;
  beforeAll(async () => {
    pg = await startPostgres();
    a = await startService({ env: { Engine__InstanceName: 'keys-a' } });
    // The support gives a later service on the prefix the first one's key, as an operator must.
    b = await startService({ prefix: a.prefix, env: { Engine__InstanceName: 'keys-b' } });
  });
  afterAll(async () => {
    await b?.dispose();
    await a?.dispose();
    await pg?.stop();
  });

  test('a SQL connector saved through A (password sealed) runs on B and reads the server', async () => {
    const server = pgServer(pg);
    const db = await server.newDatabase();
    await createPeopleSchema(server, db);
    for (const id of ['K1', 'K2', 'K3']) await server.exec(db, 'INSERT INTO people (employee_id, given_name, sn) VALUES (?, ?, ?)', [id, `G${id}`, `S${id}`]);
    const created = await a.call('POST', 'connectors', {
      body: { name: 'Keys PG', type: 'sql', config: peopleConfig(server, db, { multiValueQueries: undefined, exportStatements: undefined }) },
    });
    expect(created.status).toBe(201);
    expect(JSON.stringify(created.body)).not.toContain(server.password);
    const c = created.body.id as string;
    await rule(a, { ruleType: 'ProjectionRule', connectorId: c, sourceAttribute: 'employee_id' });
    const idB = ((await a.call('GET', 'instances')).body.items as { id: string; name: string }[]).find((i) => i.name === 'keys-b')!.id;
    expect((await a.call('PUT', `connectors/${c}/instance`, { body: { instanceId: idB } })).status).toBe(200);

    const res = await a.call('POST', `connectors/${c}/import`, { body: { runType: 'FullImport' } });
    expect(res.status).toBe(202);
    expect(res.body.instanceName).toBe('keys-b');
    expect(await waitRun(a, res.body.runId)).toMatchObject({ status: 'Completed', instanceName: 'keys-b', stats: { objectsCreated: 3 } });
  });

  test('a third process with another Secrets:Key refuses to start and names the setting; nothing of it is registered', async () => {
    const before = ((await a.call('GET', 'instances')).body.items as unknown[]).length;
    const checkRow = async () => {
      const client = await rawTable('SecretsKeyCheck');
      const e = await client.getEntity<{ check: string }>('key', 'check');
      return e.check;
    };
    const check = await checkRow();
    const err = await startService({
      prefix: a.prefix,
      env: { Engine__InstanceName: 'keys-c', Secrets__Key: randomBytes(32).toString('base64') },
    }).then(
      () => null,
      (e: Error) => e.message,
    );
    expect(err).toMatch(/Configuration error in setting 'Secrets:Key': is not the key the other engine instances on this storage account use/);
    expect(await checkRow()).toBe(check);
    const names = ((await a.call('GET', 'instances')).body.items as { name: string }[]).map((i) => i.name);
    expect(names).not.toContain('keys-c');
    expect(names).toHaveLength(before);
  });
});
