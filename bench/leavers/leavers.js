#!/usr/bin/env node
'use strict';
/**
 * The leaver clock measured (docs/leavers.md): how long a termination in HR takes to reach a deleted directory
 * account and its confirmation, today, with scheduled delta imports and exports (before continuous mode).
 *
 * Set-up: slapd (real, ldaps, accesslog deltas) as the target and an HR file (a custom `file` connector) as the
 * source, on the running service (local runtime, in-memory Azurite). `--people` people (default leavers + 50)
 * are provisioned into ou=people first (full import, export, confirming import). Then one schedule with three
 * steps runs again and again, `--cycle` seconds apart (default 15; a schedule's cron fires at most once a
 * minute, so the bench triggers it with POST /schedules/{id}/run, as a faster timer would):
 *   DeltaImport HR -> Export Directory -> DeltaImport Directory.
 * Meanwhile `--leavers` people (default 200) are removed from the HR file one at a time, spread evenly over
 * `--minutes` (default 10). When every leaver is done (or `--timeout-minutes` after the last removal), prints JSON:
 * - clock: p50/p95/max of each leaver's `seconds` from GET /leavers (seen by the HR import -> confirmed by the
 *   directory import), and of its parts (seen -> sent, sent -> confirmed);
 * - outside: p50/p95/max from the bench's own clock when it wrote the HR file without the person to the
 *   leaver's confirmedOn, and to the moment the bench's own LDAP search found the entry gone (checked from
 *   outside the engine: the bench searches the directory every second);
 * - cycles: how many schedule runs, and their p50/max seconds; machine: cpus, load.
 *
 * With `--continuous` the schedule is not used: the HR source and the directory are put in continuous delta mode
 * (docs/continuous.md: `continuous: { enabled: true, intervalSeconds: --interval (default 5) }` on both; the HR
 * folder is also watched), so every leaver is imported, exported and confirmed with no trigger from the bench.
 *
 * Usage: npm run bench:leavers [-- --leavers 200 --minutes 10 --cycle 15] [--continuous [--interval 5]]
 */
require('../ldap/ts-register');
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const { Client } = require('ldapts');
const { startSlapd } = require('../../test/support/slapd');
const { arg, onInterrupt, sleep, startService } = require('../support');

const LEAVERS = arg('leavers', 200);
const MINUTES = arg('minutes', 10);
const PEOPLE = arg('people', LEAVERS + 50);
const CYCLE_S = arg('cycle', 15);
const TIMEOUT_MIN = arg('timeout-minutes', 10);
const CONTINUOUS = process.argv.includes('--continuous');
const INTERVAL_S = arg('interval', 5);
if (LEAVERS > PEOPLE) throw new Error('--leavers must not exceed --people');

const emp = (i) => `E${String(i).padStart(6, '0')}`;
const HEADER = ['id', 'employeeId', 'givenName', 'sn'];

function writeHr(dir, people) {
  const lines = [HEADER.join(',')];
  for (const i of people) lines.push([`h${i}`, emp(i), `Given${i}`, `Sn${i}`].join(','));
  const tmp = path.join(dir, 'hr.csv.tmp');
  fs.writeFileSync(tmp, lines.join('\n') + '\n');
  fs.renameSync(tmp, path.join(dir, 'hr.csv'));
}

const pct = (xs, p) => {
  if (!xs.length) return null;
  const s = [...xs].sort((a, b) => a - b);
  return +s[Math.min(s.length - 1, Math.ceil((p / 100) * s.length) - 1)].toFixed(2);
};
const summary = (xs) => ({ n: xs.length, p50: pct(xs, 50), p95: pct(xs, 95), max: xs.length ? +Math.max(...xs).toFixed(2) : null });

