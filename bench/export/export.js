#!/usr/bin/env node
'use strict';
/**
 * An export of N new people to a directory (slapd) and to a PostgreSQL table, each beside the larger of two
 * floors measured in the same run. The tutorial's design (docs/tutorial.md): an HR file connector (anchor
 * employeeId, referenceColumns manager -> User), a directory target with one OU per department
 * (exportDnTemplate `uid=...,ou=<department>,ou=people,dc=example,dc=com`), a `staff` table whose manager_id
 * REFERENCES staff DEFERRABLE INITIALLY DEFERRED with the tutorial's insert/update statements, the tutorial's
 * rules and the manager flows of its section 8. People: N, in `--departments` departments (default 40), person
 * i's manager is person floor((i - 1) / 10) (a tree, fan-out 10, about N/10 managers).
 *
 * Order of the run:
 * 1. The floors, before the service starts (nothing of the engine's weighs on them):
 *    - storage: a fresh in-memory Azurite batch-inserting 2N entities of about 600 bytes (100 per transaction,
 *      4 in flight: bench/support.js storageFloor), the engine's own bookkeeping of an object as the import
 *      benches measure it;
 *    - ldapadd: the LDIF of the same N entries (what the export writes, checked after it) added by `ldapadd`
 *      over ldaps (as the connector writes) into a fresh slapd with the same overlays and the department OUs;
 *      `ldapaddPlain`: the same over plain LDAP into another fresh slapd, beside it (not the floor);
 *    - psql: the same N INSERTs (manager_id included, managers first) run by `psql -f` over TCP in transactions
 *      of 100 into a fresh `staff` table of another database of the same PostgreSQL.
 * 2. The service (local runtime, in-memory Azurite), the connectors and rules, a full import of the HR file.
 * 3. One export to the directory, then one to the table, each timed from the trigger to the run's end: the
 *    run's own startedAt and completedAt as GET /runs/{id} answers them (`observedSeconds`: the poller's
 *    figure, bench/support.js runExport, up to a poll later); with its stats, its errors, the activities of its
 *    orchestration from the Durable Functions HTTP API (`timeline`: each one's scheduled and completed time; a
 *    full export in reference order: its syncExportIds pages; partition by partition: 16 export partitions,
 *    then one syncExportIds step when it made a second pass for references to objects the first pass added;
 *    the time of each pass).
 * 4. Verification from outside: ldapsearch and psql read every entry and row back; each is compared with what
 *    the tutorial's rules give (DN, attributes, the manager's DN / key), and the count must be N.
 *
 * The storage client's calls of the service during each export are counted by table and method
 * (bench/support/countStorage.js, `storageRequests` in the JSON: `total` is the requests sent).
 *
 * Prints JSON: each export's seconds and objects/s, the floors, the ratio of each export to the larger of its two
 * floors (goal: at most 2), and whether the goal is met (the ratio, the run Completed, and every entry or row
 * read back right).
 *
 * Usage: npm run build && node bench/export/export.js [--users 5000] [--departments 40]
 */
require('../ldap/ts-register');
const { spawn } = require('node:child_process');
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const { startSlapd } = require('../../test/support/slapd');
const { startPostgres } = require('../../test/support/postgres');
const { DIRECTORY_DN_TEMPLATE, STAFF_STATEMENTS, STAFF_TABLE, tutorialRules } = require('../../test/support/tutorialDesign');
const { arg, cpuSeconds, freshStorageFloor, onInterrupt, peakRssMB, startService, storageCounter } = require('../support');

const N = arg('users', 5000);
const DEPARTMENTS = arg('departments', 40);
const GOAL_RATIO = 2;
const SUFFIX = 'dc=example,dc=com';
const PEOPLE = `ou=people,${SUFFIX}`;

