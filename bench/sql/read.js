#!/usr/bin/env node
'use strict';
/**
 * SQL connector benchmark on a private PostgreSQL (started here on a free loopback port, removed after):
 * N rows of hr_people (a manager tree, fan-out 8; a sequence-backed row_version moved by a trigger). Prints JSON:
 * - plainCursor: a plain pg-cursor read of the same rows (batches of 1000), seconds and the child's peak RSS;
 * - connectorFull: the SQL connector's full import (pages of 1000, one stream), seconds and peak RSS;
 * - connectorPaged: the same full import the way the engine drives it (one fullImport call per page, resumed
 *   from the page cursor with a new connector each time), seconds;
 * - connectorDelta1000: a delta import after 1,000 rows changed (row_version watermark), seconds and changes.
 * Each measured read runs in its own child process so peak RSS is its own.
 *
 * Usage: npm run build && node bench/sql/read.js [--rows 100000]
 */
const { execFileSync, spawnSync } = require('node:child_process');
const { chownSync, mkdtempSync, readdirSync, rmSync, writeFileSync } = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const root = path.resolve(__dirname, '../..');

function arg(name, dflt) {
  const i = process.argv.indexOf(`--${name}`);
  return i > 0 ? process.argv[i + 1] : dflt;
}

const QUERY = 'SELECT employee_id, first_name, last_name, email, department, manager_employee_id, row_version FROM hr_people';

function connectorConfig(db) {
  return {
    dialect: 'postgres', host: '127.0.0.1', port: db.port, database: 'postgres', user: 'postgres', password: db.password,
    anchorColumn: 'employee_id', fullImportQuery: QUERY, deltaImportQuery: `${QUERY} WHERE row_version > :watermark`, deltaColumn: 'row_version',
    referenceColumns: { manager_employee_id: 'User' },
  };
}

/** Child process: one measured read. */
async function child(mode, db, stateDir) {
  const t0 = process.hrtime.bigint();
  let count = 0;
  let extra = {};
  if (mode === 'plain') {
    const { Client } = require('pg');
    const Cursor = require('pg-cursor');
    const client = new Client({ host: '127.0.0.1', port: db.port, user: 'postgres', password: db.password, database: 'postgres' });
    await client.connect();
    const cursor = client.query(new Cursor(`${QUERY} ORDER BY employee_id`));
    for (;;) {
      const rows = await cursor.read(1000);
      count += rows.length;
      if (rows.length < 1000) break;
    }
    await cursor.close();
    await client.end();
  } else {
    const { SqlConnector } = require(path.join(root, 'dist/lib/connectors/sql/index.js'));
    const make = () => new SqlConnector(connectorConfig(db), { connectorId: 'bench', stateDirectory: stateDir });
    if (mode === 'full') {
      for await (const page of make().fullImport({ pageSize: 1000 })) {
        count += page.objects.length;
        if (page.cursor === null) extra.watermark = page.watermark;
      }
    } else if (mode === 'paged') {
      let cursor = null;
      do {
        const it = make().fullImport({ pageSize: 1000, cursor })[Symbol.asyncIterator]();
        const { value } = await it.next();
        await it.return();
        count += value.objects.length;
        cursor = value.cursor;
        if (cursor === null) extra.watermark = value.watermark;
      } while (cursor !== null);
    } else if (mode === 'delta') {
      const kinds = {};
      for await (const page of make().deltaImport(db.watermark, { pageSize: 1000 })) {
        for (const ch of page.changes) kinds[ch.kind] = (kinds[ch.kind] ?? 0) + 1;
        count += page.changes.length;
      }
      extra.kinds = kinds;
    }
  }
  const seconds = Number(process.hrtime.bigint() - t0) / 1e9;
  process.stdout.write(JSON.stringify({ count, seconds: +seconds.toFixed(3), peakRssMB: Math.round(process.resourceUsage().maxRSS / 1024), ...extra }));
}

function measure(mode, db, stateDir) {
  const r = spawnSync(process.execPath, [__filename, '--child', mode, '--db', JSON.stringify(db), '--state', stateDir], { encoding: 'utf8', maxBuffer: 1 << 24 });
  if (r.status !== 0) throw new Error(`${mode} failed: ${r.stderr}`);
  return JSON.parse(r.stdout);
}

async function main() {
  if (arg('child')) return child(arg('child'), JSON.parse(arg('db')), arg('state'));
  const N = Number(arg('rows', '100000'));
  const { freePort } = require(path.join(root, 'dist/lib/runtime/azurite.js'));
  const dir = mkdtempSync(path.join(os.tmpdir(), 'bench-sql-'));
  const stateDir = path.join(dir, 'state');
  const bin = path.join('/usr/lib/postgresql', readdirSync('/usr/lib/postgresql').sort((a, b) => a - b).pop(), 'bin');
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
  const db = { port, password };
  const out = { rows: N, server: 'postgresql (local, fsync off)', node: process.version };
  try {
    as(path.join(bin, 'initdb'), ['-D', data, '-U', 'postgres', '--auth-local=trust', '--auth-host=scram-sha-256', `--pwfile=${path.join(dir, 'pw')}`, '-E', 'UTF8', '--locale=C.UTF-8', '--no-sync']);
    as(path.join(bin, 'pg_ctl'), ['-D', data, '-l', path.join(dir, 'pg.log'), '-w', 'start', '-o', `-p ${port} -k ${dir} -c listen_addresses=127.0.0.1 -c fsync=off -c synchronous_commit=off`]);
    const { Client } = require('pg');
    const admin = new Client({ host: '127.0.0.1', port, user: 'postgres', password, database: 'postgres' });
    await admin.connect();
    const t0 = Date.now();
    await admin.query(`
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
      ANALYZE hr_people;`);
    out.generateSeconds = (Date.now() - t0) / 1000;
    out.plainCursor = measure('plain', db, stateDir);
    const full = measure('full', db, stateDir);
    out.connectorFull = { count: full.count, seconds: full.seconds, peakRssMB: full.peakRssMB };
    out.connectorFullVsPlain = +(full.seconds / out.plainCursor.seconds).toFixed(2);
    const paged = measure('paged', db, stateDir);
    out.connectorPaged = { count: paged.count, seconds: paged.seconds, peakRssMB: paged.peakRssMB };
    await admin.query(`UPDATE hr_people SET email = 'changed' || id || '@example.com' WHERE id % ${Math.max(1, Math.floor(N / 1000))} = 0 AND id <= ${Math.max(1, Math.floor(N / 1000)) * 1000}`);
    out.connectorDelta1000 = measure('delta', { ...db, watermark: paged.watermark }, stateDir);
    await admin.end();
    out.endToEnd = 'not measured: the sql type is not registered in the running service yet (see docs/connector-sql.md)';
  } finally {
    try {
      as(path.join(bin, 'pg_ctl'), ['-D', data, '-m', 'immediate', 'stop']);
    } catch {
      // not started
    }
    rmSync(dir, { recursive: true, force: true });
  }
  console.log(JSON.stringify(out, null, 2));
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
