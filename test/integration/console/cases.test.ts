import type { Browser } from 'playwright-core';
import { serverAvailable } from '../../support/servers';
import { startService, type ServiceUnderTest } from '../../support/service';
import { folder, writeCsv } from '../sync/syncSupport';
import { devCall, devToken, launch, shot, signIn } from './browser';

/**
 * The web console's Cases page in a real Chromium: the open cases listed, one case with its candidates side by
 * side (score, the rules that matched and how), decided with the keyboard (1, p, i), each landing in the
 * service and moving to the next case; a Viewer sees the cases without the buttons.
 */
jest.setTimeout(600_000);

const available = serverAvailable('chromium');

(available ? describe : describe.skip)('web console: correlation cases', () => {
  let rt: ServiceUnderTest;
  let browser: Browser;
  let admin: string;
  let dir = '';

  async function importAndWait(connectorId: string): Promise<void> {
    const started = await devCall(rt, admin, 'POST', `connectors/${connectorId}/import`, { runType: 'FullImport' });
    expect(started.status).toBe(202);
    for (;;) {
      const run = await devCall(rt, admin, 'GET', `runs/${started.body.runId}`);
      if (run.body.status === 'Completed') return;
      expect(['Queued', 'Running']).toContain(run.body.status);
      await new Promise((r) => setTimeout(r, 250));
    }
  }
  const fileConnector = async (name: string, path: string, extra: Record<string, unknown> = {}) =>
    (
      await devCall(rt, admin, 'POST', 'connectors', {
        name,
        type: 'custom',
        config: { implementation: 'file', objectType: 'User', settings: { path, anchorColumn: 'id' }, ...extra },
      })
    ).body.id as string;

  beforeAll(async () => {
    rt = await startService({ env: { Authentication__Jwt__Authority: '', Authentication__Jwt__Enabled: 'false' } });
    admin = await devToken(rt, 'Admin', 'setup@example.test');
    const hrDir = folder('ims-console-cases-hr-');
    writeCsv(
      hrDir,
      'hr.csv',
      ['id', 'employeeId', 'displayName'],
      [
        { id: 'h1', employeeId: 'E1', displayName: 'Anna Schmidt' },
        { id: 'h2', employeeId: 'E2', displayName: 'Anna Schmidt' },
        { id: 'h3', employeeId: 'E3', displayName: 'Jonathan Smith' },
      ],
    );
    const dirDir = folder('ims-console-cases-dir-');
    writeCsv(
      dirDir,
      'dir.csv',
      ['id', 'employeeNumber', 'displayName'],
      [
        { id: 'd1', employeeNumber: '', displayName: 'Anna Schmidt' },
        { id: 'd2', employeeNumber: '', displayName: 'Jonathon Smith' },
        { id: 'd3', employeeNumber: '', displayName: 'Nobody Here' },
      ],
    );
    const hr = await fileConnector('HR', hrDir);
    dir = await fileConnector('Directory', dirDir, { correlation: { autoJoinConfidence: 80, caseOnMissingKey: true } });
    for (const rule of [
      { ruleType: 'ProjectionRule', ruleName: 'project', connectorId: hr, sourceAttribute: 'employeeId', objectType: 'User' },
      { ruleType: 'FlowRule', ruleName: 'employeeId', connectorId: hr, sourceAttribute: 'employeeId', targetAttribute: 'employeeId', confidence: 50 },
      { ruleType: 'FlowRule', ruleName: 'displayName', connectorId: hr, sourceAttribute: 'displayName', targetAttribute: 'displayName', confidence: 50 },
      { ruleType: 'JoinRule', ruleName: 'by key', connectorId: dir, sourceAttribute: 'employeeNumber', targetAttribute: 'employeeId', confidence: 100 },
      {
        ruleType: 'JoinRule',
        ruleName: 'by name',
        connectorId: dir,
        sourceAttribute: 'displayName',
        targetAttribute: 'displayName',
        confidence: 60,
        match: 'fuzzy',
      },
    ])
      expect((await devCall(rt, admin, 'POST', 'rules', rule)).status).toBe(201);
    await importAndWait(hr);
    await importAndWait(dir);
    browser = await launch();
  });
  afterAll(async () => {
    await browser?.close();
    await rt?.dispose();
  });

  test('a Viewer sees the cases without buttons; an Operator works the queue with the keyboard', async () => {
    const viewer = await signIn(browser, rt, 'vera@example.test', 'Viewer', 'cases');
    const vtable = viewer.page.getByRole('table', { name: 'Open correlation cases' });
    await vtable.getByRole('link', { name: 'Anna Schmidt' }).click();
    await viewer.page.getByTestId('candidate').nth(1).waitFor();
    expect(await viewer.page.getByRole('button', { name: /Join/ }).count()).toBe(0);
    await viewer.context.close();

    const { context, page } = await signIn(browser, rt, 'otto@example.test', 'Operator', 'cases?reason=');
    const table = page.getByRole('table', { name: 'Open correlation cases' });
    await table.getByRole('link', { name: 'Nobody Here' }).waitFor();
    expect(await table.getByRole('columnheader').allTextContents()).toEqual(['Object', 'Connector', 'Reason', 'Candidates', 'Best', 'Opened']);
    await table.getByRole('link', { name: 'Anna Schmidt' }).click();
    // The twins side by side: each with its score and the rule that matched.
    await page.getByRole('heading', { name: 'Anna Schmidt', level: 1 }).waitFor();
    const candidates = page.getByTestId('candidate');
    await candidates.nth(1).waitFor();
    expect(await candidates.count()).toBe(2);
    expect(await candidates.nth(0).textContent()).toMatch(/score 60.*by name: displayName → displayName, exact \(\+60\)/);
    await shot(page, 'case-twins');
    const second = (await devCall(rt, admin, 'GET', `correlation-cases?connectorId=${dir}&state=open`)).body.items.find(
      (c: { object: { displayName: string } }) => c.object.displayName === 'Anna Schmidt',
    );
    // Key 2 joins the second candidate; the next case is shown.
    await page.keyboard.press('2');
    await page.getByRole('heading', { level: 1 }).filter({ hasNotText: 'Anna Schmidt' }).waitFor();
    const decided = await devCall(rt, admin, 'GET', `correlation-cases/${second.caseId}`);
    expect(decided.body).toMatchObject({ state: 'decided', decision: 'join', meshObjectId: second.candidates[1].meshObjectId, decidedBy: 'otto@example.test' });
    // The rest: ignore "Nobody Here", join the fuzzy match by its key.
    for (let left = 2; left > 0; left--) {
      const heading = (await page.getByRole('heading', { level: 1 }).textContent())!;
      await page.getByTestId('case-state').waitFor();
      await page.keyboard.press(heading === 'Nobody Here' ? 'i' : 'j');
      if (left > 1) await page.getByRole('heading', { level: 1 }).filter({ hasNotText: heading }).waitFor();
    }
    await page.getByText('No open case.').waitFor();
    const all = (await devCall(rt, admin, 'GET', `correlation-cases?connectorId=${dir}`)).body.items as { object: { displayName: string }; decision: string }[];
    expect(Object.fromEntries(all.map((c) => [c.object.displayName, c.decision]))).toEqual({
      'Anna Schmidt': 'join',
      'Jonathon Smith': 'join',
      'Nobody Here': 'ignore',
    });
    await context.close();
  });
});
