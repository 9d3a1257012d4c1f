import type { Browser } from 'playwright-core';
import type { CsObject } from '../../../lib/sync/model';
import { writeCsObjects } from '../../../lib/sync/space/connectorSpace';
import { serverAvailable } from '../../support/servers';
import { startService, type ServiceUnderTest } from '../../support/service';
import { folder, writeCsv } from '../sync/syncSupport';
import { devCall, devToken, launch, shot, signIn } from './browser';

/**
 * A target's orphans in the console (real service in Development, real Chromium): the connector page links to
 * them; the page lists each with its name, reason and state, how many a sweep would change; an Admin keeps one
 * (it turns excluded and leaves the count) and removes the mark again; an Operator's sweep of a target without
 * disable values shows the refusal. The connector-space rows are written to the service's own tables (the
 * report and sweep over real directories are tested in test/integration/ldap/e2eOrphans.test.ts).
 */
jest.setTimeout(300_000);

const available = serverAvailable('chromium');

(available ? describe : describe.skip)('web console: orphans of a target', () => {
  let rt: ServiceUnderTest;
  let browser: Browser;
  let target: string;
  const row = (anchor: string, cn: string): CsObject => ({
    anchor,
    objectType: 'User',
    dn: `uid=${anchor},ou=People,dc=example,dc=test`,
    attributes: { uid: anchor, cn },
    hash: 'h',
    rulesHash: 'r',
    meshId: null,
    importedOn: '2026-11-20T08:00:00.000Z',
    updatedOn: '2026-11-20T08:00:00.000Z',
  });

  beforeAll(async () => {
    rt = await startService({ env: { Authentication__Jwt__Authority: '', Authentication__Jwt__Enabled: 'false' } });
    const admin = await devToken(rt, 'Admin', 'setup@example.test');
    const dir = folder('ims-orphans-console-');
    writeCsv(dir, 'people.csv', ['id'], [{ id: '1' }]);
    const c = await devCall(rt, admin, 'POST', 'connectors', {
      name: 'Directory',
      type: 'custom',
      config: { implementation: 'file', objectType: 'User', settings: { path: dir, anchorColumn: 'id' } },
    });
    expect(c.status).toBe(201);
    target = c.body.id;
    // A target: an outbound flow rule (no disable values: its sweep is refused).
    const r = await devCall(rt, admin, 'POST', 'rules', {
      ruleName: 'cn out',
      ruleType: 'FlowRule',
      connectorId: target,
      direction: 'outbound',
      sourceAttribute: 'displayName',
      targetAttribute: 'cn',
      confidence: 50,
    });
    expect(r.status).toBe(201);
    await writeCsObjects(target, [row('svc-backup', 'Backup Service'), row('old-intern', 'Old Intern')]);
    browser = await launch();
  });
  afterAll(async () => {
    await browser?.close();
    await rt?.dispose();
  });

  test('listed with name, reason and state; an Admin keeps one and removes the mark; a refused sweep says why', async () => {
    const { context, page } = await signIn(browser, rt, 'ada@example.test', 'Admin', `connectors/${target}`);
    await page.getByRole('link', { name: 'Orphans' }).click();
    await page.getByRole('heading', { name: /Directory\s+orphans/ }).waitFor();
    const table = page.getByRole('table', { name: 'Orphans' });
    await table.getByRole('cell', { name: 'Backup Service' }).waitFor();
    expect(await table.getByRole('columnheader').allTextContents()).toEqual(['Name', 'Reason', 'State', 'Since', 'Excluded', 'DN or anchor', 'Keep']);
    const cells = async (name: string) => table.getByRole('row').filter({ hasText: name }).getByRole('cell').allTextContents();
    expect((await cells('Backup Service')).slice(0, 3)).toEqual(['Backup Service', 'disconnector', 'unknown']);
    await page.getByRole('status').filter({ hasText: '2 to sweep.' }).waitFor();

    await table.getByRole('row').filter({ hasText: 'Old Intern' }).getByRole('button', { name: 'Keep' }).click();
    await page.getByRole('status').filter({ hasText: '1 to sweep.' }).waitFor();
    expect((await cells('Old Intern'))[4]).toBe('keep (ada@example.test)');
    await shot(page, 'connector-orphans');
    const audit = await devCall(rt, await devToken(rt, 'Admin', 'audit@example.test'), 'GET', `audit?actor=ada@example.test`);
    expect(audit.body.items.map((i: { action: string }) => i.action)).toContain('keep');

    await table.getByRole('row').filter({ hasText: 'Old Intern' }).getByRole('button', { name: 'Unkeep' }).click();
    await page.getByRole('status').filter({ hasText: '2 to sweep.' }).waitFor();

    // The target has no disable values: the sweep is refused and nothing starts.
    page.once('dialog', (d) => void d.accept());
    await page.getByRole('button', { name: 'Sweep orphans' }).click();
    await page.getByText("Connector 'Directory' has no disable action").waitFor();
    expect(page.url()).toContain('/orphans');
    await context.close();
  });

  test('a Viewer sees the orphans, without keep or sweep', async () => {
    const { context, page } = await signIn(browser, rt, 'vera@example.test', 'Viewer', `connectors/${target}/orphans`);
    await page.getByRole('table', { name: 'Orphans' }).getByRole('cell', { name: 'Old Intern' }).waitFor();
    expect(await page.getByRole('button', { name: 'Keep' }).count()).toBe(0);
    expect(await page.getByRole('button', { name: 'Sweep orphans' }).count()).toBe(0);
    await context.close();
  });
});
