#!/usr/bin/env node
'use strict';
/**
 * What the scheduler costs between ticks, and how soon a due tick starts its first run. The running service
 * (local runtime, in-memory Azurite) with one small file connector. Prints JSON:
 * - idle: CPU of the service process (and of Azurite's table process) as % of one core over `--seconds` (default
 *   60), first with no schedule (the service's own timers: dispatcher, heartbeat...), then with `--schedules`
 *   (default 200) enabled schedules none of which is due; `scheduleCostPercent` is the difference (target: < 1);
 * - latency: `--samples` (default 5) schedules each due a few seconds ahead: milliseconds from the due tick to the
 *   first run's creation (`startedAt`), and to the schedule run's (target: < 2000);
 * - the machine's load average and CPU count, and the hypervisor's steal, beside the figures.
 *
 * Usage: npm run build && node bench/schedules/idle.js [--schedules 200] [--seconds 60] [--samples 5]
 */
const { mkdtempSync, rmSync, writeFileSync } = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const { arg, cpuSeconds, onInterrupt, sleep, startService, stealSeconds } = require('../support');

const SCHEDULES = arg('schedules', 200);
const SECONDS = arg('seconds', 60);
const SAMPLES = arg('samples', 5);

/** CPU % of one core used by the service and Azurite over `seconds`. */
async function idleCpu(svc, seconds) {
  const c0 = { service: cpuSeconds(svc.pid), azurite: cpuSeconds(svc.tablePid), steal: stealSeconds(), t: performance.now() };
  await sleep(seconds * 1000);
  const wall = (performance.now() - c0.t) / 1000;
  const pct = (now, before) => +((100 * (now - before)) / wall).toFixed(3);
  return {
    seconds: +wall.toFixed(1),
    servicePercent: pct(cpuSeconds(svc.pid), c0.service),
    azuritePercent: pct(cpuSeconds(svc.tablePid), c0.azurite),
    stealSeconds: +(stealSeconds() - c0.steal).toFixed(2),
    load: os.loadavg()[0],
  };
}

/** A six-field UTC cron firing once a day at `at`. */
const cronAt = (at) => `${at.getUTCSeconds()} ${at.getUTCMinutes()} ${at.getUTCHours()} * * *`;

async function main() {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'schedule-bench-'));
  const removeDir = onInterrupt(() => rmSync(dir, { recursive: true, force: true }));
  writeFileSync(path.join(dir, 'people.csv'), 'id,personId\np1,P1\np2,P2\n');
  let svc;
  try {
    svc = await startService({ env: { Connectors__File__Roots: os.tmpdir() } });
    const { call, must } = svc;
    const connector = await must(
      call('POST', 'connectors', {
        name: 'Bench',
        type: 'custom',
        config: { implementation: 'file', objectType: 'User', settings: { path: dir, anchorColumn: 'id' } },
      }),
      201,
    );
    await must(call('POST', 'rules', { ruleName: 'p', ruleType: 'ProjectionRule', connectorId: connector.id, sourceAttribute: 'personId' }), 201);
    await sleep(10_000); // start-up work settles
    console.error(`baseline idle ${SECONDS} s...`);
    const baseline = await idleCpu(svc, SECONDS);

    // Due twelve hours from now: none ticks during the measurement.
    const far = new Date(Date.now() + 12 * 3600_000);
    for (let i = 0; i < SCHEDULES; i++) {
      await must(
        call('POST', 'schedules', {
          name: `idle-${i}`,
          cron: `${i % 60} ${far.getUTCMinutes()} ${far.getUTCHours()} * * *`,
          steps: [{ runType: 'FullImport', connectorIds: [connector.id] }],
        }),
        201,
      );
    }
    await sleep(12_000); // the loop has loaded them all
    console.error(`${SCHEDULES} schedules idle ${SECONDS} s...`);
    const withSchedules = await idleCpu(svc, SECONDS);

    const latency = [];
    for (let k = 0; k < SAMPLES; k++) {
      const at = new Date(Math.ceil((Date.now() + 4000) / 1000) * 1000);
      const s = await must(
        call('POST', 'schedules', { name: `due-${k}`, cron: cronAt(at), steps: [{ runType: 'FullImport', connectorIds: [connector.id] }] }),
        201,
      );
      let sample;
      const deadline = Date.now() + 30_000;
      while (!sample && Date.now() < deadline) {
        const runs = await must(call('GET', `schedules/${s.scheduleId}/runs`), 200);
        const first = runs.items[0]?.steps[0].runs[0];
        if (first?.runId) {
          const run = await must(call('GET', `runs/${first.runId}`), 200);
          sample = { scheduleRunMs: Date.parse(runs.items[0].startedOn) - at.getTime(), firstRunMs: Date.parse(run.startedAt) - at.getTime() };
          const done = Date.now() + 30_000;
          while (Date.now() < done && ['Queued', 'Running'].includes((await must(call('GET', `runs/${first.runId}`), 200)).status)) await sleep(100);
        } else await sleep(50);
      }
      latency.push(sample ?? { error: 'no run within 30 s' });
      await must(
        call('PUT', `schedules/${s.scheduleId}`, {
          name: `due-${k}`,
          cron: cronAt(at),
          isEnabled: false,
          steps: [{ runType: 'FullImport', connectorIds: [connector.id] }],
        }),
        200,
      );
    }
    const firstRuns = latency.map((l) => l.firstRunMs).filter((x) => typeof x === 'number');
    console.log(
      JSON.stringify(
        {
          bench: 'schedules-idle',
          schedules: SCHEDULES,
          idle: { baseline, withSchedules, scheduleCostPercent: +(withSchedules.servicePercent - baseline.servicePercent).toFixed(3), targetPercent: 1 },
          latency: { samples: latency, maxFirstRunMs: Math.max(...firstRuns), targetMs: 2000 },
          cpus: os.cpus().length,
          loadAverage: os.loadavg().map((x) => +x.toFixed(2)),
          date: new Date().toISOString(),
        },
        null,
        2,
      ),
    );
  } finally {
    await svc?.stop();
    rmSync(dir, { recursive: true, force: true });
    removeDir();
  }
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
