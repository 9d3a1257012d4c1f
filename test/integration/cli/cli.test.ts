import { existsSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { parse as parseYaml } from 'yaml';
import { startPostgres, type Postgres } from '../../support/postgres';
import { describeWithServer } from '../../support/servers';
import { startService, USERS, type Role, type ServiceUnderTest } from '../../support/service';
import { pgServer, SqlContractFixture } from '../sql/sqlFixture';
import { inTmux, meshsync, newHome } from './cliSupport';

/**
 * The `meshsync` CLI as a real process against a real service (Azurite, a PostgreSQL HR source): resources
 * created from files, a full import followed with --wait to its end, the mesh listed, searched, shown and
 * explained, the connector space, output formats, table width, and the exit codes of every kind of failure
 * (usage 3, auth 4, not found 5, conflict 6, unreachable 7) with the problem's detail and no stack.
 */
jest.setTimeout(600_000);

const ROWS = 5_000;

describeWithServer('postgres')('meshsync CLI against a real service', () => {
  let pg: Postgres;
  let rt: ServiceUnderTest;
  let f: SqlContractFixture;
  const home = newHome();
  let connectorId: string;

  /** Run the CLI as `role` (a Bearer token through MESHSYNC_TOKEN), or signed out with null. */
  async function as(role: Role | null, args: string[], env: Record<string, string> = {}, input?: string) {
    return meshsync(args, { MESHSYNC_HOME: home, MESHSYNC_URL: rt.baseUrl, ...(role ? { MESHSYNC_TOKEN: await rt.token(role) } : {}), ...env }, input);
  }
  const json = async (role: Role, args: string[]) => {
    const r = await as(role, [...args, '-o', 'json']);
    if (r.code !== 0) throw new Error(`meshsync ${args.join(' ')}: ${r.code}\n${r.stderr}`);
    return JSON.parse(r.stdout);
  };
  const file = (name: string, body: unknown) => {
    const p = path.join(home, name);
    writeFileSync(p, JSON.stringify(body));
    return p;
  };

  beforeAll(async () => {
    pg = await startPostgres();
    rt = await startService();
    f = await SqlContractFixture.create(pgServer(pg));
    await f.exec(
      `INSERT INTO people (employee_id, given_name, sn, department) SELECT 'E' || lpad(i::text, 5, '0'), 'Given' || i, 'Sn' || i, CASE WHEN i % 2 = 0 THEN 'Sales' ELSE 'Ops' END FROM generate_series(1, ${ROWS}) i`,
    );
  });
  afterAll(async () => {
    await rt?.dispose();
    await f?.cleanup();
    await pg?.stop();
  });

  test('health answers without sign-in; --version and --help exit 0', async () => {
    const health = await as(null, ['health', '-o', 'json']);
    expect(health.code).toBe(0);
    expect(JSON.parse(health.stdout)).toMatchObject({ status: 'healthy' });
    const version = await as(null, ['--version']);
    expect(version.code).toBe(0);
    expect(version.stdout.trim()).toBe(JSON.parse(readFileSync(path.join(__dirname, '../../../package.json'), 'utf8')).version);
    const help = await as(null, ['runs', 'import', '--help']);
    expect(help.code).toBe(0);
    expect(help.stdout).toContain('--dry-run');
  });

  test('connectors and rules are created from files and listed; secrets stay masked', async () => {
    const created = await as('Admin', ['connectors', 'create', '--file', file('hr.json', { name: 'HR cli', type: 'sql', config: f.config() }), '-o', 'json']);
    expect(created.code).toBe(0);
    const connector = JSON.parse(created.stdout);
    connectorId = connector.id;
    expect(connector.config.password).toBe('********');
    // Standard input works as a file.
    const projection = await as(
      'Admin',
      ['rules', 'create', '--file', '-', '-o', 'json'],
      {},
      JSON.stringify({ ruleType: 'ProjectionRule', ruleName: 'project', connectorId, sourceAttribute: 'employee_id', objectType: 'User' }),
    );
    expect(projection.code).toBe(0);
    for (const [s, t] of [
      ['employee_id', 'employeeId'],
      ['given_name', 'givenName'],
      ['sn', 'sn'],
      ['department', 'department'],
    ]) {
      const flow = await as('Admin', [
        'rules',
        'create',
        '-f',
        file(`${t}.json`, { ruleType: 'FlowRule', ruleName: `flow ${t}`, connectorId, sourceAttribute: s, targetAttribute: t, confidence: 50 }),
      ]);
      expect(flow.code).toBe(0);
    }
    const ls = await as('Viewer', ['connectors', 'ls']);
    expect(ls.code).toBe(0);
    expect(ls.stdout.split('\n')[0]).toMatch(/^ID\s+NAME\s+TYPE\s+STATUS\s+LAST SYNC$/);
    expect(ls.stdout).toContain('HR cli');
    expect(ls.stdout).not.toContain(f.config().password as string);
    const rules = await json('Viewer', ['rules', 'ls', '--connector', connectorId]);
    expect(rules.totalCount).toBe(5);
  });

  test('a full import with --wait follows the run to its end (plain lines off a terminal) and exits 0 with the stats', async () => {
    const r = await as('Operator', ['runs', 'import', connectorId, '--full', '--wait']);
    expect(r.stderr).toMatch(new RegExp(`run [0-9a-f-]{36} (reading|planning|applying|finishing|Completed): \\d+/(\\d+|\\?) objects, \\d+/s`));
    expect(r.code).toBe(0);
    expect(r.stdout).toMatch(/run [0-9a-f-]{36} Completed/);
    expect(r.stdout).toMatch(new RegExp(`PROCESSED\\s+CREATED\\s+UPDATED\\s+DELETED\\s+ERRORS\\n${ROWS}\\s+${ROWS}\\s+0\\s+0\\s+0`));
    const runs = await json('Viewer', ['runs', 'ls', '--connector', connectorId]);
    expect(runs.items[0]).toMatchObject({ status: 'Completed', trigger: { type: 'manual', actorUpn: USERS.Operator.upn } });
    // yaml prints the API's answer as it is.
    const yaml = await as('Viewer', ['runs', 'show', runs.items[0].runId, '-o', 'yaml']);
    expect(yaml.code).toBe(0);
    expect(parseYaml(yaml.stdout)).toMatchObject({ runId: runs.items[0].runId, stats: { objectsCreated: ROWS } });
  });

  test('on a terminal (tmux) --wait draws a live progress bar with the total, rate and ETA, then the stats', async () => {
    await f.exec("UPDATE people SET sn = sn || 'x'");
    const frames = await inTmux(['runs', 'import', connectorId, '--wait'], {
      MESHSYNC_HOME: home,
      MESHSYNC_URL: rt.baseUrl,
      MESHSYNC_TOKEN: await rt.token('Operator'),
      MESHSYNC_POLL_MS: '200',
    });
    const last = frames[frames.length - 1];
    expect(last).toMatch(/EXIT=0/);
    expect(last).toMatch(/run [0-9a-f-]{36} Completed/);
    expect(last).toMatch(new RegExp(`PROCESSED\\s+CREATED\\s+UPDATED\\s+DELETED\\s+ERRORS\\n${ROWS}\\s+0\\s+${ROWS}\\s+0\\s+0`));
    // The bar was drawn while the run went: block characters, objects of the known total, a rate and an ETA;
    // while the total is not known, the count alone and a block moving along the track (never a full bar).
    const known = new RegExp(`^(reading|planning|applying|finishing|Completed)\\s*\\|[\u2588\u2591]{40}\\| \\d+/\\d+ objects \\| \\d+/s \\| ETA \\d+s`, 'm');
    const unknown = /^(reading|planning|applying|finishing)\s*\|([\u2588\u2591]{40})\| \d+ objects \(total not known yet\) \| \d+\/s$/m;
    const drawn = frames.filter((fr) => known.test(fr) || unknown.test(fr));
    expect(drawn.length).toBeGreaterThan(0);
    expect(frames.some((fr) => new RegExp(`applying\\s*\\|[\u2588\u2591]+\\| \\d+/${ROWS} objects \\| \\d+/s \\| ETA \\d+s`).test(fr))).toBe(true);
    for (const fr of frames) {
      const track = unknown.exec(fr)?.[2];
      if (track) expect(track).toMatch(/^\u2591*\u2588{8}\u2591*$/);
      expect(fr).not.toMatch(/\/\? objects/);
    }
    // No plain progress lines on a terminal.
    expect(frames.some((fr) => /objects, \d+\/s$/m.test(fr))).toBe(false);
  });

  test('the mesh: list with picked columns, search with the operators, show, explain and history', async () => {
    const ls = await as('Viewer', ['mesh', 'ls', '--type', 'User', '--take', '3', '--columns', 'givenName,department']);
    expect(ls.code).toBe(0);
    const lines = ls.stdout.trim().split('\n');
    expect(lines[0]).toMatch(/^MESH OBJECT ID\s+TYPE\s+ANCHOR\s+givenName\s+department$/);
    expect(lines[1]).toMatch(/^[0-9a-f-]{36}\s+User\s+E00001\s+Given1\s+Ops$/);
    expect(lines[lines.length - 1]).toBe(`3 of ${ROWS}`);

    const found = await json('Viewer', ['mesh', 'search', '--where', 'sn equals Sn42x', '--where', 'department ispresent']);
    expect(found.totalCount).toBe(1);
    expect(found.items[0].anchorValue).toBe('E00042');
    const sales = await json('Viewer', ['mesh', 'search', '--type', 'User', '--where', 'department startswith sal', '--take', '1']);
    expect(sales.totalCount).toBe(ROWS / 2);
    const id = found.items[0].meshObjectId as string;

    const show = await as('Viewer', ['mesh', 'show', id]);
    expect(show.code).toBe(0);
    expect(show.stdout).toMatch(/anchorValue\s+E00042/);
    // Each value's source by the connector's name; its id with -o wide.
    expect(show.stdout).toMatch(/givenName\s+Given42\s+HR cli\s+50/);
    const wideShow = await as('Viewer', ['mesh', 'show', id, '-o', 'wide']);
    expect(wideShow.stdout).toMatch(new RegExp(`givenName\\s+Given42\\s+HR cli\\s+${connectorId}\\s+50`));

    const explain = await as('Viewer', ['mesh', 'explain', id, 'givenName']);
    expect(explain.code).toBe(0);
    expect(explain.stdout).toContain('givenName = Given42');
    expect(explain.stdout).toMatch(/won\s+HR cli\s+given_name\s+Given42\s+50/);

    const history = await json('Viewer', ['mesh', 'history', id]);
    expect(history.items.map((h: { operation: string }) => h.operation)).toEqual(['Updated', 'Created']);
    const historyTable = await as('Viewer', ['mesh', 'history', id]);
    expect(historyTable.stdout).toMatch(/Updated\s+[0-9a-f-]{36}\s+sn: Sn42 -> Sn42x/);
  });

  test('connectors, rules and schedules by name or id prefix; ambiguous names exit 3 listing them, unknown ones 5; tables show names beside ids', async () => {
    const runsBefore = (await json('Viewer', ['runs', 'ls', '--connector', connectorId, '--take', '0'])).totalCount as number;
    // By name, whatever the case: the run is HR cli's.
    const byName = await as('Operator', ['runs', 'import', 'hr CLI', '--dry-run', '--wait', '-o', 'json']);
    expect(byName.code).toBe(0);
    expect(JSON.parse(byName.stdout)).toMatchObject({ connectorId, dryRun: true, status: 'Completed' });
    // By a unique id prefix.
    const byPrefix = await as('Operator', ['runs', 'import', connectorId.slice(0, 8), '--dry-run', '--wait', '-o', 'json']);
    expect(byPrefix.code).toBe(0);
    expect(JSON.parse(byPrefix.stdout)).toMatchObject({ connectorId, dryRun: true });
    // runs ls --connector by name: both runs, and nothing of another connector.
    const listed = await json('Viewer', ['runs', 'ls', '--connector', 'HR cli']);
    expect(listed.totalCount).toBe(runsBefore + 2);
    expect(listed.items.slice(0, 2).map((r: { runId: string }) => r.runId)).toEqual([JSON.parse(byPrefix.stdout).runId, JSON.parse(byName.stdout).runId]);
    expect(new Set(listed.items.map((r: { connectorId: string }) => r.connectorId))).toEqual(new Set([connectorId]));
    // The table shows the connector's name; -o wide adds its id; json keeps the API's connectorId.
    const table = await as('Viewer', ['runs', 'ls', '--connector', 'HR cli', '--take', '2']);
    expect(table.stdout.split('\n')[0]).toMatch(/^RUN ID\s+CONNECTOR\s+TYPE\s+STATUS/);
    expect(table.stdout).toMatch(/^[0-9a-f-]{36}\s+HR cli\s+DeltaImport \(dry run\)\s+Completed/m);
    expect(table.stdout).not.toContain(connectorId);
    const wide = await as('Viewer', ['runs', 'ls', '--connector', 'HR cli', '--take', '2', '-o', 'wide']);
    expect(wide.stdout.split('\n')[0]).toMatch(/^RUN ID\s+CONNECTOR\s+CONNECTOR ID\s+TYPE/);
    expect(wide.stdout).toMatch(new RegExp(`^[0-9a-f-]{36}\\s+HR cli\\s+${connectorId}\\s+DeltaImport`, 'm'));
    const rulesTable = await as('Viewer', ['rules', 'ls', '--connector', 'HR CLI']);
    expect(rulesTable.code).toBe(0);
    expect(rulesTable.stdout).toMatch(/^[0-9a-f-]{36}\s+flow givenName\s+FlowRule\s+HR cli\s+given_name\s+givenName/m);

    // A connector named like HR cli's id prefix: that text names two connectors. Exit 3, both listed with their ids, nothing started.
    const prefix = connectorId.slice(0, 6);
    const twin = (await rt.call('POST', 'connectors', { body: { name: prefix, type: 'sql', config: f.config() } })).body.id as string;
    const ambiguous = await as('Operator', ['runs', 'import', prefix]);
    expect(ambiguous.code).toBe(3);
    expect(ambiguous.stderr).toContain(`'${prefix}' matches 2 connectors: `);
    expect(ambiguous.stderr).toContain(`HR cli (${connectorId})`);
    expect(ambiguous.stderr).toContain(`${prefix} (${twin})`);
    expect(ambiguous.stderr).toContain('give the id');
    // An unknown name: exit 5, saying what is looked for; nothing started.
    const unknown = await as('Operator', ['runs', 'import', 'HR nowhere']);
    expect(unknown.code).toBe(5);
    expect(unknown.stderr).toContain("Connector 'HR nowhere' does not exist. Give its id, a unique id prefix (4 characters or more) or its exact name");
    expect(unknown.stderr).not.toMatch(/\n\s+at .+:\d+:\d+/);
    expect((await json('Viewer', ['runs', 'ls', '--take', '0'])).totalCount).toBe(runsBefore + 2);
    expect((await json('Viewer', ['runs', 'ls', '--connector', twin, '--take', '0'])).totalCount).toBe(0);
    // The twin by its whole id, then gone.
    expect((await as('Admin', ['connectors', 'delete', twin])).code).toBe(0);
    expect((await json('Viewer', ['connectors', 'ls'])).connectors.map((c: { name: string }) => c.name)).toEqual(['HR cli']);

    // Rules: names need not be unique; two that differ only in case are ambiguous, an id prefix is not.
    const ruleIds: string[] = [];
    for (const ruleName of ['dup rule', 'DUP RULE']) {
      const created = await rt.call('POST', 'rules', {
        body: { ruleType: 'FlowRule', ruleName, connectorId, sourceAttribute: 'sn', targetAttribute: 'surname', confidence: 10 },
      });
      expect(created.status).toBe(201);
      ruleIds.push(created.body.ruleId as string);
    }
    const dup = await as('Viewer', ['rules', 'show', 'Dup Rule']);
    expect(dup.code).toBe(3);
    expect(dup.stderr).toContain("'Dup Rule' matches 2 rules: ");
    expect(dup.stderr).toContain(`dup rule (${ruleIds[0]})`);
    expect(dup.stderr).toContain(`DUP RULE (${ruleIds[1]})`);
    expect(dup.stderr).toContain('; give the id.');
    for (const ruleId of ruleIds) {
      expect((await json('Viewer', ['rules', 'show', ruleId.slice(0, 13)])).ruleName).toBe(ruleId === ruleIds[0] ? 'dup rule' : 'DUP RULE');
      expect((await as('Admin', ['rules', 'delete', ruleId.slice(0, 13)])).code).toBe(0);
    }
    expect((await json('Viewer', ['rules', 'ls', '--connector', connectorId])).totalCount).toBe(5);

    // Schedules by name: show, and its runs; an unknown one is 5 with the schedule's wording.
    const schedule = (
      await rt.call('POST', 'schedules', {
        body: { name: 'Nightly HR', cron: '0 0 3 * * *', timeZone: 'UTC', isEnabled: false, steps: [{ runType: 'DeltaImport', connectorIds: [connectorId] }] },
      })
    ).body;
    expect((await json('Viewer', ['schedules', 'show', 'nightly hr'])).scheduleId).toBe(schedule.scheduleId);
    expect((await json('Viewer', ['schedules', 'runs', 'Nightly HR'])).totalCount).toBe(0);
    const schedules = await as('Viewer', ['schedules', 'ls'], { COLUMNS: '200' });
    expect(schedules.stdout).toMatch(/Nightly HR\s+DeltaImport HR cli\s/);
    const noSchedule = await as('Viewer', ['schedules', 'show', 'Weekly HR']);
    expect(noSchedule.code).toBe(5);
    expect(noSchedule.stderr).toContain("Schedule 'Weekly HR' does not exist.");
    expect((await as('Admin', ['schedules', 'delete', 'Nightly HR'])).code).toBe(0);
    expect((await rt.call('GET', `schedules/${schedule.scheduleId}`)).status).toBe(404);
  });

  test('the connector space: list by state, show and preview one object', async () => {
    const ls = await json('Viewer', ['space', 'ls', connectorId, '--state', 'joined', '--take', '2']);
    expect(ls.totalCount).toBe(ROWS);
    const cs = ls.items[0];
    const show = await json('Viewer', ['space', 'show', connectorId, cs.csObjectId]);
    expect(show.attributes.employee_id).toBe(cs.anchor);
    const preview = await json('Operator', ['space', 'preview', connectorId, cs.csObjectId]);
    expect(preview).toMatchObject({ csObjectId: cs.csObjectId, join: { outcome: 'joined' }, meshChanges: [] });
    const errors = await as('Viewer', ['space', 'ls', connectorId, '--state', 'error']);
    expect(errors.code).toBe(0);
    expect(errors.stdout.trim()).toBe('0 of 0');
  });

  test('tables fit the terminal width; ids are never cut (they are for pasting)', async () => {
    const narrow = await as('Viewer', ['mesh', 'ls', '--take', '5', '--columns', 'givenName,sn,department,employeeId'], { COLUMNS: '88' });
    expect(narrow.code).toBe(0);
    const lines = narrow.stdout.trim().split('\n');
    for (const line of lines) expect(line.length).toBeLessThanOrEqual(88);
    expect(narrow.stdout).toContain('…');
    const guidFirst = (rows: string[]) => rows.filter((l) => !/^\d+ of \d+$/.test(l));
    for (const line of guidFirst(lines.slice(1))) expect(line).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}  /);
    // Narrower than the id and the other columns at their least: the id stays whole, the line is wider.
    const tight = await as('Viewer', ['runs', 'ls', '--take', '3'], { COLUMNS: '40' });
    expect(tight.code).toBe(0);
    for (const line of guidFirst(tight.stdout.trim().split('\n').slice(1)))
      expect(line).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}  /);
  });

  test('failures: the problem detail on stderr, no stack, and the documented exit codes', async () => {
    const noStack = (s: string) => expect(s).not.toMatch(/\n\s+at .+:\d+:\d+/);
    // 4: signed out, and a role without the permission.
    const signedOut = await as(null, ['connectors', 'ls']);
    expect(signedOut.code).toBe(4);
    expect(signedOut.stderr).toContain('401');
    expect(signedOut.stderr).toContain('meshsync login');
    const viewer = await as('Viewer', ['runs', 'import', connectorId]);
    expect(viewer.code).toBe(4);
    expect(viewer.stderr).toContain('403');
    noStack(viewer.stderr);
    // 5: not found.
    const missing = await as('Viewer', ['connectors', 'show', '00000000-0000-4000-8000-000000000000']);
    expect(missing.code).toBe(5);
    expect(missing.stderr).toContain('404');
    // 6: conflict (a name taken), with the service's detail.
    const taken = await as('Admin', ['connectors', 'create', '-f', path.join(home, 'hr.json')]);
    expect(taken.code).toBe(6);
    expect(taken.stderr).toMatch(/409 .*HR cli/);
    // 3: the service refused the content (400), with the field errors listed.
    const invalid = await as('Admin', [
      'rules',
      'create',
      '-f',
      file('bad-rule.json', { ruleType: 'FlowRule', connectorId, sourceAttribute: 'sn', confidence: 500 }),
    ]);
    expect(invalid.code).toBe(3);
    expect(invalid.stderr).toMatch(/400 /);
    expect(invalid.stderr).toMatch(/^\s+\/\S*: /m);
    noStack(invalid.stderr);
    // 3: usage errors found before any call.
    expect((await as('Viewer', ['mesh', 'search', '--where', 'sn frobs x'])).code).toBe(3);
    expect((await as('Viewer', ['runs', 'import'])).code).toBe(3);
    const notJson = path.join(home, 'not.json');
    writeFileSync(notJson, '{ nope');
    const badFile = await as('Admin', ['connectors', 'create', '-f', notJson]);
    expect(badFile.code).toBe(3);
    expect(badFile.stderr).toContain('not valid JSON');
    // 7: nothing listens there.
    const down = await as('Viewer', ['health', '--url', 'http://127.0.0.1:9/api']);
    expect(down.code).toBe(7);
    expect(down.stderr).toContain('could not be reached');
    // A finished run cannot be cancelled: 6.
    const runs = await json('Viewer', ['runs', 'ls', '--connector', connectorId, '--take', '1']);
    expect((await as('Operator', ['runs', 'cancel', runs.items[0].runId])).code).toBe(6);
    // 9: a connection test that fails (its folder gone) prints the result and says so in the exit code; 0 when it passes.
    const gone = mkdtempSync(path.join(os.tmpdir(), 'ims-cli-test-'));
    const fileId = (
      await rt.call('POST', 'connectors', {
        body: { name: 'Folder gone', type: 'custom', config: { implementation: 'file', objectType: 'User', settings: { path: gone, anchorColumn: 'id' } } },
      })
    ).body.id as string;
    rmSync(gone, { recursive: true });
    const failed = await as('Operator', ['connectors', 'test', fileId, '-o', 'json']);
    expect(failed.code).toBe(9);
    expect(JSON.parse(failed.stdout)).toMatchObject({ ok: false });
    const passed = await as('Operator', ['connectors', 'test', connectorId, '-o', 'json']);
    expect(passed.code).toBe(0);
    expect(JSON.parse(passed.stdout)).toMatchObject({ ok: true });
    expect((await rt.call('DELETE', `connectors/${fileId}`)).status).toBeLessThan(300);
  });

  test('login --token caches the token per profile in a file only the user can read; profiles switch services', async () => {
    const token = await rt.token('Viewer');
    const login = await meshsync(['login', '--token', token, '--url', rt.baseUrl], { MESHSYNC_HOME: home });
    expect(login.code).toBe(0);
    const credentials = path.join(home, 'credentials.json');
    expect(existsSync(credentials)).toBe(true);
    expect(statSync(credentials).mode & 0o777).toBe(0o600);
    // The profile remembers the URL and the token: no flags needed.
    const ls = await meshsync(['connectors', 'ls', '-o', 'json'], { MESHSYNC_HOME: home });
    expect(ls.code).toBe(0);
    expect(JSON.parse(ls.stdout).connectors.map((c: { name: string }) => c.name)).toContain('HR cli');
    // A second profile pointing elsewhere, then back.
    expect((await meshsync(['profile', 'set', 'other', '--url', 'http://127.0.0.1:9/api'], { MESHSYNC_HOME: home })).code).toBe(0);
    expect((await meshsync(['connectors', 'ls', '--profile', 'other'], { MESHSYNC_HOME: home })).code).toBe(7);
    const profiles = await meshsync(['profile', 'ls'], { MESHSYNC_HOME: home });
    expect(profiles.stdout).toMatch(/\*\s+default\s+http:\/\/127\.0\.0\.1:\d+\/api\s+bearer/);
    expect(profiles.stdout).toMatch(/other\s+http:\/\/127\.0\.0\.1:9\/api/);
    const logout = await meshsync(['logout'], { MESHSYNC_HOME: home });
    expect(logout.code).toBe(0);
    expect((await meshsync(['connectors', 'ls'], { MESHSYNC_HOME: home })).code).toBe(4);
  });

  test('audit lists the import the CLI triggered, with its actor', async () => {
    const audit = await json('Admin', ['audit', '--target-type', 'connector', '--target', connectorId]);
    expect(audit.items.map((a: { action: string; actorUpn: string }) => `${a.action} ${a.actorUpn}`)).toEqual(
      expect.arrayContaining([`trigger ${USERS.Operator.upn}`, `create ${USERS.Admin.upn}`]),
    );
    const table = await as('Admin', ['audit', '--target', connectorId]);
    expect(table.stdout.split('\n')[0]).toMatch(/^TIME\s+ACTION\s+TARGET TYPE\s+TARGET\s+NAME\s+ACTOR\s+OUTCOME$/);
    // The connector's name beside its id, the id whole.
    expect(table.stdout).toMatch(new RegExp(`trigger\\s+connector\\s+${connectorId}\\s+HR cli\\s+`));
  });

  test('config: export to a file, import it back as a dry run (all unchanged), history and restore of a version', async () => {
    const exportFile = path.join(home, 'config.json');
    const exported = await as('Admin', ['config', 'export', '--file', exportFile]);
    expect(exported.code).toBe(0);
    const doc = JSON.parse(readFileSync(exportFile, 'utf8'));
    expect(doc.formatVersion).toBe(1);
    expect(doc.connectors.find((c: { name: string }) => c.name === 'HR cli').config.password).toBe('********');
    expect(doc.rules).toHaveLength(5);

    const dry = await as('Admin', ['config', 'import', exportFile, '--dry-run']);
    expect(dry.code).toBe(0);
    expect(dry.stdout.split('\n')[0]).toMatch(/^ACTION\s+TARGET TYPE\s+TARGET\s+NAME\s+FIELDS$/);
    expect(dry.stdout.match(/^unchanged\s/gm)).toHaveLength(6);
    expect(dry.stdout).toContain('not applied (dry run)');
    // What changes in an item, a line per field; a secret given in clear with the value stored is no change.
    const rule = doc.rules.find((r: { ruleName: string }) => r.ruleName === 'flow sn');
    const edited = {
      ...doc,
      rules: doc.rules.map((r: { ruleName: string }) => (r === rule ? { ...rule, priority: rule.priority + 5 } : r)),
      connectors: doc.connectors.map((c: { name: string; config: object }) =>
        c.name === 'HR cli' ? { ...c, config: { ...c.config, password: f.config().password } } : c,
      ),
    };
    const fields = await as('Admin', ['config', 'import', file('edited.json', edited), '--dry-run']);
    expect(fields.code).toBe(0);
    expect(fields.stdout).toMatch(/^update\s+rule\s+[0-9a-f-]{36}\s+flow sn\s+\/priority$/m);
    expect(fields.stdout).toContain(`update rule flow sn: /priority ${rule.priority} -> ${rule.priority + 5}\n`);
    expect(fields.stdout).toMatch(/^unchanged\s+connector\s+[0-9a-f-]{36}\s+HR cli\s*$/m);
    expect(fields.stdout.match(/^update /gm)).toHaveLength(2);
    expect(fields.stdout).not.toContain(f.config().password as string);
    expect((await json('Viewer', ['rules', 'show', rule.ruleId])).priority).toBe(rule.priority);

    // Rename the connector, then put it back from its history.
    const renamed = await as('Admin', [
      'connectors',
      'update',
      connectorId,
      '-f',
      file('renamed.json', { name: 'HR renamed', config: { ...f.config(), password: '********' } }),
    ]);
    expect(renamed.code).toBe(0);
    const history = await json('Viewer', ['config', 'history', '--type', 'connector', '--id', connectorId]);
    expect(history.items.map((v: { action: string }) => v.action)).toEqual(['update', 'create']);
    expect(JSON.stringify(history)).not.toContain(f.config().password as string);
    const created = history.items[1].versionId as string;
    const restored = await as('Admin', ['config', 'restore', created, '-o', 'json']);
    expect(restored.code).toBe(0);
    expect((await json('Viewer', ['connectors', 'show', connectorId])).name).toBe('HR cli');
    // A Viewer may read the history but not restore: 4.
    expect((await as('Viewer', ['config', 'restore', created])).code).toBe(4);
  });

  test('plans and approval: a dry run listed with its changes and applied; a run over a threshold waits (exit 8) and a second admin approves it', async () => {
    // A dry run of a changed row: planned, nothing written.
    await f.exec("UPDATE people SET given_name = 'Planned' WHERE employee_id = 'E00007'");
    const dry = await as('Operator', ['runs', 'import', connectorId, '--dry-run', '--wait', '-o', 'json']);
    expect(dry.code).toBe(0);
    const plan = JSON.parse(dry.stdout);
    expect(plan).toMatchObject({ status: 'Completed', dryRun: true, plan: { expiresOn: expect.any(String) } });
    const changes = await as('Viewer', ['runs', 'changes', plan.runId, '--outcome', 'planned']);
    expect(changes.code).toBe(0);
    expect(changes.stdout.split('\n')[0]).toMatch(/^TARGET\s+OPERATION\s+OUTCOME\s+ANCHOR\s+ATTRIBUTES\s+ERROR\s+DN$/);
    expect(changes.stdout).toMatch(/mesh\s+Update\s+planned\s+E00007\s+givenName/);
    expect(changes.stdout.trim().endsWith('1 of 1')).toBe(true);
    const applied = await as('Operator', ['runs', 'apply', plan.runId, '--wait', '-o', 'json']);
    expect(applied.code).toBe(0);
    expect(JSON.parse(applied.stdout)).toMatchObject({ status: 'Completed', trigger: { type: 'apply', planRunId: plan.runId } });
    const found = await json('Viewer', ['mesh', 'search', '--where', 'givenName equals Planned']);
    expect(found.items.map((i: { anchorValue: string }) => i.anchorValue)).toEqual(['E00007']);
    // Applying it again: 409, exit 6.
    expect((await as('Operator', ['runs', 'apply', plan.runId])).code).toBe(6);

    // A deletes threshold of 10, then 50 rows gone: the import waits for approval.
    const current = await json('Admin', ['connectors', 'show', connectorId]);
    const limited = await as('Admin', [
      'connectors',
      'update',
      connectorId,
      '-f',
      file('limited.json', { name: current.name, config: { ...current.config, thresholds: { deletes: { count: 10, percent: 20 } } } }),
    ]);
    expect(limited.code).toBe(0);
    await f.exec("DELETE FROM people WHERE employee_id <= 'E00050'");
    const parked = await as('Operator', ['runs', 'import', connectorId, '--wait']);
    expect(parked.code).toBe(8);
    expect(parked.stdout).toMatch(/run [0-9a-f-]{36} AwaitingApproval/);
    expect(parked.stdout).toContain('awaits approval: deletes 50 over the limit 10');
    const runId = /run ([0-9a-f-]{36}) AwaitingApproval/.exec(parked.stdout)![1];
    expect((await json('Viewer', ['mesh', 'ls', '--take', '0'])).totalCount).toBe(ROWS);
    // The Operator who started it may not approve (403: exit 4); an Admin may.
    expect((await as('Operator', ['runs', 'approve', runId])).code).toBe(4);
    const approved = await as('Admin', ['runs', 'approve', runId, '--wait']);
    expect(approved.code).toBe(0);
    expect(approved.stdout).toMatch(new RegExp(`run ${runId} Completed`));
    expect((await json('Viewer', ['mesh', 'ls', '--take', '0'])).totalCount).toBe(ROWS - 50);
    const deletes = await json('Viewer', ['runs', 'changes', runId, '--operation', 'Delete']);
    expect(deletes.totalCount).toBe(50);
  });

  test('on a terminal (tmux) the apply of a plan shows its total from the plan, never "?"', async () => {
    await f.exec("UPDATE people SET given_name = given_name || 'p'");
    const plan = await as('Operator', ['runs', 'import', connectorId, '--full', '--dry-run', '--wait', '-o', 'json']);
    expect(plan.code).toBe(0);
    const planRun = JSON.parse(plan.stdout);
    expect(planRun).toMatchObject({ dryRun: true, status: 'Completed' });
    const total = planRun.stats.objectsProcessed as number;
    expect(total).toBeGreaterThan(0);
    const frames = await inTmux(['runs', 'apply', planRun.runId, '--wait'], {
      MESHSYNC_HOME: home,
      MESHSYNC_URL: rt.baseUrl,
      MESHSYNC_TOKEN: await rt.token('Operator'),
      MESHSYNC_POLL_MS: '200',
    });
    const last = frames[frames.length - 1];
    expect(last).toMatch(/EXIT=0/);
    expect(last).toMatch(new RegExp(`Completed\\s*\\|[\u2588\u2591]{40}\\| \\d+/${total} objects`));
    const bars = frames.filter((fr) => /\| \d+(\/\d+)? objects/.test(fr));
    expect(bars.length).toBeGreaterThan(0);
    for (const fr of bars) {
      expect(fr).toMatch(new RegExp(`\\| \\d+/${total} objects`));
      expect(fr).not.toMatch(/total not known|\/\? objects|ETA \?/);
    }
    const applied = await json('Viewer', ['runs', 'ls', '--connector', connectorId, '--take', '1']);
    expect(applied.items[0]).toMatchObject({ status: 'Completed', trigger: { type: 'apply', planRunId: planRun.runId } });
  });

  test('schedules runs names the connector of each step with its run status', async () => {
    const created = await json('Admin', [
      'schedules',
      'create',
      '-f',
      file('schedule.json', {
        name: 'nightly cli',
        cron: '0 0 2 * * *',
        timeZone: 'UTC',
        isEnabled: false,
        steps: [{ runType: 'DeltaImport', connectorIds: [connectorId] }],
      }),
    ]);
    const started = await json('Operator', ['schedules', 'run', created.scheduleId]);
    const deadline = Date.now() + 120_000;
    for (;;) {
      const run = await json('Viewer', ['schedules', 'runs', created.scheduleId, started.scheduleRunId]);
      if (run.status !== 'Running') break;
      expect(Date.now()).toBeLessThan(deadline);
      await new Promise((r) => setTimeout(r, 200));
    }
    const table = await as('Viewer', ['schedules', 'runs', created.scheduleId]);
    expect(table.code).toBe(0);
    expect(table.stdout.split('\n')[0]).toMatch(/^SCHEDULE RUN ID\s+TRIGGER\s+STATUS\s+STARTED\s+COMPLETED$/);
    expect(table.stdout).toMatch(new RegExp(`^${started.scheduleRunId}\\s+manual\\s+Completed\\s`, 'm'));
    expect(table.stdout).toContain(`\nsteps of ${started.scheduleRunId}: DeltaImport: HR cli Completed\n`);
    // One schedule run: its connector runs by connector name, the run id whole; -o wide adds the connector id.
    const one = await as('Viewer', ['schedules', 'runs', created.scheduleId, started.scheduleRunId]);
    expect(one.code).toBe(0);
    const detailRun = (await json('Viewer', ['schedules', 'runs', created.scheduleId, started.scheduleRunId])).steps[0].runs[0];
    expect(one.stdout).toMatch(/^STEP\s+RUN TYPE\s+CONNECTOR\s+RUN ID\s+STATUS$/m);
    expect(one.stdout).toMatch(new RegExp(`^1\\s+DeltaImport\\s+HR cli\\s+${detailRun.runId}\\s+Completed$`, 'm'));
    expect(one.stdout).not.toContain(connectorId);
    const wide = await as('Viewer', ['schedules', 'runs', created.scheduleId, started.scheduleRunId, '-o', 'wide']);
    expect(wide.stdout).toMatch(new RegExp(`^1\\s+DeltaImport\\s+HR cli\\s+${connectorId}\\s+${detailRun.runId}\\s+Completed$`, 'm'));
    // json keeps the API's answer as it is.
    const listed = await json('Viewer', ['schedules', 'runs', created.scheduleId]);
    expect(listed.items[0].steps[0].runs[0]).toMatchObject({ connectorId, status: 'Completed' });
  });
});
