import { writeFileSync } from 'node:fs';
import path from 'node:path';
import type { Browser } from 'playwright-core';
import { schemaErrors } from '../../../lib/core/validation/ajv';
import { dnKey } from '../../../lib/mesh/model';
import { nextExport } from '../../../lib/sync/export/next';
import { ConnectorSpaceList, ConnectorSpaceObjectDetail } from '../../../lib/schemas/connectorSpace';
import { startPostgres, type Postgres } from '../../support/postgres';
import { serverAvailable } from '../../support/servers';
import { startService, type ServiceUnderTest } from '../../support/service';
import { startSlapd, type Slapd } from '../../support/slapd';
import { meshsync, newHome } from '../cli/cliSupport';
import { consoleUrl, launch } from '../console/browser';
import { SlapdFixture } from '../ldap/ldapFixture';
import { folder, meshByAnchor } from './syncSupport';
import { person, TutorialDesign, type HrRow } from './tutorialDesign';

/**
 * Visible work, against a real slapd and a real PostgreSQL with the tutorial's design: before an export, the
 * connector space lists what it will send (`state=pendingExport`: an HR title change as an Update with old/new,
 * a new HR row as an Add, a leaver as a Delete) and the deprovisionings waiting for their grace
 * (`state=scheduledDeprovision`, with `dueOn`); the export then sends exactly that (its run's changes compared
 * with the listing), and once the grace is over the listing, the dry run and the export agree on the delete.
 */
jest.setTimeout(600_000);

/**
 * The staff table's grace (seconds): far longer than the tests before its end take on a loaded machine. The last
 * test moves the service's engine clock (the Development-only Testing__ClockOffsetFile) past it.
 */
const GRACE_S = 600;

// eslint-disable-next-line @typescript-eslint/no-explicit-any
type Body = any;

