import { createHash } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { SqlConnector } from '../../../lib/connectors/sql';
import type { SqlConfig } from '../../../lib/connectors/sql/schema';
import { valuesOf, type ConnectorObject, type ExportChange } from '../../../lib/connectors/sdk';
import type { ContractFixture, ContractPerson, ContractReading } from '../../support/connectorContract';
import type { MariaDb } from '../../support/mariadb';
import type { Postgres } from '../../support/postgres';

/** A started server of either kind, seen the same way by the SQL tests. */
export interface SqlServer {
  dialect: 'postgres' | 'mysql';
  host: string;
  port: number;
  user: string;
  password: string;
  /** A fresh empty database. */
  newDatabase(): Promise<string>;
  /** Run statements (`;`-separated) with `?` placeholders in `db`. */
  exec(db: string, sql: string, values?: unknown[]): Promise<Record<string, unknown>[]>;
}

let dbCounter = 0;

export function pgServer(pg: Postgres): SqlServer {
  return {
    dialect: 'postgres',
    host: pg.host,
    port: pg.port,
    user: pg.user,
    password: pg.password,
    newDatabase: () => pg.createDatabase(`t${process.pid}_${++dbCounter}`),
    exec: (db, sql, values = []) => {
      let i = 0;
      return pg.query(
        sql.replace(/\?/g, () => `$${++i}`),
        values,
        db,
      );
    },
  };
}

export function mariaServer(m: MariaDb): SqlServer {
  return {
    dialect: 'mysql',
    host: m.host,
    port: m.port,
    user: m.user,
    password: m.password,
    newDatabase: () => m.createDatabase(`t${process.pid}_${++dbCounter}`),
    exec: (db, sql, values = []) => m.query(sql, values, db),
  };
}

/**
 * The `people` schema: `people` (anchor employee_id, nullable so a row without one can exist), a child table
 * `people_proxy` for the multi-valued proxyAddresses, and a delta column: in PostgreSQL a sequence-backed
 * `row_version` set by a trigger, and a `people_deleted` log filled by a delete trigger; in MariaDB an
 * `updated_at` DATETIME(6) set on every change (timestamp delta with an overlap window).
 */
export async function createPeopleSchema(server: SqlServer, db: string): Promise<void> {
  if (server.dialect === 'postgres') {
    await server.exec(
      db,
      `CREATE SEQUENCE people_version;
       CREATE TABLE people (id serial PRIMARY KEY, employee_id varchar(20) UNIQUE, given_name text, sn text, mail text,
         manager_employee_id varchar(20), department text, deleted boolean NOT NULL DEFAULT false,
         updated_at timestamptz NOT NULL DEFAULT clock_timestamp(), row_version bigint NOT NULL DEFAULT nextval('people_version'));
       CREATE TABLE people_proxy (employee_id varchar(20) NOT NULL, address text NOT NULL, PRIMARY KEY (employee_id, address));
       CREATE TABLE people_deleted (employee_id varchar(20) NOT NULL, row_version bigint NOT NULL DEFAULT nextval('people_version'));
       CREATE FUNCTION people_touch() RETURNS trigger LANGUAGE plpgsql AS $$
       BEGIN NEW.updated_at := clock_timestamp(); NEW.row_version := nextval('people_version'); RETURN NEW; END $$;
       CREATE TRIGGER people_touch BEFORE UPDATE ON people FOR EACH ROW EXECUTE FUNCTION people_touch();
       CREATE FUNCTION people_gone() RETURNS trigger LANGUAGE plpgsql AS $$
       BEGIN IF OLD.employee_id IS NOT NULL THEN INSERT INTO people_deleted (employee_id) VALUES (OLD.employee_id); END IF; RETURN OLD; END $$;
       CREATE TRIGGER people_gone AFTER DELETE ON people FOR EACH ROW EXECUTE FUNCTION people_gone();`,
    );
  } else {
    await server.exec(
      db,
      `CREATE TABLE people (id int AUTO_INCREMENT PRIMARY KEY, employee_id varchar(20) UNIQUE, given_name varchar(200), sn varchar(200),
         mail varchar(200), manager_employee_id varchar(20), department varchar(100), deleted boolean NOT NULL DEFAULT false,
         updated_at datetime(6) NOT NULL DEFAULT CURRENT_TIMESTAMP(6) ON UPDATE CURRENT_TIMESTAMP(6),
         row_version bigint NOT NULL DEFAULT 0) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin;
       CREATE TABLE people_proxy (employee_id varchar(20) NOT NULL, address varchar(200) NOT NULL, PRIMARY KEY (employee_id, address)) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin;
       CREATE TABLE people_deleted (employee_id varchar(20) NOT NULL, deleted_at datetime(6) NOT NULL DEFAULT CURRENT_TIMESTAMP(6));
       CREATE TRIGGER people_gone AFTER DELETE ON people FOR EACH ROW INSERT INTO people_deleted (employee_id) VALUES (OLD.employee_id);`,
    );
  }
}