const id = (i) => `E${String(i + 1).padStart(6, '0')}`;
const department = (i) => `Dept${String(i % DEPARTMENTS).padStart(2, '0')}`;
const managerOf = (i) => (i === 0 ? null : Math.floor((i - 1) / 10));
/** Person i as the HR file has it. */
const person = (i) => ({
  employeeId: id(i),
  givenName: `Given${i}`,
  sn: `Surname${i}`,
  mail: `user${i}@example.com`,
  department: department(i),
  title: `Title ${i % 50}`,
  manager: managerOf(i) === null ? '' : id(managerOf(i)),
});
const dnOf = (i) => `uid=${id(i)},ou=${department(i)},${PEOPLE}`;
/** The directory entry the tutorial's outbound rules give for person i (attribute -> value). */
function entryOf(i) {
  const p = person(i);
  const e = {
    objectClass: 'inetOrgPerson',
    uid: p.employeeId,
    employeeNumber: p.employeeId,
    givenName: p.givenName,
    sn: p.sn,
    cn: `${p.givenName} ${p.sn}`,
    mail: p.mail,
    departmentNumber: p.department,
    title: p.title,
  };
  if (managerOf(i) !== null) e.manager = dnOf(managerOf(i));
  return e;
}
/** The `staff` row the tutorial's outbound rules give for person i, in column order. */
const rowOf = (i) => {
  const p = person(i);
  return [p.employeeId, p.givenName, p.sn, p.mail, p.department, p.manager || null];
};
const COLUMNS = ['employee_id', 'given_name', 'surname', 'mail', 'department', 'manager_id'];
const r2 = (x) => +x.toFixed(2);
const sqlLiteral = (v) => (v === null ? 'NULL' : `'${String(v).replace(/'/g, "''")}'`);

/** The department OUs below ou=people (loaded offline into each slapd before anything is timed). */
const ousLdif = () =>
  Array.from({ length: Math.min(DEPARTMENTS, N) }, (_, k) => `dn: ou=${department(k)},${PEOPLE}\nobjectClass: organizationalUnit\nou: ${department(k)}\n`).join(
    '\n',
  );

function writeLdif(file) {
  const parts = [];
  for (let i = 0; i < N; i++) {
    const e = entryOf(i);
    parts.push(
      `dn: ${dnOf(i)}\n${Object.entries(e)
        .map(([k, v]) => `${k}: ${v}`)
        .join('\n')}\n`,
    );
  }
  fs.writeFileSync(file, parts.join('\n'));
}

/** Runs a command to its end: seconds, stdout (when kept), and throws with stderr on a non-zero exit. */
function timed(cmd, args, env = {}, keep = false) {
  return new Promise((resolve, reject) => {
    const t0 = performance.now();
    const child = spawn(cmd, args, { env: { ...process.env, ...env }, stdio: ['ignore', keep ? 'pipe' : 'ignore', 'pipe'] });
    const chunks = [];
    let err = '';
    if (keep) child.stdout.on('data', (d) => chunks.push(d));
    child.stderr.on('data', (d) => (err = (err + d).slice(-4000)));
    child.once('error', reject);
    child.once('exit', (code) => {
      const seconds = (performance.now() - t0) / 1000;
      if (code !== 0) return reject(new Error(`${cmd} exited with ${code}: ${err}`));
      resolve({ seconds, stdout: keep ? Buffer.concat(chunks).toString('utf8') : '', stderr: err });
    });
  });
}

/** Every inetOrgPerson below ou=people read by ldapsearch (unwrapped LDIF): DN -> attribute -> values. */
async function readDirectory(slapd) {
  const { stdout, seconds } = await timed(
    'ldapsearch',
    [
      '-x',
      '-LLL',
      '-o',
      'ldif-wrap=no',
      '-H',
      slapd.url,
      '-D',
      slapd.rootDN,
      '-w',
      slapd.rootPassword,
      '-b',
      PEOPLE,
      '-E',
      'pr=1000/noprompt',
      '(objectClass=inetOrgPerson)',
    ],
    {},
    true,
  );
  const entries = new Map();
  for (const block of stdout.split(/\n\n+/)) {
    const lines = block.split('\n').filter((l) => l && !l.startsWith('#'));
    if (!lines.length || !lines[0].startsWith('dn: ')) continue;
    const attrs = {};
    for (const l of lines.slice(1)) {
      const m = /^([^:]+):(:?) ?(.*)$/.exec(l);
      if (!m) continue;
      const v = m[2] ? Buffer.from(m[3], 'base64').toString('utf8') : m[3];
      (attrs[m[1]] ??= []).push(v);
    }
    entries.set(lines[0].slice(4), attrs);
  }
  return { entries, seconds: r2(seconds) };
}

