import { execFile } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { promisify } from 'node:util';
import type { Client } from 'ldapts';
import { iterateMesh } from '../../../lib/mesh/store';
import { loadDuePointers, readDueRows } from '../../../lib/storage/dueInstants';
import { describeWithServer } from '../../support/servers';
import { startService, type ServiceUnderTest } from '../../support/service';
import { startSlapd, type Slapd } from '../../support/slapd';
import { folder, outboundRule, rule, runExport, runImport, sourceRules, waitRun, writeCsv } from '../sync/syncSupport';
import { ldapConnector, stopSlapdSuite } from './e2eSupport';
import { SlapdFixture } from './ldapFixture';

/**
 * Dated changes end to end (the built service over HTTP, real slapd, an HR file): the HR file sends hires
 * ahead of their start date and a termination before the last day. The directory gets a person 14 days before
 * the hire date, disabled; enabled at 06:00 on the hire date in the person's zone; disabled after the end of the
 * last day in the person's zone. After the first import and export no import runs: the test moves the clock the
 * service reads (Testing__ClockOffsetFile) and the due timer exports what changed. The service is killed and
 * started again in between; the due work still happens, once. The directory is read back with ldapsearch.
 */
jest.setTimeout(600_000);

const exec = promisify(execFile);
const DAY = 86_400_000;
const HR = ['id', 'employeeId', 'givenName', 'sn', 'hireDate', 'terminationDate', 'tz', 'title', 'titleEffective'];

/** The calendar date (yyyy-MM-dd) of the instant `ms` in `zone`. */
const dateIn = (ms: number, zone: string) => new Intl.DateTimeFormat('en-CA', { timeZone: zone, year: 'numeric', month: '2-digit', day: '2-digit' }).format(ms);
/** The instant of a wall-clock time in `zone` (the zones here have a fixed offset over the test's days or none). */
function wallInstant(date: string, time: string, zone: string): number {
  const asUtc = Date.parse(`${date}T${time}:00Z`);
  const shown = new Date(asUtc).toLocaleString('sv-SE', { timeZone: zone }).replace(' ', 'T') + 'Z';
  return asUtc - (Date.parse(shown) - asUtc);
}
const nextDate = (date: string) => new Date(Date.parse(`${date}T00:00:00Z`) + DAY).toISOString().slice(0, 10);

