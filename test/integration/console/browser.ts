import { mkdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { chromium, type Browser, type BrowserContext, type Page } from 'playwright-core';
import type { Role, ServiceUnderTest } from '../../support/service';

/**
 * Debian's Chromium driven by playwright-core (no browser download): headless, one context per user so two
 * users are two separate browser sessions (sessionStorage holds each one's token).
 */
export const CHROMIUM = '/usr/bin/chromium';

export async function launch(): Promise<Browser> {
  return chromium.launch({ executablePath: CHROMIUM, headless: true, args: ['--no-sandbox', '--disable-dev-shm-usage'] });
}

/**
 * The development issuers' sign-in secrets by issuer origin, read from each service's data folder as a person
 * would read `.data/dev-issuer.secret` (the sign-in form asks for it).
 */
const signInSecrets = new Map<string, string>();

function rememberSignInSecret(rt: ServiceUnderTest): void {
  try {
    const info = JSON.parse(readFileSync(path.join(rt.dataDir, 'dev-issuer.json'), 'utf8')) as { issuer: string };
    signInSecrets.set(new URL(info.issuer).origin, readFileSync(path.join(rt.dataDir, 'dev-issuer.secret'), 'utf8').trim());
  } catch {
    // not a service with the development issuer
  }
}

export function consoleUrl(rt: ServiceUnderTest, rel = ''): string {
  rememberSignInSecret(rt);
  return `${rt.baseUrl.replace(/\/api$/, '')}/console/${rel}`;
}

/** Sign in through the development issuer's authorization-code form, as a person would. */
export async function signIn(browser: Browser, rt: ServiceUnderTest, user: string, role: Role, rel = ''): Promise<{ context: BrowserContext; page: Page }> {
  const context = await browser.newContext({ viewport: { width: 1280, height: 800 } });
  const page = await context.newPage();
  watch(page, user);
  await page.goto(consoleUrl(rt, rel));
  await signInHere(page, user, role);
  // The console comes back to the page it was opened at (a failure here names the page it showed instead).
  if (rel) {
    const wanted = `/console/${rel.split('?')[0]}`;
    const deadline = Date.now() + 30_000;
    while (!new URL(page.url()).pathname.endsWith(wanted)) {
      if (Date.now() > deadline)
        throw new Error(`signed in, the console shows ${page.url()}, not ${wanted}: ${(await page.locator('body').innerText()).slice(0, 300)}`);
      await new Promise((r) => setTimeout(r, 100));
    }
  }
  return { context, page };
}

/**
 * What no console test expects, printed when it happens so that a test waiting in vain for a page's content says
 * why: an error thrown in the page, an API answer of 401 (the console then signs out; the keyboard test breaks its
 * token on purpose and shows one) or 5xx, a request that failed.
 */
function watch(page: Page, user: string): void {
  page.on('pageerror', (err) => console.warn(`[console ${user}] page error: ${err.message}`));
  page.on('response', (r) => {
    if (r.status() === 401 || r.status() >= 500)
      console.warn(`[console ${user}, ${expect.getState().currentTestName}] ${r.request().method()} ${new URL(r.url()).pathname} answered ${r.status()}`);
  });
  page.on('requestfailed', (r) => {
    // A fetch the console dropped when it moved to another page is aborted: not a fault.
    if (!page.isClosed() && r.failure()?.errorText !== 'net::ERR_ABORTED')
      console.warn(`[console ${user}] ${r.method()} ${new URL(r.url()).pathname} failed: ${r.failure()?.errorText}`);
  });
}

/** On a page showing the console's sign-in screen: sign in; the console comes back to the URL it was opened at. */
export async function signInHere(page: Page, user: string, role: Role): Promise<void> {
  await page.getByRole('button', { name: 'Sign in' }).click();
  await fillIssuerForm(page, user, role);
}

/** On the development issuer's sign-in form: fill it in and sign in; back on the console, signed in. */
export async function fillIssuerForm(page: Page, user: string, role: Role): Promise<void> {
  await page.getByLabel('User name').fill(user);
  await page.getByLabel('Role').selectOption(role);
  const secret = signInSecrets.get(new URL(page.url()).origin);
  if (secret === undefined) throw new Error(`no sign-in secret known for the issuer at ${page.url()}: open the page with consoleUrl(rt) first`);
  await page.getByLabel('Sign-in secret').fill(secret);
  await page.getByRole('button', { name: 'Sign in' }).click();
  await page.getByTestId('who').waitFor();
}

/** A token from the development issuer (client credentials, as `meshsync login --dev` gets one) for test setup. */
export async function devToken(rt: ServiceUnderTest, role: Role, username: string): Promise<string> {
  const info = JSON.parse(readFileSync(path.join(rt.dataDir, 'dev-issuer.json'), 'utf8')) as { tokenEndpoint: string; clientId: string; clientSecret: string };
  const res = await fetch(info.tokenEndpoint, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams({ grant_type: 'client_credentials', client_id: info.clientId, client_secret: info.clientSecret, role, username }).toString(),
  });
  if (!res.ok) throw new Error(`dev issuer token: ${res.status} ${await res.text()}`);
  return ((await res.json()) as { access_token: string }).access_token;
}

/** An Admin API call with a development-issuer token. */
// eslint-disable-next-line @typescript-eslint/no-explicit-any
export async function devCall(rt: ServiceUnderTest, token: string, method: string, route: string, body?: unknown): Promise<{ status: number; body: any }> {
  const res = await fetch(`${rt.baseUrl}/${route}`, {
    method,
    headers: { authorization: `Bearer ${token}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await res.text();
  return { status: res.status, body: text ? JSON.parse(text) : undefined };
}

const SHOTS = process.env.CONSOLE_SCREENSHOTS === '1' ? path.resolve(__dirname, '../../../docs/console') : undefined;

/** With CONSOLE_SCREENSHOTS=1: the screenshot of docs/console.md named `name` (docs/console/<name>.png). */
export async function shot(page: Page, name: string): Promise<void> {
  if (!SHOTS) return;
  mkdirSync(SHOTS, { recursive: true });
  await page.waitForLoadState('networkidle');
  await page.screenshot({ path: path.join(SHOTS, `${name}.png`) });
}