/** Compares the directory with what the rules give: counts, and the first few differences. */
function verifyDirectory(entries) {
  let right = 0;
  let managerRight = 0;
  const wrong = [];
  const lower = new Map([...entries].map(([dn, a]) => [dn.toLowerCase(), a]));
  for (let i = 0; i < N; i++) {
    const want = entryOf(i);
    const got = lower.get(dnOf(i).toLowerCase());
    const diffs = [];
    if (!got) diffs.push('missing');
    else {
      for (const [k, v] of Object.entries(want)) {
        const values = got[k] ?? [];
        const ok = k === 'objectClass' ? values.includes(v) : values.length === 1 && values[0].toLowerCase() === v.toLowerCase();
        if (!ok) diffs.push(`${k}: ${JSON.stringify(values)} (want ${JSON.stringify(v)})`);
      }
      if (!want.manager && got.manager) diffs.push(`manager: ${JSON.stringify(got.manager)} (want none)`);
      if (want.manager && got.manager?.length === 1 && got.manager[0].toLowerCase() === want.manager.toLowerCase()) managerRight++;
    }
    if (diffs.length === 0) right++;
    else if (wrong.length < 5) wrong.push({ dn: dnOf(i), diffs });
  }
  return {
    entries: entries.size,
    expected: N,
    countRight: entries.size === N,
    entriesRight: right,
    withManager: N - 1,
    managerRight,
    firstWrong: wrong,
  };
}

/** Every row of `staff` read by psql over TCP: employee_id -> row (columns as text, '' for null shown as \N). */
async function readTable(pg, database) {
  const { stdout, seconds } = await timed(
    'psql',
    [
      '-h',
      '127.0.0.1',
      '-p',
      String(pg.port),
      '-U',
      'postgres',
      '-d',
      database,
      '-At',
      '-F',
      '\t',
      '-P',
      'null=\\N',
      '-c',
      `SELECT ${COLUMNS.join(', ')} FROM staff`,
    ],
    { PGPASSWORD: pg.password },
    true,
  );
  const rows = new Map();
  for (const line of stdout.split('\n')) {
    if (!line) continue;
    const cells = line.split('\t').map((c) => (c === '\\N' ? null : c));
    rows.set(cells[0], cells);
  }
  return { rows, seconds: r2(seconds) };
}

function verifyTable(rows) {
  let right = 0;
  let managerRight = 0;
  const wrong = [];
  for (let i = 0; i < N; i++) {
    const want = rowOf(i);
    const got = rows.get(want[0]);
    const diffs = [];
    if (!got) diffs.push('missing');
    else {
      COLUMNS.forEach((c, k) => {
        if (got[k] !== want[k]) diffs.push(`${c}: ${JSON.stringify(got[k])} (want ${JSON.stringify(want[k])})`);
      });
      if (want[5] !== null && got[5] === want[5]) managerRight++;
    }
    if (diffs.length === 0) right++;
    else if (wrong.length < 5) wrong.push({ employeeId: want[0], diffs });
  }
  return { rows: rows.size, expected: N, countRight: rows.size === N, rowsRight: right, withManager: N - 1, managerRight, firstWrong: wrong };
}

/** ldapadd of `ldif` into a fresh slapd (same overlays, the OUs loaded offline), over ldaps or plain LDAP. */
async function ldapaddFloor(ldif, ldaps) {
  const slapd = await startSlapd({ refintAttributes: ['member'], ldif: ousLdif() });
  const remove = onInterrupt(() => slapd.stop());
  try {
    const url = ldaps ? `ldaps://127.0.0.1:${slapd.ldapsPort}` : slapd.url;
    const cpu0 = cpuSeconds(slapd.pid);
    const r = await timed(
      'ldapadd',
      ['-x', '-H', url, '-D', slapd.rootDN, '-w', slapd.rootPassword, '-f', ldif],
      ldaps ? { LDAPTLS_CACERT: slapd.caCertificateFile } : {},
    );
    const check = await readDirectory(slapd);
    return {
      tool: `ldapadd -x -H ${ldaps ? 'ldaps' : 'ldap'}://127.0.0.1 -f <LDIF> (one connection, one add after another)`,
      entries: check.entries.size,
      seconds: r2(r.seconds),
      entriesPerSecond: Math.round(N / r.seconds),
      slapdCpuSeconds: r2(cpuSeconds(slapd.pid) - cpu0),
    };
  } finally {
    await slapd.stop();
    remove();
  }
}