/** The SQL connector configuration over the people schema; `overrides` replaces fields. */
export function peopleConfig(server: SqlServer, db: string, overrides: Partial<SqlConfig> = {}): SqlConfig {
  const pg = server.dialect === 'postgres';
  const deltaColumn = pg ? 'row_version' : 'updated_at';
  const jsonRows = (param: string) =>
    pg ? `json_array_elements_text(CAST(:${param} AS json)) AS j(v)` : `JSON_TABLE(COALESCE(:${param}, '[]'), '$[*]' COLUMNS (v VARCHAR(200) PATH '$')) AS j`;
  return {
    dialect: server.dialect,
    host: server.host,
    port: server.port,
    database: db,
    user: server.user,
    password: server.password,
    objectType: 'User',
    anchorColumn: 'employee_id',
    fullImportQuery: `SELECT employee_id, given_name, sn, mail, manager_employee_id, department, ${deltaColumn} FROM people WHERE deleted = false`,
    deltaImportQuery: `SELECT employee_id, given_name, sn, mail, manager_employee_id, department, ${deltaColumn} FROM people WHERE ${pg ? 'row_version > :watermark' : 'updated_at >= :watermark'} AND deleted = false`,
    deltaColumn,
    ...(pg ? {} : { deltaOverlapSeconds: 5 }),
    deleteDetection: pg
      ? { mode: 'query', query: 'SELECT employee_id FROM people_deleted WHERE row_version > :watermark' }
      : { mode: 'anchorDiff', everyNthDelta: 1 },
    referenceColumns: { manager_employee_id: 'User' },
    multiValueQueries: { proxyAddresses: 'SELECT employee_id, address FROM people_proxy' },
    exportStatements: {
      insert: `INSERT INTO people (employee_id, given_name, sn, mail, manager_employee_id, department)
                 VALUES (:employee_id, :given_name, :sn, :mail, :manager_employee_id, :department);
               INSERT INTO people_proxy (employee_id, address) SELECT :employee_id, j.v FROM ${jsonRows('proxyAddresses')}`,
      update: `UPDATE people SET mail = COALESCE(:mail, mail), given_name = COALESCE(:given_name, given_name), sn = COALESCE(:sn, sn)${pg ? '' : ', updated_at = CURRENT_TIMESTAMP(6)'}
                 WHERE employee_id = :anchor;
               DELETE FROM people_proxy WHERE employee_id = :anchor AND address IN (SELECT j.v FROM ${jsonRows('proxyAddresses__remove')});
               INSERT INTO people_proxy (employee_id, address) SELECT :anchor, j.v FROM ${jsonRows('proxyAddresses__add')}`,
      delete: 'DELETE FROM people_proxy WHERE employee_id = :anchor; DELETE FROM people WHERE employee_id = :anchor',
    },
    timeoutSeconds: 10,
    ...overrides,
  } as SqlConfig;
}

const columns = (p: Partial<ContractPerson>) => {
  const out: Record<string, unknown> = {};
  if (p.givenName !== undefined) out.given_name = p.givenName;
  if (p.sn !== undefined) out.sn = p.sn;
  if ('mail' in p) out.mail = p.mail ?? null;
  if ('manager' in p) out.manager_employee_id = p.manager ?? null;
  if (p.container !== undefined) out.department = p.container;
  return out;
};

/** The contract fixture over one fresh database. */
export class SqlContractFixture implements ContractFixture {
  readonly stateDir = mkdtempSync(path.join(os.tmpdir(), 'sql-state-'));
  readonly secrets: string[];
  private known = new Map<string, string>();

  constructor(
    readonly server: SqlServer,
    readonly db: string,
    readonly overrides: Partial<SqlConfig> = {},
  ) {
    this.secrets = [server.password, 'wrong-' + server.password];
  }

  static async create(server: SqlServer, overrides: Partial<SqlConfig> = {}): Promise<SqlContractFixture> {
    const db = await server.newDatabase();
    await createPeopleSchema(server, db);
    return new SqlContractFixture(server, db, overrides);
  }

  config(overrides: Partial<SqlConfig> = {}): SqlConfig {
    return peopleConfig(this.server, this.db, { ...this.overrides, ...overrides });
  }

  /** Connectors with the same overrides share their state (like one stored connector); others do not. */
  connector(overrides: Partial<SqlConfig> = {}): SqlConnector {
    const id = 'c' + createHash('sha256').update(JSON.stringify(overrides)).digest('hex').slice(0, 12);
    const c = new SqlConnector(this.config(overrides), { connectorId: id, stateDirectory: this.stateDir });
    this.made.push(c);
    return c;
  }