async function main() {
  const hrDir = fs.mkdtempSync(path.join(os.tmpdir(), 'bench-leavers-hr-'));
  const slapd = await startSlapd();
  const removeSlapd = onInterrupt(() => slapd.stop());
  let svc;
  const ldap = new Client({ url: slapd.url });
  try {
    await ldap.bind(slapd.rootDN, slapd.rootPassword);
    svc = await startService({ env: { Metrics__StateMaxAgeSeconds: '1' } });
    const { call, must } = svc;
    let present = Array.from({ length: PEOPLE }, (_, i) => i + 1);
    writeHr(hrDir, present);
    const hr = await must(
      call('POST', 'connectors', {
        name: 'HR',
        type: 'custom',
        config: {
          implementation: 'file',
          objectType: 'User',
          settings: { path: hrDir, anchorColumn: 'id' },
          deletionThreshold: { objects: 100000, percent: 100 },
        },
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
          baseDN: `ou=people,${slapd.suffix}`,
          bindDN: slapd.rootDN,
          bindPassword: slapd.rootPassword,
          deltaStrategy: 'accesslog',
          exportDnTemplate: '"uid=" + dnEscape(source.uid) + "," + baseDN',
          deletionThreshold: { objects: 100000, percent: 100 },
          deprovisioning: { action: 'delete', deadlineMinutes: 5 },
        },
      }),
      201,
    );
    let ruleNo = 0;
    const rule = (b) => must(call('POST', 'rules', { ruleName: `rule ${++ruleNo}`, ...b }), 201);
    await rule({ ruleType: 'ProjectionRule', connectorId: hr.id, sourceAttribute: 'employeeId', objectType: 'User' });
    for (const a of ['employeeId', 'givenName', 'sn'])
      await rule({ ruleType: 'FlowRule', connectorId: hr.id, sourceAttribute: a, targetAttribute: a, confidence: 100 });
    for (const [s, t, expr] of [
      ['employeeId', 'uid'],
      ['employeeId', 'employeeNumber'],
      ['givenName', 'givenName'],
      ['sn', 'sn'],
      ['givenName', 'cn', 'object.givenName + " " + object.sn'],
    ])
      await rule({
        ruleType: 'FlowRule',
        direction: 'outbound',
        connectorId: dir.id,
        sourceAttribute: s,
        targetAttribute: t,
        confidence: 50,
        ...(expr ? { transformScript: expr } : {}),
      });
    await rule({ ruleType: 'JoinRule', connectorId: dir.id, sourceAttribute: 'employeeNumber', targetAttribute: 'employeeId' });

    const setup = [];
    for (const [label, op] of [
      ['hrFullImport', () => svc.runImport(hr.id, 'FullImport')],
      ['directoryExport', () => svc.runExport(dir.id)],
      ['directoryFullImport', () => svc.runImport(dir.id, 'FullImport')],
    ]) {
      const r = await op();
      if (!['Completed'].includes(r.run.status)) throw new Error(`${label}: ${JSON.stringify(r.run)}`);
      setup.push({ step: label, seconds: +r.seconds.toFixed(1) });
    }
    const schedule = await must(
      call('POST', 'schedules', {
        name: 'leavers',
        cron: '0 0 0 1 1 *',
        isEnabled: false,
        steps: [
          { runType: 'DeltaImport', connectorIds: [hr.id] },
          { runType: 'Export', connectorIds: [dir.id] },
          { runType: 'DeltaImport', connectorIds: [dir.id] },
        ],
      }),
      201,
    );

    if (CONTINUOUS) {
      // Both connectors follow their source: the HR file (batches, exported to the directory) and the directory
      // (its own deltas confirm what was sent).
      for (const c of [hr, dir]) {
        const current = await must(call('GET', `connectors/${c.id}`), 200);
        await must(
          call('PUT', `connectors/${c.id}`, {
            name: current.name,
            config: { ...current.config, continuous: { enabled: true, intervalSeconds: INTERVAL_S, reconcileMinutes: 15 } },
          }),
          200,
        );
      }
    }

    // The leavers, in order: every other person first, so leavers are spread over the directory.
    const leavers = present
      .filter((i) => i % 2 === 0)
      .concat(present.filter((i) => i % 2 === 1))
      .slice(0, LEAVERS);
    const removedAt = new Map();
    const goneAt = new Map();
    const t0 = Date.now();
    const gapMs = (MINUTES * 60_000) / LEAVERS;
    let stopping = false;

    // Leavers leave HR at their times.
    const leaving = (async () => {
      for (let k = 0; k < leavers.length; k++) {
        const at = t0 + k * gapMs;
        if (Date.now() < at) await sleep(at - Date.now());
        const i = leavers[k];
        present = present.filter((p) => p !== i);
        writeHr(hrDir, present);
        removedAt.set(emp(i), Date.now());
      }
    })();

    // The schedule, every CYCLE_S seconds (the next one starts when the last one ended and the gap is over).
    const cycles = [];
    const cycling = (async () => {
      while (!stopping && !CONTINUOUS) {
        const started = Date.now();
        const run = await must(call('POST', `schedules/${schedule.scheduleId}/run`), 202);
        for (;;) {
          const r = await must(call('GET', `schedules/${schedule.scheduleId}/runs/${run.scheduleRunId}`), 200);
          if (r.status !== 'Running') {
            cycles.push({ seconds: (Date.now() - started) / 1000, status: r.status });
            break;
          }
          await sleep(250);
        }
        const wait = started + CYCLE_S * 1000 - Date.now();
        if (wait > 0 && !stopping) await sleep(wait);
      }
    })();

    // From outside: the directory searched every second for entries of leavers still there.
    const watching = (async () => {
      while (!stopping) {
        const waiting = [...removedAt.keys()].filter((e) => !goneAt.has(e));
        if (waiting.length) {
          const { searchEntries } = await ldap.search(`ou=people,${slapd.suffix}`, {
            scope: 'one',
            filter: '(objectClass=inetOrgPerson)',
            attributes: ['uid'],
          });
          const there = new Set(searchEntries.map((e) => String(e.uid)));
          const now = Date.now();
          for (const e of waiting) if (!there.has(e)) goneAt.set(e, now);
        }
        await sleep(1000);
      }
    })();

    await leaving;
    const lastRemoval = Date.now();
    let done = [];
    for (;;) {
      done = [];
      for (let skip = 0; ; skip += 200) {
        const page = await must(call('GET', `leavers?state=done&connectorId=${dir.id}&take=200&skip=${skip}`), 200);
        done.push(...page.items);
        if (done.length >= page.totalCount || !page.items.length) break;
      }
      if ((done.length >= LEAVERS && goneAt.size >= LEAVERS) || Date.now() - lastRemoval > TIMEOUT_MIN * 60_000) break;
      await sleep(2000);
    }
    stopping = true;
    await Promise.all([cycling, watching]);
    const open = await must(call('GET', `leavers?connectorId=${dir.id}&take=1`), 200);
    const late = await must(call('GET', `leavers?state=late&connectorId=${dir.id}&take=1`), 200);

    const byAnchorEmp = new Map(done.map((l) => [l.displayName, l]));
    const clock = done.map((l) => l.seconds);
    const seenToSent = done.map((l) => (Date.parse(l.sentOn) - Date.parse(l.seenOn)) / 1000);
    const sentToConfirmed = done.map((l) => (Date.parse(l.confirmedOn) - Date.parse(l.sentOn)) / 1000);
    const outsideConfirmed = [];
    for (const [e, at] of removedAt) {
      const i = Number(e.slice(1));
      const l = byAnchorEmp.get(`Given${i} Sn${i}`);
      if (l) outsideConfirmed.push((Date.parse(l.confirmedOn) - at) / 1000);
    }
    const outsideGone = [...goneAt].map(([e, at]) => (at - removedAt.get(e)) / 1000);
    const result = {
      bench: 'leavers',
      mode: CONTINUOUS
        ? `continuous delta mode (intervalSeconds ${INTERVAL_S}, HR folder watched)`
        : 'scheduled delta imports + exports (before continuous mode)',
      date: new Date().toISOString(),
      machine: { cpus: os.cpus().length, model: os.cpus()[0]?.model, loadAtEnd: os.loadavg().map((x) => +x.toFixed(2)) },
      options: { leavers: LEAVERS, minutes: MINUTES, people: PEOPLE, ...(CONTINUOUS ? { intervalSeconds: INTERVAL_S } : { cycleSeconds: CYCLE_S }) },
      setup,
      confirmed: done.length,
      notConfirmed: open.totalCount - done.length,
      lateAtEnd: late.totalCount,
      clock: { seenToConfirmed: summary(clock), seenToSent: summary(seenToSent), sentToConfirmed: summary(sentToConfirmed) },
      outside: { hrChangeToConfirmed: summary(outsideConfirmed), hrChangeToEntryGone: summary(outsideGone) },
      cycles: {
        n: cycles.length,
        p50: pct(
          cycles.map((c) => c.seconds),
          50,
        ),
        max: pct(
          cycles.map((c) => c.seconds),
          100,
        ),
        failed: cycles.filter((c) => c.status !== 'Completed').length,
      },
    };
    console.log(JSON.stringify(result, null, 2));
  } finally {
    await ldap.unbind().catch(() => undefined);
    await svc?.stop();
    await slapd.stop();
    removeSlapd();
    fs.rmSync(hrDir, { recursive: true, force: true });
  }
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
