import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { connectorImplementation } from '../../../lib/connectors/registry';
import { hasExport, type Connector, type Export, type ExportChange, type ExportResult, type ObjectError } from '../../../lib/connectors/sdk';
import type { SqlConfig } from '../../../lib/connectors/sql/schema';
import { startMariaDb, type MariaDb } from '../../support/mariadb';
import { startPostgres, type Postgres } from '../../support/postgres';
import { describeWithServer } from '../../support/servers';
import { STAFF_QUERY, STAFF_STATEMENTS, STAFF_TABLE } from '../../support/tutorialDesign';

/**
 * The SQL connector's export against the tutorial's `staff` table on a real PostgreSQL (docs/tutorial.md): an
 * UPDATE that sets every column, `manager_id` a reference to another row with a foreign key checked at COMMIT
 * (DEFERRABLE INITIALLY DEFERRED). The connector is made through the registry, as the engine makes it. The
 * cases that do not need a deferred key run on MariaDB too (its foreign keys are checked at once).
 *
 * - An update that changes only manager_id keeps the other columns: parameters come from the change, then the
 *   change's `state` (the intended full state), then `previous`.
 * - A foreign key refused at COMMIT is a per-row error naming the row and the key, and the other rows land.
 * - An add of an existing key is `already_exists` carrying the row that holds it (`existing`), which an update
 *   by that anchor then takes over.
 * - A reference column given as a one-element array is bound as its value, not as JSON text.
 */

function errorOf(r: ExportResult): ObjectError {
  if (r.status !== 'error') throw new Error(`expected an error result, got ${JSON.stringify(r)}`);
  return r.error;
}

/** A started server as these tests use it. */
interface Server {
  dialect: 'postgres' | 'mysql';
  host: string;
  port: number;
  user: string;
  password: string;
  query(text: string, values: unknown[], database: string): Promise<Record<string, unknown>[]>;
  createDatabase(name: string): Promise<string>;
}

