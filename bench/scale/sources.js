'use strict';
/**
 * The scale bench's sources and target (bench/scale/scale.js): a slapd directory of N people and groups of
 * realistic sizes, the HR table for the same people in PostgreSQL, an empty slapd as the export target, and
 * the connectors and rules over them, created over HTTP on the running service.
 *
 * Directory (bench/ldap/generate.js, bulk-loaded with slapadd): N inetOrgPersons (uid u000123, employeeNumber
 * 100000 + i, manager = user floor(i/10): chains of managers six levels deep at 1M); groups: exactly one of
 * min(50,000, N/2) members, max(1, N/20,000) of 1,000-5,000 members, and N/100 of 5-200 members (most small:
 * size 5 + 195 r^2), each a contiguous run of people. HR (hr_people): employee_id (= employeeNumber),
 * department, job_title, manager_employee_id (the same manager as the directory's), status, cost_center,
 * hire_date, location; a row_version moved by a trigger on every UPDATE (delta import).
 */
require('../ldap/ts-register');
const { execFileSync } = require('node:child_process');
const fs = require('node:fs');
const path = require('node:path');
const { generate, userDn } = require('../ldap/generate');
const { startSlapd } = require('../../test/support/slapd');
const { startBenchPostgres } = require('../sql/pg');

const DEPARTMENTS = ['Engineering', 'Sales', 'Finance', 'Operations', 'Support', 'Marketing', 'Legal', 'Research'];
const uid = (i) => `u${String(i).padStart(6, '0')}`;

/** The group sizes and their layers for N people (deterministic). */
function groupPlan(N) {
  const sizes = [Math.max(1, Math.min(50000, Math.floor(N / 2)))];
  const large = [];
  for (let g = 0; g < Math.max(1, Math.floor(N / 20000)); g++) {
    large.push(sizes.length);
    sizes.push(Math.min(Math.floor(N / 4), 1000 + ((g * 7919) % 4001)));
  }
  const small = [];
  for (let g = 0; g < Math.floor(N / 100); g++) {
    const r = ((g * 104729) % 1000) / 1000;
    small.push(sizes.length);
    sizes.push(5 + Math.floor(195 * r * r));
  }
  const layers = [
    { groups: [0], offset: 0 },
    { groups: large, offset: Math.floor(N / 3) },
    { groups: small, offset: Math.floor(N / 7) },
  ];
  return { sizes, layers, memberships: sizes.reduce((a, b) => a + b, 0) };
}

/** The LDIF of the directory, written to `file` (streamed); returns the group plan's figures. */
async function writeDirectory(file, N) {
  const plan = groupPlan(N);
  await generate(file, { users: N, groupSizes: plan.sizes, groupLayers: plan.layers });
  return { groups: plan.sizes.length, memberships: plan.memberships, largestGroup: plan.sizes[0], ldifMB: Math.round(fs.statSync(file).size / 1e6) };
}

/** hr_people for N people (bench/sql/pg.js seedSql). */
const hrSeedSql = (N) => `
  CREATE SEQUENCE hr_people_version_seq;
  CREATE TABLE hr_people (employee_id text PRIMARY KEY, department text NOT NULL, job_title text NOT NULL,
    manager_employee_id text, status text NOT NULL, cost_center text NOT NULL, hire_date date NOT NULL, location text NOT NULL,
    updated_at timestamptz NOT NULL DEFAULT now(), row_version bigint NOT NULL DEFAULT nextval('hr_people_version_seq'));
  CREATE FUNCTION hr_people_touch() RETURNS trigger LANGUAGE plpgsql AS $$
  BEGIN NEW.updated_at := clock_timestamp(); NEW.row_version := nextval('hr_people_version_seq'); RETURN NEW; END $$;
  CREATE TRIGGER hr_people_touch BEFORE UPDATE ON hr_people FOR EACH ROW EXECUTE FUNCTION hr_people_touch();
  INSERT INTO hr_people (employee_id, department, job_title, manager_employee_id, status, cost_center, hire_date, location)
  SELECT (100000 + i)::text,
         (ARRAY[${DEPARTMENTS.map((d) => `'${d}'`).join(',')}])[1 + i % ${DEPARTMENTS.length}],
         'Job ' || (i % 120),
         CASE WHEN i = 0 THEN NULL ELSE (100000 + i / 10)::text END,
         CASE WHEN i % 37 = 0 THEN 'leave' ELSE 'active' END,
         'CC' || (i % 300),
         date '2010-01-01' + (i % 5000),
         'Site ' || (i % 45)
  FROM generate_series(0, ${N - 1}) AS i;
  CREATE INDEX hr_people_row_version_idx ON hr_people (row_version);
  ANALYZE hr_people;`;

