#!/usr/bin/env node
'use strict';
/**
 * The leaver clock measured (docs/leavers.md): how long a termination in HR takes to reach a deprovisioned
 * account in each target and its confirmation.
 *
 * Set-up: an HR file (a custom `file` connector) as the source and real target servers (`--targets`, any of
 * slapd,389ds,samba,pg; default slapd), on the running service (local runtime, in-memory Azurite). The targets
 * (test/support/leaverTargets.ts): OpenLDAP slapd (ldaps, accesslog deltas, leavers deleted), 389 Directory
 * Server (retro changelog deltas, leavers deleted), a Samba AD DC (USN deltas, leavers disabled through
 * userAccountControl) and PostgreSQL (a row-version delta column, leavers disabled by `status = 'disabled'`).
 * `--people` people (default leavers + 50) are provisioned into every target by the engine itself: HR full
 * import, then one export per target (all targets at once), then one full import per target (all at once),
 * each timed (with the CPU seconds of the service and its storage); then the bench counts the accounts in each
 * target from outside and stops if any target does not hold every person, enabled.
 * Then one schedule with three steps runs again and again, `--cycle` seconds apart (default 15; a schedule's
 * cron fires at most once a minute, so the bench triggers it with POST /schedules/{id}/run, as a faster timer
 * would): DeltaImport HR -> Export <targets> -> DeltaImport <targets>.
 * Meanwhile `--leavers` people (default 200) are removed from the HR file one at a time, spread evenly over
 * `--minutes` (default 10). When every leaver is done in every target (or `--timeout-minutes` after the last
 * removal), prints JSON with, per target:
 * - clock: p50/p95/max of each leaver's `seconds` from GET /leavers (seen by the HR import -> confirmed by the
 *   target's import), and of its parts (seen -> sent, sent -> confirmed);
 * - outside: p50/p95/max from the bench's own clock when it wrote the HR file without the person to the
 *   leaver's confirmedOn, and to the moment the bench's own read of the target (an LDAP search, a SQL query,
 *   every second) found the account deleted or disabled;
 * and the schedule cycles (p50/max seconds), the load average sampled every 10 s while leavers left, and the
 * CPU seconds of the service and its storage over the leaver phase.
 *
 * With `--continuous` the schedule is not used: the HR source and every target are put in continuous delta mode
 * (docs/continuous.md: `continuous: { enabled: true, intervalSeconds: --interval (default 5) }`; the HR folder
 * is also watched), so every leaver is imported, exported and confirmed with no trigger from the bench.
 *
 * Usage: npm run bench:leavers [-- --leavers 200 --minutes 10 --cycle 15] [--continuous [--interval 5]]
 *          [--targets slapd,389ds,samba,pg] [--people N]
 */
require('../ldap/ts-register');
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const { LEAVER_TARGET_KINDS, startLeaverTarget } = require('../../test/support/leaverTargets');
const { arg, cpuSeconds, onInterrupt, sleep, startService } = require('../support');

const LEAVERS = arg('leavers', 200);
const MINUTES = arg('minutes', 10);
const PEOPLE = arg('people', LEAVERS + 50);
const CYCLE_S = arg('cycle', 15);
const TIMEOUT_MIN = arg('timeout-minutes', 10);
const CONTINUOUS = process.argv.includes('--continuous');
const INTERVAL_S = arg('interval', 5);
const IDLE_S = arg('idle-seconds', 30);
// BENCH_LEAVERS_RUNS=<file>: every run of the leaver phase (type, trigger, start, end, stats) written there.
const RUNS_FILE = process.env.BENCH_LEAVERS_RUNS;
const KINDS = arg('targets', 'slapd')
  .split(',')
  .map((t) => t.trim())
  .filter(Boolean);
if (LEAVERS > PEOPLE) throw new Error('--leavers must not exceed --people');
for (const k of KINDS) if (!LEAVER_TARGET_KINDS.includes(k)) throw new Error(`--targets: unknown target '${k}' (${LEAVER_TARGET_KINDS.join(', ')})`);
if (!KINDS.length || new Set(KINDS).size !== KINDS.length) throw new Error('--targets: name each target once');

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
const round1 = (x) => (x === null || x === undefined ? null : +x.toFixed(1));

/**
 * A timed step of the set-up: one run, which must complete. A run that fails is started once more (a lost
 * connection under load is retriable, as a schedule would run it again); the failure is kept in the step.
 */
