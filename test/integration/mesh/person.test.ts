import type { Client } from 'ldapts';
import type { Browser } from 'playwright-core';
import { serverAvailable } from '../../support/servers';
import { startService, type Role, type ServiceUnderTest } from '../../support/service';
import { startSlapd, type Slapd } from '../../support/slapd';
import { meshsync, newHome } from '../cli/cliSupport';
import { devToken, launch, shot, signIn } from '../console/browser';
import { ldapConnector, meshOf, stopSlapdSuite } from '../ldap/e2eSupport';
import { SlapdFixture } from '../ldap/ldapFixture';
import { fileConnector, folder, outboundRule, rule, runExport, runImport, sourceRules, writeCsv } from '../sync/syncSupport';

/**
 * The whole person (MIM's object properties with its Connectors tab), against a real HR file source with manager
 * references and a real slapd target: the detail's display name (Mesh__DisplayAttributes), its connector
 * objects with their states (awaiting confirmation after an export, joined after the confirming import,
 * pending export after an HR change), the direct reports of a manager (incoming relationships), explain of
 * `manager` (the connector and rule that gave it, the manager, and the DN the directory holds), then the same
 * through the CLI as a process and the console in Chromium.
 *
 * The service runs as `npm start` runs it in Development (the development issuer), so the console can sign in;
 * the API and CLI calls carry development-issuer tokens.
 */
jest.setTimeout(600_000);

const HR = ['id', 'employeeId', 'givenName', 'sn', 'nickname', 'department', 'managerRow'];
const available = serverAvailable('slapd') && serverAvailable('chromium');

