import type { Browser } from 'playwright-core';
import { startPostgres, type Postgres } from '../../support/postgres';
import { serverAvailable } from '../../support/servers';
import { startService, type ServiceUnderTest } from '../../support/service';
import { pgServer, SqlContractFixture } from '../sql/sqlFixture';
import { devCall, devToken, launch, shot, signIn } from './browser';

/**
 * Deleted mesh objects in the console: a person removed from the HR source becomes a tombstone, listed under
 * Mesh > Deleted with its deletion and purge dates; an Admin restores it from there (a Viewer has no Restore
 * button) and it is active again with its attributes. Real service (Development), PostgreSQL, Chromium.
 */
jest.setTimeout(600_000);

const available = serverAvailable('chromium') && serverAvailable('postgres');

(available ? describe : describe.skip)('web console: tombstones and restore', () => {
  let pg: Postgres;
  let rt: ServiceUnderTest;
  let f: SqlContractFixture;
  let browser: Browser;
  let connectorId: string;
  let admin: string;

  async function importAndWait(runType: string): Promise<void> {
    const started = await devCall(rt, admin, 'POST', `connectors/${connectorId}/import`, { runType });
    expect(started.status).toBe(202);
    for (;;) {
      const run = await devCall(rt, admin, 'GET', `runs/${started.body.runId}`);
      if (run.body.status === 'Completed') return;
      expect(['Queued', 'Running']).toContain(run.body.status);
      await new Promise((r) => setTimeout(r, 250));
    }
  }

  beforeAll(async () => {
    pg = await startPostgres();
    rt = await startService({ env: { Authentication__Jwt__Authority: '', Authentication__Jwt__Enabled: 'false' } });
    f = await SqlContractFixture.create(pgServer(pg));
    await f.exec(
      `INSERT INTO people (employee_id, given_name, sn, department) SELECT 'E' || lpad(i::text, 5, '0'), 'Given' || i, 'Sn' || i, 'Ops' FROM generate_series(1, 20) i`,
    );
    admin = await devToken(rt, 'Admin', 'setup@example.test');
    const connector = await devCall(rt, admin, 'POST', 'connectors', { name: 'HR tombstones', type: 'sql', config: f.config() });
    connectorId = connector.body.id;
    for (const rule of [
      { ruleType: 'ProjectionRule', ruleName: 'project', connectorId, sourceAttribute: 'employee_id', objectType: 'User' },
      { ruleType: 'FlowRule', ruleName: 'flow sn', connectorId, sourceAttribute: 'sn', targetAttribute: 'sn', confidence: 50 },
    ]) {
      expect((await devCall(rt, admin, 'POST', 'rules', rule)).status).toBe(201);
    }
    await importAndWait('FullImport');
    await f.exec("DELETE FROM people WHERE employee_id IN ('E00003', 'E00007')");
    await importAndWait('DeltaImport');
    browser = await launch();
  });
  afterAll(async () => {
    await browser?.close();
    await rt?.dispose();
    await f?.cleanup();
    await pg?.stop();
  });

  test('a Viewer sees the tombstones without Restore; an Admin restores one and it is active again', async () => {
    const viewer = await signIn(browser, rt, 'vera@example.test', 'Viewer', 'mesh?state=deleted');
    const viewerTable = viewer.page.getByRole('table', { name: 'Mesh objects' });
    await viewerTable.getByRole('link', { name: 'E00003' }).waitFor();
    expect(await viewer.page.getByRole('button', { name: 'Restore' }).count()).toBe(0);
    await viewer.context.close();

    const { context, page } = await signIn(browser, rt, 'ada@example.test', 'Admin', 'mesh');
    await page.getByText('1–18 of 18').waitFor();
    await page.getByRole('tab', { name: 'Deleted (tombstones)' }).click();
    const table = page.getByRole('table', { name: 'Mesh objects' });
    await page.getByText('1–2 of 2').waitFor();
    expect(await table.getByRole('columnheader').allTextContents()).toEqual(['Anchor', 'Type', 'Deleted', 'Purge due', 'Actions']);
    // "Purge due" is when the purge will remove the tombstone: the object's purgeOn, in the future.
    const tombstones = (await devCall(rt, admin, 'GET', 'mesh/objects?state=deleted')).body.items as { anchorValue: string; purgeOn: string }[];
    const e3 = tombstones.find((o) => o.anchorValue === 'E00003')!;
    expect(Date.parse(e3.purgeOn)).toBeGreaterThan(Date.now());
    const due = table.getByRole('row').filter({ hasText: 'E00003' }).locator('td:nth-child(4) time');
    expect(await due.getAttribute('datetime')).toBe(e3.purgeOn);
    await shot(page, 'mesh-deleted');
    const row = table.getByRole('row').filter({ hasText: 'E00003' });
    await row.getByRole('button', { name: 'Restore' }).click();
    await page.getByText('1–1 of 1').waitFor();
    expect(await table.getByRole('link', { name: 'E00007' }).count()).toBe(1);
    // Active again, with its attributes, in the list and in its detail.
    await page.getByRole('tab', { name: 'Active' }).click();
    await page.getByText('1–19 of 19').waitFor();
    await table.getByRole('link', { name: 'E00003' }).click();
    await page.getByRole('heading', { name: /E00003/ }).waitFor();
    await page.getByRole('table', { name: 'Attributes' }).getByRole('cell', { name: 'Sn3' }).waitFor();
    expect(await page.getByText('deleted', { exact: true }).count()).toBe(0);
    const listed = await devCall(rt, admin, 'GET', 'mesh/objects?search=E00003');
    expect(listed.body.items).toEqual([expect.objectContaining({ anchorValue: 'E00003', state: 'active' })]);
    await context.close();
  });
});
