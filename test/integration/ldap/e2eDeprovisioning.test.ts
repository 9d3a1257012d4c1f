import { writeFileSync } from 'node:fs';
import path from 'node:path';
import type { Client } from 'ldapts';
import { loadCsSummaries, readCsObjects } from '../../../lib/sync/space/connectorSpace';
import { describeWithServer } from '../../support/servers';
import { type ServiceUnderTest, SECOND_ADMIN } from '../../support/service';
import type { Slapd } from '../../support/slapd';
import { folder, runExport, runImport, writeCsv } from '../sync/syncSupport';
import { meshOf, stopSlapdSuite, NO_DELETION_LIMIT, startHrDirectory } from './e2eSupport';
import { SlapdFixture } from './ldapFixture';

/**
 * A directory target's `config.deprovisioning` end to end (the running service over HTTP, real slapd): an HR
 * file is the source, people whose HR status is active are provisioned. `delete` is the default; `disable`
 * writes `employeeType: disabled` instead of deleting (a leaver, and with onConditionFalse an HR status that
 * flips to terminated), and a rehire joined to the entry again enables it (the status flow's value); `none`
 * leaves the entry as it is; `graceDays` delays the deprovisioning, and a person back inside the grace keeps
 * the entry.
 */
jest.setTimeout(300_000);

const HR = ['id', 'employeeId', 'givenName', 'sn', 'status'];
type Row = Record<(typeof HR)[number], string>;
const person = (n: number, givenName: string): Row => ({ id: `h${n}`, employeeId: `E1${String(n).padStart(2, '0')}`, givenName, sn: 'Test', status: 'active' });
const ROWS: Row[] = [person(1, 'Ann'), person(2, 'Bob'), person(3, 'Cy'), person(4, 'Dee'), person(5, 'Eve'), person(6, 'Fay'), person(7, 'Gus')];