const HR_QUERY =
  'SELECT employee_id, department, job_title, manager_employee_id, status, cost_center, hire_date::text AS hire_date, location, row_version FROM hr_people';

/** The three servers of one size: the source directory (bulk-loaded), HR, and the empty target directory. */
async function startServers(dir, N, log) {
  const ldif = path.join(dir, 'directory.ldif');
  let t = performance.now();
  const directory = await writeDirectory(ldif, N);
  const ldifSeconds = (performance.now() - t) / 1000;
  log(`LDIF written (${directory.ldifMB} MB, ${directory.groups} groups, ${directory.memberships} memberships) in ${ldifSeconds.toFixed(1)} s; slapadd...`);
  const servers = { stop: async () => undefined };
  const stops = [];
  servers.stop = async () => {
    for (const s of stops.splice(0).reverse()) await s().catch(() => undefined);
  };
  try {
    t = performance.now();
    // slapadd takes about a second per 10k entries on a quiet machine: give it ten times that (at least 2 min).
    servers.source = await startSlapd({ ldifFile: ldif, maxSizeBytes: 16 * 1024 ** 3, bulkLoadTimeoutSeconds: Math.max(120, N / 1000) });
    stops.push(() => servers.source.stop());
    const slapaddSeconds = (performance.now() - t) / 1000;
    fs.rmSync(ldif, { force: true });
    log(`source slapd up (slapadd ${slapaddSeconds.toFixed(1)} s); PostgreSQL...`);
    servers.hr = await startBenchPostgres(N, { seedSql: hrSeedSql });
    stops.push(() => servers.hr.stop());
    servers.target = await startSlapd({ maxSizeBytes: 16 * 1024 ** 3 });
    stops.push(() => servers.target.stop());
    servers.generation = {
      ...directory,
      ldifSeconds: +ldifSeconds.toFixed(1),
      slapaddAndStartSeconds: +slapaddSeconds.toFixed(1),
      hrRowsSeconds: +servers.hr.generateSeconds.toFixed(1),
    };
    return servers;
  } catch (err) {
    await servers.stop();
    throw err;
  }
}

const ldapConfig = (slapd, extra) => ({
  host: 'localhost',
  port: slapd.ldapsPort,
  security: 'ldaps',
  caCertificate: slapd.caCertificate,
  baseDN: slapd.suffix,
  bindDN: slapd.rootDN,
  bindPassword: slapd.rootPassword,
  deltaStrategy: 'accesslog',
  ...extra,
});

const DIRECTORY_FLOWS = ['uid', 'cn', 'sn', 'givenName', 'mail', 'employeeNumber', 'title', 'departmentNumber', 'telephoneNumber'];
const HR_FLOWS = [
  ['department', 'department'],
  ['job_title', 'jobTitle'],
  ['manager_employee_id', 'managerEmployeeId'],
  ['status', 'status'],
  ['cost_center', 'costCenter'],
  ['hire_date', 'hireDate'],
  ['location', 'location'],
];
/** Mesh attribute -> target directory attribute, for every user provisioned there. */
const TARGET_FLOWS = [
  ['uid', 'uid'],
  ['cn', 'cn'],
  ['sn', 'sn'],
  ['givenName', 'givenName'],
  ['mail', 'mail'],
  ['employeeNumber', 'employeeNumber'],
  ['department', 'departmentNumber'],
  ['jobTitle', 'title'],
];

/**
 * The connectors and rules on the service: Directory (users by uid, groups by cn, manager and member resolved
 * through the connector space), HR (joins the directory's people on employeeNumber, flows the HR attributes,
 * manager by reference column), Target (outbound flows; every User provisioned under ou=people).
 */
