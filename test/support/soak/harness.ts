import { mkdirSync, renameSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { Client } from 'ldapts';
import type { Postgres } from '../postgres';
import type { ServiceUnderTest } from '../service';
import type { Slapd } from '../slapd';
import { HrModel, hrCsv, type HrDay } from './model';
import { categoryOf, compareLdap, compareStaff, expectedState, PEOPLE_DN, type ActualEntry, type Difference, type StaffRow } from './oracle';
import { Prng } from './prng';
import { DIRECTORY_DN_TEMPLATE, STAFF_QUERY, STAFF_STATEMENTS, STAFF_TABLE, tutorialRules } from '../tutorialDesign';

/**
 * The export soak (docs/soak-test.md): seeded days of HR changes through the tutorial's whole design (an HR
 * file connector, a slapd target with one OU per department, a PostgreSQL `staff` table), each day's exports run
 * one after the other, in parallel through a schedule, or through a plan and its apply, with faults injected (an
 * add the staff table refuses until HR fixes it the next day, kill -9 of the service during an export). After
 * each day's cycle the oracle (oracle.ts), computed from the HR rows alone, is compared with what slapd and
 * PostgreSQL hold. A difference on a day whose every run said `Completed` with no error is "silent": the failure
 * the soak exists to catch.
 */

export type ExportMode = 'sequential' | 'schedule' | 'plan';
export type TargetName = 'Directory' | 'Staff';

export interface SoakOptions {
  people: number;
  /** Days in all, the initial load (day 0) included. */
  days: number;
  seed: number;
  /** Progress lines (none by default). */
  log?: (line: string) => void;
  /** How long one run may take before the soak gives up on it. Default 30 min. */
  runTimeoutMs?: number;
}

export interface SoakServers {
  rt: ServiceUnderTest;
  slapd: Slapd;
  pg: Postgres;
  /** The PostgreSQL database the staff table is made in (empty). */
  database: string;
}

/** What a day does besides the HR changes, decided by the seed. */
export interface DayPlan {
  day: number;
  mode: ExportMode;
  hrImport: 'FullImport' | 'DeltaImport';
  refuseAnAdd: boolean;
  /** kill -9 of the service while this target's export runs (sequential days only). */
  kill?: TargetName;
}

export interface RunRecord {
  label: string;
  runId: string;
  connector: string;
  runType: string;
  dryRun: boolean;
  trigger?: string;
  status: string;
  /** The run's own error (a Failed or Cancelled run says why). */
  error?: string;
  stats: Record<string, number>;
  /**
   * The run's first errors (object and message, messages cut at 300 characters); for the directory, an object
   * named by its entryUUID also gets the entry's DN as the soak found it after the day.
   */
  errors: { object?: string; dn?: string; message: string }[];
  /** An export that applied changes (not a dry run): its changes list's `drifted` and `failed` items (docs/safety.md). */
  changes?: { drifted: number; failed: number };
  durationMs: number;
}

export interface DayReport {
  day: number;
  mode: ExportMode;
  hrImport: DayPlan['hrImport'];
  hrRows: number;
  events: HrDay['events'];
  faults: {
    refused: string[];
    fixed: string[];
    kill?: { target: TargetName; duringRun: boolean; statusAtKill: string; objectsProcessedAtKill: number; interruptedRunEnded: string };
  };
  runs: RunRecord[];
  /** Every run of the day `Completed` with `stats.errors` 0. */
  allRunsClean: boolean;
  differences: {
    total: number;
    /** Differences on a day whose every run was clean. */
    silent: number;
    /**
     * Per target, its differences on a day when its own runs (its exports, dry runs, applies and confirming
     * import) were all clean: the target looked fine to anyone reading its runs.
     */
    silentByTarget: Record<'ldap' | 'staff', number>;
    byCategory: Record<string, number>;
    /** The first few, for the engine engineer. */
    examples: Difference[];
  };
  durationMs: number;
}

export interface SoakReport {
  seed: number;
  people: number;
  days: number;
  startedOn: string;
  durationMs: number;
  totals: {
    differences: number;
    silent: number;
    silentByTarget: Record<'ldap' | 'staff', number>;
    byCategory: Record<string, number>;
    daysWithDifferences: number;
    runs: number;
  };
  dayReports: DayReport[];
}

const FINAL = ['Completed', 'CompletedWithErrors', 'Failed', 'Cancelled', 'Rejected', 'AwaitingApproval'];
const EXAMPLES = 12;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** The day plans of a seed: every mode appears within three days; faults spread over the days. */
export function planDays(seed: number, days: number): DayPlan[] {
  const rng = new Prng(seed ^ 0xfa17);
  const modes = rng.shuffle<ExportMode>(['sequential', 'schedule', 'plan']);
  const plans: DayPlan[] = [];
  let killed = false;
  for (let day = 0; day < days; day++) {
    const mode = modes[day % 3];
    const plan: DayPlan = {
      day,
      mode,
      // The tutorial imports HR in full, then by delta: day 2 is always a delta, the others by seed.
      hrImport: day === 0 ? 'FullImport' : day === 2 || rng.chance(0.5) ? 'DeltaImport' : 'FullImport',
      refuseAnAdd: day === 1 || (day > 1 && rng.chance(0.3)),
    };
    // At least one kill: on the first sequential day, then on half of them.
    if (mode === 'sequential' && (!killed || rng.chance(0.5))) {
      plan.kill = rng.pick<TargetName>(['Directory', 'Staff']);
      killed = true;
    }
    plans.push(plan);
  }
  return plans;
}

export class ExportSoak {
  private readonly model: HrModel;
  private readonly plans: DayPlan[];
  private readonly log: (line: string) => void;
  private readonly runTimeoutMs: number;
  private hrDir = '';
  private ids: Record<'HR' | TargetName, string> = { HR: '', Directory: '', Staff: '' };
  private scheduleId = '';
  /** By run id, the objects its errors name (the whole list the run keeps, not only the report's first few). */
  private readonly errorObjects = new Map<string, string[]>();

  constructor(
    private readonly servers: SoakServers,
    private readonly options: SoakOptions,
  ) {
    this.model = new HrModel(options.seed, options.people);
    this.plans = planDays(options.seed, options.days);
    this.log = options.log ?? (() => undefined);
    this.runTimeoutMs = options.runTimeoutMs ?? 30 * 60_000;
  }

  get dayPlans(): readonly DayPlan[] {
    return this.plans;
  }

  /** The staff table, the tutorial's two OUs, the three connectors, the tutorial's rules, and the export schedule. */
  async setup(): Promise<void> {
    const { rt, slapd, pg, database } = this.servers;
    // The tutorial's table (docs/tutorial.md section 2), then the soak's fault: a CHECK a mail without '@' fails.
    await pg.query(STAFF_TABLE, [], database);
    await pg.query(`ALTER TABLE staff ADD CONSTRAINT staff_mail_check CHECK (mail LIKE '%@%')`, [], database);
    const ldap = await this.ldap();
    try {
      for (const ou of ['Engineering', 'Research']) await ldap.add(`ou=${ou},${PEOPLE_DN}`, { objectClass: ['organizationalUnit'], ou: [ou] });
    } finally {
      await ldap.unbind();
    }

    this.hrDir = path.join(rt.dataDir, 'files', 'hr');
    mkdirSync(this.hrDir, { recursive: true });
    // No limit on deletes: a day's leavers are a legitimate change, and a run parked for approval would stop the
    // soak (thresholds are tested in their own suites). `deletes: {}` removes the default limit (docs/safety.md).
    const thresholds = { deletes: {} };
    // Leavers are deleted in both targets at the first export after they leave (grace 0, docs/sync-engine.md).
    const deprovisioning = { action: 'delete', graceDays: 0 };
    this.ids.HR = await this.create({
      name: 'HR',
      type: 'custom',
      config: {
        implementation: 'file',
        objectType: 'User',
        thresholds,
        settings: { path: this.hrDir, anchorColumn: 'employeeId', referenceColumns: { manager: 'User' } },
      },
    });
    this.ids.Directory = await this.create({
      name: 'Directory',
      type: 'ldap',
      config: {
        host: '127.0.0.1',
        port: slapd.ldapsPort,
        security: 'ldaps',
        caCertificate: slapd.caCertificate,
        bindDN: slapd.rootDN,
        bindPassword: slapd.rootPassword,
        baseDN: PEOPLE_DN,
        exportDnTemplate: DIRECTORY_DN_TEMPLATE,
        // Departments other than the tutorial's two get their OU from the export (docs/connector-ldap.md).
        createContainers: true,
        deprovisioning,
        thresholds,
      },
    });
    this.ids.Staff = await this.create({
      name: 'Staff database',
      type: 'sql',
      config: {
        dialect: 'postgres',
        host: pg.host,
        port: pg.port,
        database,
        user: pg.user,
        password: pg.password,
        anchorColumn: 'employee_id',
        fullImportQuery: STAFF_QUERY,
        referenceColumns: { manager_id: 'User' },
        // The tutorial's statements as they are: every parameter bound, so an update must carry the full state.
        exportStatements: STAFF_STATEMENTS,
        deprovisioning,
        thresholds,
      },
    });

    // docs/tutorial.md section 5, rule for rule, and section 8's manager flows.
    const { HR, Directory, Staff } = this.ids;
    await tutorialRules((body) => this.rule(body), { hr: HR, directory: Directory, staff: Staff });

    // docs/operations.md: one step holding both target exports, run in parallel; started with "run now" only.
    const schedule = await rt.call('POST', 'schedules', {
      body: {
        name: 'Soak exports',
        cron: '0 0 3 1 1 *',
        timeZone: 'UTC',
        isEnabled: false,
        stopOnFailure: false,
        steps: [{ runType: 'Export', connectorIds: [Directory, Staff] }],
      },
    });
    if (schedule.status !== 201) throw new Error(`create schedule: ${schedule.status} ${schedule.text}`);
    this.scheduleId = schedule.body.scheduleId as string;
  }

  /** Every day, in order; the report of the whole soak. */
  async run(): Promise<SoakReport> {
    const started = Date.now();
    const startedOn = new Date().toISOString();
    const dayReports: DayReport[] = [];
    for (const plan of this.plans) {
      const hr = plan.day === 0 ? this.model.day0() : this.model.nextDay({ refuseAnAdd: plan.refuseAnAdd });
      const report = await this.runDay(plan, hr);
      dayReports.push(report);
      this.log(
        `day ${plan.day} (${plan.mode}, ${plan.hrImport}${plan.kill ? `, kill during ${plan.kill}` : ''}${hr.refused.length ? ', refused add' : ''}): ` +
          `${report.differences.total} differences (${report.differences.silent} silent, ${JSON.stringify(report.differences.silentByTarget)} silent by target) ${JSON.stringify(report.differences.byCategory)} in ${report.durationMs} ms`,
      );
    }
    const byCategory: Record<string, number> = {};
    for (const d of dayReports) for (const [k, n] of Object.entries(d.differences.byCategory)) byCategory[k] = (byCategory[k] ?? 0) + n;
    return {
      seed: this.options.seed,
      people: this.options.people,
      days: this.options.days,
      startedOn,
      durationMs: Date.now() - started,
      totals: {
        differences: dayReports.reduce((s, d) => s + d.differences.total, 0),
        silent: dayReports.reduce((s, d) => s + d.differences.silent, 0),
        silentByTarget: {
          ldap: dayReports.reduce((s, d) => s + d.differences.silentByTarget.ldap, 0),
          staff: dayReports.reduce((s, d) => s + d.differences.silentByTarget.staff, 0),
        },
        byCategory,
        daysWithDifferences: dayReports.filter((d) => d.differences.total > 0).length,
        runs: dayReports.reduce((s, d) => s + d.runs.length, 0),
      },
      dayReports,
    };
  }

  /** The tutorial's cycle for one day: the HR file, its import, the exports (by the day's mode), the confirming imports, the oracle. */
  private async runDay(plan: DayPlan, hr: HrDay): Promise<DayReport> {
    const started = Date.now();
    const runs: RunRecord[] = [];
    // Written aside and renamed in: an import never sees half a file.
    const tmp = path.join(this.servers.rt.dataDir, `people.csv.${plan.day}.tmp`);
    writeFileSync(tmp, hrCsv(hr.rows));
    renameSync(tmp, path.join(this.hrDir, 'people.csv'));

    runs.push(await this.trigger('HR import', 'HR', 'import', { runType: plan.hrImport }));
    let kill: DayReport['faults']['kill'];
    if (plan.mode === 'sequential') {
      for (const target of ['Directory', 'Staff'] as const) {
        if (plan.kill === target) {
          const k = await this.exportWithKill(target);
          runs.push(...k.runs);
          kill = k.kill;
        } else runs.push(await this.trigger(`${target} export`, target, 'export', {}));
      }
    } else if (plan.mode === 'schedule') runs.push(...(await this.scheduleRun()));
    else {
      const dry = [
        await this.trigger('Directory dry run', 'Directory', 'export', { dryRun: true }),
        await this.trigger('Staff dry run', 'Staff', 'export', { dryRun: true }),
      ];
      runs.push(...dry);
      for (const d of dry) runs.push(await this.apply(d));
    }
    runs.push(await this.trigger('Directory confirming import', 'Directory', 'import', { runType: 'FullImport' }));
    runs.push(await this.trigger('Staff confirming import', 'Staff', 'import', { runType: 'FullImport' }));

    const expected = expectedState(hr.rows);
    const directory = await this.readDirectory();
    const dnByUuid = new Map(directory.map((e) => [e.attributes.entryuuid?.[0], e.dn]));
    for (const r of runs) if (r.connector === 'Directory') for (const e of r.errors) if (e.object && dnByUuid.has(e.object)) e.dn = dnByUuid.get(e.object);
    const differences = [...compareLdap(expected.ldap, directory), ...compareStaff(expected.staff, await this.readStaff())];
    // A refused add must be reported by the day's staff export: an error naming the person, in a run that
    // applied changes (when a run's error list is full, at 100, an error for the person may be past its end).
    for (const id of expected.staffRefused) {
      const reported = runs.some((r) => {
        if (r.connector !== 'Staff' || r.runType !== 'Export' || r.dryRun) return false;
        const objects = this.errorObjects.get(r.runId) ?? [];
        return objects.includes(id) || objects.length >= 100 || (r.status === 'Failed' && !objects.length);
      });
      if (!reported) differences.push({ target: 'staff', kind: 'refusal-unreported', employeeId: id, expected: 'an error naming it in the staff export' });
    }
    const clean = (r: RunRecord) => r.status === 'Completed' && (r.stats.errors ?? 0) === 0;
    const allRunsClean = runs.every(clean);
    const targetClean = { ldap: runs.filter((r) => r.connector === 'Directory').every(clean), staff: runs.filter((r) => r.connector === 'Staff').every(clean) };
    const silentByTarget = {
      ldap: targetClean.ldap ? differences.filter((d) => d.target === 'ldap').length : 0,
      staff: targetClean.staff ? differences.filter((d) => d.target === 'staff').length : 0,
    };
    const byCategory: Record<string, number> = {};
    for (const d of differences) byCategory[categoryOf(d)] = (byCategory[categoryOf(d)] ?? 0) + 1;
    return {
      day: plan.day,
      mode: plan.mode,
      hrImport: plan.hrImport,
      hrRows: hr.rows.length,
      events: hr.events,
      faults: { refused: hr.refused, fixed: hr.fixed, ...(kill ? { kill } : {}) },
      runs,
      allRunsClean,
      differences: { total: differences.length, silent: allRunsClean ? differences.length : 0, silentByTarget, byCategory, examples: examplesOf(differences) },
      durationMs: Date.now() - started,
    };
  }

  /** The export of `target` with kill -9 of the service once it runs, a restart on the same data, and the export again. */
  private async exportWithKill(target: TargetName): Promise<{ runs: RunRecord[]; kill: NonNullable<DayReport['faults']['kill']> }> {
    const { rt } = this.servers;
    const started = Date.now();
    const res = await rt.call('POST', `connectors/${this.ids[target]}/export`, { body: {} });
    if (res.status !== 202) throw new Error(`${target} export: ${res.status} ${res.text}`);
    const runId = res.body.runId as string;
    // Kill once the run has applied something (its stats are written after every page), so that the kill lands
    // between pages; a run that shows no progress within 1.5 s of Running is killed anyway.
    let seen: { status: string; stats?: { objectsProcessed?: number }; progress?: { objectsProcessed?: number } };
    let runningSince = 0;
    const processed = () => Math.max(seen.stats?.objectsProcessed ?? 0, seen.progress?.objectsProcessed ?? 0);
    for (;;) {
      seen = (await rt.call('GET', `runs/${runId}`)).body;
      if (FINAL.includes(seen.status)) break;
      if (seen.status === 'Running') {
        runningSince ||= Date.now();
        if (processed() > 0 || Date.now() - runningSince > 1500) break;
      }
      await sleep(20);
    }
    await rt.kill();
    this.log(`killed the service during the ${target} export (run ${seen.status}, ${processed()} objects processed)`);
    await rt.start();
    const interrupted = await this.record(`${target} export (killed)`, target, runId, started);
    const again = await this.trigger(`${target} export (after restart)`, target, 'export', {});
    return {
      runs: [interrupted, again],
      kill: {
        target,
        duringRun: seen.status === 'Running',
        statusAtKill: seen.status,
        objectsProcessedAtKill: processed(),
        interruptedRunEnded: interrupted.status,
      },
    };
  }

  /** "Run now" of the export schedule; its runs once the schedule run is over. */
  private async scheduleRun(): Promise<RunRecord[]> {
    const { rt } = this.servers;
    const started = Date.now();
    const res = await rt.call('POST', `schedules/${this.scheduleId}/run`);
    if (res.status !== 202) throw new Error(`schedule run: ${res.status} ${res.text}`);
    const scheduleRunId = res.body.scheduleRunId as string;
    const deadline = Date.now() + this.runTimeoutMs;
    for (;;) {
      const r = await rt.call('GET', `schedules/${this.scheduleId}/runs/${scheduleRunId}`);
      if (r.status === 200 && r.body.status !== 'Running') {
        const out: RunRecord[] = [];
        for (const step of r.body.steps as { runs: { connectorId: string; runId: string | null; status: string }[] }[])
          for (const entry of step.runs) {
            const target = (Object.keys(this.ids) as (keyof typeof this.ids)[]).find((k) => this.ids[k] === entry.connectorId)!;
            if (entry.runId) out.push(await this.record(`${target} export (schedule)`, target, entry.runId, started));
            else
              out.push({
                label: `${target} export (schedule, not started)`,
                runId: '',
                connector: target,
                runType: 'Export',
                dryRun: false,
                status: entry.status,
                stats: {},
                errors: [],
                durationMs: 0,
              });
          }
        return out;
      }
      if (Date.now() > deadline) throw new Error(`schedule run ${scheduleRunId} did not end: ${r.text}`);
      await sleep(250);
    }
  }

  /** The apply of a dry run's plan. */
  private async apply(dry: RunRecord): Promise<RunRecord> {
    const started = Date.now();
    const res = await this.servers.rt.call('POST', `runs/${dry.runId}/apply`);
    if (res.status !== 202) throw new Error(`apply of ${dry.label}: ${res.status} ${res.text}`);
    return this.record(`${dry.connector} apply`, dry.connector as TargetName, res.body.runId as string, started);
  }

  private async trigger(label: string, who: keyof ExportSoak['ids'], what: 'import' | 'export', body: Record<string, unknown>): Promise<RunRecord> {
    const started = Date.now();
    const res = await this.servers.rt.call('POST', `connectors/${this.ids[who]}/${what}`, { body });
    if (res.status !== 202) throw new Error(`${label}: ${res.status} ${res.text}`);
    return this.record(label, who, res.body.runId as string, started);
  }

  /** A run once it has ended. */
  private async record(label: string, who: string, runId: string, started: number): Promise<RunRecord> {
    const deadline = Date.now() + this.runTimeoutMs;
    for (;;) {
      const res = await this.servers.rt.call('GET', `runs/${runId}`);
      if (res.status === 200 && FINAL.includes(res.body.status)) {
        const r = res.body;
        this.errorObjects.set(
          runId,
          ((r.errors ?? []) as { object?: string }[]).flatMap((e) => (e.object ? [e.object] : [])),
        );
        const changes =
          r.runType === 'Export' && !r.dryRun
            ? { drifted: await this.changeCount(runId, 'drifted'), failed: await this.changeCount(runId, 'failed') }
            : undefined;
        return {
          label,
          runId,
          connector: who,
          runType: r.runType,
          dryRun: !!r.dryRun,
          trigger: r.trigger?.type,
          status: r.status,
          ...(r.error ? { error: String(r.error).slice(0, 500) } : {}),
          stats: r.stats ?? {},
          errors: ((r.errors ?? []) as { object?: string; message: string }[])
            .slice(0, 5)
            .map((e) => ({ ...(e.object ? { object: e.object } : {}), message: String(e.message).slice(0, 300) })),
          ...(changes ? { changes } : {}),
          durationMs: Date.now() - started,
        };
      }
      if (Date.now() > deadline) throw new Error(`run ${runId} (${label}) did not end: ${res.text}`);
      await sleep(100);
    }
  }

  private async changeCount(runId: string, outcome: 'drifted' | 'failed'): Promise<number> {
    const res = await this.servers.rt.call('GET', `runs/${runId}/changes?outcome=${outcome}&take=1`);
    if (res.status !== 200) throw new Error(`changes of run ${runId}: ${res.status} ${res.text}`);
    return res.body.totalCount as number;
  }

  private async create(body: Record<string, unknown>): Promise<string> {
    const res = await this.servers.rt.call('POST', 'connectors', { body });
    if (res.status !== 201) throw new Error(`create connector ${String(body.name)}: ${res.status} ${res.text}`);
    return res.body.id as string;
  }

  private async rule(body: Record<string, unknown>): Promise<void> {
    const res = await this.servers.rt.call('POST', 'rules', { body });
    if (res.status !== 201) throw new Error(`create rule ${String(body.ruleName)}: ${res.status} ${res.text}`);
  }

  private async ldap(): Promise<Client> {
    const { slapd } = this.servers;
    const client = new Client({ url: slapd.url });
    await client.bind(slapd.rootDN, slapd.rootPassword);
    return client;
  }

  /** Every entry below ou=people that is not an OU, with its attributes by lower-case type. */
  private async readDirectory(): Promise<ActualEntry[]> {
    const client = await this.ldap();
    try {
      const { searchEntries } = await client.search(PEOPLE_DN, {
        scope: 'sub',
        filter: '(objectClass=*)',
        attributes: ['*', 'entryUUID'],
        paged: { pageSize: 500 },
      });
      const out: ActualEntry[] = [];
      for (const e of searchEntries) {
        const attributes: Record<string, string[]> = {};
        for (const [k, v] of Object.entries(e)) {
          if (k === 'dn') continue;
          const list = (Array.isArray(v) ? v : [v]) as (string | Buffer)[];
          attributes[k.toLowerCase()] = list.map((x) => (Buffer.isBuffer(x) ? x.toString('utf8') : String(x)));
        }
        const classes = (attributes.objectclass ?? []).map((c) => c.toLowerCase());
        if (classes.includes('organizationalunit') && !classes.some((c) => c !== 'organizationalunit' && c !== 'top')) continue;
        out.push({ dn: e.dn, attributes });
      }
      return out;
    } finally {
      await client.unbind();
    }
  }

  private readStaff(): Promise<StaffRow[]> {
    return this.servers.pg.query<StaffRow & Record<string, unknown>>(
      'SELECT employee_id, given_name, surname, mail, department, manager_id FROM staff',
      [],
      this.servers.database,
    );
  }
}

/** A few examples of each category, the first ones found. */
function examplesOf(differences: Difference[]): Difference[] {
  const perCategory = new Map<string, number>();
  const out: Difference[] = [];
  for (const d of differences) {
    const c = categoryOf(d);
    const n = perCategory.get(c) ?? 0;
    if (n >= 2 || out.length >= EXAMPLES) continue;
    perCategory.set(c, n + 1);
    out.push(d);
  }
  return out;
}
