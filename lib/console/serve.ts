import { createHash } from 'node:crypto';
import { SettingsReader } from '../core/config';
import { ConsoleFiles, type ConsoleFile } from './static';

/** What the console page needs to sign in, served as /console/config.json. */
export interface ConsoleConfig {
  /** The OIDC authority the API trusts (its discovery document gives the authorize and token endpoints). */
  authority: string | null;
  clientId: string | null;
  scope: string;
  /** The Admin API's base path. */
  apiBase: string;
  /** The embedded development issuer signs in (Development without an authority). */
  developmentIssuer: boolean;
  /** Token role values per role (Service:Roles): the page reads the user's roles from the token's `roles` claim. */
  roles: Record<string, string[]>;
}

export interface ConsoleAuthInfo {
  authority: string | undefined;
  developmentIssuer: boolean;
  roles: Record<string, string[]>;
}

/** The development issuer's public client (lib/auth/devAuthorize.ts). */
const DEV_CONSOLE_CLIENT_ID = 'meshsync-console';

export function consoleConfig(auth: ConsoleAuthInfo, settings = new SettingsReader()): ConsoleConfig {
  const clientId = settings.string('Console:ClientId') ?? (auth.developmentIssuer ? DEV_CONSOLE_CLIENT_ID : null);
  const scope = settings.string('Console:Scope') ?? (auth.developmentIssuer ? 'openid' : 'openid profile');
  return { authority: auth.authority ?? null, clientId, scope, apiBase: '/api', developmentIssuer: auth.developmentIssuer, roles: auth.roles };
}

export interface ConsoleAnswer {
  status: number;
  headers: Record<string, string>;
  body?: Buffer | string;
}

/**
 * The answer to GET <base>/console/<path>: a file of the build, `config.json`, or index.html for any path
 * without a file extension (a deep link: the console routes it itself). Assets requested with `?v=` (the
 * build's content hash, as index.html names them) are immutable for a year; everything else is revalidated
 * (`no-cache` with an ETag). `base` is the path the console is served under (`/console/`); `query` is the
 * request's query string (without `?`): a deep link's page carries it in its pre-script sign-in form.
 */
export function answerConsole(
  files: ConsoleFiles,
  rel: string,
  opts: { versioned: boolean; ifNoneMatch: string | null; base: string; config: ConsoleConfig; query?: string },
): ConsoleAnswer {
  const security = securityHeaders(opts.config.authority);
  if (rel.split('/').some((s) => s === '..' || s === '.' || s.includes('\\') || s.includes('\0'))) {
    return { status: 404, headers: { 'content-type': 'text/plain; charset=utf-8', ...security }, body: 'Not found' };
  }
  if (rel === 'config.json') {
    return {
      status: 200,
      headers: { 'content-type': 'application/json; charset=utf-8', 'cache-control': 'no-store', ...security },
      body: JSON.stringify(opts.config),
    };
  }
  if (!files.built) {
    return {
      status: 503,
      headers: { 'content-type': 'text/plain; charset=utf-8', 'cache-control': 'no-store', 'retry-after': '5', ...security },
      body: 'The console is not built: run `npm run build` (it bundles the console into dist/console).',
    };
  }
  let file: ConsoleFile | undefined = rel === '' ? undefined : files.get(rel);
  const lastSegment = rel.split('/').pop() ?? '';
  let isIndex = false;
  if (!file) {
    if (lastSegment.includes('.'))
      return { status: 404, headers: { 'content-type': 'text/plain; charset=utf-8', 'cache-control': 'no-cache', ...security }, body: 'Not found' };
    file = files.get('index.html')!;
    isIndex = true;
  }
  isIndex ||= rel === 'index.html';
  const cacheControl = opts.versioned && !isIndex ? 'public, max-age=31536000, immutable' : 'no-cache';
  const returnTo = isIndex ? deepLink(rel, opts.query) : '';
  const body = isIndex ? withReturnTo(withBase(file.body, opts.base), returnTo) : file.body;
  const etag = isIndex ? `"${file.etag.slice(1, -1)}-${createHash('sha256').update(`${opts.base}\n${returnTo}`).digest('base64url').slice(0, 16)}"` : file.etag;
  const headers = { 'content-type': file.contentType, 'cache-control': cacheControl, etag, ...security };
  if (opts.ifNoneMatch && opts.ifNoneMatch.split(',').some((t) => t.trim() === etag)) return { status: 304, headers };
  return { status: 200, headers, body };
}

/** index.html carries `<base href="/console/">`; under another base (a stock host's /api/console/) it is rewritten. */
function withBase(body: Buffer, base: string): Buffer {
  if (base === '/console/') return body;
  return Buffer.from(body.toString('utf8').replace('<base href="/console/">', `<base href="${base.replace(/["<>&]/g, '')}">`));
}

/** The page a deep link names (path under the base and query), for the sign-in to come back to; '' for the overview. */
function deepLink(rel: string, query: string | undefined): string {
  if (rel === '' || rel === 'index.html' || rel === 'signin' || rel === 'callback') return '';
  return rel + (query ? `?${query}` : '');
}

/**
 * index.html's Sign in form works before the script has loaded (it opens /console/signin); on a deep link it
 * carries the page as `returnTo`, so that an early click comes back to the page it was opened at.
 */
function withReturnTo(body: Buffer, returnTo: string): Buffer {
  if (!returnTo) return body;
  const input = `<input type="hidden" name="returnTo" value="${escapeAttribute(returnTo)}">`;
  return Buffer.from(body.toString('utf8').replace('<form action="signin" method="get">', (form) => form + input));
}

function escapeAttribute(value: string): string {
  return value.replace(/&/g, '&amp;').replace(/"/g, '&quot;').replace(/'/g, '&#39;').replace(/</g, '&lt;').replace(/>/g, '&gt;');
}

/** The page may talk to its own origin and to the OIDC authority (discovery and token endpoint), nothing else. */
function securityHeaders(authority: string | null): Record<string, string> {
  let authorityOrigin = '';
  try {
    if (authority) authorityOrigin = ' ' + new URL(authority).origin;
  } catch {
    authorityOrigin = '';
  }
  return {
    'content-security-policy': `default-src 'self'; connect-src 'self'${authorityOrigin}; img-src 'self' data:; style-src 'self'; script-src 'self'; frame-ancestors 'none'; base-uri 'self'; form-action 'self'`,
    'x-content-type-options': 'nosniff',
    'referrer-policy': 'no-referrer',
  };
}
