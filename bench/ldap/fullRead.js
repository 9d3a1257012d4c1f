'use strict';
/**
 * bench/ldap: slapd bulk-loaded (slapadd -q) with 100,000 users (manager references) and 1,000 groups
 * (100,000 memberships); the directory connector's full read (ldaps, pages of 1000) beside ldapsearch reading
 * the same entries (paged 1000, plain LDAP to /dev/null) in the same run. Prints JSON.
 *   node bench/ldap/fullRead.js [users] [groups]
 * READ_CPUPROF=<dir>: a V8 CPU profile of the connector's reading process (note: its first seconds are
 * ts-node compiling the connector's TypeScript).
 */
require('./ts-register');
const { execFileSync, execFile } = require('node:child_process');
const os = require('node:os');
const path = require('node:path');
const fs = require('node:fs');
const { generate } = require('./generate');
const { startSlapd } = require('../../test/support/slapd');

(async () => {
  const users = Number(process.argv[2] ?? 100000);
  const groups = Number(process.argv[3] ?? 1000);
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'ldap-bench-'));
  const ldif = path.join(dir, 'bulk.ldif');
  let t = Date.now();
  await generate(ldif, { users, groups });
  const generateSeconds = (Date.now() - t) / 1000;
  t = Date.now();
  const slapd = await startSlapd({ ldifFile: ldif, maxSizeBytes: 8 * 1024 ** 3 });
  const loadSeconds = (Date.now() - t) / 1000;
  try {
    const filter = '(|(objectClass=inetOrgPerson)(objectClass=groupOfNames))';
    const s0 = process.hrtime.bigint();
    const out = execFileSync(
      'ldapsearch',
      ['-x', '-LLL', '-H', slapd.url, '-D', slapd.rootDN, '-w', slapd.rootPassword, '-b', slapd.suffix, '-E', 'pr=1000/noprompt', filter, '*', 'entryUUID'],
      { maxBuffer: 1024 ** 3 },
    );
    const ldapsearchSeconds = Number(process.hrtime.bigint() - s0) / 1e9;
    const ldapsearchEntries = (out.toString('latin1').match(/^dn: /gm) ?? []).length;
    const cfg = {
      host: 'localhost',
      port: slapd.ldapsPort,
      security: 'ldaps',
      caCertificate: slapd.caCertificate,
      baseDN: slapd.suffix,
      bindDN: slapd.rootDN,
      bindPassword: slapd.rootPassword,
      deltaStrategy: 'accesslog',
    };
    const child = await new Promise((resolve, reject) =>
      execFile(
        process.execPath,
        [...(process.env.READ_CPUPROF ? ['--cpu-prof', '--cpu-prof-dir', process.env.READ_CPUPROF] : []), path.join(__dirname, 'read.js'), JSON.stringify(cfg)],
        { maxBuffer: 1 << 20 },
        (err, stdout, stderr) => (err ? reject(new Error(stderr || err.message)) : resolve(JSON.parse(stdout))),
      ),
    );
    process.stdout.write(
      JSON.stringify(
        {
          bench: 'ldap-full-read',
          users,
          groups,
          generateSeconds,
          slapaddAndStartSeconds: loadSeconds,
          ldapsearch: { entries: ldapsearchEntries, seconds: ldapsearchSeconds, transport: 'ldap (plain), paged 1000' },
          connector: { ...child, transport: 'ldaps, paged 1000' },
          ratioConnectorToLdapsearch: Number((child.seconds / ldapsearchSeconds).toFixed(2)),
          engineEndToEnd: 'bench/ldap/engine.js (npm run bench:ldap:engine)',
        },
        null,
        2,
      ) + '\n',
    );
  } finally {
    await slapd.stop();
    fs.rmSync(dir, { recursive: true, force: true });
  }
})().catch((err) => {
  console.error(err);
  process.exit(1);
});
