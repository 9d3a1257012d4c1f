import type { Browser, Page } from 'playwright-core';
import { startPostgres, type Postgres } from '../../support/postgres';
import { serverAvailable } from '../../support/servers';
import { startService, type ServiceUnderTest } from '../../support/service';
import { pgServer, SqlContractFixture } from '../sql/sqlFixture';
import { consoleUrl, devCall, devToken, fillIssuerForm, launch, shot, signIn, signInHere } from './browser';

/**
 * The web console in a real browser (Debian's Chromium through playwright-core) against a real service started
 * as `npm start` starts it in Development (Azurite, the development issuer, no authority), with a PostgreSQL HR
 * source: serving (types, cache headers, deep links), sign-in through the issuer's authorization-code form
 * (PKCE), a run started and followed to its end, the mesh browsed (paging, criteria, columns, bookmarkable
 * URLs), explain, history, and a Viewer who sees no write buttons.
 *
 * With CONSOLE_SCREENSHOTS=1 it also writes the screenshots of docs/console.md (docs/console/*.png, 1280x800).
 */
jest.setTimeout(600_000);

const ROWS = 120;
const available = serverAvailable('chromium') && serverAvailable('postgres');

/** Wait until the element's text matches (the run monitor polls the run every second). */
async function textOf(page: Page, testId: string, re: RegExp): Promise<string> {
  const el = page.getByTestId(testId);
  await el.filter({ hasText: re }).waitFor({ timeout: 240_000 });
  return (await el.textContent()) ?? '';
}

