#!/usr/bin/env node
'use strict';
/**
 * What due-instant tracking costs (docs/dated-changes.md). N people in an HR CSV (file connector) with a hire
 * date, a termination date and a time zone; 10 % of them start in the next 1-30 days, 5 % leave in the next
 * 1-30 days. A second file connector is the target, with a provisioning condition (14 days before the hire date)
 * and an outbound flow of the account status (enabled from 06:00 on the hire date to the end of the last day,
 * in the person's zone). Two designs, each on a fresh service (local runtime, in-memory Azurite):
 * - `dated`: the rules call now(): every export evaluation records the object's next instant in the due index
 *   (about 15 % of the people have one);
 * - `static`: the same scripts with now() replaced by a fixed date literal: the same evaluation work, no clock,
 *   nothing recorded.
 * For each: the full import (HTTP trigger to Completed) and the first export (every person evaluated, the
 * provisioned ones added to the target's file), with the service's CPU seconds. Designs run interleaved
 * (`--rounds` times). Prints JSON with each run and the ratio dated / static of the means.
 *
 * The import has a clock-dependent rule of its own (a computed attribute `lifecycle`, the status script): an import
 * evaluates it for every person and, in the dated design, records each person's next instant (about 15 %), which
 * is the tracking the goal "at most 5 % added to a 100k full import" names. `--no-import-rule`: without it (the
 * import then runs no tracking code); `--import-only`: the imports alone (rounds alternate static/dated first).
 *
 * Usage: npm run build && node bench/sync/dated.js [--users 100000] [--rounds 1] [--dated-first] [--no-import-rule] [--import-only]
 */
const { mkdtempSync, rmSync, writeFileSync } = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const { arg, cpuSeconds, onInterrupt, peakRssMB, startService } = require('../support');

const N = arg('users', 100000);
const ROUNDS = arg('rounds', 1);
const IMPORT_RULE = !process.argv.includes('--no-import-rule');
const SKIP_EXPORT = process.argv.includes('--import-only');
const DAY = 86_400_000;
const HEADER = ['id', 'employeeId', 'givenName', 'sn', 'hireDate', 'terminationDate', 'tz'];
const ZONES = ['Europe/Paris', 'America/New_York', 'Asia/Tokyo', 'UTC'];
const day = (ms) => new Date(ms).toISOString().slice(0, 10);

function writeUsers(dir) {
  const now = Date.now();
  const lines = [HEADER.join(',')];
  for (let i = 0; i < N; i++) {
    const hire = i % 10 === 0 ? day(now + ((i % 30) + 1) * DAY) : '2020-01-06';
    const leave = i % 20 === 7 ? day(now + ((i % 30) + 1) * DAY) : '';
    lines.push([`u${i}`, `E${String(i).padStart(6, '0')}`, `Given${i}`, `Surname${i}`, hire, leave, ZONES[i % ZONES.length]].join(','));
  }
  writeFileSync(path.join(dir, 'users.csv'), lines.join('\n') + '\n');
}

const CONDITION = 'NOW >= addDays(date(object.hireDate, object.tz), -14)';
const STATUS =
  'NOW >= atTime(date(object.hireDate, object.tz), "06:00", object.tz) && !(NOW > endOfDay(date(object.terminationDate, object.tz), object.tz)) ? "enabled" : "disabled"';

