import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Client } from 'ldapts';
import { closeParkedSearches } from '../../../lib/connectors/ldap';
import { codeBlocks, readDoc, type CodeBlock } from '../../support/markdown';
import { trackPid } from '../../support/processes';
import { startPostgres, type Postgres } from '../../support/postgres';
import { serverAvailable } from '../../support/servers';
import { SECOND_ADMIN, startService, type ServiceUnderTest } from '../../support/service';
import { startSlapd, type Slapd } from '../../support/slapd';
import { meshByAnchor } from '../sync/syncSupport';

/**
 * docs/tutorial.md, run as written: every shell block, in order, in one bash session, against the running
 * service, a real slapd and a real PostgreSQL. Only two blocks are not run, each marked in the markdown with a
 * `<!-- tutorial-test: ... -->` note: `npm start` (this test starts the service itself, on free ports) and the
 * reader's environment (this test sets the same variables for its own servers). A command that fails (an
 * error answer, a run that does not end `Completed`) stops the session: `set -e`.
 *
 * One test per section of the tutorial, with what the section says should now be true checked against the
 * servers themselves; a section without a check here fails, so the tutorial cannot grow unchecked steps.
 */
jest.setTimeout(600_000);

const DOC = 'docs/tutorial.md';
const PEOPLE = 'ou=people,dc=example,dc=com';
const dnOf = (uid: string, ou: string) => `uid=${uid},ou=${ou},${PEOPLE}`;
/** Who the tutorial's second Admin is (section 12 prints it as the approver). */
const LEAVER_APPROVER = { upn: 'katherine.admin@example.com', preferred_username: 'katherine.admin@example.com' };

/** One bash process fed block after block; `set -e`, so the first failing command ends it. */
class Shell {
  private output = '';
  private readonly child: ChildProcess;
  private exited: number | null = null;
  private counter = 0;

  constructor(cwd: string, env: Record<string, string>) {
    this.child = spawn('bash', ['--noprofile', '--norc'], { cwd, env: { ...process.env, ...env }, stdio: ['pipe', 'pipe', 'pipe'] });
    trackPid(this.child.pid);
    this.child.stdout!.on('data', (d: Buffer) => (this.output += d.toString()));
    this.child.stderr!.on('data', (d: Buffer) => (this.output += d.toString()));
    this.child.on('exit', (code) => (this.exited = code ?? -1));
    this.child.stdin!.write('set -e\n');
  }

  get alive(): boolean {
    return this.exited === null;
  }

  /** Run `code`; resolves with what it printed, rejects with the output when the shell exits. */
  async run(code: string, timeoutMs = 300_000): Promise<string> {
    if (!this.alive) throw new Error('The tutorial shell has ended (an earlier step failed).');
    const mark = `__TUTORIAL_STEP_${++this.counter}_DONE__`;
    const from = this.output.length;
    this.child.stdin!.write(`${code}\necho ${mark}\n`);
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const out = this.output.slice(from);
      const at = out.indexOf(mark);
      if (at >= 0) return out.slice(0, at);
      if (!this.alive) throw new Error(`The step failed (bash exited ${this.exited}). Its output:\n${out.slice(-6000)}`);
      if (Date.now() > deadline) throw new Error(`The step did not finish in ${timeoutMs} ms. Its output:\n${out.slice(-6000)}`);
      await new Promise((r) => setTimeout(r, 50));
    }
  }

  /** The value of a shell variable. */
  async value(name: string): Promise<string> {
    return (await this.run(`printf '%s\\n' "$${name}"`)).trim();
  }

  /** Everything the session printed. */
  get transcript(): string {
    return this.output;
  }

  close(): void {
    if (this.alive) this.child.kill('SIGKILL');
  }
}

/** The names an `export` line of the environment block sets. */
function exportedNames(code: string): string[] {
  const names: string[] = [];
  for (const line of code.split('\n')) {
    if (!/^\s*export\s/.test(line)) continue;
    for (const m of line.replace(/^\s*export\s+/, '').matchAll(/(?:^|\s)([A-Za-z_][A-Za-z0-9_]*)=/g)) names.push(m[1]);
  }
  return names;
}

const blocks = codeBlocks(DOC, readDoc(DOC)).filter((b) => ['sh', 'bash'].includes(b.lang));
const sections = [...new Set(blocks.map((b) => b.section))];

