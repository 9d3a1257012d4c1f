import type { Browser } from 'playwright-core';
import { startPostgres, type Postgres } from '../../support/postgres';
import { serverAvailable } from '../../support/servers';
import { startService, type ServiceUnderTest } from '../../support/service';
import { pgServer, SqlContractFixture } from '../sql/sqlFixture';
import { devCall, devToken, launch, shot, signIn } from './browser';

/**
 * Approval in the console (four-eyes): an import over its connector's update threshold waits AwaitingApproval;
 * the Admin who started it sees the reasons but the service refuses their approval (the message is shown);
 * a second Admin, signed in in another browser session, approves it and watches it finish. A reject too.
 * Real service (Development, development issuer), PostgreSQL source, Debian's Chromium.
 */
jest.setTimeout(600_000);

const ROWS = 60;
const available = serverAvailable('chromium') && serverAvailable('postgres');

(available ? describe : describe.skip)('web console: approving a parked run as a second Admin', () => {
  let pg: Postgres;
  let rt: ServiceUnderTest;
  let f: SqlContractFixture;
  let browser: Browser;
  let connectorId: string;
  let first: string;

  /** Start a delta import as the first Admin and wait (through the API) until it is parked. */
  async function parkedImport(): Promise<string> {
    await f.exec("UPDATE people SET sn = sn || 'x'");
    const started = await devCall(rt, first, 'POST', `connectors/${connectorId}/import`, { runType: 'DeltaImport' });
    expect(started.status).toBe(202);
    for (;;) {
      const run = await devCall(rt, first, 'GET', `runs/${started.body.runId}`);
      if (run.body.status === 'AwaitingApproval') return started.body.runId;
      expect(['Queued', 'Running']).toContain(run.body.status);
      await new Promise((r) => setTimeout(r, 250));
    }
  }

  beforeAll(async () => {
    pg = await startPostgres();
    rt = await startService({ env: { Authentication__Jwt__Authority: '', Authentication__Jwt__Enabled: 'false' } });
    f = await SqlContractFixture.create(pgServer(pg));
    await f.exec(
      `INSERT INTO people (employee_id, given_name, sn, department) SELECT 'E' || lpad(i::text, 5, '0'), 'Given' || i, 'Sn' || i, 'Ops' FROM generate_series(1, ${ROWS}) i`,
    );
    first = await devToken(rt, 'Admin', 'first.admin@example.test');
    const connector = await devCall(rt, first, 'POST', 'connectors', { name: 'HR approvals', type: 'sql', config: f.config() });
    expect(connector.status).toBe(201);
    connectorId = connector.body.id;
    for (const rule of [
      { ruleType: 'ProjectionRule', ruleName: 'project', connectorId, sourceAttribute: 'employee_id', objectType: 'User' },
      { ruleType: 'FlowRule', ruleName: 'flow sn', connectorId, sourceAttribute: 'sn', targetAttribute: 'sn', confidence: 50 },
    ]) {
      expect((await devCall(rt, first, 'POST', 'rules', rule)).status).toBe(201);
    }
    const full = await devCall(rt, first, 'POST', `connectors/${connectorId}/import`, { runType: 'FullImport' });
    for (;;) {
      const run = await devCall(rt, first, 'GET', `runs/${full.body.runId}`);
      if (run.body.status === 'Completed') break;
      expect(['Queued', 'Running']).toContain(run.body.status);
      await new Promise((r) => setTimeout(r, 250));
    }
    // More than 5 updates in one run wait for an Admin.
    const put = await devCall(rt, first, 'PUT', `connectors/${connectorId}`, {
      name: 'HR approvals',
      config: { ...connector.body.config, thresholds: { updates: { count: 5 } } },
    });
    expect(put.status).toBe(200);
    browser = await launch();
  });
  afterAll(async () => {
    await browser?.close();
    await rt?.dispose();
    await f?.cleanup();
    await pg?.stop();
  });

  test('the starter cannot approve (four-eyes); a second Admin approves in the console and the run finishes', async () => {
    const runId = await parkedImport();
    // The overview lists it under "Awaiting approval".
    const starter = await signIn(browser, rt, 'first.admin@example.test', 'Admin');
    await starter.page
      .getByRole('table', { name: 'Runs awaiting approval' })
      .getByRole('link', { name: runId.slice(0, 8) })
      .click();
    await starter.page.getByRole('heading', { name: 'Awaiting approval' }).waitFor();
    expect(await starter.page.getByText(`updates: ${ROWS} (limit 5)`).count()).toBe(1);
    // Approve asks first, with what went over which limit and how many changes the run applies.
    const plannedChanges = (await devCall(rt, first, 'GET', `runs/${runId}/changes?take=1`)).body.totalCount as number;
    expect(plannedChanges).toBeGreaterThanOrEqual(ROWS);
    await starter.page
      .getByTestId('approval-changes')
      .filter({ hasText: `It applies ${plannedChanges} planned changes` })
      .waitFor();
    await shot(starter.page, 'run-approval');
    const question = `Approve this run? Over its limits: updates: ${ROWS} (limit 5). It applies ${plannedChanges} planned changes.`;
    const asked: string[] = [];
    starter.page.once('dialog', (d) => void (asked.push(d.message()), d.accept()));
    await starter.page.getByRole('button', { name: 'Approve' }).click();
    await starter.page
      .getByRole('alert')
      .filter({ hasText: /four-eyes/ })
      .waitFor();
    expect(asked).toEqual([question]);
    expect((await devCall(rt, first, 'GET', `runs/${runId}`)).body.status).toBe('AwaitingApproval');

    const second = await signIn(browser, rt, 'second.admin@example.test', 'Admin', `runs/${runId}`);
    await second.page.getByTestId('approval-changes').waitFor();
    // Dismissed: nothing is sent, the run still waits.
    const dismissed = new Promise<string>((resolve) => second.page.once('dialog', (d) => void (resolve(d.message()), d.dismiss())));
    await second.page.getByRole('button', { name: 'Approve' }).click();
    expect(await dismissed).toBe(question);
    expect((await devCall(rt, first, 'GET', `runs/${runId}`)).body.status).toBe('AwaitingApproval');
    expect(await second.page.getByRole('alert').count()).toBe(0);
    second.page.once('dialog', (d) => void d.accept());
    await second.page.getByRole('button', { name: 'Approve' }).click();
    await second.page
      .getByTestId('run-outcome')
      .filter({ hasText: /^Completed/ })
      .waitFor({ timeout: 240_000 });
    const run = await devCall(rt, first, 'GET', `runs/${runId}`);
    expect(run.body).toMatchObject({ status: 'Completed', stats: { objectsUpdated: ROWS } });
    expect(await second.page.getByRole('button', { name: 'Approve' }).count()).toBe(0);
    // The run's changes, object by object: the planned updates, now applied.
    const changes = second.page.getByRole('table', { name: 'Changes' });
    await changes.getByRole('cell', { name: 'applied' }).first().waitFor();
    expect(await changes.getByRole('row').nth(1).textContent()).toMatch(/^UpdateE00001mesh.*sn: Sn1 → Sn1xapplied$/);
    await starter.context.close();
    await second.context.close();
  });

  test('an Admin rejects a parked run from the run monitor', async () => {
    const runId = await parkedImport();
    const { context, page } = await signIn(browser, rt, 'second.admin@example.test', 'Admin', `runs/${runId}`);
    page.once('dialog', (d) => void d.accept());
    await page.getByRole('button', { name: 'Reject' }).click();
    await page
      .getByTestId('run-outcome')
      .filter({ hasText: /^Rejected/ })
      .waitFor();
    expect((await devCall(rt, first, 'GET', `runs/${runId}`)).body.status).toBe('Rejected');
    await context.close();
  });

  test('an Operator makes a dry run from the console, reads its plan and applies it', async () => {
    // Under the threshold this time: the plan applies without approval.
    const put = await devCall(rt, first, 'PUT', `connectors/${connectorId}`, {
      name: 'HR approvals',
      config: { ...(await devCall(rt, first, 'GET', `connectors/${connectorId}`)).body.config, thresholds: { updates: { count: 1000 } } },
    });
    // A larger limit loosens a guard rail: it waits for another Admin (docs/safety.md).
    expect(put.status).toBe(202);
    const second = await devToken(rt, 'Admin', 'second.admin@example.test');
    expect((await devCall(rt, second, 'POST', `config/changes/${put.body.changeId}/approve`)).status).toBe(200);
    await f.exec("UPDATE people SET sn = 'Planned' WHERE employee_id IN ('E00001', 'E00002')");
    const { context, page } = await signIn(browser, rt, 'olga@example.test', 'Operator', 'connectors');
    await page.getByLabel('Run type for HR approvals').selectOption('DeltaImport');
    await page.getByRole('checkbox', { name: 'dry run' }).check();
    await page.getByRole('button', { name: 'Start' }).click();
    await page.waitForURL(/\/console\/runs\/[0-9a-f-]{36}$/);
    const planId = page.url().split('/').pop()!;
    await page
      .getByTestId('run-outcome')
      .filter({ hasText: /^Completed/ })
      .waitFor({ timeout: 240_000 });
    await page.getByRole('heading', { name: 'DeltaImport (dry run) of HR approvals' }).waitFor();
    const changes = page.getByRole('table', { name: 'Changes' });
    await changes.getByRole('cell', { name: 'planned' }).first().waitFor();
    expect(await changes.getByRole('cell', { name: /^sn: .* → Planned$/ }).count()).toBe(2);
    // Nothing applied yet.
    expect((await devCall(rt, first, 'GET', 'mesh/objects?search=E00001')).body.items[0].attributeValues.sn).not.toBe('Planned');
    await page.getByRole('button', { name: 'Apply plan' }).click();
    await page.waitForURL((url) => /\/console\/runs\/[0-9a-f-]{36}$/.test(url.pathname) && !url.pathname.endsWith(planId));
    await page
      .getByTestId('run-outcome')
      .filter({ hasText: /^Completed/ })
      .waitFor({ timeout: 240_000 });
    const applied = await devCall(rt, first, 'GET', `runs/${page.url().split('/').pop()}`);
    expect(applied.body).toMatchObject({ status: 'Completed', trigger: { type: 'apply', planRunId: planId } });
    expect((await devCall(rt, first, 'GET', 'mesh/objects?search=E00001')).body.items[0].attributeValues.sn).toBe('Planned');
    await context.close();
  });
});
