'use strict';
/**
 * A private PostgreSQL for the SQL benchmarks: initdb + pg_ctl on a free loopback port in a mktemp directory
 * (as the postgres user through runuser when root), fsync off, password auth over TCP, and N rows of hr_people
 * (a manager tree, fan-out 8; a sequence-backed row_version moved by a trigger on every UPDATE).
 */
const { execFileSync } = require('node:child_process');
const { chownSync, mkdtempSync, readdirSync, rmSync, writeFileSync } = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const root = path.resolve(__dirname, '../..');

const QUERY = 'SELECT employee_id, first_name, last_name, email, department, manager_employee_id, row_version FROM hr_people';

/**
 * @param {number} N rows of hr_people.
 * @param {{ seedSql?: (N: number) => string }} [o] `seedSql` replaces the default table and rows (another
 *   shape of hr_people, bench/scale/hr.js); it is run as one multi-statement query.
 */
async function startBenchPostgres(N, o = {}) {
  const { freePort } = require(path.join(root, 'dist/lib/runtime/azurite.js'));
  const dir = mkdtempSync(path.join(os.tmpdir(), 'bench-sql-'));
  const bin = path.join(
    '/usr/lib/postgresql',
    readdirSync('/usr/lib/postgresql')
      .sort((a, b) => a - b)
      .pop(),
    'bin',
  );
  const asRoot = process.getuid && process.getuid() === 0;
  const as = (cmd, args) => execFileSync(asRoot ? 'runuser' : cmd, asRoot ? ['-u', 'postgres', '--', cmd, ...args] : args, { stdio: 'pipe' });
  const password = 'bench-' + Math.random().toString(36).slice(2);
  const data = path.join(dir, 'data');
  writeFileSync(path.join(dir, 'pw'), password + '\n');
  if (asRoot) {
    const uid = Number(execFileSync('id', ['-u', 'postgres']).toString());
    const gid = Number(execFileSync('id', ['-g', 'postgres']).toString());
    chownSync(dir, uid, gid);
    chownSync(path.join(dir, 'pw'), uid, gid);
  }
  const port = await freePort();
  const stop = async () => {
    try {
      as(path.join(bin, 'pg_ctl'), ['-D', data, '-m', 'immediate', 'stop']);
    } catch {
      // not started
    }
    rmSync(dir, { recursive: true, force: true });
  };
  try {
    as(path.join(bin, 'initdb'), [
      '-D',
      data,
      '-U',
      'postgres',
      '--auth-local=trust',
      '--auth-host=scram-sha-256',
      `--pwfile=${path.join(dir, 'pw')}`,
      '-E',
      'UTF8',
      '--locale=C.UTF-8',
      '--no-sync',
    ]);
    as(path.join(bin, 'pg_ctl'), [
      '-D',
      data,
      '-l',
      path.join(dir, 'pg.log'),
      '-w',
      'start',
      '-o',
      `-p ${port} -k ${dir} -c listen_addresses=127.0.0.1 -c fsync=off -c synchronous_commit=off`,
    ]);
    const { Client } = require('pg');
    const admin = new Client({ host: '127.0.0.1', port, user: 'postgres', password, database: 'postgres' });
    await admin.connect();
    const t0 = Date.now();
    await admin.query(
      o.seedSql
        ? o.seedSql(N)
        : `
      CREATE SEQUENCE hr_people_version_seq;
      CREATE TABLE hr_people (id bigserial PRIMARY KEY, employee_id text NOT NULL UNIQUE, first_name text NOT NULL, last_name text NOT NULL,
        email text NOT NULL, department text NOT NULL, manager_employee_id text, updated_at timestamptz NOT NULL DEFAULT now(),
        row_version bigint NOT NULL DEFAULT nextval('hr_people_version_seq'));
      CREATE FUNCTION hr_people_touch() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN NEW.updated_at := clock_timestamp(); NEW.row_version := nextval('hr_people_version_seq'); RETURN NEW; END $$;
      CREATE TRIGGER hr_people_touch BEFORE UPDATE ON hr_people FOR EACH ROW EXECUTE FUNCTION hr_people_touch();
      INSERT INTO hr_people (employee_id, first_name, last_name, email, department, manager_employee_id)
      SELECT 'E' || lpad(i::text, 6, '0'),
             (ARRAY['James','Mary','John','Patricia','Robert','Jennifer','Michael','Linda','William','Elizabeth'])[1 + i % 10],
             (ARRAY['Smith','Johnson','Williams','Brown','Jones','Garcia','Miller','Davis','Rodriguez','Martinez','Lee'])[1 + i % 11],
             'user' || i || '@example.com', (ARRAY['engineering','sales','finance','operations','support'])[1 + i % 5],
             CASE WHEN i = 0 THEN NULL ELSE 'E' || lpad(((i - 1) / 8)::text, 6, '0') END
      FROM generate_series(0, ${N - 1}) AS i;
      CREATE INDEX hr_people_row_version_idx ON hr_people (row_version);
      ANALYZE hr_people;`,
    );
    const generateSeconds = (Date.now() - t0) / 1000;
    return {
      port,
      password,
      admin,
      generateSeconds,
      async stop() {
        await admin.end().catch(() => undefined);
        await stop();
      },
    };
  } catch (err) {
    await stop();
    throw err;
  }
}

/** The SQL connector configuration over hr_people (row_version delta, manager reference). */
function connectorConfig(db) {
  return {
    dialect: 'postgres',
    host: '127.0.0.1',
    port: db.port,
    database: 'postgres',
    user: 'postgres',
    password: db.password,
    anchorColumn: 'employee_id',
    fullImportQuery: QUERY,
    deltaImportQuery: `${QUERY} WHERE row_version > :watermark`,
    deltaColumn: 'row_version',
    referenceColumns: { manager_employee_id: 'User' },
  };
}

/** Change the email of 1,000 rows spread over the table. */
async function change1000(admin, N) {
  const step = Math.max(1, Math.floor(N / 1000));
  await admin.query(`UPDATE hr_people SET email = 'changed' || id || '@example.com' WHERE id % ${step} = 0 AND id <= ${step * 1000}`);
}

module.exports = { QUERY, startBenchPostgres, connectorConfig, change1000 };
