#!/usr/bin/env node
'use strict';
/**
 * Correlation cases (docs/correlation.md) on the worked example: slapd with N people (10% without
 * employeeNumber, 20 name twins, 10 wrong keys; test/support/correlationData.ts), an HR file of the same
 * people, the directory connector with `correlation: { autoJoinConfidence: 80, caseOnMissingKey: true }`, a
 * JoinRule on the key (confidence 100) and a fuzzy JoinRule on displayName (confidence 60, threshold 0.9). The
 * service runs on the local runtime with its in-memory Azurite. Prints JSON:
 * - hrImport, directoryImport: trigger to Completed (seconds, CPU of the service and of Azurite);
 * - cases: the open cases after the first directory import, by reason (and as expected);
 * - decideOne: one case decided over HTTP (ms); decideByFilter: the one-candidate noKey cases joined by one
 *   POST /correlation-cases/decide (seconds, per case ms);
 * - secondImport: a full import of the unchanged directory after the decisions (seconds).
 *
 * `--correlation off`: the baseline: the same directory and rules without `correlation` and without the name
 * rule (the key join alone, as before correlation): what scoring and cases cost on top.
 *
 * Usage: npm run build && node bench/correlation/correlation.js [--people 2000] [--correlation on|off]
 */
require('../ldap/ts-register');
const { mkdtempSync, writeFileSync } = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const { Client } = require('ldapts');
const { startSlapd } = require('../../test/support/slapd');
const { correlationPeople } = require('../../test/support/correlationData');
const { arg, onInterrupt, startService } = require('../support');

const N = arg('people', 2000);
const ON = arg('correlation', 'on') !== 'off';

async function main() {
  const t0 = performance.now();
  const { hr, directory } = correlationPeople(N);
  const generateSeconds = +((performance.now() - t0) / 1000).toFixed(2);
  const slapd = await startSlapd();
  onInterrupt(() => slapd.stop());
  let svc;
  try {
    const admin = new Client({ url: slapd.url });
    await admin.bind(slapd.rootDN, slapd.rootPassword);
    const base = `ou=people,${slapd.suffix}`;
    const t1 = performance.now();
    for (const d of directory) {
      const attrs = {
        objectClass: 'inetOrgPerson',
        uid: d.uid,
        cn: d.displayName.trim() || d.uid,
        sn: d.sn,
        givenName: d.givenName,
        displayName: d.displayName,
        mail: d.mail,
      };
      if (d.employeeNumber) attrs.employeeNumber = d.employeeNumber;
      await admin.add(`uid=${d.uid},${base}`, attrs);
    }
    const seedSeconds = +((performance.now() - t1) / 1000).toFixed(2);
    await admin.unbind();
    const hrDir = mkdtempSync(path.join(os.tmpdir(), 'bench-corr-hr-'));
    const cols = ['id', 'employeeId', 'givenName', 'sn', 'displayName'];
    writeFileSync(path.join(hrDir, 'hr.csv'), [cols.join(','), ...hr.map((p) => cols.map((c) => p[c]).join(','))].join('\n') + '\n');

    svc = await startService();
    const { call, must } = svc;
    const hrConn = await must(
      call('POST', 'connectors', {
        name: 'HR',
        type: 'custom',
        config: { implementation: 'file', objectType: 'User', settings: { path: hrDir, anchorColumn: 'id' } },
      }),
      201,
    );
    const dir = await must(
      call('POST', 'connectors', {
        name: 'Directory',
        type: 'ldap',
        config: {
          host: 'localhost',
          port: slapd.ldapsPort,
          security: 'ldaps',
          caCertificate: slapd.caCertificate,
          baseDN: base,
          bindDN: slapd.rootDN,
          bindPassword: slapd.rootPassword,
          deltaStrategy: 'accesslog',
          ...(ON ? { correlation: { autoJoinConfidence: 80, caseOnMissingKey: true } } : {}),
        },
      }),
      201,
    );
    const rule = (b) => must(call('POST', 'rules', { ruleName: `r${Math.random().toString(36).slice(2, 8)}`, ...b }), 201);
    await rule({ ruleType: 'ProjectionRule', connectorId: hrConn.id, sourceAttribute: 'employeeId', objectType: 'User' });
    for (const a of ['employeeId', 'givenName', 'sn', 'displayName'])
      await rule({ ruleType: 'FlowRule', connectorId: hrConn.id, sourceAttribute: a, targetAttribute: a, confidence: 50 });
    await rule({ ruleType: 'JoinRule', connectorId: dir.id, sourceAttribute: 'employeeNumber', targetAttribute: 'employeeId', confidence: 100 });
    await rule({
      ruleType: 'JoinRule',
      connectorId: dir.id,
      sourceAttribute: 'displayName',
      targetAttribute: 'displayName',
      confidence: 60,
      match: 'fuzzy',
      fuzzyThreshold: 0.9,
    });
    await rule({ ruleType: 'FlowRule', connectorId: dir.id, sourceAttribute: 'mail', targetAttribute: 'mail', confidence: 40 });

    const measured = (m) => ({ seconds: +m.seconds.toFixed(2), status: m.run.status, stats: m.run.stats, cpu: m.cpu });
    const hrImport = measured(await svc.runImport(hrConn.id, 'FullImport'));
    const directoryImport = measured(await svc.runImport(dir.id, 'FullImport'));
    const count = async (q) => (await must(call('GET', `correlation-cases?connectorId=${dir.id}&state=open&take=0${q}`), 200)).totalCount;
    const expected = (reason) => directory.filter((d) => d.expect === reason).length;
    const cases = {};
    for (const reason of ['noKey', 'severalCandidates', 'belowThreshold'])
      cases[reason] = { open: await count(`&reason=${reason}`), expected: expected(reason) };
    cases.total = await count('');

    if (!ON) {
      console.log(JSON.stringify({ people: N, correlation: 'off', hrImport, directoryImport, openCases: cases.total }, null, 2));
      return;
    }
    const list = await must(call('GET', `correlation-cases?connectorId=${dir.id}&state=open&reason=belowThreshold&take=1`), 200);
    const t2 = performance.now();
    await must(call('POST', `correlation-cases/${list.items[0].caseId}/decide`, { decision: 'join' }), 200);
    const decideOneMs = Math.round(performance.now() - t2);
    const t3 = performance.now();
    const bulk = await must(
      call('POST', 'correlation-cases/decide', { filter: { connectorId: dir.id, reason: 'noKey', maxCandidates: 1, minScore: 50 }, decision: 'join' }),
      200,
    );
    const bulkSeconds = (performance.now() - t3) / 1000;
    const secondImport = measured(await svc.runImport(dir.id, 'FullImport'));
    console.log(
      JSON.stringify(
        {
          people: N,
          generateSeconds,
          seedSeconds,
          hrImport,
          directoryImport,
          cases,
          decideOneMs,
          decideByFilter: { ...bulk, seconds: +bulkSeconds.toFixed(2), perCaseMs: bulk.decided ? Math.round((bulkSeconds * 1000) / bulk.decided) : null },
          secondImport,
          openAfter: await count(''),
        },
        null,
        2,
      ),
    );
  } finally {
    await svc?.stop();
    await slapd.stop();
  }
}

main().catch((err) => {
  console.error(err);
  process.exitCode = 1;
});