  /** The connectors made, closed by cleanup() (an export keeps its connection until the connector closes). */
  private readonly made: SqlConnector[] = [];

  unreachableConnector(): SqlConnector {
    return this.connector({ password: 'wrong-' + this.server.password });
  }

  exec(sql: string, values: unknown[] = []): Promise<Record<string, unknown>[]> {
    return this.server.exec(this.db, sql, values);
  }

  /** Touch a row so its delta column moves (a child-table change must do this to be seen by a delta). */
  private touch(key: string): Promise<unknown> {
    return this.server.dialect === 'postgres'
      ? this.exec('UPDATE people SET given_name = given_name WHERE employee_id = ?', [key])
      : this.exec('UPDATE people SET updated_at = CURRENT_TIMESTAMP(6) WHERE employee_id = ?', [key]);
  }

  /** Insert who is new; rewrite who changed; leave unchanged rows alone (their delta column stays). */
  async seed(people: ContractPerson[]): Promise<void> {
    for (const p of people) {
      const print = JSON.stringify(p);
      if (this.known.get(p.key) === print) continue;
      if (this.known.has(p.key)) {
        await this.update(p.key, { ...p, mail: p.mail ?? undefined, proxyAddresses: p.proxyAddresses ?? [] });
      } else {
        const cols = { employee_id: p.key, ...columns({ ...p, mail: p.mail, manager: p.manager }) };
        await this.exec(
          `INSERT INTO people (${Object.keys(cols).join(', ')}) VALUES (${Object.keys(cols)
            .map(() => '?')
            .join(', ')})`,
          Object.values(cols),
        );
        for (const a of p.proxyAddresses ?? []) await this.exec('INSERT INTO people_proxy (employee_id, address) VALUES (?, ?)', [p.key, a]);
      }
      this.known.set(p.key, print);
    }
  }

  async update(key: string, changes: Partial<Omit<ContractPerson, 'key'>>): Promise<void> {
    const cols = columns(changes);
    if (Object.keys(cols).length) {
      await this.exec(
        `UPDATE people SET ${Object.keys(cols)
          .map((c) => `${c} = ?`)
          .join(', ')} WHERE employee_id = ?`,
        [...Object.values(cols), key],
      );
    }
    if (changes.proxyAddresses) {
      await this.exec('DELETE FROM people_proxy WHERE employee_id = ?', [key]);
      for (const a of changes.proxyAddresses) await this.exec('INSERT INTO people_proxy (employee_id, address) VALUES (?, ?)', [key, a]);
      await this.touch(key);
    }
    this.known.set(key, 'changed');
  }

  async remove(key: string): Promise<void> {
    await this.exec('DELETE FROM people_proxy WHERE employee_id = ?', [key]);
    await this.exec('DELETE FROM people WHERE employee_id = ?', [key]);
    this.known.delete(key);
  }

  async corrupt(): Promise<void> {
    await this.exec("INSERT INTO people (employee_id, given_name, sn) VALUES (NULL, 'No', 'Anchor')");
  }

  read(o: ConnectorObject): ContractReading {
    const a = o.attributes;
    const r: ContractReading = {
      key: String(a.employee_id),
      givenName: a.given_name as string | null,
      sn: a.sn as string | null,
      mail: a.mail as string | null,
      proxyAddresses: valuesOf(a.proxyAddresses).map(String),
    };
    const m = o.references?.manager_employee_id?.[0];
    if (m !== undefined) r.manager = m;
    if (typeof a.department === 'string') r.container = a.department;
    return r;
  }

  exportAdd(p: ContractPerson): ExportChange {
    return {
      kind: 'add',
      anchor: p.key,
      objectType: 'User',
      attributes: {
        employee_id: p.key,
        given_name: p.givenName,
        sn: p.sn,
        mail: p.mail ?? null,
        manager_employee_id: p.manager ?? null,
        department: p.container ?? null,
        proxyAddresses: p.proxyAddresses ?? [],
      },
    };
  }

  exportUpdate(anchor: string, _key: string, change: { mail?: string | null; addProxy?: string[]; removeProxy?: string[] }): ExportChange {
    const ch: ExportChange = { kind: 'update', anchor, objectType: 'User', attributes: {} };
    if (change.mail !== undefined) ch.attributes.mail = change.mail;
    if (change.addProxy) ch.multiValueAdds = { proxyAddresses: change.addProxy };
    if (change.removeProxy) ch.multiValueRemoves = { proxyAddresses: change.removeProxy };
    return ch;
  }

  exportDelete(anchor: string): ExportChange {
    return { kind: 'delete', anchor, objectType: 'User', attributes: {} };
  }

  async cleanup(): Promise<void> {
    await Promise.all(this.made.splice(0).map((c) => c.close()));
    rmSync(this.stateDir, { recursive: true, force: true });
  }
}
