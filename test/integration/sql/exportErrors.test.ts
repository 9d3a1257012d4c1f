import type { ExportResult, ObjectError } from '../../../lib/connectors/sdk';
import { PEOPLE } from '../../support/connectorContract';
import { startMariaDb, type MariaDb } from '../../support/mariadb';
import { startPostgres, type Postgres } from '../../support/postgres';
import { describeWithServer } from '../../support/servers';
import { mariaServer, pgServer, SqlContractFixture, type SqlServer } from './sqlFixture';

/**
 * What an operator reads when the database refuses an exported row because of a unique key: the SDK's
 * `already_exists` and a sentence naming the row's anchor and the key, never the values the database quotes
 * (MySQL's "Duplicate entry '...'", PostgreSQL's "Key (mail)=(...)"): a unique column may hold anything.
 */
function errorOf(r: ExportResult): ObjectError {
  if (r.status !== 'error') throw new Error(`expected an error result, got ${JSON.stringify(r)}`);
  return r.error;
}

function exportErrors(label: string, server: () => SqlServer) {
  let f: SqlContractFixture;
  beforeEach(async () => {
    f = await SqlContractFixture.create(server());
    await f.seed(PEOPLE);
    // A second unique key, on a column whose values the error must not quote.
    await f.exec('CREATE UNIQUE INDEX people_mail_unique ON people (mail)');
  });
  afterEach(async () => {
    await f.cleanup();
  });

  test(`${label}: an insert of an existing anchor is already_exists naming the anchor, without the row's values`, async () => {
    const c = f.connector();
    const [r] = await c.exportBatch([f.exportAdd({ key: 'E001', givenName: 'Secret-Given-Name', sn: 'Licate', mail: 'hidden-value@example.test' })]);
    const e = errorOf(r);
    expect(e.code).toBe('already_exists');
    expect(e.anchor).toBe('E001');
    expect(e.message).toMatch(/^A row with the anchor employee_id 'E001' already exists/);
    for (const v of ['Secret-Given-Name', 'Licate', 'hidden-value@example.test', 'Duplicate entry', 'duplicate key value']) expect(e.message).not.toContain(v);
    for (const s of f.secrets) expect(e.message).not.toContain(s);
    expect(e.retriable).toBe(false);
  });

  test(`${label}: another unique key taken is already_exists naming the anchor and the key, not the value`, async () => {
    const c = f.connector();
    const [added, updated, fine] = await c.exportBatch([
      f.exportAdd({ key: 'E900', givenName: 'New', sn: 'Person', mail: 'ada@example.test' }),
      f.exportUpdate('E002', 'E002', { mail: 'li@example.test' }),
      f.exportAdd({ key: 'E901', givenName: 'Other', sn: 'Person', mail: 'e901@example.test' }),
    ]);
    const a = errorOf(added);
    expect(a.code).toBe('already_exists');
    expect(a.message).toContain("employee_id 'E900'");
    expect(a.message).toContain('people_mail_unique');
    expect(a.message).not.toContain('ada@example.test');
    const u = errorOf(updated);
    expect(u.code).toBe('already_exists');
    expect(u.anchor).toBe('E002');
    expect(u.message).toMatch(/^Updating the row with the anchor employee_id 'E002'/);
    expect(u.message).toContain('people_mail_unique');
    expect(u.message).not.toContain('li@example.test');
    // The other rows of the batch landed.
    expect(fine.status).toBe('success');
    expect(await f.exec('SELECT mail FROM people WHERE employee_id = ?', ['E002'])).toEqual([{ mail: 'jose@example.test' }]);
  });
}

describeWithServer('postgres')('SQL connector export errors on PostgreSQL', () => {
  let pg: Postgres;
  beforeAll(async () => {
    pg = await startPostgres();
  });
  afterAll(async () => {
    await pg?.stop();
  });
  exportErrors('postgres', () => pgServer(pg));
});

describeWithServer('mariadb')('SQL connector export errors on MariaDB', () => {
  let m: MariaDb;
  beforeAll(async () => {
    m = await startMariaDb();
  });
  afterAll(async () => {
    await m?.stop();
  });
  exportErrors('mariadb', () => mariaServer(m));
});
