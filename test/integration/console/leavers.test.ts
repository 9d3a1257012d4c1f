import type { Browser } from 'playwright-core';
import { putOpenLeavers, type LeaverRecord } from '../../../lib/storage/leavers';
import { serverAvailable } from '../../support/servers';
import { startService, type ServiceUnderTest } from '../../support/service';
import { folder, writeCsv } from '../sync/syncSupport';
import { devCall, devToken, launch, shot, signIn } from './browser';

/**
 * Late leavers on the console's overview (real service in Development, real Chromium): no panel while no leaver
 * is late; a leaver past its deadline is listed first, above the engine instances, with the person, the target
 * by name, when it was seen and its deadline; a pending one (deadline ahead) is not. The leavers are written to
 * the service's own Leavers table (the clock that writes them is tested end to end in
 * test/integration/ldap/e2eLeavers.test.ts against slapd).
 */
jest.setTimeout(300_000);

const available = serverAvailable('chromium');

(available ? describe : describe.skip)('web console: late leavers first on the overview', () => {
  let rt: ServiceUnderTest;
  let browser: Browser;
  let target: string;

  const leaver = (name: string, id: string, seenOn: Date, deadlineOn: Date): LeaverRecord => ({
    meshObjectId: id,
    connectorId: target,
    anchor: `uid=${name}`,
    displayName: name,
    objectType: 'User',
    sourceConnectorId: null,
    operation: 'delete',
    reason: 'gone',
    seenOn: seenOn.toISOString(),
    seenRunId: null,
    dueOn: null,
    deadlineOn: deadlineOn.toISOString(),
    sentOn: null,
    sentRunId: null,
    confirmedOn: null,
    confirmedRunId: null,
  });

  beforeAll(async () => {
    rt = await startService({ env: { Authentication__Jwt__Authority: '', Authentication__Jwt__Enabled: 'false' } });
    const admin = await devToken(rt, 'Admin', 'setup@example.test');
    const dir = folder('ims-leavers-console-');
    writeCsv(dir, 'people.csv', ['id'], [{ id: '1' }]);
    const c = await devCall(rt, admin, 'POST', 'connectors', {
      name: 'Directory',
      type: 'custom',
      config: { implementation: 'file', objectType: 'User', settings: { path: dir, anchorColumn: 'id' } },
    });
    expect(c.status).toBe(201);
    target = c.body.id;
    browser = await launch();
  });
  afterAll(async () => {
    await browser?.close();
    await rt?.dispose();
  });

  test('no panel without late leavers; a late one is listed first with person, target, seen and deadline', async () => {
    const now = Date.now();
    await putOpenLeavers([leaver('Pat Pending', '00000000-0000-4000-8000-000000000001', new Date(now - 60_000), new Date(now + 3_600_000))]);
    const first = await signIn(browser, rt, 'vera@example.test', 'Viewer', '');
    await first.page.getByRole('table', { name: 'Engine instances' }).waitFor();
    await first.page.getByRole('table', { name: 'Last run per connector' }).waitFor();
    expect(await first.page.getByRole('region', { name: /Late leavers/ }).count()).toBe(0);
    await first.context.close();

    await putOpenLeavers([leaver('Lou Late', '00000000-0000-4000-8000-000000000002', new Date(now - 2 * 3_600_000), new Date(now - 3_600_000))]);
    const { context, page } = await signIn(browser, rt, 'vera@example.test', 'Viewer', '');
    const region = page.getByRole('region', { name: 'Late leavers (1)' });
    await region.waitFor();
    const table = region.getByRole('table', { name: 'Late leavers' });
    expect(await table.getByRole('columnheader').allTextContents()).toEqual(['Person', 'Target', 'Operation', 'Seen', 'Deadline', 'Sent']);
    const cells = await table.getByRole('row').nth(1).getByRole('cell').allTextContents();
    expect(cells.slice(0, 3)).toEqual(['Lou Late', 'Directory', 'delete']);
    expect(cells[5]).toBe('not yet');
    expect(await table.locator('time').nth(1).getAttribute('datetime')).toBe(new Date(now - 3_600_000).toISOString());
    expect(await region.getByText('Pat Pending').count()).toBe(0);
    // First on the page: above the engine instances.
    const headings = await page.getByRole('heading', { level: 2 }).allTextContents();
    expect(headings[0]).toBe('Late leavers (1)');
    expect(headings.indexOf('Engine instances')).toBeGreaterThan(0);
    await shot(page, 'overview-late-leavers');
    await context.close();
  });
});
