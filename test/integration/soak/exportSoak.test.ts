import { writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { closeParkedSearches } from '../../../lib/connectors/ldap';
import { startPostgres, type Postgres } from '../../support/postgres';
import { serverAvailable } from '../../support/servers';
import { startService, type ServiceUnderTest } from '../../support/service';
import { startSlapd, type Slapd } from '../../support/slapd';
import { ExportSoak, type SoakReport } from '../../support/soak/harness';

/**
 * The export soak (docs/soak-test.md): seeded days of HR changes exported to a real slapd and a real
 * PostgreSQL through the tutorial's design, each day's targets compared with an oracle computed from the HR
 * rows alone. Zero differences, and zero silent ones (a day whose runs all said `Completed` while a target is
 * wrong).
 *
 * Small here (50 people x 4 days, a fixed seed). SOAK_PEOPLE, SOAK_DAYS and SOAK_SEED change the size and the
 * seed (`npm run bench:soak` runs this file at 5,000 x 10); SOAK_REPORT=<file> writes the JSON report there
 * (else into the temporary folder, its path printed when a day differs); SOAK_VERBOSE=1 prints each day.
 */
const PEOPLE = Number(process.env.SOAK_PEOPLE ?? 50);
const DAYS = Number(process.env.SOAK_DAYS ?? 4);
const SEED = Number(process.env.SOAK_SEED ?? 20261129);
// About 40 s a day at 50 people on a quiet machine; generous for a shared one and for the bench's sizes.
jest.setTimeout(Math.max(600_000, DAYS * (120_000 + PEOPLE * 400)));

const run = serverAvailable('slapd') && serverAvailable('postgres') ? describe : describe.skip;

run(`export soak: ${PEOPLE} people x ${DAYS} days, seed ${SEED} (service, slapd, PostgreSQL)`, () => {
  let slapd: Slapd;
  let pg: Postgres;
  let rt: ServiceUnderTest;
  let report: SoakReport;
  let soak: ExportSoak;

  beforeAll(async () => {
    // No refint on manager: a report's manager DN must be rewritten by the service, not by slapd (as the tutorial's test).
    slapd = await startSlapd({ refintAttributes: ['member'] });
    pg = await startPostgres();
    await pg.createDatabase('soak');
    rt = await startService();
    soak = new ExportSoak(
      { rt, slapd, pg, database: 'soak' },
      { people: PEOPLE, days: DAYS, seed: SEED, log: process.env.SOAK_VERBOSE ? (l) => process.stderr.write(`[soak] ${l}\n`) : undefined },
    );
    await soak.setup();
    report = await soak.run();
    const file = process.env.SOAK_REPORT ?? path.join(os.tmpdir(), `soak-report-${SEED}-${PEOPLE}x${DAYS}.json`);
    writeFileSync(file, JSON.stringify(report, null, 2));
    if (report.totals.differences) process.stderr.write(`[soak] report: ${file}\n`);
  });
  afterAll(async () => {
    await rt?.dispose();
    await closeParkedSearches();
    await pg?.stop();
    await slapd?.stop();
  });

  test('every day ran its cycle: each export mode, the refused add and its fix, and a kill -9 during an export', () => {
    const days = report.dayReports;
    expect(days).toHaveLength(DAYS);
    expect(new Set(days.map((d) => d.mode))).toEqual(new Set(DAYS >= 3 ? ['sequential', 'schedule', 'plan'] : days.map((d) => d.mode)));
    // The HR import, the exports and both confirming imports ran every day, and none waited for approval.
    for (const d of days) {
      expect(d.runs.filter((r) => r.label.includes('confirming import'))).toHaveLength(2);
      expect(d.runs.filter((r) => r.runType === 'Export' && !r.dryRun).length).toBeGreaterThanOrEqual(2);
      expect(d.runs.map((r) => r.status)).not.toContain('AwaitingApproval');
    }
    // The plan days applied their dry runs; the schedule days' exports were started by the schedule.
    for (const d of days.filter((x) => x.mode === 'plan')) expect(d.runs.filter((r) => r.trigger === 'apply')).toHaveLength(2);
    for (const d of days.filter((x) => x.mode === 'schedule')) expect(d.runs.filter((r) => r.trigger === 'schedule')).toHaveLength(2);
    expect(days[1].faults.refused).toHaveLength(1);
    if (DAYS > 2) expect(new Set(days.map((d) => d.hrImport))).toEqual(new Set(['FullImport', 'DeltaImport']));
    if (DAYS > 2) expect(days[2].faults.fixed).toEqual(days[1].faults.refused);
    const kills = days.flatMap((d) => (d.faults.kill ? [d.faults.kill] : []));
    expect(kills.length).toBeGreaterThan(0);
    expect(kills.some((k) => k.duringRun)).toBe(true);
    // The model's days hold the changes the soak is about.
    const events = days.reduce<Record<string, number>>((acc, d) => {
      for (const [k, n] of Object.entries(d.events)) acc[k] = (acc[k] ?? 0) + (n ?? 0);
      return acc;
    }, {});
    for (const k of [
      'hire',
      'futureHire',
      'managerMove',
      'rename',
      'mailChange',
      'managerChange',
      'termination',
      'refusedAdd',
      ...(DAYS >= 3 ? ['rehire'] : []),
    ])
      expect(events[k]).toBeGreaterThan(0);
  });

  test('no day leaves a target different from the oracle, and none does so silently', () => {
    const summary = report.dayReports.map((d) => ({
      day: d.day,
      mode: d.mode,
      differences: d.differences.byCategory,
      silent: d.differences.silent,
      silentByTarget: d.differences.silentByTarget,
      examples: d.differences.examples.slice(0, 4),
    }));
    expect({ differences: report.totals.differences, silent: report.totals.silent, silentByTarget: report.totals.silentByTarget, days: summary }).toEqual({
      differences: 0,
      silent: 0,
      silentByTarget: { ldap: 0, staff: 0 },
      days: summary.map((d) => ({ ...d, differences: {}, silent: 0, silentByTarget: { ldap: 0, staff: 0 }, examples: [] })),
    });
  });
});