async function timedRun(label, op) {
  let r = await op();
  let failed;
  if (r.run.status === 'Failed') {
    failed = { seconds: round1(r.seconds), error: r.run.error, objectsProcessed: r.run.stats?.objectsProcessed };
    console.error(`${label}: run failed (${r.run.error}); once more`);
    r = await op();
  }
  if (r.run.status !== 'Completed') throw new Error(`${label}: ${JSON.stringify(r.run)}`);
  const s = r.run.stats ?? {};
  return {
    step: label,
    seconds: round1(r.seconds),
    serviceCpuSeconds: r.cpu.serviceCpuSeconds,
    azuriteCpuSeconds: r.cpu.azuriteCpuSeconds,
    created: s.objectsCreated,
    processed: s.objectsProcessed,
    errors: s.errors,
    ...(failed ? { failedFirst: failed } : {}),
  };
}

async function main() {
  const hrDir = fs.mkdtempSync(path.join(os.tmpdir(), 'bench-leavers-hr-'));
  const targets = [];
  const removeTargets = onInterrupt(() => Promise.allSettled(targets.map((t) => t.stop())));
  let svc;
  try {
    const serverStart = [];
    // One at a time: the Samba DC may wait for a machine-wide lock, and starting four servers at once on two
    // loaded cores only makes each start slower.
    for (const kind of KINDS) {
      const t = Date.now();
      targets.push(await startLeaverTarget(kind, { deadlineMinutes: 5 }));
      serverStart.push({ target: kind, seconds: round1((Date.now() - t) / 1000) });
    }
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
          deletionThreshold: { objects: 1000000, percent: 100 },
        },
      }),
      201,
    );
    let ruleNo = 0;
    const rule = (b) => must(call('POST', 'rules', { ruleName: `rule ${++ruleNo}`, ...b }), 201);
    await rule({ ruleType: 'ProjectionRule', connectorId: hr.id, sourceAttribute: 'employeeId', objectType: 'User' });
    for (const a of ['employeeId', 'givenName', 'sn'])
      await rule({ ruleType: 'FlowRule', connectorId: hr.id, sourceAttribute: a, targetAttribute: a, confidence: 100 });
    const ids = [];
    for (const t of targets) {
      const c = await must(call('POST', 'connectors', t.connector), 201);
      ids.push(c.id);
      for (const r of t.rules) await rule({ ...r, connectorId: c.id });
    }

    const setup = [await timedRun('hrFullImport', () => svc.runImport(hr.id, 'FullImport'))];
    // The targets' runs go at once: each step's CPU seconds are the service's and Azurite's over that step's
    // time, shared with the other targets' steps; the `...AllTargets` line has the whole group's.
    const together = async (label, make) => {
      const t = Date.now();
      const c = { service: cpuSeconds(svc.pid), azurite: cpuSeconds(svc.tablePid) };
      setup.push(...(await Promise.all(targets.map(make))));
      setup.push({
        step: label,
        seconds: round1((Date.now() - t) / 1000),
        serviceCpuSeconds: round1(cpuSeconds(svc.pid) - c.service),
        azuriteCpuSeconds: round1(cpuSeconds(svc.tablePid) - c.azurite),
      });
    };
    await together('exportsAllTargets', (tg, k) => timedRun(`${tg.kind}Export`, () => svc.runExport(ids[k])));
    await together('fullImportsAllTargets', (tg, k) => timedRun(`${tg.kind}FullImport`, () => svc.runImport(ids[k], 'FullImport')));
    // From outside: every target holds every person, enabled.
    const accounts = {};
    for (const tg of targets) {
      accounts[tg.kind] = await tg.activeAccounts();
      if (accounts[tg.kind] !== PEOPLE) throw new Error(`${tg.kind} holds ${accounts[tg.kind]} active accounts after the set-up, not ${PEOPLE}`);
    }

    // On stderr at once: a long set-up's figures are kept even if the leaver phase is cut short.
    console.error(JSON.stringify({ serverStart, setup, accountsAfterSetup: accounts, load: os.loadavg() }));
    const schedule = await must(
      call('POST', 'schedules', {
        name: 'leavers',
        cron: '0 0 0 1 1 *',
        isEnabled: false,
        steps: [
          { runType: 'DeltaImport', connectorIds: [hr.id] },
          { runType: 'Export', connectorIds: ids },
          { runType: 'DeltaImport', connectorIds: ids },
        ],
      }),
      201,
    );

    if (CONTINUOUS) {
      // The HR file (batches, exported to the targets) and every target (its own deltas confirm what was sent).
      for (const id of [hr.id, ...ids]) {
        const current = await must(call('GET', `connectors/${id}`), 200);
        await must(
          call('PUT', `connectors/${id}`, {
            name: current.name,
            config: { ...current.config, continuous: { enabled: true, intervalSeconds: INTERVAL_S, reconcileMinutes: 15 } },
          }),
          200,
        );
      }
    }

    // Idle: with continuous mode on and nothing changing, the service's and Azurite's CPU over --idle-seconds
    // (default 30), after a 15 s settle (the followers' first untargeted exports).
    let idle = null;
    if (CONTINUOUS && IDLE_S > 0) {
      await sleep(15_000);
      const c = { service: cpuSeconds(svc.pid), azurite: cpuSeconds(svc.tablePid) };
      await sleep(IDLE_S * 1000);
      idle = {
        seconds: IDLE_S,
        serviceCpuSeconds: round1(cpuSeconds(svc.pid) - c.service),
        azuriteCpuSeconds: round1(cpuSeconds(svc.tablePid) - c.azurite),
        load: os.loadavg()[0],
      };
      console.error(JSON.stringify({ idle }));
    }

    // The leavers, in order: every other person first, so leavers are spread over the directory.
    const leavers = present
      .filter((i) => i % 2 === 0)
      .concat(present.filter((i) => i % 2 === 1))
      .slice(0, LEAVERS);
    const removedAt = new Map();
    /** Per target: employee id -> when the bench's own read found the account deprovisioned. */
    const goneAt = targets.map(() => new Map());
    const t0 = Date.now();
    const gapMs = (MINUTES * 60_000) / LEAVERS;
    let stopping = false;
    const cpu0 = { service: cpuSeconds(svc.pid), azurite: cpuSeconds(svc.tablePid) };
    const loads = [];
    const sampling = setInterval(() => loads.push(os.loadavg()[0]), 10_000);

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

    // From outside: every target read every second for the leavers not yet deprovisioned there.
    const outsideErrors = targets.map(() => 0);
    const watching = targets.map(async (tg, k) => {
      while (!stopping) {
        const waiting = [...removedAt.keys()].filter((e) => !goneAt[k].has(e));
        if (waiting.length) {
          try {
            const done = await tg.deprovisioned(waiting);
            const now = Date.now();
            for (const e of done) goneAt[k].set(e, now);
          } catch (err) {
            outsideErrors[k]++;
            if (outsideErrors[k] <= 3) console.error(`${tg.kind}: outside read failed: ${err.message}`);
          }
        }
        await sleep(1000);
      }
    });

    const listDone = async (connectorId) => {
      const done = [];
      for (let skip = 0; ; skip += 200) {
        const page = await must(call('GET', `leavers?state=done&connectorId=${connectorId}&take=200&skip=${skip}`), 200);
        done.push(...page.items);
        if (done.length >= page.totalCount || !page.items.length) break;
      }
      return done;
    };
    await leaving;
    const lastRemoval = Date.now();
    let done = [];
    for (;;) {
      done = await Promise.all(ids.map(listDone));
      const finished = done.every((d, k) => d.length >= LEAVERS && goneAt[k].size >= LEAVERS);
      if (finished || Date.now() - lastRemoval > TIMEOUT_MIN * 60_000) break;
      await sleep(2000);
    }
    stopping = true;
    clearInterval(sampling);
    await Promise.all([cycling, ...watching]);
    const endedAt = Date.now();
    const cpu = {
      serviceCpuSeconds: round1(cpuSeconds(svc.pid) - cpu0.service),
      azuriteCpuSeconds: round1(cpuSeconds(svc.tablePid) - cpu0.azurite),
      wallSeconds: round1((endedAt - t0) / 1000),
    };

    const runTypes = {};
    {
      const since = new Date(t0).toISOString();
      const all = [];
      for (const id of [hr.id, ...ids]) {
        for (let skip = 0; ; skip += 200) {
          const page = await must(call('GET', `runs?connectorId=${id}&take=200&skip=${skip}`), 200);
          const items = page.items ?? page;
          const recent = items.filter((r) => (r.startedAt ?? '') >= since);
          all.push(...recent);
          if (recent.length < items.length || items.length < 200) break;
        }
      }
      const nameOf = new Map([[hr.id, 'hr'], ...ids.map((id, k) => [id, targets[k].kind])]);
      for (const r of all) {
        const kind = r.trigger?.sourceRunId ? 'targeted' : r.trigger?.reconcile ? 'reconcile' : (r.trigger?.type ?? 'other');
        const key = `${nameOf.get(r.connectorId)} ${r.runType} ${kind}`;
        const secs = r.completedAt && r.startedAt ? (Date.parse(r.completedAt) - Date.parse(r.startedAt)) / 1000 : null;
        (runTypes[key] ??= []).push(secs);
      }
      for (const k of Object.keys(runTypes)) runTypes[k] = summary(runTypes[k].filter((x) => x !== null));
      if (RUNS_FILE)
        fs.writeFileSync(
          RUNS_FILE,
          JSON.stringify(
            all.map((r) => ({ ...r, connector: nameOf.get(r.connectorId) })),
            null,
            1,
          ),
        );
    }

    const perTarget = {};
    for (let k = 0; k < targets.length; k++) {
      const id = ids[k];
      const open = await must(call('GET', `leavers?connectorId=${id}&take=1`), 200);
      const late = await must(call('GET', `leavers?state=late&connectorId=${id}&take=1`), 200);
      const byName = new Map(done[k].map((l) => [l.displayName, l]));
      const outsideConfirmed = [];
      for (const [e, at] of removedAt) {
        const i = Number(e.slice(1));
        const l = byName.get(`Given${i} Sn${i}`);
        if (l) outsideConfirmed.push((Date.parse(l.confirmedOn) - at) / 1000);
      }
      const clock = done[k].map((l) => l.seconds);
      const p95 = pct(clock, 95);
      const outsideGone = [...goneAt[k]].map(([e, at]) => (at - removedAt.get(e)) / 1000);
      perTarget[targets[k].kind] = {
        connector: targets[k].connector.name,
        deprovisioning: targets[k].action,
        confirmed: done[k].length,
        notConfirmed: open.totalCount - done[k].length,
        lateAtEnd: late.totalCount,
        deprovisionedFromOutside: goneAt[k].size,
        outsideReadErrors: outsideErrors[k],
        clock: {
          seenToConfirmed: summary(clock),
          seenToSent: summary(done[k].map((l) => (Date.parse(l.sentOn) - Date.parse(l.seenOn)) / 1000)),
          sentToConfirmed: summary(done[k].map((l) => (Date.parse(l.confirmedOn) - Date.parse(l.sentOn)) / 1000)),
        },
        outside: { hrChangeToConfirmed: summary(outsideConfirmed), hrChangeToDeprovisioned: summary(outsideGone) },
        p95Under60s: done[k].length === LEAVERS && goneAt[k].size === LEAVERS && p95 !== null && p95 < 60 && pct(outsideGone, 95) < 60,
      };
    }
    const result = {
      bench: 'leavers',
      mode: CONTINUOUS
        ? `continuous delta mode (intervalSeconds ${INTERVAL_S}, HR folder watched)`
        : 'scheduled delta imports + exports (before continuous mode)',
      date: new Date().toISOString(),
      machine: {
        cpus: os.cpus().length,
        model: os.cpus()[0]?.model,
        loadDuringRun: loads.length ? { min: +Math.min(...loads).toFixed(2), max: +Math.max(...loads).toFixed(2), samples: loads.length } : null,
        loadAtEnd: os.loadavg().map((x) => +x.toFixed(2)),
      },
      options: {
        targets: KINDS,
        leavers: LEAVERS,
        minutes: MINUTES,
        people: PEOPLE,
        ...(CONTINUOUS ? { intervalSeconds: INTERVAL_S } : { cycleSeconds: CYCLE_S }),
      },
      serverStart,
      setup,
      accountsAfterSetup: accounts,
      ...(idle ? { idle } : {}),
      leaverPhase: cpu,
      runs: runTypes,
      targets: perTarget,
      ...(CONTINUOUS
        ? {}
        : {
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
          }),
    };
    console.log(JSON.stringify(result, null, 2));
  } finally {
    await svc?.stop();
    await Promise.allSettled(targets.map((t) => t.stop()));
    removeTargets();
    fs.rmSync(hrDir, { recursive: true, force: true });
  }
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
