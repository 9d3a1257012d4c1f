import { connectorContract } from '../../support/connectorContract';
import { startMariaDb, type MariaDb } from '../../support/mariadb';
import { startPostgres, type Postgres } from '../../support/postgres';
import { describeWithServer } from '../../support/servers';
import { mariaServer, pgServer, SqlContractFixture } from './sqlFixture';

/**
 * The shared connector contract on real servers: PostgreSQL (row-version delta, deletes from a log table
 * through the `query` detection) and MariaDB (timestamp delta with an overlap window, deletes by anchor diff).
 */
describeWithServer('postgres')('sql connector on PostgreSQL', () => {
  let pg: Postgres;
  beforeAll(async () => {
    pg = await startPostgres();
  });
  afterAll(async () => {
    await pg?.stop();
  });
  connectorContract({
    name: 'sql (postgres)',
    capabilities: { delta: true, rename: false, export: true, malformed: true },
    makeFixture: () => SqlContractFixture.create(pgServer(pg)),
  });
});

describeWithServer('mariadb')('sql connector on MariaDB', () => {
  let db: MariaDb;
  beforeAll(async () => {
    db = await startMariaDb();
  });
  afterAll(async () => {
    await db?.stop();
  });
  connectorContract({
    name: 'sql (mariadb)',
    capabilities: { delta: true, rename: false, export: true, malformed: true },
    makeFixture: () => SqlContractFixture.create(mariaServer(db)),
  });
});