describeWithServer('slapd')('dated changes: hires and leavers on their dates with no import (slapd, HR file)', () => {
  let slapd: Slapd;
  let rt: ServiceUnderTest;
  let f: SlapdFixture;
  let admin: Client;
  let hr = '';
  let dir = '';
  const hrDir = folder('ims-dated-hr-');
  const clockFile = path.join(folder('ims-dated-clock-'), 'offset');
  const setClock = (instant: number) => writeFileSync(clockFile, String(Math.round(instant - Date.now())));

  const t0 = Date.now();
  // Ann starts in 10 days (Paris); Bob leaves in 3 days (New York); Cy starts in 20 days (Tokyo).
  const ann = {
    id: 'h1',
    employeeId: 'E201',
    givenName: 'Ann',
    sn: 'Dated',
    hireDate: dateIn(t0 + 10 * DAY, 'Europe/Paris'),
    terminationDate: '',
    tz: 'Europe/Paris',
    title: 'Engineer',
    titleEffective: '',
  };
  const bob = {
    id: 'h2',
    employeeId: 'E202',
    givenName: 'Bob',
    sn: 'Dated',
    hireDate: '2020-01-06',
    terminationDate: dateIn(t0 + 3 * DAY, 'America/New_York'),
    tz: 'America/New_York',
    title: 'Clerk',
    titleEffective: '',
  };
  const cy = {
    id: 'h3',
    employeeId: 'E203',
    givenName: 'Cy',
    sn: 'Dated',
    hireDate: dateIn(t0 + 20 * DAY, 'Asia/Tokyo'),
    terminationDate: '',
    tz: 'Asia/Tokyo',
    title: 'Analyst',
    titleEffective: '',
  };
  // Ann's new title, sent ahead: it takes effect in 8 days.
  const retitledAt = t0 + 8 * DAY;
  const annStart = wallInstant(ann.hireDate, '06:00', 'Europe/Paris');
  const bobEnd = wallInstant(nextDate(bob.terminationDate), '00:00', 'America/New_York');
  const cyProvisioned = wallInstant(cy.hireDate, '00:00', 'Asia/Tokyo') - 14 * DAY;

  /** An attribute (default employeeType) of an entry read back with ldapsearch (undefined: no entry). */
  async function status(employeeId: string, attribute = 'employeeType'): Promise<string | undefined> {
    const { stdout } = await exec('ldapsearch', [
      '-x',
      '-LLL',
      '-H',
      slapd.url,
      '-D',
      slapd.rootDN,
      '-w',
      slapd.rootPassword,
      '-b',
      `ou=Engineering,${f.base}`,
      `(employeeNumber=${employeeId})`,
      attribute,
    ]);
    if (!/^dn: /m.test(stdout)) return undefined;
    return new RegExp(`^${attribute}: (.*)$`, 'm').exec(stdout)?.[1];
  }

  /** The explanation of a mesh attribute of the person with this employeeId. */
  async function explain(employeeId: string, attribute: string) {
    let id = '';
    for await (const page of iterateMesh()) for (const o of page) if (o.attributes.employeeId?.value === employeeId) id = o.id;
    const res = await rt.call('GET', `mesh/objects/${id}/attributes/${attribute}/explain`);
    expect(res.status).toBe(200);
    return res.body;
  }

  /** Runs of the directory and the HR source started after `since` (ISO), oldest first. */
  async function runsSince(
    connectorId: string,
    since: string,
  ): Promise<{ runId: string; runType: string; status: string; trigger: { type: string }; stats: Record<string, number> }[]> {
    const res = await rt.call('GET', `runs?connectorId=${connectorId}&take=100`);
    expect(res.status).toBe(200);
    return (res.body.items as { startedAt: string }[]).filter((r) => r.startedAt > since).reverse() as never;
  }

  /** Waits until a due export of the directory started after `since` has finished, and returns it. */
  async function dueExport(since: string) {
    for (const deadline = Date.now() + 180_000; Date.now() < deadline; await new Promise((r) => setTimeout(r, 500))) {
      const due = (await runsSince(dir, since)).filter((r) => r.trigger.type === 'due');
      if (due.length) return waitRun(rt, due[0].runId);
    }
    throw new Error(`no due export started:\n${rt.logs().slice(-3000)}`);
  }

  beforeAll(async () => {
    slapd = await startSlapd();
    writeFileSync(clockFile, '0');
    // The due timer ticks every 2 s instead of 10 (a Development-only test hook): each test below waits for a tick.
    rt = await startService({ env: { Testing__ClockOffsetFile: clockFile, DueChanges__TestHooks__IntervalSeconds: '2' } });
    f = await new SlapdFixture(slapd).init();
    admin = await f.client();
    writeCsv(hrDir, 'hr.csv', HR, [ann, bob, cy]);
    const res = await rt.call('POST', 'connectors', {
      body: { name: 'HR', type: 'custom', config: { implementation: 'file', objectType: 'User', settings: { path: hrDir, anchorColumn: 'id' } } },
    });
    expect(res.status).toBe(201);
    hr = res.body.id;
    await sourceRules(rt, hr, 'employeeId', ['employeeId', 'givenName', 'sn', 'hireDate', 'terminationDate', 'tz']);
    // A title takes effect on the date HR gives with it.
    await rule(rt, {
      ruleType: 'FlowRule',
      connectorId: hr,
      sourceAttribute: 'title',
      targetAttribute: 'title',
      confidence: 50,
      effectiveFromAttribute: 'titleEffective',
    });
    dir = await ldapConnector(
      rt,
      'Directory',
      f.config({
        // Provisioned 14 days before the hire date (midnight in the person's zone).
        provisioningCondition: 'now() >= addDays(date(object.hireDate, object.tz), -14)',
        exportDnTemplate: '"uid=" + dnEscape(source.uid) + ",ou=Engineering," + baseDN',
      }),
    );
    const out = outboundRule(rt, dir, { confidence: 50 });
    await out('employeeId', 'uid');
    await out('employeeId', 'employeeNumber');
    await out('givenName', 'givenName');
    await out('sn', 'sn');
    await out('title', 'title');
    await out('givenName', 'cn', 'object.givenName + " " + object.sn');
    await out(
      'hireDate',
      'employeeType',
      'now() >= atTime(date(object.hireDate, object.tz), "06:00", object.tz) && !(now() > endOfDay(date(object.terminationDate, object.tz), object.tz)) ? "enabled" : "disabled"',
    );
    await rule(rt, { ruleType: 'JoinRule', connectorId: dir, sourceAttribute: 'employeeNumber', targetAttribute: 'employeeId' });
  });
  afterAll(async () => {
    await stopSlapdSuite({ admin, rt, f, slapd });
  });

  let since = '';

  test('a rule that calls now() where the engine gives no clock, or names an unknown zone, is refused when saved', async () => {
    const join = await rt.call('POST', 'rules', {
      body: {
        ruleName: 'join on now',
        ruleType: 'JoinRule',
        connectorId: hr,
        sourceAttribute: 'hireDate',
        targetAttribute: 'started',
        transformScript: 'now() > date(source)',
      },
    });
    expect(join.status).toBe(400);
    expect(join.headers.get('content-type')).toMatch(/application\/problem\+json/);
    expect(join.body.errors).toEqual([
      { path: '/transformScript', message: 'now() can only be used in flow rules, computed attributes (MeshComposerRule) and provisioning conditions' },
    ]);
    const zone = await rt.call('POST', 'rules', {
      body: {
        ruleName: 'bad zone',
        ruleType: 'FlowRule',
        direction: 'outbound',
        connectorId: dir,
        sourceAttribute: 'hireDate',
        targetAttribute: 'description',
        transformScript: 'formatDate(source, "yyyy-MM-dd", "Europe/Pariss")',
      },
    });
    expect(zone.status).toBe(400);
    expect(zone.body.errors[0]).toMatchObject({
      path: '/transformScript',
      message: expect.stringContaining("the time zone 'Europe/Pariss', which is not known"),
    });
  });

  test('the first import and export: the hire 10 days ahead is created disabled, the leaver is enabled, the hire 20 days ahead is not created yet', async () => {
    expect(await runImport(rt, hr)).toMatchObject({ status: 'Completed', stats: { objectsCreated: 3, errors: 0 } });
    expect(await runExport(rt, dir)).toMatchObject({ status: 'Completed', stats: { objectsCreated: 2, errors: 0 } });
    expect(await status('E201')).toBe('disabled');
    expect(await status('E202')).toBe('enabled');
    expect(await status('E203')).toBeUndefined();
    // The due index holds each person's next instant for the directory.
    const due = [...(await loadDuePointers(dir)).values()].sort((a, b) => a - b);
    expect(due).toEqual([bobEnd, cyProvisioned, annStart]);
    expect(await status('E201', 'title')).toBe('Engineer');
  });

  test('a new title sent 8 days ahead waits: the mesh and the directory keep the current one, explain shows the new one and its date', async () => {
    ann.title = 'Senior Engineer';
    ann.titleEffective = new Date(retitledAt).toISOString();
    writeCsv(hrDir, 'hr.csv', HR, [ann, bob, cy]);
    expect(await runImport(rt, hr)).toMatchObject({ status: 'Completed', stats: { errors: 0 } });
    const explained = await explain('E201', 'title');
    expect(explained).toMatchObject({
      value: 'Engineer',
      pending: [{ connectorId: hr, value: 'Senior Engineer', effectiveFrom: new Date(retitledAt).toISOString() }],
    });
    expect((await runExport(rt, dir)).stats).toMatchObject({ objectsUpdated: 0, errors: 0 });
    expect(await status('E201', 'title')).toBe('Engineer');
    since = new Date().toISOString();
  });

  test('at the end of the last day in the leaver zone, the leaver is disabled with no import', async () => {
    setClock(bobEnd + 60_000);
    const run = await dueExport(since);
    expect(run).toMatchObject({
      runType: 'Export',
      status: 'Completed',
      trigger: { type: 'due', actorUpn: 'system:due' },
      stats: { objectsUpdated: 1, errors: 0 },
    });
    expect(await status('E202')).toBe('disabled');
    expect(await status('E201')).toBe('disabled');
    expect(await status('E203')).toBeUndefined();
    expect(await runsSince(hr, since)).toEqual([]);
  });

  test('killed and started again after the provisioning instant: the hire 20 days ahead is created disabled, once', async () => {
    since = new Date().toISOString();
    await rt.kill();
    setClock(cyProvisioned + 60_000);
    await rt.start();
    const run = await dueExport(since);
    expect(run).toMatchObject({ runType: 'Export', status: 'Completed', trigger: { type: 'due' }, stats: { objectsCreated: 1, errors: 0 } });
    expect(await status('E203')).toBe('disabled');
    // Nothing is left due by now (so no later tick can start another export for it): one due export.
    expect(await readDueRows(cyProvisioned + 60_000, 10)).toEqual([]);
    const due = (await runsSince(dir, since)).filter((r) => r.trigger.type === 'due');
    expect(due).toHaveLength(1);
    expect(await runsSince(hr, since)).toEqual([]);
  });

  test('on its date the new title takes effect and reaches the directory, with no import', async () => {
    since = new Date().toISOString();
    setClock(retitledAt + 60_000);
    const run = await dueExport(since);
    expect(run).toMatchObject({ runType: 'Export', status: 'Completed', trigger: { type: 'due' }, stats: { objectsUpdated: 1, errors: 0 } });
    expect(await status('E201', 'title')).toBe('Senior Engineer');
    const explained = await explain('E201', 'title');
    expect(explained.value).toBe('Senior Engineer');
    expect(explained.pending).toBeUndefined();
    expect(await status('E201')).toBe('disabled');
    expect(await runsSince(hr, since)).toEqual([]);
  });

  test('at 06:00 on the hire date in the person zone, the hire is enabled with no import', async () => {
    since = new Date().toISOString();
    setClock(annStart + 60_000);
    const run = await dueExport(since);
    expect(run).toMatchObject({ runType: 'Export', status: 'Completed', trigger: { type: 'due' }, stats: { objectsUpdated: 1, errors: 0 } });
    expect(await status('E201')).toBe('enabled');
    expect(await status('E202')).toBe('disabled');
    expect(await status('E203')).toBe('disabled');
    expect(await runsSince(hr, since)).toEqual([]);
    // Cy's next instant is her own start; Ann and Bob have none left.
    expect([...(await loadDuePointers(dir)).values()]).toEqual([wallInstant(cy.hireDate, '06:00', 'Asia/Tokyo')]);
  });
});