interface Run {
  runId: string;
  runType: string;
  status: string;
  stats: Record<string, number>;
  errors?: Array<{ object?: string; message: string }>;
  dryRun?: boolean;
  plan?: { expiresOn: string };
  completedAt?: string;
  trigger?: { type: string; planRunId?: string };
  approvedBy?: string;
  approval?: { reasons: Array<{ operation: string; count: number; limit: number }> };
}

interface ScheduleRun {
  scheduleRunId: string;
  trigger: string;
  status: string;
  steps: Array<{ runType: string; status: string; runs: Array<{ connectorId: string; runId: string | null; status: string }> }>;
}

const withServers = serverAvailable('slapd') && serverAvailable('postgres') ? describe : describe.skip;

withServers('docs/tutorial.md, run as written (service, slapd, PostgreSQL)', () => {
  let slapd: Slapd;
  let pg: Postgres;
  let rt: ServiceUnderTest;
  let shell: Shell;
  let ldap: Client;
  let work: string;
  let env: Record<string, string>;

  const runs = async (connectorId: string) => (await rt.call('GET', `runs?connectorId=${connectorId}&take=200`)).body.items as Run[];
  const run = async (runId: string) => (await rt.call('GET', `runs/${runId}`)).body as Run;
  const changes = async (runId: string) =>
    (await rt.call('GET', `runs/${runId}/changes?take=200`)).body.items as Array<{
      operation: string;
      anchor: string | null;
      dn: string | null;
      outcome: string;
      attributes: Record<string, { old?: unknown; new?: unknown }>;
    }>;
  /** A schedule's runs, newest first, each with its steps. */
  const scheduleRuns = async (scheduleId: string) => {
    const list = (await rt.call('GET', `schedules/${scheduleId}/runs?take=50`)).body.items as Array<{ scheduleRunId: string }>;
    const out: ScheduleRun[] = [];
    for (const r of list) out.push((await rt.call('GET', `schedules/${scheduleId}/runs/${r.scheduleRunId}`)).body);
    return out;
  };
  /** The run of `connectorId` in step `step` of a schedule run. */
  const stepRun = (sr: ScheduleRun, step: number, connectorId: string) => run(sr.steps[step].runs.find((r) => r.connectorId === connectorId)!.runId!);
  /** A mesh object's relationships as [type, target anchor], each once, sorted. */
  const relationshipsOf = (o: { relationships: Array<{ type: string; targetAnchor?: string }> }) =>
    [...new Set(o.relationships.map((r) => JSON.stringify([r.type, r.targetAnchor])))].sort().map((x) => JSON.parse(x) as [string, string]);
  /** The lines a jq command printed as JSON arrays (the relationships a block lists). */
  const arrayLines = (out: string) => out.split('\n').filter((l) => l.startsWith('["'));
  const entry = async (dn: string) =>
    (await ldap.search(dn, { scope: 'base', attributes: ['*', 'entryUUID'] }).catch(() => ({ searchEntries: [] }))).searchEntries[0];
  const staff = () =>
    pg.query<Record<string, string | null>>(
      'SELECT employee_id, given_name, surname, mail, department, manager_id FROM staff ORDER BY employee_id',
      [],
      'tutorial',
    );

  beforeAll(async () => {
    // No refint on manager: a report's manager DN must be rewritten by the service, not by slapd.
    slapd = await startSlapd({ refintAttributes: ['member'] });
    pg = await startPostgres();
    await pg.createDatabase('tutorial');
    rt = await startService();
    // The tutorial runs in the project folder, whose .data is the service's data folder.
    work = mkdtempSync(path.join(os.tmpdir(), 'ims-tutorial-'));
    symlinkSync(rt.dataDir, path.join(work, '.data'));
    const ca = readFileSync(slapd.caCertificateFile, 'utf8');
    env = {
      API: rt.baseUrl,
      TOKEN: await rt.token('Admin'),
      // The tutorial's second Admin: another person (own oid and UPN) of the Admin role.
      SECOND_TOKEN: await rt.mint({ ...SECOND_ADMIN, ...LEAVER_APPROVER, roles: ['Service.Admin'] }),
      // 127.0.0.1, not localhost: libldap checks a localhost URL's certificate against the machine's own name.
      LDAP_HOST: '127.0.0.1',
      LDAP_PORT: String(slapd.ldapsPort),
      LDAPURI: `ldaps://127.0.0.1:${slapd.ldapsPort}`,
      LDAPBINDDN: slapd.rootDN,
      LDAP_PASSWORD: slapd.rootPassword,
      LDAPTLS_CACERT: slapd.caCertificateFile,
      LDAP_CA: ca
        .replace(/\n$/, '')
        .split('\n')
        .map((l) => `${l}\\n`)
        .join(''),
      PGHOST: pg.host,
      PGPORT: String(pg.port),
      PGDATABASE: 'tutorial',
      PGUSER: pg.user,
      PGPASSWORD: pg.password,
    };
    shell = new Shell(work, env);
    ldap = new Client({ url: slapd.url });
    await ldap.bind(slapd.rootDN, slapd.rootPassword);
  });
  afterAll(async () => {
    // TUTORIAL_TRANSCRIPT=<file>: keep what the tutorial's commands printed (to compare with what the text says).
    if (shell && process.env.TUTORIAL_TRANSCRIPT) writeFileSync(process.env.TUTORIAL_TRANSCRIPT, shell.transcript);
    shell?.close();
    await ldap?.unbind().catch(() => undefined);
    await rt?.dispose();
    await closeParkedSearches();
    await pg?.stop();
    await slapd?.stop();
    if (work) rmSync(work, { recursive: true, force: true });
  });

  test('the tutorial has the sections this test checks, and marks only npm start and the environment as not run', () => {
    expect(sections).toEqual(Object.keys(CHECKS));
    const notes = blocks.filter((b) => b.note).map((b) => b.note!.split(' ')[0]);
    expect(notes).toEqual(['skip', 'environment']);
    expect(blocks.find((b) => b.note?.startsWith('skip'))!.code.trim()).toBe('npm install && npm start');
  });

  test('the environment block sets exactly the variables this test provides', () => {
    const block = blocks.find((b) => b.note?.startsWith('environment'))!;
    expect(exportedNames(block.code).sort()).toEqual(Object.keys(env).sort());
  });

  type Check = (out: string) => Promise<void>;
  const CHECKS: Record<string, Check> = {
    '1. Start the service and get a token': async (out) => {
      expect(out).toContain('"status":"healthy"');
      expect(out).toContain('"connectors":[]');
    },
    '2. Prepare the directory and the database': async () => {
      expect(await entry(`ou=Engineering,${PEOPLE}`)).toBeDefined();
      expect(await entry(`ou=Research,${PEOPLE}`)).toBeDefined();
      expect(await staff()).toEqual([]);
    },
    '3. The HR file': async () => {
      const file = path.join(rt.dataDir, 'files', 'hr', 'people.csv');
      expect(existsSync(file)).toBe(true);
      expect(readFileSync(file, 'utf8').trim().split('\n')).toHaveLength(6);
    },
    '4. Connectors': async (out) => {
      const ids = { HR: await shell.value('HR'), Directory: await shell.value('DIRECTORY'), 'Staff database': await shell.value('STAFF') };
      const list = (await rt.call('GET', 'connectors')).body;
      expect(list.connectors.map((c: { name: string; id: string }) => [c.name, c.id]).sort()).toEqual(Object.entries(ids).sort());
      expect(out).toContain('"bindPassword":"********"');
      expect(out).not.toContain(slapd.rootPassword);
      expect(out).not.toContain(pg.password);
    },
    '5. Rules': async () => {
      const count = async (v: string) => (await rt.call('GET', `rules?connectorId=${await shell.value(v)}`)).body.totalCount;
      expect([await count('HR'), await count('DIRECTORY'), await count('STAFF')]).toEqual([7, 9, 6]);
    },
    '6. Import the HR file': async () => {
      const [imp] = await runs(await shell.value('HR'));
      expect(imp).toMatchObject({ runType: 'FullImport', status: 'Completed', stats: { objectsCreated: 5, errors: 0 } });
      const mesh = await meshByAnchor();
      expect([...mesh.keys()].sort()).toEqual(['E1001', 'E1002', 'E1003', 'E1004', 'E1005']);
    },
    '7. Export to the directory and the database': async () => {
      const [dir, staffId] = [await shell.value('DIRECTORY'), await shell.value('STAFF')];
      const dirRuns = await runs(dir);
      // Newest first: the confirming import, the export, the dry run.
      expect(dirRuns.map((r) => [r.runType, r.status, r.dryRun ?? false])).toEqual([
        ['FullImport', 'Completed', false],
        ['Export', 'Completed', false],
        ['Export', 'Completed', true],
      ]);
      expect(dirRuns[1].stats).toMatchObject({ objectsCreated: 5, errors: 0 });
      expect(dirRuns[0].stats.errors).toBe(0);
      const staffRuns = await runs(staffId);
      expect(staffRuns.map((r) => [r.runType, r.status])).toEqual([
        ['FullImport', 'Completed'],
        ['Export', 'Completed'],
      ]);
      expect(staffRuns[1].stats).toMatchObject({ objectsCreated: 5, errors: 0 });
      expect(await entry(dnOf('E1001', 'Engineering'))).toMatchObject({
        cn: 'Grace Hopper',
        sn: 'Hopper',
        employeeNumber: 'E1001',
        departmentNumber: 'Engineering',
        mail: 'grace.hopper@example.com',
        title: 'Head of Engineering',
      });
      expect(await entry(dnOf('E1005', 'Research'))).toMatchObject({ cn: 'Dorothy Vaughan' });
      expect((await staff()).map((r) => [r.employee_id, r.surname, r.department])).toEqual([
        ['E1001', 'Hopper', 'Engineering'],
        ['E1002', 'Turing', 'Engineering'],
        ['E1003', 'Lovelace', 'Engineering'],
        ['E1004', 'Johnson', 'Research'],
        ['E1005', 'Vaughan', 'Research'],
      ]);
      const mesh = await meshByAnchor();
      const hr = await shell.value('HR');
      for (const o of mesh.values()) expect(Object.keys(o.links).sort()).toEqual([hr, dir, staffId].sort());
    },
    '8. Managers': async (out) => {
      for (const v of ['DIRECTORY', 'STAFF']) {
        // Newest first: the confirming import, then the export.
        const [imp, exp] = await runs(await shell.value(v));
        expect(exp).toMatchObject({ runType: 'Export', status: 'Completed', stats: { objectsCreated: 0, objectsUpdated: 3, errors: 0 } });
        expect(imp).toMatchObject({ runType: 'FullImport', status: 'Completed', stats: { errors: 0 } });
      }
      const mesh = await meshByAnchor();
      const managerOf = (key: string) => [
        ...new Set(
          mesh
            .get(key)!
            .relationships.filter((r) => r.type === 'manager')
            .map((r) => r.targetId),
        ),
      ];
      // HR's manager (the directory's, read back, names the same person) and the table's manager_id.
      expect(relationshipsOf(mesh.get('E1002')!)).toEqual([
        ['manager', 'E1001'],
        ['manager_id', 'E1001'],
      ]);
      const [staffId, dirId, hrId] = [await shell.value('STAFF'), await shell.value('DIRECTORY'), await shell.value('HR')];
      // HR's manager and the directory's, read back, name the same person: listed once.
      expect(
        mesh
          .get('E1002')!
          .relationships.filter((r) => r.type === 'manager')
          .map((r) => r.c)
          .sort(),
      ).toEqual([hrId, dirId].sort());
      expect(
        mesh
          .get('E1002')!
          .relationships.filter((r) => r.type === 'manager_id')
          .map((r) => [r.c, r.targetId]),
      ).toEqual([[staffId, mesh.get('E1001')!.id]]);
      expect(arrayLines(out)).toEqual(['["manager","E1001"]', '["manager_id","E1001"]']);
      expect(managerOf('E1002')).toEqual([mesh.get('E1001')!.id]);
      expect(managerOf('E1005')).toEqual([mesh.get('E1004')!.id]);
      expect(managerOf('E1001')).toEqual([]);
      expect((await entry(dnOf('E1002', 'Engineering'))).manager).toBe(dnOf('E1001', 'Engineering'));
      expect((await entry(dnOf('E1003', 'Engineering'))).manager).toBe(dnOf('E1001', 'Engineering'));
      expect((await entry(dnOf('E1005', 'Research'))).manager).toBe(dnOf('E1004', 'Research'));
      expect((await entry(dnOf('E1001', 'Engineering'))).manager).toBeUndefined();
      expect((await staff()).map((r) => [r.employee_id, r.manager_id])).toEqual([
        ['E1001', null],
        ['E1002', 'E1001'],
        ['E1003', 'E1001'],
        ['E1004', null],
        ['E1005', 'E1004'],
      ]);
    },
    '9. A manager moves': async () => {
      const [hrDelta] = await runs(await shell.value('HR'));
      expect(hrDelta).toMatchObject({ runType: 'DeltaImport', status: 'Completed', stats: { objectsUpdated: 1, errors: 0 } });
      // One export moves her entry and rewrites her two reports' manager; one row (her department) in the table.
      const [dirImport, dirExport] = await runs(await shell.value('DIRECTORY'));
      expect(dirExport).toMatchObject({ runType: 'Export', status: 'Completed', stats: { objectsCreated: 0, objectsUpdated: 3, errors: 0 } });
      const [staffImport, staffExport] = await runs(await shell.value('STAFF'));
      expect(staffExport).toMatchObject({ runType: 'Export', status: 'Completed', stats: { objectsUpdated: 1, errors: 0 } });
      // The confirming imports.
      for (const imp of [dirImport, staffImport]) expect(imp).toMatchObject({ runType: 'FullImport', status: 'Completed', stats: { errors: 0 } });
      expect(await entry(dnOf('E1001', 'Engineering'))).toBeUndefined();
      const moved = await entry(dnOf('E1001', 'Research'));
      expect(moved).toMatchObject({ departmentNumber: 'Research' });
      expect((await entry(dnOf('E1002', 'Engineering'))).manager).toBe(dnOf('E1001', 'Research'));
      expect((await entry(dnOf('E1003', 'Engineering'))).manager).toBe(dnOf('E1001', 'Research'));
      expect((await entry(dnOf('E1005', 'Research'))).manager).toBe(dnOf('E1004', 'Research'));
      expect((await staff()).map((r) => [r.employee_id, r.department, r.manager_id])).toEqual([
        ['E1001', 'Research', null],
        ['E1002', 'Engineering', 'E1001'],
        ['E1003', 'Engineering', 'E1001'],
        ['E1004', 'Research', null],
        ['E1005', 'Research', 'E1004'],
      ]);
      const mesh = await meshByAnchor();
      expect(mesh.get('E1001')!.links[await shell.value('DIRECTORY')]).toBe(moved.entryUUID);
    },
    '10. Day two: a cycle you can trust': async (out) => {
      const [hr, dir, staffId, scheduleId] = [
        await shell.value('HR'),
        await shell.value('DIRECTORY'),
        await shell.value('STAFF'),
        await shell.value('SCHEDULE'),
      ];
      expect((await rt.call('GET', `schedules/${scheduleId}`)).body).toMatchObject({
        name: 'Nightly cycle',
        isEnabled: false,
        nextRunOn: null,
        steps: [
          { runType: 'DeltaImport', connectorIds: [hr] },
          { runType: 'Export', connectorIds: [dir, staffId] },
          { runType: 'FullImport', connectorIds: [dir, staffId] },
        ],
      });
      // Newest first: the run after the OU was added, the run that found none.
      const all = await scheduleRuns(scheduleId);
      expect(all).toHaveLength(2);
      const [second, first] = all;
      const stepStatuses = (sr: ScheduleRun) => sr.steps.map((x) => [x.runType, x.status]);
      expect(first).toMatchObject({ trigger: 'manual', status: 'CompletedWithErrors' });
      expect(stepStatuses(first)).toEqual([
        ['DeltaImport', 'Completed'],
        ['Export', 'CompletedWithErrors'],
        ['FullImport', 'Completed'],
      ]);
      expect(second).toMatchObject({ trigger: 'manual', status: 'Completed' });
      expect(stepStatuses(second)).toEqual([
        ['DeltaImport', 'Completed'],
        ['Export', 'Completed'],
        ['FullImport', 'Completed'],
      ]);
      // Day two's HR delta: Mary added, Ada's mail and Dorothy's manager changed.
      expect(await stepRun(first, 0, hr)).toMatchObject({
        runType: 'DeltaImport',
        status: 'Completed',
        stats: { objectsCreated: 1, objectsUpdated: 2, errors: 0 },
      });
      // The directory refused Mary (no ou=Computing), and Dorothy's manager is owed: both listed.
      const dirFirst = await stepRun(first, 1, dir);
      expect(dirFirst).toMatchObject({ runType: 'Export', status: 'CompletedWithErrors' });
      expect(dirFirst.errors!.map((e) => e.object).sort()).toEqual(['E1005', 'E1006']);
      expect(dirFirst.errors!.find((e) => e.object === 'E1005')!.message).toMatch(/not in the target/);
      expect(dirFirst.errors!.find((e) => e.object === 'E1006')!.message).toContain(`its parent 'ou=Computing,${PEOPLE}' does not exist`);
      // The table took everything in the same run.
      expect(await stepRun(first, 1, staffId)).toMatchObject({ runType: 'Export', status: 'Completed', stats: { objectsCreated: 1, errors: 0 } });
      for (const id of [dir, staffId]) {
        expect(await stepRun(first, 2, id)).toMatchObject({ runType: 'FullImport', status: 'Completed', stats: { errors: 0 } });
        expect(await stepRun(second, 2, id)).toMatchObject({ runType: 'FullImport', status: 'Completed', stats: { errors: 0 } });
      }
      // The second cycle: nothing new from HR, Mary's entry added and written as Dorothy's manager.
      expect(await stepRun(second, 0, hr)).toMatchObject({ status: 'Completed', stats: { objectsCreated: 0, objectsUpdated: 0 } });
      expect(await stepRun(second, 1, dir)).toMatchObject({ status: 'Completed', stats: { objectsCreated: 1, errors: 0 } });
      expect(await stepRun(second, 1, staffId)).toMatchObject({ status: 'Completed', stats: { objectsCreated: 0, objectsUpdated: 0, errors: 0 } });
      expect(await entry(dnOf('E1006', 'Computing'))).toMatchObject({ cn: 'Mary Jackson', departmentNumber: 'Computing', title: 'Head of Computing' });
      expect((await entry(dnOf('E1005', 'Research'))).manager).toBe(dnOf('E1006', 'Computing'));
      const ada = await entry(dnOf('E1003', 'Engineering'));
      expect(ada.mail).toBeUndefined();
      expect(ada.manager).toBe(dnOf('E1001', 'Research'));
      expect(await staff()).toEqual([
        { employee_id: 'E1001', given_name: 'Grace', surname: 'Hopper', mail: 'grace.hopper@example.com', department: 'Research', manager_id: null },
        { employee_id: 'E1002', given_name: 'Alan', surname: 'Turing', mail: 'alan.turing@example.com', department: 'Engineering', manager_id: 'E1001' },
        { employee_id: 'E1003', given_name: 'Ada', surname: 'Lovelace', mail: null, department: 'Engineering', manager_id: 'E1001' },
        { employee_id: 'E1004', given_name: 'Katherine', surname: 'Johnson', mail: 'katherine.johnson@example.com', department: 'Research', manager_id: null },
        { employee_id: 'E1005', given_name: 'Dorothy', surname: 'Vaughan', mail: 'dorothy.vaughan@example.com', department: 'Research', manager_id: 'E1006' },
        { employee_id: 'E1006', given_name: 'Mary', surname: 'Jackson', mail: 'mary.jackson@example.com', department: 'Computing', manager_id: null },
      ]);
      // One manager, in HR's terms and the table's: the old one (E1004) gone from both.
      const mesh = await meshByAnchor();
      expect(relationshipsOf(mesh.get('E1005')!)).toEqual([
        ['manager', 'E1006'],
        ['manager_id', 'E1006'],
      ]);
      expect(arrayLines(out)).toEqual(['["manager","E1006"]', '["manager_id","E1006"]']);
      expect(Object.keys(mesh.get('E1006')!.links).sort()).toEqual([hr, dir, staffId].sort());
    },
    '11. Review, then apply: a dry run and its plan': async () => {
      const [hr, dir, staffId, scheduleId] = [
        await shell.value('HR'),
        await shell.value('DIRECTORY'),
        await shell.value('STAFF'),
        await shell.value('SCHEDULE'),
      ];
      // Newest first: the schedule's delta import (nothing new), the import of this section.
      const [scheduled, imp] = await runs(hr);
      expect(imp).toMatchObject({ runType: 'DeltaImport', status: 'Completed', stats: { objectsCreated: 2, objectsUpdated: 0, errors: 0 } });
      expect(scheduled).toMatchObject({ runType: 'DeltaImport', status: 'Completed', stats: { objectsCreated: 0, objectsUpdated: 0 } });
      const planId = await shell.value('PLAN');
      const plan = await run(planId);
      expect(plan).toMatchObject({ runType: 'Export', dryRun: true, status: 'Completed', stats: { objectsCreated: 2, errors: 0 } });
      // A plan is applied within a day (Plans__ExpireHours, 24 by default).
      const hours = (Date.parse(plan.plan!.expiresOn) - Date.parse(plan.completedAt!)) / 3_600_000;
      expect(Math.round(hours)).toBe(24);
      // The plan: two adds; Annie's names Mary, Christine's names no manager yet (Annie is not in the directory).
      const item = (c: Awaited<ReturnType<typeof changes>>[number]) => [c.operation, c.dn?.toLowerCase() ?? null, c.attributes.manager?.new ?? null, c.outcome];
      const dn = (uid: string) => dnOf(uid, 'Computing').toLowerCase();
      expect((await changes(planId)).map(item).sort()).toEqual(
        [
          ['Add', dn('E1007'), dnOf('E1006', 'Computing'), 'planned'],
          ['Add', dn('E1008'), null, 'planned'],
        ].sort(),
      );
      const applied = (await runs(dir)).find((r) => r.trigger?.type === 'apply')!;
      expect(applied).toMatchObject({ runType: 'Export', status: 'Completed', trigger: { planRunId: planId }, stats: { objectsCreated: 2, errors: 0 } });
      // The apply: the plan's two adds, then its second pass writes Christine's manager, Annie, whom it added.
      const done = (await changes(applied.runId)).map(item);
      expect(done.slice(0, 2).sort()).toEqual(
        [
          ['Add', dn('E1007'), dnOf('E1006', 'Computing'), 'applied'],
          ['Add', dn('E1008'), null, 'applied'],
        ].sort(),
      );
      expect(done.slice(2)).toEqual([['Update', dn('E1008'), dnOf('E1007', 'Computing'), 'applied']]);
      // The schedule finished the cycle: the directory had nothing left, the table added both rows.
      const [third] = await scheduleRuns(scheduleId);
      expect(third).toMatchObject({ status: 'Completed' });
      expect(await stepRun(third, 1, dir)).toMatchObject({
        status: 'Completed',
        stats: { objectsCreated: 0, objectsUpdated: 0, objectsDeleted: 0, errors: 0 },
      });
      expect(await stepRun(third, 1, staffId)).toMatchObject({ status: 'Completed', stats: { objectsCreated: 2, errors: 0 } });
      for (const id of [dir, staffId]) expect(await stepRun(third, 2, id)).toMatchObject({ status: 'Completed', stats: { errors: 0 } });
      expect((await entry(dnOf('E1007', 'Computing'))).manager).toBe(dnOf('E1006', 'Computing'));
      expect((await entry(dnOf('E1008', 'Computing'))).manager).toBe(dnOf('E1007', 'Computing'));
      expect((await staff()).filter((r) => r.department === 'Computing').map((r) => [r.employee_id, r.manager_id])).toEqual([
        ['E1006', null],
        ['E1007', 'E1006'],
        ['E1008', 'E1007'],
      ]);
    },
    '12. A leaver: a threshold, a second Admin, a grace and a restore': async (out) => {
      const [hr, dir, staffId, scheduleId, leaverId] = [
        await shell.value('HR'),
        await shell.value('DIRECTORY'),
        await shell.value('STAFF'),
        await shell.value('SCHEDULE'),
        await shell.value('LEAVER'),
      ];
      // The guard rails as the section set them (tightening: applied at once, no held change).
      expect((await rt.call('GET', `connectors/${hr}`)).body.config.thresholds).toEqual({ deletes: { count: 0, percent: 20 } });
      expect((await rt.call('GET', `connectors/${dir}`)).body.config.deprovisioning).toEqual({
        action: 'delete',
        graceDays: 7,
        onConditionFalse: false,
        deadlineMinutes: 60,
        orphanAction: 'disable',
      });
      expect((await rt.call('GET', 'config/changes?status=AwaitingApproval')).body.items).toEqual([]);
      // The leaver's import waited for the threshold, the requester was refused, the second Admin approved.
      const leaver = await run(leaverId);
      expect(leaver).toMatchObject({
        runType: 'DeltaImport',
        status: 'Completed',
        approvedBy: LEAVER_APPROVER.upn,
        approval: { reasons: [{ operation: 'deletes', count: 1, limit: 0 }] },
        stats: { objectsDeleted: 1, errors: 0 },
      });
      expect(out).toContain('[{"operation":"deletes","count":1,"limit":0}]');
      expect(out).toContain('["mesh","Delete","E1002","planned"]');
      expect(out.toLowerCase()).toContain(`["connector","delete","${dnOf('E1002', 'Engineering')}","planned"]`.toLowerCase());
      expect(out).toContain('["connector","Delete","E1002","planned"]');
      expect(out).toMatch(/"status":403[\s\S]*four-eyes rule \(Approvals__RequireSecondPerson\) is on/);
      expect(out).toContain(`{"status":"Completed","approvedBy":"${LEAVER_APPROVER.upn}","deleted":1}`);
      // The refused approval is audited as a failure of the requester.
      const audit = (await rt.call('GET', `audit?targetType=run&targetId=${leaverId}&take=50`)).body.items as Array<{ action: string; outcome: string }>;
      expect(
        audit
          .filter((a) => a.action === 'approve')
          .map((a) => a.outcome)
          .sort(),
      ).toEqual(['failure', 'success']);
      // The grace: the export after the approval deleted nothing and scheduled the delete 7 days out.
      const dirRuns = await runs(dir);
      const [afterRestore, graced] = dirRuns.filter((r) => r.runType === 'Export' && !r.dryRun && r.completedAt! > leaver.completedAt!).slice(-2);
      expect(graced.stats).toMatchObject({ objectsDeleted: 0, errors: 0 });
      expect(afterRestore.stats).toMatchObject({ objectsDeleted: 0, errors: 0 });
      const scheduled = out
        .split('\n')
        .filter((l) => l.startsWith('{"dn"'))
        .map((l) => JSON.parse(l) as { dn: string; dueOn: string });
      expect(scheduled).toHaveLength(1);
      expect(scheduled[0].dn.toLowerCase()).toBe(dnOf('E1002', 'Engineering').toLowerCase());
      const days = (Date.parse(scheduled[0].dueOn) - Date.parse(leaver.completedAt!)) / 86_400_000;
      expect(days).toBeGreaterThan(6.99);
      expect(days).toBeLessThanOrEqual(7);
      // The restore cancelled it: nothing scheduled, the entry never left, linked again to the restored object.
      expect(out).toContain('{"state":"active","anchorValue":"E1002"}');
      expect(out).toMatch(/^\[\]$/m);
      expect((await rt.call('GET', `connectors/${dir}/space?state=scheduledDeprovision`)).body.items).toEqual([]);
      const alan = await entry(dnOf('E1002', 'Engineering'));
      expect(alan).toMatchObject({ cn: 'Alan Turing', employeeNumber: 'E1002' });
      const mesh = await meshByAnchor();
      expect(mesh.get('E1002')!.links[dir]).toBe(alan.entryUUID);
      expect(mesh.get('E1002')!.links[staffId]).toBeDefined();
      expect(mesh.get('E1002')!.links[hr]).toBeUndefined();
      expect((await staff()).find((r) => r.employee_id === 'E1002')).toMatchObject({ surname: 'Turing', manager_id: 'E1001' });
      // The schedule's cycle after it: every step completed, nothing deleted anywhere.
      const [last] = await scheduleRuns(scheduleId);
      expect(last).toMatchObject({ status: 'Completed' });
      for (const id of [dir, staffId]) expect(await stepRun(last, 1, id)).toMatchObject({ status: 'Completed', stats: { objectsDeleted: 0, errors: 0 } });
    },
  };

  for (const section of sections) {
    test(`section "${section}"`, async () => {
      const check = CHECKS[section];
      if (!check) throw new Error(`docs/tutorial.md has a section "${section}" this test does not check: add its check.`);
      let out = '';
      for (const b of blocks.filter((x: CodeBlock) => x.section === section && !x.note)) out += await shell.run(b.code);
      await check(out);
    });
  }
});