function staffExport(label: string, server: () => Server) {
  let pg: Server;
  let db: string;
  let stateDir: string;
  let counter = 0;
  let connector: Connector & Export;

  const config = (): SqlConfig => ({
    dialect: pg.dialect,
    host: pg.host,
    port: pg.port,
    database: db,
    user: pg.user,
    password: pg.password,
    anchorColumn: 'employee_id',
    fullImportQuery: STAFF_QUERY,
    referenceColumns: { manager_id: 'User' },
    exportStatements: STAFF_STATEMENTS,
    timeoutSeconds: 10,
  });

  const rows = async () => pg.query('SELECT employee_id, given_name, surname, mail, department, manager_id FROM staff ORDER BY employee_id', [], db);

  const person = (id: string, manager: string | null, extra: Record<string, string> = {}) => ({
    employee_id: id,
    given_name: `Given ${id}`,
    surname: `Surname ${id}`,
    mail: `${id.toLowerCase()}@example.test`,
    department: 'Research',
    manager_id: manager,
    ...extra,
  });

  const add = (attributes: Record<string, string | null>): ExportChange => ({ kind: 'add', anchor: attributes.employee_id!, objectType: 'User', attributes });

  beforeEach(async () => {
    pg = server();
    db = await pg.createDatabase(`staff_${process.pid}_${++counter}`);
    await pg.query(
      pg.dialect === 'postgres'
        ? STAFF_TABLE
        : `CREATE TABLE staff (
             employee_id varchar(20) PRIMARY KEY, given_name varchar(200), surname varchar(200), mail varchar(200), department varchar(200),
             manager_id varchar(20), FOREIGN KEY (manager_id) REFERENCES staff (employee_id)) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin`,
      [],
      db,
    );
    stateDir = mkdtempSync(path.join(os.tmpdir(), 'sql-export-state-'));
    const def = connectorImplementation('sql');
    if (!def) throw new Error('no sql connector registered');
    const c = def.create(config() as unknown as Record<string, unknown>, { connectorId: `staff${counter}`, stateDirectory: stateDir });
    if (!hasExport(c)) throw new Error('the sql connector has no export');
    connector = c;
  });
  afterEach(async () => {
    await connector.close();
    rmSync(stateDir, { recursive: true, force: true });
  });

  test(`${label}: an update that changes only manager_id keeps every other column (values from the change, then state, then previous)`, async () => {
    // The report arrives in the same export as its new manager, without manager_id; the second pass sets it.
    const report = person('E1002', null);
    const results = await connector.exportBatch!([add(person('E1001', null)), add(report)]);
    expect(results.map((r) => r.status)).toEqual(['success', 'success']);
    const [second] = await connector.exportBatch!([
      {
        kind: 'update',
        anchor: 'E1002',
        objectType: 'User',
        attributes: { manager_id: 'E1001' },
        // What the engine last exported: the add, without manager_id.
        previous: { employee_id: 'E1002', given_name: 'Given E1002' },
        // What the outbound rules give the object now (the engine's `state`).
        state: { ...report, manager_id: 'E1001' },
      },
    ]);
    expect(second).toEqual({ status: 'success', anchor: 'E1002' });
    expect((await rows()).find((r) => r.employee_id === 'E1002')).toEqual({ ...report, manager_id: 'E1001' });
  });

  test(`${label}: the change wins over state, and state over previous`, async () => {
    await connector.export(add(person('E1101', null)));
    await connector.export(add(person('E1102', null)));
    const r = await connector.export({
      kind: 'update',
      anchor: 'E1102',
      objectType: 'User',
      attributes: { mail: 'new@example.test' },
      state: { ...person('E1102', null), mail: 'state@example.test', surname: 'From State' },
      previous: { ...person('E1102', null), surname: 'From Previous', department: 'From Previous' },
    });
    expect(r.status).toBe('success');
    expect((await rows()).find((x) => x.employee_id === 'E1102')).toEqual({
      ...person('E1102', null),
      mail: 'new@example.test',
      surname: 'From State',
    });
  });

  // MariaDB checks its foreign keys at once: only PostgreSQL defers them to the COMMIT.
  if (label === 'postgres')
    test(`${label}: a foreign key refused at COMMIT is a per-row error naming the row and the key; the other rows land, in order`, async () => {
      const results = await connector.exportBatch!([
        add(person('E1001', null)),
        // Refers to the row before it in the batch: still works when the batch is retried row by row.
        add(person('E1002', 'E1001')),
        add(person('E1098', 'E1097')),
        add(person('E1003', 'E1002')),
      ]);
      expect(results.map((r) => r.status)).toEqual(['success', 'success', 'error', 'success']);
      const e = errorOf(results[2]);
      expect(results[2].anchor).toBe('E1098');
      expect(e.anchor).toBe('E1098');
      expect(e.code).toBe('constraint_violation');
      expect(e.retriable).toBe(false);
      expect(e.message).toContain("employee_id 'E1098'");
      expect(e.message).toContain('Key (manager_id)=(E1097) is not present in table "staff".');
      expect(e.message).not.toContain(pg.password);
      expect((await rows()).map((r) => [r.employee_id, r.manager_id])).toEqual([
        ['E1001', null],
        ['E1002', 'E1001'],
        ['E1003', 'E1002'],
      ]);
      // Run again (the engine retries it): the same row-level error, not a failed run.
      const [again] = await connector.exportBatch!([add(person('E1098', 'E1097'))]);
      expect(errorOf(again).message).toContain('Key (manager_id)=(E1097)');
    });

  test(`${label}: an add of an existing key is already_exists with the existing row; an update by its anchor takes it over`, async () => {
    await connector.export(add(person('E1201', null)));
    await connector.export(add(person('E1202', 'E1201', { mail: 'before@example.test' })));
    const r = await connector.export(add(person('E1202', null, { mail: 'after@example.test' })));
    const e = errorOf(r);
    expect(e.code).toBe('already_exists');
    expect(e.message).toMatch(/^A row with the anchor employee_id 'E1202' already exists/);
    expect(r.status === 'error' && r.existing).toEqual({
      anchor: 'E1202',
      attributes: person('E1202', 'E1201', { mail: 'before@example.test' }),
    });
    const anchor = r.status === 'error' ? r.existing!.anchor : '';
    const taken = await connector.export({
      kind: 'update',
      anchor,
      objectType: 'User',
      attributes: { mail: 'after@example.test', manager_id: null },
      state: person('E1202', null, { mail: 'after@example.test' }),
    });
    expect(taken).toEqual({ status: 'success', anchor: 'E1202' });
    expect((await rows()).find((x) => x.employee_id === 'E1202')).toEqual(person('E1202', null, { mail: 'after@example.test' }));
  });

  test(`${label}: a reference column given a one-element array binds its value; several values are an error naming the column`, async () => {
    await connector.export(add(person('E1301', null)));
    const [one, several, other] = await connector.exportBatch!([
      { kind: 'add', anchor: 'E1302', objectType: 'User', attributes: { ...person('E1302', null), manager_id: ['E1301'] } },
      { kind: 'add', anchor: 'E1303', objectType: 'User', attributes: { ...person('E1303', null), manager_id: ['E1301', 'E1302'] } },
      add(person('E1304', 'E1301')),
    ]);
    expect(one).toEqual({ status: 'success', anchor: 'E1302' });
    const e = errorOf(several);
    expect(e.code).toBe('object_error');
    expect(e.anchor).toBe('E1303');
    expect(e.message).toContain('manager_id');
    expect(other.status).toBe('success');
    expect((await rows()).map((r) => [r.employee_id, r.manager_id])).toEqual([
      ['E1301', null],
      ['E1302', 'E1301'],
      ['E1304', 'E1301'],
    ]);
    // An update with a one-element array too.
    const u = await connector.export({
      kind: 'update',
      anchor: 'E1304',
      objectType: 'User',
      attributes: { manager_id: ['E1302'] },
      state: person('E1304', 'E1302'),
    });
    expect(u.status).toBe('success');
    expect((await rows()).find((x) => x.employee_id === 'E1304')!.manager_id).toBe('E1302');
  });
}

describeWithServer('postgres')('SQL connector export of whole rows on PostgreSQL (the tutorial staff table)', () => {
  let pg: Postgres;
  beforeAll(async () => {
    pg = await startPostgres();
  });
  afterAll(async () => {
    await pg?.stop();
  });
  staffExport('postgres', () => ({ dialect: 'postgres', ...pick(pg), query: (t, v, d) => pg.query(t, v, d), createDatabase: (n) => pg.createDatabase(n) }));
});

describeWithServer('mariadb')('SQL connector export of whole rows on MariaDB', () => {
  let m: MariaDb;
  beforeAll(async () => {
    m = await startMariaDb();
  });
  afterAll(async () => {
    await m?.stop();
  });
  staffExport('mariadb', () => ({ dialect: 'mysql', ...pick(m), query: (t, v, d) => m.query(t, v, d), createDatabase: (n) => m.createDatabase(n) }));
});

function pick(s: { host: string; port: number; user: string; password: string }) {
  return { host: s.host, port: s.port, user: s.user, password: s.password };
}