/** psql -f of the same INSERTs, 100 per transaction, into a fresh `staff` table of a new database. */
async function psqlFloor(pg, dir, database) {
  await pg.createDatabase(database);
  await pg.query(STAFF_TABLE, [], database);
  const lines = [];
  for (let s = 0; s < N; s += 100) {
    lines.push('BEGIN;');
    for (let i = s; i < Math.min(N, s + 100); i++) lines.push(`INSERT INTO staff (${COLUMNS.join(', ')}) VALUES (${rowOf(i).map(sqlLiteral).join(', ')});`);
    lines.push('COMMIT;');
  }
  const file = path.join(dir, 'floor.sql');
  fs.writeFileSync(file, lines.join('\n') + '\n');
  const r = await timed('psql', ['-h', '127.0.0.1', '-p', String(pg.port), '-U', 'postgres', '-d', database, '-q', '-v', 'ON_ERROR_STOP=1', '-f', file], {
    PGPASSWORD: pg.password,
  });
  const count = Number((await pg.query('SELECT count(*)::int AS n FROM staff', [], database))[0].n);
  return {
    tool: 'psql -h 127.0.0.1 -f <file>: the same INSERTs (literals), BEGIN/COMMIT around each 100',
    rows: count,
    seconds: r2(r.seconds),
    rowsPerSecond: Math.round(N / r.seconds),
  };
}

/**
 * The activities of a run's orchestration (instance id = run id) from the Durable Functions HTTP API: how many of
 * each, and for the export partitions the time of the first 16 (first pass) and of those after (second pass).
 */
async function orchestration(svc, runId) {
  // The run is Completed once syncFinishRun has written it; the orchestration ends just after (202 until then).
  let r;
  for (let attempt = 0; attempt < 100; attempt++) {
    r = await svc.call('GET', `../runtime/webhooks/durabletask/instances/${encodeURIComponent(runId)}?showHistory=true`);
    if (r.status !== 202) break;
    await new Promise((res) => setTimeout(res, 100));
  }
  if (r.status !== 200 || !Array.isArray(r.body?.historyEvents)) return { orchestrationError: `status ${r.status}` };
  const done = r.body.historyEvents.filter((e) => e.EventType === 'TaskCompleted' || e.EventType === 'TaskFailed');
  const activities = {};
  for (const e of done) activities[e.FunctionName] = (activities[e.FunctionName] ?? 0) + 1;
  const seconds = (e) => (Date.parse(e.Timestamp) - Date.parse(e.ScheduledTime)) / 1000;
  const sum = (es) => r2(es.reduce((a, e) => a + seconds(e), 0));
  const partitions = done.filter((e) => e.FunctionName === 'syncExportPartition');
  const ids = done.filter((e) => e.FunctionName === 'syncExportIds');
  const steps = {};
  for (const e of done) steps[e.FunctionName] = r2((steps[e.FunctionName] ?? 0) + seconds(e));
  // Each activity from the orchestration's start: [name, scheduled, completed] in seconds (the gaps between two
  // steps are the orchestration's turns).
  const began = r.body.historyEvents.find((e) => e.EventType === 'ExecutionStarted');
  const at = (t) => r2((Date.parse(t) - Date.parse(began?.Timestamp ?? r.body.createdTime)) / 1000);
  const timeline = done.map((e) => [e.FunctionName, at(e.ScheduledTime), at(e.Timestamp)]);
  if (partitions.length === 0)
    // A full export in reference order (up to Export__OrderedMax objects): syncExportIds steps only, its pages and
    // a second pass when one was needed (not told apart here: the run's changes list has any update it made).
    return {
      activities,
      activitySeconds: steps,
      timeline,
      orderedPages: true,
      idsSteps: ids.length,
      idsSeconds: sum(ids),
      // Each step from scheduled to completed (the orchestration's turn between two steps is in the later one).
      idsStepSeconds: ids.map((e) => r2(seconds(e))),
    };
  return {
    activities,
    activitySeconds: steps,
    timeline,
    // A full export runs 16 partitions, then its second pass: the objects the first asked to look at again (one
    // syncExportIds step; code before it ran the 16 partitions again). An incremental one runs pages of ids.
    secondPass: partitions.length > 16 || (partitions.length === 16 && ids.length > 0) || (partitions.length === 0 && ids.length > 1),
    firstPassSeconds: partitions.length ? sum(partitions.slice(0, 16)) : null,
    secondPassSeconds: partitions.length > 16 ? sum(partitions.slice(16)) : partitions.length === 16 && ids.length ? sum(ids) : null,
  };
}