describeWithServer('slapd')('deprovisioning of a directory target: delete, disable, none, grace (slapd)', () => {
  let slapd: Slapd;
  let rt: ServiceUnderTest;
  let f: SlapdFixture;
  let admin: Client;
  const hrDir = folder('ims-deprov-hr-');
  const clockFile = path.join(folder('ims-deprov-clock-'), 'offset');
  let rows = ROWS.map((r) => ({ ...r }));
  let hr = '';
  let dir = '';
  const dnOf = (key: string) => `uid=${key},ou=Engineering,${f.base}`;
  const entry = async (key: string) =>
    (await admin.search(dnOf(key), { scope: 'base', attributes: ['*', 'entryUUID'] }).catch(() => ({ searchEntries: [] }))).searchEntries[0];
  const writeHr = () => writeCsv(hrDir, 'hr.csv', HR, rows);
  const hrDelta = async () => expect(await runImport(rt, hr, { runType: 'DeltaImport' })).toMatchObject({ status: 'Completed', stats: { errors: 0 } });
  /** The target's connector-space row of a person (by its entry's entryUUID). */
  const csRow = async (uuid: unknown) => (await readCsObjects(dir, [String(uuid)])).get(String(uuid));
  async function deprovisioning(setting: Record<string, unknown> | undefined, extra: Record<string, unknown> = {}): Promise<void> {
    const current = await rt.call('GET', `connectors/${dir}`);
    const config = { ...current.body.config, ...extra };
    if (setting) config.deprovisioning = setting;
    else delete config.deprovisioning;
    const res = await rt.call('PUT', `connectors/${dir}`, { body: { name: current.body.name, config } });
    // A shorter grace or a harsher action loosens a guard rail: another Admin approves it (docs/safety.md).
    if (res.status === 202) {
      expect((await rt.call('POST', `config/changes/${res.body.changeId}/approve`, { as: SECOND_ADMIN })).status).toBe(200);
    } else expect(res.status).toBe(200);
  }

  beforeAll(async () => {
    writeHr();
    writeFileSync(clockFile, '0');
    ({ slapd, rt, f, admin, hr, dir } = await startHrDirectory({
      hrDir,
      people: 7,
      hrFlows: ['employeeId', 'givenName', 'sn', 'status'],
      hrConfig: NO_DELETION_LIMIT,
      directory: { provisioningCondition: 'source.status == "active"', ...NO_DELETION_LIMIT },
      moreFlows: [['status', 'employeeType']],
      // The grace test moves the service's engine clock (the Development-only Testing__ClockOffsetFile).
      service: { env: { Testing__ClockOffsetFile: clockFile } },
    }));
  });
  afterAll(async () => {
    await stopSlapdSuite({ admin, rt, f, slapd });
  });

  test('the config is validated: a bad action lists the allowed values; disable without disableAttributes is named', async () => {
    const current = await rt.call('GET', `connectors/${dir}`);
    const put = (deprovisioning: unknown) =>
      rt.call('PUT', `connectors/${dir}`, { body: { name: current.body.name, config: { ...current.body.config, deprovisioning } } });
    const bad = await put({ action: 'archive', graceDays: 'soon' });
    expect(bad.status).toBe(400);
    expect(bad.headers.get('content-type')).toMatch(/application\/problem\+json/);
    expect(bad.body.errors).toEqual(
      expect.arrayContaining([
        { path: '/config/deprovisioning/action', message: 'must be one of: delete, disable, none' },
        { path: '/config/deprovisioning/graceDays', message: 'must be number' },
      ]),
    );
    const missing = await put({ action: 'disable' });
    expect(missing.status).toBe(400);
    expect(missing.body.errors).toEqual([
      { path: '/config/deprovisioning/disableAttributes', message: expect.stringContaining("is required with action 'disable'") },
    ]);
    expect(JSON.stringify([bad.body, missing.body])).not.toContain(slapd.rootPassword);
  });

  test('delete is the default, and action delete says the same: a person gone from HR has the entry deleted', async () => {
    rows = rows.filter((r) => r.employeeId !== 'E105');
    writeHr();
    await hrDelta();
    expect(await runExport(rt, dir)).toMatchObject({ status: 'Completed', stats: { objectsDeleted: 1, objectsUpdated: 0, errors: 0 } });
    expect(await entry('E105')).toBeUndefined();

    await deprovisioning({ action: 'delete', graceDays: 0, onConditionFalse: false });
    rows = rows.filter((r) => r.employeeId !== 'E107');
    writeHr();
    await hrDelta();
    expect(await runExport(rt, dir)).toMatchObject({ status: 'Completed', stats: { objectsDeleted: 1, objectsUpdated: 0, errors: 0 } });
    expect(await entry('E107')).toBeUndefined();
  });

  test('disable with onConditionFalse: an HR status flipping to terminated disables the entry; active again enables it', async () => {
    await deprovisioning({ action: 'disable', disableAttributes: { employeeType: 'disabled' }, onConditionFalse: true });
    const before = await entry('E101');
    expect(before).toMatchObject({ employeeType: 'active' });
    rows = rows.map((r) => (r.employeeId === 'E101' ? { ...r, status: 'terminated' } : r));
    writeHr();
    await hrDelta();
    const run = await runExport(rt, dir);
    expect(run).toMatchObject({ status: 'Completed', stats: { objectsUpdated: 1, objectsDeleted: 0, objectsCreated: 0, errors: 0 } });
    // Disabled in the directory (not the flow's "terminated": the disable value), kept, linked, marked.
    expect(await entry('E101')).toMatchObject({ entryUUID: before.entryUUID, employeeType: 'disabled', cn: 'Ann Test' });
    expect(await csRow(before.entryUUID)).toMatchObject({
      meshId: expect.any(String),
      deprovisioned: { state: 'disabled', reason: 'condition', written: ['employeeType'] },
    });
    // Nothing more while the condition does not hold.
    expect(await runExport(rt, dir)).toMatchObject({ status: 'Completed', stats: { objectsProcessed: 0, errors: 0 } });

    rows = rows.map((r) => (r.employeeId === 'E101' ? { ...r, status: 'active' } : r));
    writeHr();
    await hrDelta();
    expect(await runExport(rt, dir)).toMatchObject({ status: 'Completed', stats: { objectsUpdated: 1, errors: 0 } });
    expect(await entry('E101')).toMatchObject({ entryUUID: before.entryUUID, employeeType: 'active' });
    expect((await csRow(before.entryUUID))?.deprovisioned).toBeUndefined();
  });

  test('disable: a leaver is disabled, not deleted; a rehire joins the entry again and enables it', async () => {
    const before = await entry('E102');
    rows = rows.filter((r) => r.employeeId !== 'E102');
    writeHr();
    await hrDelta();
    const run = await runExport(rt, dir);
    expect(run).toMatchObject({ status: 'Completed', stats: { objectsUpdated: 1, objectsDeleted: 0, errors: 0 } });
    expect(await entry('E102')).toMatchObject({ entryUUID: before.entryUUID, employeeType: 'disabled' });
    const row = await csRow(before.entryUUID);
    expect(row).toMatchObject({ meshId: null, deprovisioned: { state: 'disabled', reason: 'gone' } });
    expect(row?.deleted).toBeFalsy();
    expect(await runImport(rt, dir, { runType: 'DeltaImport' })).toMatchObject({ status: 'Completed', stats: { errors: 0 } });
    expect((await csRow(before.entryUUID))?.deprovisioned).toMatchObject({ state: 'disabled' });

    // The rehire: back in HR (a new row, the same employee id); joined to the disabled entry, not added again.
    rows = [...rows, { ...person(2, 'Bob'), id: 'h2b' }];
    writeHr();
    await hrDelta();
    const rehire = await runExport(rt, dir);
    expect(rehire).toMatchObject({ status: 'Completed', stats: { objectsCreated: 0, objectsUpdated: 1, errors: 0 } });
    expect(await entry('E102')).toMatchObject({ entryUUID: before.entryUUID, employeeType: 'active' });
    const mesh = await meshOf(hr);
    expect(mesh.get('E102')!.links[dir]).toBe(before.entryUUID);
    expect((await csRow(before.entryUUID))?.deprovisioned).toBeUndefined();
  });

  test('none: the entry of a leaver is left as it is and unlinked', async () => {
    await deprovisioning({ action: 'none' });
    const before = await entry('E103');
    rows = rows.filter((r) => r.employeeId !== 'E103');
    writeHr();
    await hrDelta();
    expect(await runExport(rt, dir)).toMatchObject({ status: 'Completed', stats: { objectsDeleted: 0, objectsUpdated: 0, errors: 0 } });
    expect(await entry('E103')).toMatchObject({ entryUUID: before.entryUUID, employeeType: 'active' });
    expect(await csRow(before.entryUUID)).toMatchObject({ meshId: null, deprovisioned: { state: 'none' } });
  });

  test('graceDays: the first export leaves the deprovisioning pending, a return inside the grace cancels it, an export after it applies it', async () => {
    // Seconds: far longer than the steps inside the grace take on a loaded machine; the engine clock then moves past it.
    const grace = 600;
    await deprovisioning({ action: 'delete', graceDays: grace / 86_400 });
    const dee = await entry('E104');
    const fay = await entry('E106');
    rows = rows.filter((r) => r.employeeId !== 'E104' && r.employeeId !== 'E106');
    writeHr();
    await hrDelta();
    const first = await runExport(rt, dir);
    expect(first).toMatchObject({ status: 'Completed', stats: { objectsDeleted: 0, errors: 0 } });
    expect(await entry('E104')).toBeDefined();
    expect(await csRow(dee.entryUUID)).toMatchObject({ deprovisioned: { state: 'pending', reason: 'gone', due: expect.any(String) } });
    expect([...(await loadCsSummaries(dir)).values()].filter((s) => s.deprov === 'pending')).toHaveLength(2);

    // Fay comes back inside the grace (the same HR row: the same mesh object).
    rows = [...rows, person(6, 'Fay')];
    writeHr();
    await hrDelta();
    expect(await runExport(rt, dir)).toMatchObject({ status: 'Completed', stats: { objectsDeleted: 0, errors: 0 } });
    expect((await csRow(fay.entryUUID))?.deprovisioned).toBeUndefined();
    expect((await meshOf(hr)).get('E106')!.links[dir]).toBe(fay.entryUUID);
    // Still a provisioned link (the export added the entry): it does not keep the mesh object alive.
    expect((await meshOf(hr)).get('E106')!.provisioned).toContain(dir);
    expect(await entry('E104')).toBeDefined();

    // The grace passes: the engine clock moves two graces ahead (rather than the test waiting it out).
    writeFileSync(clockFile, String(2 * grace * 1000));
    expect(await runExport(rt, dir)).toMatchObject({ status: 'Completed', stats: { objectsDeleted: 1, errors: 0 } });
    expect(await entry('E104')).toBeUndefined();
    expect(await entry('E106')).toMatchObject({ entryUUID: fay.entryUUID });
    expect((await csRow(dee.entryUUID))?.deleted).toBe(true);
  });

  test('the deletion threshold counts deletes only; a disabled object whose mesh object goes away is unlinked; onConditionFalse with delete', async () => {
    const none = { objects: 0, percent: 0 };
    await deprovisioning({ action: 'disable', disableAttributes: { employeeType: 'disabled' }, onConditionFalse: true }, { deletionThreshold: none });
    const fay = await entry('E106');
    rows = rows.map((r) => (r.employeeId === 'E106' ? { ...r, status: 'terminated' } : r));
    writeHr();
    await hrDelta();
    // A disable is not a delete: a threshold of 0 deletes does not stop it.
    expect(await runExport(rt, dir)).toMatchObject({ status: 'Completed', stats: { objectsUpdated: 1, objectsDeleted: 0, errors: 0 } });
    expect(await entry('E106')).toMatchObject({ employeeType: 'disabled' });
    expect(await csRow(fay.entryUUID)).toMatchObject({ meshId: expect.any(String), deprovisioned: { state: 'disabled', reason: 'condition' } });

    rows = rows.filter((r) => r.employeeId !== 'E106');
    writeHr();
    await hrDelta();
    expect(await runExport(rt, dir)).toMatchObject({ status: 'Completed', stats: { objectsDeleted: 0, errors: 0 } });
    expect(await entry('E106')).toMatchObject({ entryUUID: fay.entryUUID, employeeType: 'disabled' });
    expect(await csRow(fay.entryUUID)).toMatchObject({ meshId: null, deprovisioned: { state: 'disabled' } });

    // delete with onConditionFalse: a delete, held to the threshold.
    await deprovisioning({ action: 'delete', onConditionFalse: true }, { deletionThreshold: none });
    rows = rows.map((r) => (r.employeeId === 'E101' ? { ...r, status: 'terminated' } : r));
    writeHr();
    await hrDelta();
    const stopped = await runExport(rt, dir);
    expect(stopped).toMatchObject({ status: 'AwaitingApproval', stats: { objectsDeleted: 0 }, approval: { reasons: [{ operation: 'deletes' }] } });
    expect(await entry('E101')).toBeDefined();
    expect((await rt.call('POST', `runs/${stopped.runId}/reject`)).status).toBe(200);
    await deprovisioning({ action: 'delete', onConditionFalse: true }, { deletionThreshold: { objects: 10, percent: 100 } });
    expect(await runExport(rt, dir)).toMatchObject({ status: 'Completed', stats: { objectsDeleted: 1, errors: 0 } });
    expect(await entry('E101')).toBeUndefined();
    expect((await meshOf(hr)).get('E101')!.links[dir]).toBeUndefined();
  });
});