(available ? describe : describe.skip)('the whole person: display name, connector objects, relationships both ways (file HR, slapd)', () => {
  let slapd: Slapd;
  let rt: ServiceUnderTest;
  let f: SlapdFixture;
  let admin: Client;
  let browser: Browser | undefined;
  const hrDir = folder('ims-person-hr-');
  let hr = '';
  let dir = '';
  let managerRule = '';
  const home = newHome();
  const rows = (liDepartment: string) => [
    { id: 'h2', employeeId: 'E002', givenName: 'José', sn: 'Muñoz', nickname: '', department: 'Engineering', managerRow: 'h1' },
    { id: 'h3', employeeId: 'E003', givenName: 'Li', sn: 'Lee', nickname: 'Lily', department: liDepartment, managerRow: 'h1' },
    { id: 'h1', employeeId: 'E001', givenName: 'Ada', sn: 'Lovelace', nickname: '', department: 'Engineering', managerRow: '' },
  ];
  const ids = new Map<string, string>();
  const detail = async (anchor: string) => {
    const res = await rt.call('GET', `mesh/objects/${ids.get(anchor)}`, { role: 'Viewer' });
    expect(res.status).toBe(200);
    return res.body;
  };
  const cli = async (args: string[]) => meshsync(args, { MESHSYNC_HOME: home, MESHSYNC_URL: rt.baseUrl, MESHSYNC_TOKEN: await rt.token('Viewer') });

  beforeAll(async () => {
    slapd = await startSlapd({ refintAttributes: ['member'] });
    rt = await startService({
      env: {
        Authentication__Jwt__Authority: '',
        Authentication__Jwt__Enabled: 'false',
        // The nickname first when there is one, then given name and surname.
        Mesh__DisplayAttributes: 'User=nickname|givenName+sn;Group=cn',
      },
    });
    // Tokens of the development issuer (the service trusts it in Development, as `meshsync login --dev` does).
    const tokens = new Map<Role, string>();
    rt.token = async (role: Role) => {
      if (!tokens.has(role)) tokens.set(role, await devToken(rt, role, `${role.toLowerCase()}@example.test`));
      return tokens.get(role)!;
    };
    f = await new SlapdFixture(slapd).init();
    admin = await f.client();
    writeCsv(hrDir, 'hr.csv', HR, rows('Sales'));
    hr = await fileConnector(rt, 'HR', hrDir, { referenceColumns: { managerRow: 'User' } });
    await sourceRules(rt, hr, 'employeeId', ['employeeId', 'givenName', 'sn', 'nickname', 'department']);
    managerRule = await rule(rt, {
      ruleType: 'MeshComposerRule',
      ruleName: 'HR manager column',
      connectorId: hr,
      relationshipType: 'manager',
      sourceAttribute: 'managerRow',
    });
    dir = await ldapConnector(rt, 'Directory', f.config({ deletionThreshold: { objects: 10, percent: 100 } }));
    const out = outboundRule(rt, dir);
    await out('employeeId', 'uid');
    await out('employeeId', 'employeeNumber');
    await out('sn', 'sn');
    await out('givenName', 'cn', 'object.givenName + " " + object.sn');
    await out('department', 'departmentNumber');
    await out('manager', 'manager');
    await rule(rt, { ruleType: 'JoinRule', connectorId: dir, sourceAttribute: 'employeeNumber', targetAttribute: 'employeeId' });
    expect(await runImport(rt, hr)).toMatchObject({ status: 'Completed', stats: { objectsCreated: 3, errors: 0 } });
    for (const [anchor, o] of await meshOf(hr)) ids.set(anchor, o.id);
  });
  afterAll(async () => {
    await browser?.close();
    await stopSlapdSuite({ admin, rt, f, slapd });
  });

  test('before any export: HR joined, no directory object; the display name follows the setting', async () => {
    const li = await detail('E003');
    expect(li.displayName).toBe('Lily');
    expect(li.anchorValue).toBe('E003');
    expect(li.connectorObjects).toEqual([expect.objectContaining({ connectorId: hr, connectorName: 'HR', anchor: 'h3', dn: null, state: 'joined' })]);
    expect((await detail('E001')).displayName).toBe('Ada Lovelace');
  });

  test('after the export: awaiting confirmation; after the confirming import: joined in both, with the DN', async () => {
    expect(await runExport(rt, dir)).toMatchObject({ status: 'Completed', stats: { objectsCreated: 3, errors: 0 } });
    const exported = (await detail('E002')).connectorObjects;
    expect(exported.map((c: { connectorName: string; state: string }) => [c.connectorName, c.state])).toEqual([
      ['Directory', 'awaitingConfirmation'],
      ['HR', 'joined'],
    ]);
    expect(await runImport(rt, dir)).toMatchObject({ status: 'Completed', stats: { errors: 0 } });
    const jose = await detail('E002');
    const inDir = jose.connectorObjects.find((c: { connectorId: string }) => c.connectorId === dir);
    expect(inDir).toMatchObject({ connectorName: 'Directory', state: 'joined', dn: `uid=E002,ou=Engineering,${f.base}` });
    expect(inDir.csObjectId).toMatch(/^[0-9a-f-]{36}$/);
    expect(inDir).not.toHaveProperty('pendingOperation');
    // The link resolves to the connector-space object.
    const cs = await rt.call('GET', `connectors/${dir}/space/${inDir.csObjectId}`, { role: 'Viewer' });
    expect(cs.status).toBe(200);
    expect(cs.body).toMatchObject({ meshObjectId: ids.get('E002'), dn: inDir.dn });
    // Outgoing relationships name the manager by display name; the manager lists both reports.
    expect(jose.relationships).toEqual([
      {
        relationshipType: 'manager',
        targetMeshObjectId: ids.get('E001'),
        targetAnchorValue: 'E001',
        targetObjectType: 'User',
        targetDisplayName: 'Ada Lovelace',
      },
    ]);
    const ada = await detail('E001');
    expect(ada.relationships).toEqual([]);
    expect(ada.incomingRelationships).toEqual([
      { type: 'manager', fromMeshObjectId: ids.get('E002'), fromDisplayName: 'José Muñoz', fromAnchorValue: 'E002', fromObjectType: 'User' },
      { type: 'manager', fromMeshObjectId: ids.get('E003'), fromDisplayName: 'Lily', fromAnchorValue: 'E003', fromObjectType: 'User' },
    ]);
  });

  test('explain manager: the HR reference column and its rule, the manager, and the DN the directory holds', async () => {
    const adaDn = `uid=E001,ou=Engineering,${f.base}`;
    const held = (await admin.search(f.base, { scope: 'sub', filter: '(uid=E002)', attributes: ['manager'] })).searchEntries[0];
    expect(held.manager).toBe(adaDn);
    const res = await rt.call('GET', `mesh/objects/${ids.get('E002')}/attributes/manager/explain`, { role: 'Viewer' });
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({
      meshObjectId: ids.get('E002'),
      attribute: 'manager',
      value: ids.get('E001'),
      winner: null,
      candidates: [],
      exports: [{ connectorId: dir, connectorName: 'Directory', targetAttribute: 'manager', value: adaDn, state: 'confirmed' }],
      relationship: {
        type: 'manager',
        pending: [],
        targets: [
          {
            meshObjectId: ids.get('E001'),
            displayName: 'Ada Lovelace',
            anchorValue: 'E001',
            objectType: 'User',
            sources: [
              {
                connectorId: hr,
                connectorName: 'HR',
                sourceAttribute: 'managerRow',
                value: 'h1',
                ruleId: managerRule,
                ruleName: 'HR manager column',
                ruleType: 'MeshComposerRule',
                matchedBy: 'anchor',
              },
            ],
          },
        ],
      },
    });
    // Neither an attribute nor a relationship: a 404 problem naming both.
    const none = await rt.call('GET', `mesh/objects/${ids.get('E001')}/attributes/manager/explain`, { role: 'Viewer' });
    expect(none.status).toBe(404);
    expect(none.headers.get('content-type')).toMatch(/application\/problem\+json/);
    expect(none.body.detail).toBe(`Mesh object '${ids.get('E001')}' has no attribute or relationship 'manager'.`);
  });

  test('an HR change: the directory object is pending export (a move: Rename) until the next export', async () => {
    // Li moves from Sales to Engineering: her entry moves to ou=Engineering, which the export sends as a Rename.
    writeCsv(hrDir, 'hr.csv', HR, rows('Engineering'));
    expect(await runImport(rt, hr, { runType: 'DeltaImport' })).toMatchObject({ status: 'Completed', stats: { objectsUpdated: 1, errors: 0 } });
    const li = await detail('E003');
    expect(li.connectorObjects.find((c: { connectorId: string }) => c.connectorId === dir)).toMatchObject({
      state: 'pendingExport',
      pendingOperation: 'Rename',
    });
    // What the connector-space listing says too: the same object, the same operation.
    const pending = await rt.call('GET', `connectors/${dir}/space?state=pendingExport`, { role: 'Viewer' });
    expect(pending.body.items.map((i: { meshObjectId: string }) => i.meshObjectId)).toEqual([ids.get('E003')]);
    expect(pending.body.items[0].pendingExport.operation).toBe('Rename');
    expect(await runExport(rt, dir)).toMatchObject({ status: 'Completed', stats: { errors: 0 } });
    await runImport(rt, dir);
    expect((await detail('E003')).connectorObjects.map((c: { state: string }) => c.state)).toEqual(['joined', 'joined']);
  });

  test('the CLI: mesh show has the display name, CONNECTORS and RELATIONSHIPS both ways; mesh explain manager', async () => {
    const show = await cli(['mesh', 'show', ids.get('E001')!]);
    expect(show.code).toBe(0);
    expect(show.stdout.split('\n')[0]).toBe('Ada Lovelace (E001, User)');
    const connectors = show.stdout.slice(show.stdout.indexOf('CONNECTORS'), show.stdout.indexOf('RELATIONSHIPS'));
    expect(connectors).toMatch(/Directory\s+joined\s+\S+\s+uid=E001,ou=Engineering,/);
    expect(connectors).toMatch(/HR\s+joined\s+h1\s/);
    const relationships = show.stdout.slice(show.stdout.indexOf('RELATIONSHIPS'));
    expect(relationships).toMatch(new RegExp(`in\\s+manager\\s+José Muñoz\\s+E002\\s+${ids.get('E002')}`));
    expect(relationships).toMatch(new RegExp(`in\\s+manager\\s+Lily\\s+E003\\s+${ids.get('E003')}`));
    const reportShow = await cli(['mesh', 'show', ids.get('E002')!]);
    expect(reportShow.stdout.slice(reportShow.stdout.indexOf('RELATIONSHIPS'))).toMatch(/out\s+manager\s+Ada Lovelace\s+E001/);

    const explain = await cli(['mesh', 'explain', ids.get('E002')!, 'manager']);
    expect(explain.code).toBe(0);
    expect(explain.stdout).toContain('manager = Ada Lovelace (E001)');
    expect(explain.stdout).toMatch(/Ada Lovelace\s+HR\s+managerRow\s+h1\s+HR manager column/);
    expect(explain.stdout).toMatch(new RegExp(`Directory\\s+manager\\s+uid=E001,ou=Engineering,${f.base.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}\\s+confirmed`));
    // An unknown name: exit code of a 404, the problem's words on stderr.
    const unknown = await cli(['mesh', 'explain', ids.get('E001')!, 'manager']);
    expect(unknown.code).toBe(5);
    expect(unknown.stderr).toContain("has no attribute or relationship 'manager'");
  });

  test('the console: the header shows the display name, the Connectors tab the objects, Relationships the two reports', async () => {
    browser = await launch();
    const { context, page } = await signIn(browser, rt, 'ada@example.test', 'Viewer', `mesh/${ids.get('E001')}`);
    await page.getByRole('heading', { name: /Ada Lovelace\s+E001 · User/ }).waitFor();
    await page.getByRole('tab', { name: 'Connectors' }).click();
    const table = page.getByRole('table', { name: 'Connector objects' });
    await table.getByRole('cell', { name: 'Directory', exact: true }).waitFor();
    expect(await table.locator('tbody tr').count()).toBe(2);
    expect(await table.locator('tbody tr').first().textContent()).toContain('joined');
    await shot(page, 'mesh-connectors');
    await page.getByRole('tab', { name: 'Relationships' }).click();
    const incoming = page.getByRole('table', { name: 'Incoming relationships' });
    await incoming.getByRole('link', { name: 'José Muñoz' }).waitFor();
    await incoming.getByRole('link', { name: 'Lily' }).waitFor();
    expect(await incoming.getByRole('cell', { name: 'direct report' }).count()).toBe(2);
    await page.getByRole('table', { name: 'Relationships', exact: true }).getByText('No outgoing relationships.').waitFor();
    await shot(page, 'mesh-relationships');
    // A report's page: its manager, and the explain of manager from there.
    await incoming.getByRole('link', { name: 'José Muñoz' }).click();
    await page.getByRole('heading', { name: /José Muñoz\s+E002 · User/ }).waitFor();
    await page.getByRole('tab', { name: 'Relationships' }).click();
    await page.getByRole('link', { name: 'Explain manager' }).click();
    const explain = page.getByRole('complementary');
    await explain.getByRole('heading', { name: 'Why manager is Ada Lovelace' }).waitFor();
    const sources = explain.getByRole('table', { name: 'Relationship sources' });
    await sources.getByRole('cell', { name: 'HR manager column' }).waitFor();
    expect(await explain.getByRole('table', { name: 'Exports' }).textContent()).toContain(`uid=E001,ou=Engineering,${f.base}`);
    // The Connectors tab's link opens the directory object in its connector space.
    await page.getByRole('tab', { name: 'Connectors' }).click();
    await page.getByRole('link', { name: 'Object in Directory' }).click();
    await page.waitForURL(new RegExp(`/console/connectors/${dir}\\?cs=`));
    await context.close();
  });

  test("an export the directory refuses: the directory object is in error, with the directory's words and the change", async () => {
    // `c` (country) takes two letters: the directory refuses Li's nickname there.
    await outboundRule(rt, dir)('nickname', 'c');
    const run = await runExport(rt, dir);
    expect(run.stats.errors).toBe(1);
    const inDir = (await detail('E003')).connectorObjects.find((c: { connectorId: string }) => c.connectorId === dir);
    expect(inDir).toMatchObject({ state: 'error', pendingOperation: 'Update', dn: `uid=E003,ou=Engineering,${f.base}` });
    expect(inDir.error).toMatch(/\S/);
    // The same error as the connector space's list; nothing was written to the directory.
    const errors = await rt.call('GET', `connectors/${dir}/space?state=error`, { role: 'Viewer' });
    expect(errors.body.items).toEqual([expect.objectContaining({ csObjectId: inDir.csObjectId, error: expect.objectContaining({ message: inDir.error }) })]);
    const held = (await admin.search(f.base, { scope: 'sub', filter: '(uid=E003)', attributes: ['c'] })).searchEntries[0];
    expect(held.c ?? []).toEqual([]);
    // Ada's and José's (no nickname: nothing to write) stay joined.
    expect((await detail('E001')).connectorObjects.map((c: { state: string }) => c.state)).toEqual(['joined', 'joined']);
  });
});