async function main() {
  if (!(N >= 10)) throw new Error('--users must be at least 10');
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'export-bench-'));
  const removeDir = onInterrupt(() => fs.rmSync(dir, { recursive: true, force: true }));
  const hrDir = path.join(dir, 'hr');
  fs.mkdirSync(hrDir);
  const header = ['employeeId', 'givenName', 'sn', 'mail', 'department', 'title', 'manager'];
  const csv = [header.join(',')];
  for (let i = 0; i < N; i++) csv.push(header.map((h) => person(i)[h]).join(','));
  fs.writeFileSync(path.join(hrDir, 'people.csv'), csv.join('\n') + '\n');
  const ldif = path.join(dir, 'people.ldif');
  writeLdif(ldif);
  const loadAtStart = os.loadavg().map(r2);

  let pg;
  let slapd;
  let svc;
  const stops = [];
  try {
    // 1. The floors.
    console.error(`storage floor: ${2 * N} entities into a fresh Azurite...`);
    const storage = await freshStorageFloor(2 * N);
    console.error(`storage floor ${storage.seconds} s; ldapadd of ${N} entries (ldaps, then plain)...`);
    const ldapadd = await ldapaddFloor(ldif, true);
    const ldapaddPlain = await ldapaddFloor(ldif, false);
    console.error(`ldapadd ${ldapadd.seconds} s (plain ${ldapaddPlain.seconds} s); PostgreSQL and psql...`);
    pg = await startPostgres();
    stops.push(onInterrupt(() => pg.stop()));
    const psql = await psqlFloor(pg, dir, 'floor');
    console.error(`psql ${psql.seconds} s; the target directory and table, the service...`);

    // 2. The targets, the service, the connectors and rules (docs/tutorial.md), the HR import.
    slapd = await startSlapd({ refintAttributes: ['member'], ldif: ousLdif() });
    stops.push(onInterrupt(() => slapd.stop()));
    await pg.createDatabase('staff');
    await pg.query(STAFF_TABLE, [], 'staff');
    // The storage client's calls, counted in the service (bench/support/countStorage.js) for each export.
    const counter = storageCounter(dir);
    svc = await startService({ nodeArgs: counter.nodeArgs, env: counter.env });
    const { call, must } = svc;
    const connector = async (body) => (await must(call('POST', 'connectors', body), 201)).id;
    const HR = await connector({
      name: 'HR',
      type: 'custom',
      config: { implementation: 'file', objectType: 'User', settings: { path: hrDir, anchorColumn: 'employeeId', referenceColumns: { manager: 'User' } } },
    });
    const DIRECTORY = await connector({
      name: 'Directory',
      type: 'ldap',
      config: {
        host: '127.0.0.1',
        port: slapd.ldapsPort,
        security: 'ldaps',
        caCertificate: slapd.caCertificate,
        bindDN: slapd.rootDN,
        bindPassword: slapd.rootPassword,
        baseDN: PEOPLE,
        exportDnTemplate: DIRECTORY_DN_TEMPLATE,
      },
    });
    const STAFF = await connector({
      name: 'Staff database',
      type: 'sql',
      config: {
        dialect: 'postgres',
        host: '127.0.0.1',
        port: pg.port,
        database: 'staff',
        user: 'postgres',
        password: pg.password,
        anchorColumn: 'employee_id',
        fullImportQuery: `SELECT ${COLUMNS.join(', ')} FROM staff`,
        referenceColumns: { manager_id: 'User' },
        exportStatements: STAFF_STATEMENTS,
      },
    });
    // docs/tutorial.md sections 5 and 8, rule for rule (test/support/tutorialDesign.ts).
    await tutorialRules((body) => must(call('POST', 'rules', body), 201), { hr: HR, directory: DIRECTORY, staff: STAFF });

    console.error('HR full import...');
    const imp = await svc.runImport(HR, 'FullImport');
    if (imp.run.status !== 'Completed') throw new Error(`HR import ${imp.run.status}: ${imp.run.error ?? JSON.stringify(imp.run.errors?.slice(0, 3))}`);
    console.error(`HR import ${r2(imp.seconds)} s; export to the directory...`);

    // 3. The exports, one after the other.
    const exportOf = async (connectorId, targetPid) => {
      const cpu0 = targetPid ? cpuSeconds(targetPid) : null;
      await counter.take(svc.pid);
      const r = await svc.runExport(connectorId);
      const { byTable, ...storageRequests } = await counter.take(svc.pid);
      const targetCpu = targetPid ? { slapdCpuSeconds: r2(cpuSeconds(targetPid) - cpu0) } : {};
      // The run's own time, trigger to end: completedAt - startedAt as GET /runs/{id} gives them (milliseconds).
      // `observedSeconds` is the poller's: trigger to the poll (every 100 ms) that saw the run ended, later by up
      // to a poll's interval and its request.
      const seconds = r.run.completedAt && r.run.startedAt ? (Date.parse(r.run.completedAt) - Date.parse(r.run.startedAt)) / 1000 : r.seconds;
      return {
        seconds: r2(seconds),
        observedSeconds: r2(r.seconds),
        objectsPerSecond: Math.round(N / seconds),
        status: r.run.status,
        stats: r.run.stats,
        ...(r.run.error ? { error: r.run.error } : {}),
        ...(r.run.errors?.length ? { errorsShown: r.run.errors.length, firstErrors: r.run.errors.slice(0, 5) } : {}),
        ...(await orchestration(svc, r.run.runId ?? r.run.id)),
        cpu: { ...r.cpu, ...targetCpu },
        storageRequests: { ...storageRequests, byTable },
      };
    };
    const ldapExport = await exportOf(DIRECTORY, slapd.pid);
    console.error(`directory export ${ldapExport.seconds} s (${ldapExport.status}); export to the table...`);
    const sqlExport = await exportOf(STAFF);
    console.error(`table export ${sqlExport.seconds} s (${sqlExport.status}); verifying from outside...`);

    // 4. Verification from outside.
    const dirRead = await readDirectory(slapd);
    const tableRead = await readTable(pg, 'staff');
    const verify = {
      directory: { tool: 'ldapsearch (plain LDAP, paged 1000)', seconds: dirRead.seconds, ...verifyDirectory(dirRead.entries) },
      table: { tool: 'psql -At', seconds: tableRead.seconds, ...verifyTable(tableRead.rows) },
    };

    const servicePeakRssMB = peakRssMB(svc.pid);
    await svc.stop();

    // 5. The same floors again now (the service stopped): how much the machine's load moved during the run.
    console.error('the floors again...');
    const after = {
      storage: await freshStorageFloor(2 * N),
      ldapadd: await ldapaddFloor(ldif, true),
      psql: await psqlFloor(pg, dir, 'floor_after'),
    };

    // The goal: within GOAL_RATIO of the larger floor, the run Completed, and the target right when read back.
    const larger = (floors) => Object.entries(floors).sort((a, b) => b[1].seconds - a[1].seconds)[0];
    const against = (exp, floors, floorsAfter, correct) => {
      const [name, floor] = larger(floors);
      const [nameAfter, floorAfter] = larger(floorsAfter);
      const ratio = r2(exp.seconds / floor.seconds);
      const withinRatio = ratio <= GOAL_RATIO;
      return {
        exportSeconds: exp.seconds,
        largerFloor: name,
        largerFloorSeconds: floor.seconds,
        ratio,
        ratioToFloorsAfter: { largerFloor: nameAfter, seconds: floorAfter.seconds, ratio: r2(exp.seconds / floorAfter.seconds) },
        goalRatio: GOAL_RATIO,
        withinRatio,
        completed: exp.status === 'Completed',
        targetRight: correct,
        goalMet: withinRatio && exp.status === 'Completed' && correct,
      };
    };
    const out = {
      bench: 'export',
      users: N,
      departments: DEPARTMENTS,
      managers: 'person i reports to person floor((i-1)/10)',
      machine: {
        cpus: os.cpus().length,
        cpuModel: os.cpus()[0]?.model,
        memoryGB: r2(os.totalmem() / 1024 ** 3),
        node: process.version,
      },
      date: new Date().toISOString(),
      hrImport: { seconds: r2(imp.seconds), status: imp.run.status, stats: imp.run.stats, cpu: imp.cpu },
      exports: { directory: ldapExport, table: sqlExport },
      floors: { storage, ldapadd, ldapaddPlain, psql },
      floorsAfter: after,
      ratios: {
        directory: against(
          ldapExport,
          { ldapadd, storage },
          { ldapadd: after.ldapadd, storage: after.storage },
          verify.directory.countRight && verify.directory.entriesRight === N,
        ),
        table: against(sqlExport, { psql, storage }, { psql: after.psql, storage: after.storage }, verify.table.countRight && verify.table.rowsRight === N),
      },
      verify,
      servicePeakRssMB,
      loadAverage: { start: loadAtStart, end: os.loadavg().map(r2) },
    };
    console.log(JSON.stringify(out, null, 2));
  } finally {
    await svc?.stop();
    await slapd?.stop();
    await pg?.stop();
    stops.forEach((f) => f());
    fs.rmSync(dir, { recursive: true, force: true });
    removeDir();
  }
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
