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
const { spawnSync } = require('node:child_process');
const { mkdtempSync, rmSync } = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const root = path.resolve(__dirname, '../..');
const { QUERY, startBenchPostgres, connectorConfig, change1000 } = require('./pg');

function arg(name, dflt) {
  const i = process.argv.indexOf(`--${name}`);
  return i > 0 ? process.argv[i + 1] : dflt;
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
  const r = spawnSync(process.execPath, [__filename, '--child', mode, '--db', JSON.stringify(db), '--state', stateDir], {
    encoding: 'utf8',
    maxBuffer: 1 << 24,
  });
  if (r.status !== 0) throw new Error(`${mode} failed: ${r.stderr}`);
  return JSON.parse(r.stdout);
}

async function main() {
  if (arg('child')) return child(arg('child'), JSON.parse(arg('db')), arg('state'));
  const N = Number(arg('rows', '100000'));
  const dir = mkdtempSync(path.join(os.tmpdir(), 'bench-sql-'));
  const stateDir = path.join(dir, 'state');
  const pg = await startBenchPostgres(N);
  const db = { port: pg.port, password: pg.password };
  const admin = pg.admin;
  const out = { rows: N, server: 'postgresql (local, fsync off)', node: process.version, generateSeconds: pg.generateSeconds };
  try {
    out.plainCursor = measure('plain', db, stateDir);
    const full = measure('full', db, stateDir);
    out.connectorFull = { count: full.count, seconds: full.seconds, peakRssMB: full.peakRssMB };
    out.connectorFullVsPlain = +(full.seconds / out.plainCursor.seconds).toFixed(2);
    const paged = measure('paged', db, stateDir);
    out.connectorPaged = { count: paged.count, seconds: paged.seconds, peakRssMB: paged.peakRssMB };
    await change1000(admin, N);
    out.connectorDelta1000 = measure('delta', { ...db, watermark: paged.watermark }, stateDir);
    out.endToEnd = 'bench/sql/engine.js';
  } finally {
    await pg.stop();
    rmSync(dir, { recursive: true, force: true });
  }
  console.log(JSON.stringify(out, null, 2));
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
