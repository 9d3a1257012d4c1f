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
 * A computed mesh attribute that reads the clock, end to end (the built service over HTTP, real slapd, an HR
 * file): `status` is `now() >= date(object.hireDate) ? "active" : "prehire"` (and an inbound flow `started` reads the clock
 * too). The import records the hire date
 * as the object's next instant; on that date the due timer synchronizes the HR object again (the mesh value is
 * computed anew) and the directory gets `active` from a due export, with no import. Two service processes share
 * the storage while the instant passes: one due export runs, and the directory holds the change once.
 */
jest.setTimeout(600_000);

const exec = promisify(execFile);
const DAY = 86_400_000;
const HR = ['id', 'employeeId', 'givenName', 'sn', 'hireDate'];

describeWithServer('slapd')('a computed attribute that reads now() flips on its date with no import (slapd, HR file, two processes)', () => {
  let slapd: Slapd;
  let a: ServiceUnderTest;
  let b: ServiceUnderTest | undefined;
  let f: SlapdFixture;
  let admin: Client;
  let hr = '';
  let dir = '';
  const hrDir = folder('ims-dated-computed-hr-');
  const clockFile = path.join(folder('ims-dated-computed-clock-'), 'offset');
  const setClock = (instant: number) => writeFileSync(clockFile, String(Math.round(instant - Date.now())));

  // Dee starts in 5 days (a UTC calendar date: `date()` reads it as midnight UTC); Eve started long ago.
  const hireDate = new Date(Date.now() + 5 * DAY).toISOString().slice(0, 10);
  const hireAt = Date.parse(`${hireDate}T00:00:00Z`);
  const dee = { id: 'c1', employeeId: 'E301', givenName: 'Dee', sn: 'Computed', hireDate };
  const eve = { id: 'c2', employeeId: 'E302', givenName: 'Eve', sn: 'Computed', hireDate: '2020-01-06' };

  /** The values of an attribute (default employeeType) of an entry read back with ldapsearch (undefined: no entry). */
  async function values(employeeId: string, attribute = 'employeeType'): Promise<string[] | undefined> {
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
    return [...stdout.matchAll(new RegExp(`^${attribute}: (.*)$`, 'gm'))].map((m) => m[1]);
  }

  /** The consolidated mesh value of `attribute` of the person with this employeeId. */
  async function meshValue(employeeId: string, attribute: string): Promise<unknown> {
    for await (const page of iterateMesh()) for (const o of page) if (o.attributes.employeeId?.value === employeeId) return o.attributes[attribute]?.value;
    return undefined;
  }

  /** Runs of a connector started after `since` (ISO), oldest first. */
  async function runsSince(connectorId: string, since: string): Promise<{ runId: string; runType: string; trigger: { type: string } }[]> {
    const res = await a.call('GET', `runs?connectorId=${connectorId}&take=100`);
    expect(res.status).toBe(200);
    return (res.body.items as { startedAt: string }[]).filter((r) => r.startedAt > since).reverse() as never;
  }

  beforeAll(async () => {
    slapd = await startSlapd();
    writeFileSync(clockFile, '0');
    // The due timers tick every 2 s instead of 10 (a Development-only test hook): the hire date takes two ticks.
    a = await startService({ env: { Testing__ClockOffsetFile: clockFile, Engine__InstanceName: 'dated-a', DueChanges__TestHooks__IntervalSeconds: '2' } });
    f = await new SlapdFixture(slapd).init();
    admin = await f.client();
    writeCsv(hrDir, 'hr.csv', HR, [dee, eve]);
    const res = await a.call('POST', 'connectors', {
      body: { name: 'HR', type: 'custom', config: { implementation: 'file', objectType: 'User', settings: { path: hrDir, anchorColumn: 'id' } } },
    });
    expect(res.status).toBe(201);
    hr = res.body.id;
    await sourceRules(a, hr, 'employeeId', ['employeeId', 'givenName', 'sn', 'hireDate']);
    // An inbound flow that reads the clock (accepted when saved).
    await rule(a, {
      ruleType: 'FlowRule',
      connectorId: hr,
      sourceAttribute: 'hireDate',
      targetAttribute: 'started',
      confidence: 50,
      transformScript: 'now() >= date(source) ? "yes" : "no"',
    });
    // The computed attribute that reads the clock (accepted when saved).
    await rule(a, { ruleType: 'MeshComposerRule', targetAttribute: 'status', transformScript: 'now() >= date(object.hireDate) ? "active" : "prehire"' });
    dir = await ldapConnector(a, 'Directory', f.config({ exportDnTemplate: '"uid=" + dnEscape(source.uid) + ",ou=Engineering," + baseDN' }));
    const out = outboundRule(a, dir, { confidence: 50 });
    await out('employeeId', 'uid');
    await out('employeeId', 'employeeNumber');
    await out('givenName', 'givenName');
    await out('sn', 'sn');
    await out('givenName', 'cn', 'object.givenName + " " + object.sn');
    await out('status', 'employeeType');
    await rule(a, { ruleType: 'JoinRule', connectorId: dir, sourceAttribute: 'employeeNumber', targetAttribute: 'employeeId' });
  });
  afterAll(async () => {
    await b?.dispose();
    await stopSlapdSuite({ admin, rt: a, f, slapd });
  });

  let since = '';

  test('the import computes prehire and records the hire date as the object next instant; the export writes it', async () => {
    expect(await runImport(a, hr)).toMatchObject({ status: 'Completed', stats: { objectsCreated: 2, errors: 0 } });
    expect(await meshValue('E301', 'status')).toBe('prehire');
    expect(await meshValue('E302', 'status')).toBe('active');
    expect(await meshValue('E301', 'started')).toBe('no');
    expect(await meshValue('E302', 'started')).toBe('yes');
    // Only Dee has an instant left, under the HR connector's import target (keyed by the source anchor).
    expect([...(await loadDuePointers(`import:${hr}`)).entries()]).toEqual([['c1', hireAt]]);
    expect(await runExport(a, dir)).toMatchObject({ status: 'Completed', stats: { objectsCreated: 2, errors: 0 } });
    expect(await values('E301')).toEqual(['prehire']);
    expect(await values('E302')).toEqual(['active']);
    since = new Date().toISOString();
  });

  test('with a second process on the same storage, the hire date passes: one due export, the directory gets active once, no import', async () => {
    b = await startService({
      prefix: a.prefix,
      env: { Testing__ClockOffsetFile: clockFile, Engine__InstanceName: 'dated-b', DueChanges__TestHooks__IntervalSeconds: '2' },
    });
    setClock(hireAt + 60_000);
    // Waits for the due export of the directory (both processes' timers tick), then for it to finish.
    let runId = '';
    for (const deadline = Date.now() + 180_000; !runId; await new Promise((r) => setTimeout(r, 500))) {
      if (Date.now() > deadline) throw new Error(`no due export started:\n${a.logs().slice(-2000)}\n${b.logs().slice(-2000)}`);
      runId = (await runsSince(dir, since)).find((r) => r.trigger.type === 'due')?.runId ?? '';
    }
    const run = await waitRun(a, runId);
    expect(run).toMatchObject({
      runType: 'Export',
      status: 'Completed',
      trigger: { type: 'due', actorUpn: 'system:due' },
      stats: { objectsUpdated: 1, errors: 0 },
    });
    expect(await meshValue('E301', 'status')).toBe('active');
    expect(await meshValue('E301', 'started')).toBe('yes');
    expect(await values('E301')).toEqual(['active']);
    expect(await values('E302')).toEqual(['active']);
    // Nothing is left due (so no later tick of either process can start another export), and none is recorded.
    expect(await readDueRows(hireAt + 60_000, 10)).toEqual([]);
    expect((await loadDuePointers(`import:${hr}`)).size).toBe(0);
    expect((await loadDuePointers(dir)).size).toBe(0);
    const runs = await runsSince(dir, since);
    expect(runs.filter((r) => r.runType === 'Export' && r.trigger.type === 'due')).toHaveLength(1);
    expect(runs).toHaveLength(1);
    expect(await runsSince(hr, since)).toEqual([]);
    // The one update of the entry is the run's only change.
    const changes = await a.call('GET', `runs/${runId}/changes`);
    expect(changes.status).toBe(200);
    expect(changes.body.items).toHaveLength(1);
  });
});