async function once(design) {
  const src = mkdtempSync(path.join(os.tmpdir(), 'dated-bench-src-'));
  const dst = mkdtempSync(path.join(os.tmpdir(), 'dated-bench-dst-'));
  const removeDirs = onInterrupt(() => [src, dst].forEach((d) => rmSync(d, { recursive: true, force: true })));
  writeFileSync(path.join(dst, 'export.csv'), 'uid,name,status\n');
  const clock = design === 'dated' ? 'now()' : `date("${new Date().toISOString()}")`;
  let svc;
  try {
    svc = await startService();
    const { call, must } = svc;
    writeUsers(src);
    const hr = await must(
      call('POST', 'connectors', {
        name: 'HR',
        type: 'custom',
        config: { implementation: 'file', objectType: 'User', settings: { path: src, anchorColumn: 'id' } },
      }),
      201,
    );
    const target = await must(
      call('POST', 'connectors', {
        name: 'Target',
        type: 'custom',
        config: {
          implementation: 'file',
          objectType: 'User',
          settings: { path: dst, anchorColumn: 'uid' },
          provisioningCondition: CONDITION.replaceAll('NOW', clock),
          deletionThreshold: { objects: N, percent: 100 },
        },
      }),
      201,
    );
    const rule = (connectorId, b) => must(call('POST', 'rules', { ruleName: `r${Math.random()}`, connectorId, ...b }), 201);
    await rule(hr.id, { ruleType: 'ProjectionRule', sourceAttribute: 'employeeId' });
    for (const a of ['employeeId', 'givenName', 'hireDate', 'terminationDate', 'tz'])
      await rule(hr.id, { ruleType: 'FlowRule', sourceAttribute: a, targetAttribute: a, confidence: 50 });
    await rule(target.id, { ruleType: 'FlowRule', direction: 'outbound', sourceAttribute: 'employeeId', targetAttribute: 'uid' });
    await rule(target.id, { ruleType: 'FlowRule', direction: 'outbound', sourceAttribute: 'givenName', targetAttribute: 'name' });
    await rule(target.id, {
      ruleType: 'FlowRule',
      direction: 'outbound',
      sourceAttribute: 'hireDate',
      targetAttribute: 'status',
      transformScript: STATUS.replaceAll('NOW', clock),
    });

    // The import's own clock-dependent rule (default; --no-import-rule leaves it out, as the first version of this
    // bench did): a computed attribute of the person's lifecycle by hire and termination date. An import evaluates
    // it for every person and, in the dated design, records each person's next instant (due index, o_import).
    if (IMPORT_RULE)
      await rule(undefined, {
        ruleType: 'MeshComposerRule',
        targetAttribute: 'lifecycle',
        transformScript: STATUS.replaceAll('NOW', clock).replace('"enabled"', '"active"').replace('"disabled"', '"inactive"'),
      });

    const cpu0 = cpuSeconds(svc.pid);
    const imported = await svc.runImport(hr.id, 'FullImport');
    const cpu1 = cpuSeconds(svc.pid);
    if (SKIP_EXPORT) {
      const result = {
        design,
        import: { seconds: +imported.seconds.toFixed(2), status: imported.run.status, serviceCpuSeconds: +(cpu1 - cpu0).toFixed(2), load: os.loadavg()[0] },
        servicePeakRssMB: peakRssMB(svc.pid),
      };
      console.error(JSON.stringify(result));
      return result;
    }
    const t0 = performance.now();
    const started = await must(call('POST', `connectors/${target.id}/export`, {}), 202);
    let exported;
    for (;;) {
      const r = await must(call('GET', `runs/${started.runId}`), 200);
      if (!['Queued', 'Running'].includes(r.status)) {
        exported = { seconds: +((performance.now() - t0) / 1000).toFixed(2), status: r.status, stats: r.stats, error: r.error };
        break;
      }
      await new Promise((res) => setTimeout(res, 50));
    }
    const cpu2 = cpuSeconds(svc.pid);
    const result = {
      design,
      import: { seconds: +imported.seconds.toFixed(2), status: imported.run.status, serviceCpuSeconds: +(cpu1 - cpu0).toFixed(2) },
      export: { ...exported, serviceCpuSeconds: +(cpu2 - cpu1).toFixed(2) },
      servicePeakRssMB: peakRssMB(svc.pid),
    };
    console.error(JSON.stringify(result));
    return result;
  } finally {
    await svc?.stop();
    [src, dst].forEach((d) => rmSync(d, { recursive: true, force: true }));
    removeDirs();
  }
}

const mean = (xs) => xs.reduce((a, b) => a + b, 0) / xs.length;

async function main() {
  const runs = [];
  // --dated-first: the first round starts with the dated design (rounds alternate the order).
  const first = process.argv.includes('--dated-first') ? 1 : 0;
  for (let r = 0; r < ROUNDS; r++) for (const design of (r + first) % 2 ? ['dated', 'static'] : ['static', 'dated']) runs.push(await once(design));
  const of = (design, pick) => mean(runs.filter((x) => x.design === design).map(pick));
  const ratio = (pick) => +(of('dated', pick) / of('static', pick)).toFixed(3);
  if (SKIP_EXPORT) {
    console.log(
      JSON.stringify(
        {
          bench: 'dated-changes',
          users: N,
          rounds: ROUNDS,
          importRule: IMPORT_RULE,
          runs,
          ratioDatedToStatic: { importSeconds: ratio((x) => x.import.seconds), importServiceCpu: ratio((x) => x.import.serviceCpuSeconds) },
          goal: 'due-instant tracking adds at most 5 % to a full import',
          loadAverage: os.loadavg().map((x) => +x.toFixed(2)),
        },
        null,
        2,
      ),
    );
    return;
  }
  console.log(
    JSON.stringify(
      {
        bench: 'dated-changes',
        users: N,
        rounds: ROUNDS,
        runs,
        ratioDatedToStatic: {
          importSeconds: ratio((x) => x.import.seconds),
          exportSeconds: ratio((x) => x.export.seconds),
          importPlusExportSeconds: ratio((x) => x.import.seconds + x.export.seconds),
          exportServiceCpu: ratio((x) => x.export.serviceCpuSeconds),
        },
        goal: 'due-instant tracking adds at most 5 %',
        loadAverage: os.loadavg().map((x) => +x.toFixed(2)),
      },
      null,
      2,
    ),
  );
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