async function createConnectors({ call, must }, servers) {
  const post = async (name, type, config) => must(call('POST', 'connectors', { name, type, config }), 201);
  const rule = (connectorId, name, b) => must(call('POST', 'rules', { ruleName: name, connectorId, ...b }), 201);
  const directory = await post('Directory', 'ldap', ldapConfig(servers.source, { attributes: ['objectClass', ...DIRECTORY_FLOWS, 'manager', 'member'] }));
  await rule(directory.id, 'users', { ruleType: 'ProjectionRule', sourceAttribute: 'uid', objectType: 'User', priority: 10 });
  await rule(directory.id, 'groups', {
    ruleType: 'ProjectionRule',
    sourceAttribute: 'cn',
    objectType: 'Group',
    priority: 20,
    transformScript: "object.objectClass.includes('groupOfNames')",
  });
  for (const a of DIRECTORY_FLOWS) await rule(directory.id, `flow ${a}`, { ruleType: 'FlowRule', sourceAttribute: a, targetAttribute: a, confidence: 50 });

  const hr = await post('HR', 'sql', {
    dialect: 'postgres',
    host: '127.0.0.1',
    port: servers.hr.port,
    database: 'postgres',
    user: 'postgres',
    password: servers.hr.password,
    anchorColumn: 'employee_id',
    fullImportQuery: HR_QUERY,
    deltaImportQuery: `${HR_QUERY} WHERE row_version > :watermark`,
    deltaColumn: 'row_version',
    referenceColumns: { manager_employee_id: 'User' },
  });
  await rule(hr.id, 'join', { ruleType: 'JoinRule', sourceAttribute: 'employee_id', targetAttribute: 'employeeNumber' });
  for (const [s, d] of HR_FLOWS) await rule(hr.id, `flow ${s}`, { ruleType: 'FlowRule', sourceAttribute: s, targetAttribute: d, confidence: 60 });
  await rule(hr.id, 'manager', { ruleType: 'MeshComposerRule', relationshipType: 'manager', sourceAttribute: 'manager_employee_id' });

  const target = await post(
    'Target',
    'ldap',
    ldapConfig(servers.target, {
      objectClasses: { inetOrgPerson: 'User' },
      attributes: ['objectClass', ...TARGET_FLOWS.map(([, d]) => d)],
      exportDnTemplate: '"uid=" + dnEscape(source.uid) + ",ou=people," + baseDN',
    }),
  );
  for (const [s, d] of TARGET_FLOWS)
    await rule(target.id, `out ${d}`, { ruleType: 'FlowRule', direction: 'outbound', sourceAttribute: s, targetAttribute: d, confidence: 50 });
  return { directory, hr, target };
}

/** The 1 % delta: sn and title of every 100th person changed over LDAP (ldapmodify), and their HR rows updated. */
async function applyDelta(servers, N, dir) {
  const people = [];
  for (let i = 50 % N; i < N; i += 100) people.push(i);
  const file = path.join(dir, 'delta.ldif');
  const out = fs.createWriteStream(file);
  for (const i of people)
    out.write(`dn: ${userDn(i, servers.source.suffix)}\nchangetype: modify\nreplace: sn\nsn: Changed${i}\n-\nreplace: title\ntitle: Changed ${i}\n\n`);
  await new Promise((r, j) => out.end((e) => (e ? j(e) : r())));
  let t = performance.now();
  const s = servers.source;
  execFileSync('ldapmodify', ['-x', '-H', s.url, '-D', s.rootDN, '-w', s.rootPassword, '-f', file], { stdio: ['ignore', 'ignore', 'pipe'] });
  const ldapmodifySeconds = (performance.now() - t) / 1000;
  t = performance.now();
  const r = await servers.hr.admin.query(`UPDATE hr_people SET job_title = 'Changed ' || employee_id WHERE (employee_id::bigint - 100000) % 100 = 50`);
  return {
    people: people.length,
    hrRows: r.rowCount,
    ldapmodifySeconds: +ldapmodifySeconds.toFixed(2),
    hrUpdateSeconds: +((performance.now() - t) / 1000).toFixed(2),
    sample: people.slice(0, 3),
  };
}

module.exports = { DEPARTMENTS, uid, groupPlan, writeDirectory, startServers, createConnectors, applyDelta, TARGET_FLOWS };