(serverAvailable('slapd') && serverAvailable('postgres') ? describe : describe.skip)('the next export, visible (slapd, PostgreSQL)', () => {
  let slapd: Slapd;
  let pg: Postgres;
  let rt: ServiceUnderTest;
  let t: TutorialDesign;
  let hr: HrRow[] = [];
  const clockFile = path.join(folder('ims-nextexport-clock-'), 'offset');

  const space = async (connectorId: string, query: string): Promise<Body> => {
    const res = await rt.call('GET', `connectors/${connectorId}/space${query}`, { role: 'Viewer' });
    expect(res.status).toBe(200);
    expect(schemaErrors(ConnectorSpaceList, res.body)).toEqual([]);
    return res.body;
  };
  const detail = async (connectorId: string, csObjectId: string): Promise<Body> => {
    const res = await rt.call('GET', `connectors/${connectorId}/space/${csObjectId}`, { role: 'Viewer' });
    expect(res.status).toBe(200);
    expect(schemaErrors(ConnectorSpaceObjectDetail, res.body)).toEqual([]);
    return res.body;
  };
  const changesOf = async (runId: string): Promise<Body[]> => {
    const res = await rt.call('GET', `runs/${runId}/changes?take=200`);
    expect(res.status).toBe(200);
    return res.body.items;
  };
  /** What a listing says the export sends: mesh object -> operation and, per attribute, the new value. */
  const listed = async (connectorId: string) => {
    const out = new Map<string, { operation: string; values: Record<string, unknown> }>();
    for (const item of (await space(connectorId, '?state=pendingExport&take=200')).items) {
      const d = await detail(connectorId, item.csObjectId);
      out.set(item.meshObjectId, { operation: item.pendingExport.operation, values: newValues(d.pendingExport.attributes) });
    }
    return out;
  };
  const sent = (items: Body[]) => {
    const out = new Map<string, { operation: string; values: Record<string, unknown> }>();
    for (const c of items) if (c.target === 'connector') out.set(c.meshObjectId, { operation: c.operation, values: newValues(c.attributes) });
    return out;
  };
  const newValues = (attributes: Record<string, { new: unknown }>) =>
    Object.fromEntries(
      Object.entries(attributes)
        .filter(([, v]) => v.new !== null)
        .map(([k, v]) => [k, v.new]),
    );

  beforeAll(async () => {
    [slapd, pg] = await Promise.all([startSlapd(), startPostgres()]);
    writeFileSync(clockFile, '0');
    rt = await startService({ env: { Testing__ClockOffsetFile: clockFile } });
    const f = await new SlapdFixture(slapd).init();
    const db = await pg.createDatabase('nextexport');
    t = await new TutorialDesign(rt, f, pg, db, { staffConfig: { deprovisioning: { action: 'delete', graceDays: GRACE_S / 86_400 } } }).setUp();
    // Six people: one leaver stays under the import's deletes threshold (20 %).
    hr = [
      person('E1001', 'Engineering'),
      person('E1002', 'Engineering'),
      person('E1003', 'Sales'),
      ...['E1005', 'E1006', 'E1007'].map((id) => person(id, 'Sales')),
    ];
    t.writeHr(hr);
    expect((await t.importHr('FullImport')).status).toBe('Completed');
    for (const id of [t.dir, t.staff]) expect((await t.exportTo(id)).status).toBe('Completed');
    for (const c of await t.confirm()) expect(c.status).toBe('Completed');
    expect(await t.differences(hr)).toEqual([]);
  });

  afterAll(async () => {
    await t?.close();
    await rt?.stop();
    await Promise.all([slapd?.stop(), pg?.stop()]);
  });

  it('nothing to do: nothing listed', async () => {
    for (const id of [t.dir, t.staff]) {
      expect(await space(id, '?state=pendingExport')).toEqual({ items: [], totalCount: 0 });
      expect(await space(id, '?state=scheduledDeprovision')).toEqual({ items: [], totalCount: 0 });
    }
    const bad = await rt.call('GET', `connectors/${t.dir}/space?state=dueSoon`, { role: 'Viewer' });
    expect(bad.status).toBe(400);
    expect(bad.body.code).toBe('validation_failed');
  });

  it('after an HR change, before any export: the update with old/new, the add, the leaver; the export sends exactly that', async () => {
    // E1001's title changes, E1002 moves to Sales (another OU in the directory), E1003 leaves, E1004 is hired.
    hr = [
      { ...person('E1001', 'Engineering'), title: 'Manager' },
      person('E1002', 'Sales'),
      ...hr.filter((r) => !['E1001', 'E1002', 'E1003'].includes(r.employeeId)),
      person('E1004', 'Research'),
    ];
    t.writeHr(hr);
    const imported = await t.importHr('DeltaImport');
    expect(imported.status).toBe('Completed');
    const mesh = await meshByAnchor();
    const [e1001, e1002, e1003, e1004] = ['E1001', 'E1002', 'E1003', 'E1004'].map((a) => mesh.get(a));
    expect(e1003).toBeUndefined();
    const leaverId = (await space(t.dir, '?search=E1003')).items[0]?.meshObjectId as string;
    expect(leaverId).toBeTruthy();

    // The directory: the title update, the move (a rename), the add (no anchor yet: the directory makes it; the DN
    // its template gives), the leaver's delete.
    const dir = await space(t.dir, '?state=pendingExport');
    expect(dir.totalCount).toBe(4);
    const byMesh = new Map<string, Body>(dir.items.map((i: Body) => [i.meshObjectId, i]));
    expect(byMesh.get(e1001!.id)).toMatchObject({ anchor: expect.any(String), pendingExport: { operation: 'Update', attributeCount: 1 } });
    expect(byMesh.get(e1002!.id)).toMatchObject({ dn: t.dnOf('E1002', 'Engineering'), pendingExport: { operation: 'Rename', attributeCount: 1 } });
    expect(byMesh.get(e1004!.id)).toMatchObject({ anchor: null, pendingExport: { operation: 'Add' } });
    expect(dnKey(byMesh.get(e1004!.id).dn)).toBe(dnKey(t.dnOf('E1004', 'Research')));
    expect(byMesh.get(leaverId)).toMatchObject({ anchor: expect.any(String), pendingExport: { operation: 'Delete', attributeCount: 0 } });
    expect(byMesh.get(e1001!.id).pendingExport.stagedOn).toBe(e1001!.updatedOn);
    const update = await detail(t.dir, byMesh.get(e1001!.id).csObjectId);
    expect(update.pendingExport.attributes).toEqual({ title: { old: 'Engineer', new: 'Manager' } });
    const add = await detail(t.dir, byMesh.get(e1004!.id).csObjectId);
    expect(add.pendingExport.attributes).toMatchObject({ uid: { old: null, new: 'E1004' }, departmentNumber: { old: null, new: 'Research' } });
    // Adds sort last (anchor null), as staged adds do.
    expect(dir.items[3].meshObjectId).toBe(e1004!.id);
    const move = await detail(t.dir, byMesh.get(e1002!.id).csObjectId);
    expect(move.pendingExport.attributes).toEqual({ departmentNumber: { old: 'Engineering', new: 'Sales' } });

    // The staff table: the move is an update of a column; the add's anchor-to-be is the employee_id it writes; the
    // leaver waits for its grace.
    const staff = await space(t.staff, '?state=pendingExport');
    expect(staff.items).toEqual([
      expect.objectContaining({ anchor: 'E1002', meshObjectId: e1002!.id, pendingExport: expect.objectContaining({ operation: 'Update', attributeCount: 1 }) }),
      expect.objectContaining({ anchor: 'E1004', meshObjectId: e1004!.id, pendingExport: expect.objectContaining({ operation: 'Add' }) }),
    ]);
    const scheduled = await space(t.staff, '?state=scheduledDeprovision');
    expect(scheduled.items).toEqual([
      expect.objectContaining({
        anchor: 'E1003',
        meshObjectId: leaverId,
        pendingExport: expect.objectContaining({ operation: 'Delete' }),
        dueOn: expect.any(String),
      }),
    ]);
    const before = Date.parse(scheduled.items[0].dueOn);
    expect(before).toBeGreaterThan(Date.now());

    // The bound (called in this process, on the service's tables): with room for two objects, the answer says it
    // is partial and holds only changes of what it looked at.
    const full = await nextExport(t.dir);
    expect(full.partial).toBe(false);
    expect(full.changes).toHaveLength(4);
    const capped = await nextExport(t.dir, 2);
    expect(capped.partial).toBe(true);
    // At most two mesh objects looked at (the confirming imports touched all of them: not every one changes).
    expect(capped.changes.filter((c) => c.operation !== 'Delete').length).toBeLessThanOrEqual(2);
    expect(capped.changes.length).toBeLessThan(full.changes.length);
    for (const c of capped.changes) expect(full.changes).toContainEqual(c);

    const dirListed = await listed(t.dir);
    const staffListed = await listed(t.staff);
    const dirRun = await t.exportTo(t.dir);
    const staffRun = await t.exportTo(t.staff);
    expect(dirRun).toMatchObject({ status: 'Completed', stats: { objectsCreated: 1, objectsUpdated: 2, objectsDeleted: 1, errors: 0 } });
    expect(staffRun).toMatchObject({ status: 'Completed', stats: { objectsCreated: 1, objectsUpdated: 1, objectsDeleted: 0, errors: 0 } });
    expect(sent(await changesOf(dirRun.runId))).toEqual(dirListed);
    expect(sent(await changesOf(staffRun.runId))).toEqual(staffListed);

    // After the export: the leaver is still in the staff table, its delete scheduled with the same due time.
    expect((await t.staffRows()).has('E1003')).toBe(true);
    expect(await space(t.staff, '?state=pendingExport')).toEqual({ items: [], totalCount: 0 });
    const after = await space(t.staff, '?state=scheduledDeprovision');
    expect(after.items).toEqual([expect.objectContaining({ anchor: 'E1003', pendingExport: expect.objectContaining({ operation: 'Delete' }) })]);
    expect(Date.parse(after.items[0].dueOn)).toBe(before);
    expect(await space(t.dir, '?state=pendingExport')).toEqual({ items: [], totalCount: 0 });

    // The CLI, as a real process: the scheduled delete with its due time, and what the table shows.
    const env = { MESHSYNC_HOME: newHome(), MESHSYNC_URL: rt.baseUrl, MESHSYNC_TOKEN: await rt.token('Viewer'), COLUMNS: '200' };
    const json = await meshsync(['space', 'ls', t.staff, '--state', 'scheduledDeprovision', '-o', 'json'], env);
    expect(json.code).toBe(0);
    expect(JSON.parse(json.stdout)).toEqual(after);
    const table = await meshsync(['space', 'ls', t.staff, '--state', 'scheduledDeprovision'], env);
    expect(table.code).toBe(0);
    const [header, row] = table.stdout.split('\n');
    expect(header).toMatch(/ANCHOR .*PENDING .*DUE ON/);
    expect(row).toContain('E1003');
    expect(row).toContain('Delete');
    expect(row).toContain(after.items[0].dueOn);
    const badState = await meshsync(['space', 'ls', t.staff, '--state', 'dueSoon'], env);
    expect(badState.code).not.toBe(0);
    expect(badState.stderr).toContain('state');

    // The console in Chromium: the connector-space page offers both states and shows the due time.
    const browser: Browser = await launch();
    try {
      const context = await browser.newContext();
      // The session the console keeps after its sign-in (sessionStorage), with a token of the service's issuer.
      const session = { token: await rt.token('Viewer'), expiresAt: Date.now() + 3_000_000, user: 'viewer@example.test', roles: ['Viewer'] };
      await context.addInitScript(`sessionStorage.setItem('meshsync.session', ${JSON.stringify(JSON.stringify(session))})`);
      const page = await context.newPage();
      await page.goto(consoleUrl(rt, `connectors/${t.staff}`));
      const states = page.getByLabel('State');
      await states.waitFor();
      expect(await states.locator('option').evaluateAll((os) => os.map((o) => o.getAttribute('value')))).toEqual(
        expect.arrayContaining(['pendingExport', 'scheduledDeprovision']),
      );
      await states.selectOption('scheduledDeprovision');
      const objects = page.getByRole('table', { name: 'Connector space objects' });
      await objects.getByRole('columnheader', { name: 'Due on' }).waitFor();
      const due = objects.getByRole('row', { name: /E1003/ }).locator('time');
      await due.waitFor();
      expect(await due.getAttribute('datetime')).toBe(after.items[0].dueOn);
      expect(await objects.getByRole('row', { name: /E1003/ }).textContent()).toContain('Delete');
      await states.selectOption('pendingExport');
      await objects.getByText('No objects.').waitFor();
      expect(await objects.getByRole('columnheader', { name: 'Due on' }).count()).toBe(0);
    } finally {
      await browser.close();
    }
  });

  it('once the grace is over: the listing, the dry run and the export agree on the delete', async () => {
    const dueOn = Date.parse((await space(t.staff, '?state=scheduledDeprovision')).items[0].dueOn);
    // The grace passes: the engine clock moves two graces ahead, past the due instant (rather than the test waiting
    // it out). The listing, computed at most 5 s earlier, may be served once more before it is computed anew.
    expect(dueOn).toBeLessThan(Date.now() + 2 * GRACE_S * 1000);
    writeFileSync(clockFile, String(2 * GRACE_S * 1000));
    const deadline = Date.now() + 30_000;
    let pending = await space(t.staff, '?state=pendingExport');
    while (pending.totalCount === 0 && Date.now() < deadline) {
      await new Promise((r) => setTimeout(r, 500));
      pending = await space(t.staff, '?state=pendingExport');
    }
    expect(pending.items).toEqual([expect.objectContaining({ anchor: 'E1003', pendingExport: expect.objectContaining({ operation: 'Delete' }) })]);
    const staffListed = await listed(t.staff);

    const dry = await t.exportTo(t.staff, { dryRun: true });
    expect(dry).toMatchObject({ status: 'Completed', stats: { objectsDeleted: 1, errors: 0 } });
    const planned = await changesOf(dry.runId);
    expect(planned).toEqual([expect.objectContaining({ operation: 'Delete', anchor: 'E1003', outcome: 'planned' })]);
    expect((await t.staffRows()).has('E1003')).toBe(true);

    const run = await t.exportTo(t.staff);
    expect(run).toMatchObject({ status: 'Completed', stats: { objectsDeleted: 1, errors: 0 } });
    expect(sent(await changesOf(run.runId))).toEqual(staffListed);
    expect((await t.staffRows()).has('E1003')).toBe(false);
    expect(await space(t.staff, '?state=scheduledDeprovision')).toEqual({ items: [], totalCount: 0 });
    expect(await space(t.staff, '?state=pendingExport')).toEqual({ items: [], totalCount: 0 });
    for (const c of await t.confirm()) expect(c.status).toBe('Completed');
    expect(await t.differences(hr)).toEqual([]);
  });
});