(available ? describe : describe.skip)('web console in Chromium', () => {
  let pg: Postgres;
  let rt: ServiceUnderTest;
  let f: SqlContractFixture;
  let big: SqlContractFixture | undefined;
  let browser: Browser;
  let connectorId: string;
  let admin: string;

  beforeAll(async () => {
    pg = await startPostgres();
    rt = await startService({ env: { Authentication__Jwt__Authority: '', Authentication__Jwt__Enabled: 'false' } });
    f = await SqlContractFixture.create(pgServer(pg));
    await f.exec(
      `INSERT INTO people (employee_id, given_name, sn, department) SELECT 'E' || lpad(i::text, 5, '0'), 'Given' || i, 'Sn' || i, CASE WHEN i % 3 = 0 THEN 'Sales' ELSE 'Ops' END FROM generate_series(1, ${ROWS}) i`,
    );
    admin = await devToken(rt, 'Admin', 'setup@example.test');
    const connector = await devCall(rt, admin, 'POST', 'connectors', { name: 'HR console', type: 'sql', config: f.config() });
    expect(connector.status).toBe(201);
    connectorId = connector.body.id;
    const rules = [
      { ruleType: 'ProjectionRule', ruleName: 'project', connectorId, sourceAttribute: 'employee_id', objectType: 'User' },
      ...[
        ['employee_id', 'employeeId'],
        ['given_name', 'givenName'],
        ['sn', 'sn'],
        ['department', 'department'],
      ].map(([s, t]) => ({ ruleType: 'FlowRule', ruleName: `flow ${t}`, connectorId, sourceAttribute: s, targetAttribute: t, confidence: 50 })),
    ];
    for (const rule of rules) expect((await devCall(rt, admin, 'POST', 'rules', rule)).status).toBe(201);
    browser = await launch();
  });
  afterAll(async () => {
    await browser?.close();
    await rt?.dispose();
    await f?.cleanup();
    await big?.cleanup();
    await pg?.stop();
  });

  test('is served at /console: index.html for deep links, hashed assets cached for good, config.json names the development issuer', async () => {
    const base = consoleUrl(rt);
    const bare = await fetch(base.replace(/\/$/, ''), { redirect: 'manual' });
    expect(bare.status).toBe(301);
    expect(bare.headers.get('location')).toBe('/console/');
    const index = await fetch(base);
    expect(index.status).toBe(200);
    expect(index.headers.get('content-type')).toBe('text/html; charset=utf-8');
    expect(index.headers.get('cache-control')).toBe('no-cache');
    expect(index.headers.get('content-security-policy')).toContain("script-src 'self'");
    const html = await index.text();
    const js = /src="(app\.js\?v=[0-9a-f]+)"/.exec(html)![1];
    const asset = await fetch(base + js);
    expect(asset.status).toBe(200);
    expect(asset.headers.get('content-type')).toBe('text/javascript; charset=utf-8');
    expect(asset.headers.get('cache-control')).toBe('public, max-age=31536000, immutable');
    const etag = asset.headers.get('etag')!;
    expect((await fetch(base + 'app.js', { headers: { 'if-none-match': etag } })).status).toBe(304);
    const deep = await fetch(base + 'mesh/0f8fad5b-d9cb-469f-a165-70867728950e?tab=history');
    expect(deep.status).toBe(200);
    // The same page, its pre-script Sign in form carrying the deep link to come back to.
    expect(await deep.text()).toBe(
      html.replace(
        '<form action="signin" method="get">',
        '<form action="signin" method="get"><input type="hidden" name="returnTo" value="mesh/0f8fad5b-d9cb-469f-a165-70867728950e?tab=history">',
      ),
    );
    expect((await fetch(base + 'nothing-here.js')).status).toBe(404);
    const config = (await (await fetch(base + 'config.json')).json()) as { authority: string };
    expect(config).toMatchObject({ clientId: 'meshsync-console', apiBase: '/api', developmentIssuer: true, roles: { Admin: ['Service.Admin'] } });
    expect(config.authority).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
    // The API keeps its prefix: /api/console is no route.
    expect((await fetch(`${rt.baseUrl}/console/`)).status).toBe(404);
  });

  test('the first click on "Sign in" works before the script has loaded and comes back to the page opened; no page logs a Content Security Policy complaint; Connectors shows when each was updated', async () => {
    const context = await browser.newContext({ viewport: { width: 1280, height: 800 } });
    const page = await context.newPage();
    const logged: string[] = [];
    page.on('console', (m) => logged.push(`${m.type()}: ${m.text()}`));
    // The console's script held back until the first click is done.
    let release!: () => void;
    const released = new Promise<void>((resolve) => (release = resolve));
    let requested!: () => void;
    const scriptRequested = new Promise<void>((resolve) => (requested = resolve));
    await page.route(/\/console\/app\.js/, async (route) => {
      requested();
      await released;
      await route.continue();
    });
    await page.goto(consoleUrl(rt, 'connectors?q=HR%20console'), { waitUntil: 'commit' });
    await scriptRequested;
    await page.getByText('Loading the console…').waitFor();
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.waitForURL((url) => url.pathname === '/console/signin', { waitUntil: 'commit' });
    release();
    // /console/signin starts the sign-in as soon as the script runs: the issuer's form, then back, signed in.
    await fillIssuerForm(page, 'olga@example.test', 'Operator');
    expect(await page.getByTestId('who').textContent()).toContain('olga@example.test · Operator');
    // ... at the page it was opened at, query and all (the served page's form carries it).
    await page.waitForURL((url) => url.pathname === '/console/connectors' && url.search === '?q=HR%20console');
    // Signed in already, /console/signin goes on to where it was asked to.
    await page.goto(consoleUrl(rt, 'signin?returnTo=connectors'));
    await page.waitForURL((url) => url.pathname === '/console/connectors' && url.search === '');
    const row = page.getByRole('table', { name: 'Connectors' }).getByRole('row').filter({ hasText: 'HR console' });
    const updatedOn = (await devCall(rt, admin, 'GET', `connectors/${connectorId}`)).body.updatedOn as string;
    expect(await row.locator('td:nth-child(4) time').getAttribute('datetime')).toBe(updatedOn);
    expect(await page.getByRole('table', { name: 'Connectors' }).getByRole('cell', { name: '–', exact: true }).count()).toBe(0);
    expect(logged.filter((m) => /content.security.policy/i.test(m))).toEqual([]);
    await context.close();
  });

  test('an Operator signs in through the issuer form, starts a full import and watches it finish; explores the connector space, previews and syncs an object', async () => {
    const { context, page } = await signIn(browser, rt, 'olga@example.test', 'Operator', 'connectors');
    expect(await page.getByTestId('who').textContent()).toContain('olga@example.test · Operator');
    // Back where the sign-in started.
    expect(new URL(page.url()).pathname).toBe('/console/connectors');
    await page.getByRole('link', { name: 'HR console' }).waitFor();
    await shot(page, 'connectors');
    await page.getByLabel('Run type for HR console').selectOption('FullImport');
    await page.getByRole('button', { name: 'Start' }).click();
    await page.waitForURL(/\/console\/runs\/[0-9a-f-]{36}$/);
    const runId = page.url().split('/').pop()!;
    const outcome = await textOf(page, 'run-outcome', /Completed/);
    expect(outcome).toMatch(/^Completed at /);
    const run = await devCall(rt, admin, 'GET', `runs/${runId}`);
    expect(run.body).toMatchObject({
      status: 'Completed',
      runType: 'FullImport',
      stats: { objectsCreated: ROWS },
      trigger: { type: 'manual', actorUpn: 'olga@example.test' },
    });
    await page.getByRole('heading', { name: /FullImport of HR console/ }).waitFor();
    expect(await page.locator('.facts').textContent()).toContain(`Created${ROWS}`);
    await shot(page, 'run');
    // The overview lists it as the connector's last run.
    await page.getByRole('link', { name: 'Overview' }).click();
    await page
      .getByRole('table', { name: 'Last run per connector' })
      .getByRole('link', { name: runId.slice(0, 8) })
      .waitFor();
    await page.getByRole('table', { name: 'Connector-space objects in error' }).getByText('No connector-space object is in error.').waitFor();
    await shot(page, 'overview');
    // The connector-space explorer: one object's attributes, then a preview and a sync of it (nothing to change).
    await page.getByRole('link', { name: 'Connectors' }).click();
    await page.getByRole('link', { name: 'HR console' }).click();
    await page.getByLabel('State').selectOption('joined');
    await page.getByText(`1–50 of ${ROWS}`).waitFor();
    await page.getByRole('link', { name: 'E00002' }).click();
    const panel = page.getByRole('complementary');
    await panel.getByRole('heading', { name: 'E00002' }).waitFor();
    expect(new URL(page.url()).searchParams.get('state')).toBe('joined');
    expect(new URL(page.url()).searchParams.get('cs')).toMatch(/^[0-9a-f-]{36}$/);
    await panel.getByText('Given2').waitFor();
    await panel.getByRole('button', { name: 'Preview' }).click();
    await panel.getByRole('heading', { name: 'Preview: join joined' }).waitFor();
    expect(await panel.getByText('Nothing to change.').count()).toBe(1);
    await panel.getByRole('button', { name: 'Sync now' }).click();
    await panel.getByRole('heading', { name: 'Sync: join joined' }).waitFor();
    await context.close();
  });

  test('the mesh browser pages, filters with criteria, shows picked columns, keeps it all in a bookmarkable URL, and explains a value', async () => {
    const { context, page } = await signIn(browser, rt, 'ada@example.test', 'Admin', 'mesh');
    await page.getByText(`1–50 of ${ROWS}`).waitFor();
    await page.getByRole('button', { name: 'Next' }).click();
    await page.getByText(`51–100 of ${ROWS}`).waitFor();
    expect(new URL(page.url()).searchParams.get('skip')).toBe('50');
    // department equals Sales: a third of the rows.
    await page.getByLabel('Attribute', { exact: true }).fill('department');
    await page.getByLabel('Operator').selectOption('equals');
    await page.getByLabel('Value').fill('sales');
    await page.getByRole('button', { name: 'Add criterion' }).click();
    await page.getByText(`1–40 of ${ROWS / 3}`).waitFor();
    await page.locator('details.columns summary').click();
    await page.getByRole('checkbox', { name: 'department' }).check();
    await page.getByRole('checkbox', { name: 'givenName' }).check();
    await page.getByRole('columnheader', { name: 'givenName' }).waitFor();
    const url = new URL(page.url());
    expect(url.searchParams.getAll('where')).toEqual(['department~equals~sales']);
    expect(url.searchParams.get('cols')).toBe('department,givenName');
    await shot(page, 'mesh');
    // The URL alone brings the same view back (a bookmark, a link sent to a colleague): a new tab has no
    // session (the token lives in the tab's sessionStorage), signs in, and comes back to that URL.
    const again = await context.newPage();
    await again.goto(url.toString());
    await signInHere(again, 'ada@example.test', 'Admin');
    expect(again.url()).toBe(url.toString());
    await again.getByText(`1–40 of ${ROWS / 3}`).waitFor();
    expect(await again.getByRole('columnheader').allTextContents()).toEqual(['Anchor', 'Type', 'department', 'givenName']);
    const cells = await again.locator('tbody tr td:nth-child(3)').allTextContents();
    expect(new Set(cells)).toEqual(new Set(['Sales']));
    await again.close();
    // isnotpresent mail: every object (no mail flows in).
    await page.getByRole('button', { name: /Remove criterion department/ }).click();
    await page.getByLabel('Attribute', { exact: true }).fill('mail');
    await page.getByLabel('Operator').selectOption('isnotpresent');
    expect(await page.getByLabel('Value').isDisabled()).toBe(true);
    await page.getByRole('button', { name: 'Add criterion' }).click();
    await page.getByText(`1–50 of ${ROWS}`).waitFor();

    // Detail, explain, history.
    await page.getByRole('link', { name: 'E00003' }).click();
    await page.getByRole('heading', { name: /E00003/ }).waitFor();
    await page.getByRole('link', { name: 'Explain department' }).click();
    const explain = page.getByRole('complementary');
    await explain.getByRole('heading', { name: 'Why department is "Sales"' }).waitFor();
    await explain.getByRole('cell', { name: 'HR console' }).first().waitFor();
    expect(await explain.getByRole('table', { name: 'Contributions' }).textContent()).toMatch(/HR consoledepartmentSales50won/);
    expect(new URL(page.url()).searchParams.get('attr')).toBe('department');
    await shot(page, 'mesh-explain');
    await page.getByRole('tab', { name: 'History' }).click();
    await page.getByRole('table', { name: 'History' }).getByRole('cell', { name: 'Created' }).waitFor();
    await context.close();
  });

  test('rules, configuration history, audit, schedules and tombstones show what the service holds', async () => {
    const { context, page } = await signIn(browser, rt, 'ada@example.test', 'Admin', 'rules');
    const rules = page.getByRole('table', { name: 'Rules' });
    await rules.getByRole('cell', { name: 'ProjectionRule' }).waitFor();
    expect(await rules.getByRole('cell', { name: 'FlowRule' }).count()).toBe(4);
    // Rules by their names, connectors by theirs (linked, the id as the tooltip); no id prefixes.
    for (const name of ['project', 'flow employeeId', 'flow givenName', 'flow sn', 'flow department'])
      await rules.getByRole('cell', { name, exact: true }).waitFor();
    const connectorLinks = rules.getByRole('link', { name: 'HR console', exact: true });
    await connectorLinks.first().waitFor();
    expect(await connectorLinks.count()).toBe(5);
    expect(await connectorLinks.first().getAttribute('title')).toBe(`id ${connectorId}`);
    expect(await rules.getByRole('cell', { name: /^[0-9a-f]{8}( |$)/ }).count()).toBe(0);
    await shot(page, 'rules');
    await page.getByRole('link', { name: 'Configuration' }).click();
    const versions = page.getByRole('table', { name: 'Configuration versions' });
    await versions.getByRole('cell', { name: 'connector HR console' }).waitFor();
    expect(await versions.getByRole('cell', { name: 'setup@example.test' }).count()).toBe(6);
    expect(await page.getByRole('button', { name: 'Restore' }).count()).toBe(6);
    await versions.getByRole('cell', { name: 'rule flow givenName', exact: true }).waitFor();
    expect(await versions.getByRole('cell', { name: /^rule [0-9a-f]{8}$/ }).count()).toBe(0);
    await shot(page, 'config');
    await page.getByRole('link', { name: 'Audit' }).click();
    const audit = page.getByRole('table', { name: 'Audit records' });
    await audit.getByRole('cell', { name: 'setup@example.test' }).first().waitFor();
    await page.getByLabel('Target type').fill('rule');
    await page.getByRole('button', { name: 'Apply' }).click();
    await page.waitForURL(/type=rule/);
    await page.getByText('1–5 of 5').waitFor();
    expect(await audit.getByRole('cell', { name: /^rule / }).count()).toBe(5);
    await audit.getByRole('cell', { name: 'rule flow department', exact: true }).waitFor();
    expect(await audit.getByRole('cell', { name: /^connector / }).count()).toBe(0);
    await shot(page, 'audit');
    await page.getByRole('link', { name: 'Schedules' }).click();
    await page.getByRole('table', { name: 'Schedules' }).getByText('No schedules.').waitFor();
    // A schedule run from the console: its runs, their steps and the run each step started.
    const created = await devCall(rt, admin, 'POST', 'schedules', {
      name: 'nightly HR',
      cron: '0 0 2 * * *',
      timeZone: 'Europe/Paris',
      isEnabled: true,
      steps: [{ runType: 'DeltaImport', connectorIds: [connectorId] }],
    });
    expect(created.status).toBe(201);
    await page.reload();
    const schedules = page.getByRole('table', { name: 'Schedules' });
    await schedules.getByRole('cell', { name: 'Europe/Paris' }).waitFor();
    // The schedule's page reads its runs once: it opens after the run now was answered (else it may read none).
    const ranNow = page.waitForResponse(
      (r) => r.request().method() === 'POST' && new URL(r.url()).pathname.endsWith(`/schedules/${created.body.scheduleId}/run`),
    );
    await schedules.getByRole('button', { name: 'Run now' }).click();
    expect((await ranNow).status()).toBe(202);
    await schedules.getByRole('link', { name: 'nightly HR' }).click();
    await page.waitForURL(new RegExp(`/console/schedules/${created.body.scheduleId}$`));
    const scheduleRuns = page.getByRole('table', { name: 'Schedule runs' });
    await scheduleRuns.getByRole('cell', { name: 'manual' }).waitFor();
    for (;;) {
      const runs = await devCall(rt, admin, 'GET', `schedules/${created.body.scheduleId}/runs`);
      if (runs.body.items[0]?.status === 'Completed') break;
      expect(['Running', undefined]).toContain(runs.body.items[0]?.status);
      await new Promise((r) => setTimeout(r, 250));
    }
    await page.reload();
    // Each step names its connectors: the run of each, by connector name and status, links to the run.
    await scheduleRuns.getByRole('cell', { name: /^DeltaImport: HR console Completed$/ }).waitFor();
    const stepRun = (await devCall(rt, admin, 'GET', `schedules/${created.body.scheduleId}/runs`)).body.items[0].steps[0].runs[0];
    expect(await scheduleRuns.getByRole('link', { name: 'HR console Completed' }).getAttribute('href')).toBe(`/console/runs/${stepRun.runId}`);
    await shot(page, 'schedules');
    await page.goto(consoleUrl(rt, 'mesh?state=deleted'));
    await page.getByRole('heading', { name: 'Mesh – deleted objects' }).waitFor();
    expect(await page.getByRole('tab', { name: 'Deleted (tombstones)' }).getAttribute('aria-selected')).toBe('true');
    await context.close();
  });

  test('a Viewer sees the same screens without a single write button', async () => {
    const { context, page } = await signIn(browser, rt, 'vera@example.test', 'Viewer', 'connectors');
    await page.getByRole('link', { name: 'HR console' }).waitFor();
    expect(await page.getByRole('button', { name: 'Start' }).count()).toBe(0);
    expect(await page.getByLabel('Run type for HR console').count()).toBe(0);
    await page.getByRole('link', { name: 'HR console' }).click();
    await page.getByRole('link', { name: 'E00001' }).click();
    await page.getByRole('heading', { name: 'E00001' }).waitFor();
    for (const name of ['Preview', 'Sync now', 'Retry export', 'Start']) expect(await page.getByRole('button', { name }).count()).toBe(0);
    await shot(page, 'connector-space');
    await page.getByRole('link', { name: 'Runs', exact: true }).click();
    await page.getByRole('table', { name: 'Runs' }).getByRole('link').first().click();
    await page
      .getByTestId('run-outcome')
      .filter({ hasText: /Completed/ })
      .waitFor();
    for (const name of ['Cancel run', 'Apply plan', 'Approve', 'Reject']) expect(await page.getByRole('button', { name }).count()).toBe(0);
    await page.goto(consoleUrl(rt, 'config'));
    await page.getByRole('table', { name: 'Configuration versions' }).getByRole('cell', { name: 'create' }).first().waitFor();
    expect(await page.getByRole('button', { name: 'Restore' }).count()).toBe(0);
    await page.goto(consoleUrl(rt, 'schedules'));
    await page.getByRole('heading', { name: 'Schedules' }).waitFor();
    expect(await page.getByRole('button', { name: 'Run now' }).count()).toBe(0);
    await context.close();
  });

  test('keyboard: sections open with Enter and focus their content; a narrow window puts the sections behind a menu button', async () => {
    const { context, page } = await signIn(browser, rt, 'ada@example.test', 'Admin', 'runs');
    // Keyboard only: a section link with Enter opens the page and puts the focus on its content.
    await page.getByRole('link', { name: 'Audit' }).focus();
    await page.keyboard.press('Enter');
    await page.waitForURL(/\/console\/audit$/);
    await page.getByRole('heading', { name: 'Audit' }).waitFor();
    // The focus moves in an effect after the page renders: wait for it, not for a fixed time.
    await page.waitForFunction(`document.activeElement?.id === 'main'`, undefined, { timeout: 10_000 });
    expect(await page.locator(':focus').getAttribute('id')).toBe('main');
    await page.keyboard.press('Tab');
    expect(await page.locator(':focus').getAttribute('name')).toBe('actor');
    await page.setViewportSize({ width: 420, height: 800 });
    expect(await page.getByRole('navigation', { name: 'Sections' }).isVisible()).toBe(false);
    await page.getByRole('button', { name: 'Menu' }).click();
    await page.getByRole('link', { name: 'Mesh' }).click();
    await page.getByText(`1–50 of ${ROWS}`).waitFor();
    // Keyboard: on a page load the skip link is the first stop, and it leads to the content.
    await page.reload();
    await page.getByText(`1–50 of ${ROWS}`).waitFor();
    await page.keyboard.press('Tab');
    expect(await page.locator(':focus').textContent()).toBe('Skip to content');
    await page.keyboard.press('Enter');
    await page.keyboard.press('Tab');
    expect(await page.locator(':focus').textContent()).toBe('Active');
    // A token the API refuses (here: its signature broken) brings the sign-in screen back, not broken pages.
    await page.evaluate(
      `(() => { const s = JSON.parse(sessionStorage.getItem('meshsync.session')); s.token = s.token.slice(0, -6) + 'AAAAAA'; sessionStorage.setItem('meshsync.session', JSON.stringify(s)); })()`,
    );
    await page.getByRole('button', { name: 'Next' }).click();
    await page.getByRole('button', { name: 'Sign in' }).waitFor();
    expect(await page.evaluate(`sessionStorage.getItem('meshsync.session')`)).toBeNull();
    await context.close();
  });

  test('the run monitor shows the live progress of a long run, and an Operator cancels it', async () => {
    big = await SqlContractFixture.create(pgServer(pg));
    await big.exec(`INSERT INTO people (employee_id, given_name, sn) SELECT 'B' || lpad(i::text, 6, '0'), 'G' || i, 'S' || i FROM generate_series(1, 60000) i`);
    const connector = await devCall(rt, admin, 'POST', 'connectors', { name: 'HR big', type: 'sql', config: big.config() });
    expect(connector.status).toBe(201);
    const bigId = connector.body.id;
    for (const rule of [
      { ruleType: 'ProjectionRule', ruleName: 'project big', connectorId: bigId, sourceAttribute: 'employee_id', objectType: 'User' },
      { ruleType: 'FlowRule', ruleName: 'flow big sn', connectorId: bigId, sourceAttribute: 'sn', targetAttribute: 'sn', confidence: 50 },
    ]) {
      expect((await devCall(rt, admin, 'POST', 'rules', rule)).status).toBe(201);
    }
    const { context, page } = await signIn(browser, rt, 'olga@example.test', 'Operator', `connectors/${bigId}`);
    await page.getByLabel('Run type for HR big').selectOption('FullImport');
    await page.getByRole('button', { name: 'Start' }).click();
    await page.waitForURL(/\/console\/runs\/[0-9a-f-]{36}$/);
    const runId = page.url().split('/').pop()!;
    // Progress as the run reports it: the phase and the objects done so far, refreshed while it goes.
    const progress = await textOf(page, 'progress-text', /^(reading|planning|applying|exporting|finishing): [1-9]\d* /);
    expect(progress).toMatch(/objects$/);
    expect(await page.getByRole('progressbar', { name: 'Run progress' }).count()).toBe(1);
    page.once('dialog', (d) => void d.accept());
    await page.getByRole('button', { name: 'Cancel run' }).click();
    await textOf(page, 'run-outcome', /^Cancelled/);
    expect(await page.getByRole('button', { name: 'Cancel run' }).count()).toBe(0);
    const run = await devCall(rt, admin, 'GET', `runs/${runId}`);
    expect(run.body.status).toBe('Cancelled');
    expect(run.body.stats.objectsProcessed).toBeLessThan(60000);
    await context.close();
  });
});
