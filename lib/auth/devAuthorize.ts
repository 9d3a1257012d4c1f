import { createHash, randomBytes } from 'node:crypto';
import { isLoopbackHost } from './authConfig';
import { ROLES, type Role } from './permissions';

/** The public client of the web console (authorization code + PKCE, no client secret; the person pastes the sign-in secret). */
export const CONSOLE_CLIENT_ID = 'meshsync-console';
/** How long an authorization code may wait for its token request. */
const CODE_LIFETIME_MS = 60_000;
const MAX_CODES = 1000;

export interface AuthorizeRequest {
  clientId: string;
  redirectUri: string;
  codeChallenge: string;
  state: string;
  scope: string;
}

interface PendingCode extends AuthorizeRequest {
  role: Role;
  username: string;
  expiresAt: number;
}

export class OAuthError extends Error {
  constructor(
    readonly error: string,
    readonly description: string,
  ) {
    super(description);
  }
}

/**
 * Check the parameters of an authorization request (query string of GET /authorize, form of POST /authorize).
 * Only the console's public client, a loopback redirect URI (http or https on 127.0.0.1, ::1 or localhost),
 * `response_type=code` and an S256 code challenge are accepted: the development issuer signs anyone in who
 * can reach it, so it must only ever hand a code back to a page on this machine.
 */
export function parseAuthorizeRequest(params: URLSearchParams): AuthorizeRequest {
  const clientId = params.get('client_id') ?? '';
  if (clientId !== CONSOLE_CLIENT_ID) throw new OAuthError('unauthorized_client', `client_id must be '${CONSOLE_CLIENT_ID}'.`);
  const redirectUri = params.get('redirect_uri') ?? '';
  let redirect: URL;
  try {
    redirect = new URL(redirectUri);
  } catch {
    throw new OAuthError('invalid_request', 'redirect_uri must be an absolute URL.');
  }
  if (!/^https?:$/.test(redirect.protocol) || !isLoopbackHost(redirect.hostname) || redirect.hash || redirect.username || redirect.password) {
    throw new OAuthError('invalid_request', 'redirect_uri must be an http(s) URL on a loopback host, without fragment or credentials.');
  }
  if (params.get('response_type') !== 'code') throw new OAuthError('unsupported_response_type', "response_type must be 'code'.");
  const codeChallenge = params.get('code_challenge') ?? '';
  if (params.get('code_challenge_method') !== 'S256') throw new OAuthError('invalid_request', "code_challenge_method must be 'S256'.");
  if (!/^[A-Za-z0-9_-]{43,128}$/.test(codeChallenge)) throw new OAuthError('invalid_request', 'code_challenge must be 43 to 128 base64url characters.');
  const state = params.get('state') ?? '';
  const scope = params.get('scope') ?? '';
  if (state.length > 512 || scope.length > 512) throw new OAuthError('invalid_request', 'state and scope are limited to 512 characters.');
  return { clientId, redirectUri, codeChallenge, state, scope };
}

export function parseRole(value: string | null): Role {
  const role = (ROLES as readonly string[]).find((r) => r.toLowerCase() === (value ?? 'Viewer').toLowerCase()) as Role | undefined;
  if (!role) throw new OAuthError('invalid_request', `role must be one of ${ROLES.join(', ')}.`);
  return role;
}

export function parseUsername(value: string | null): string {
  const username = (value ?? '').trim() || 'developer@localhost';
  if (username.length > 256 || /[\u0000-\u001f<>"]/.test(username))
    throw new OAuthError('invalid_request', 'username must be up to 256 printable characters, without < > ".');
  return username;
}

/** Codes issued by POST /authorize: single use, bound to the PKCE challenge, the client and the redirect URI. */
export class AuthorizationCodes {
  private readonly codes = new Map<string, PendingCode>();

  issue(request: AuthorizeRequest, role: Role, username: string, now = Date.now()): string {
    for (const [code, pending] of this.codes) if (pending.expiresAt <= now) this.codes.delete(code);
    if (this.codes.size >= MAX_CODES) throw new OAuthError('temporarily_unavailable', 'too many sign-ins in progress; try again in a minute.');
    const code = randomBytes(32).toString('base64url');
    this.codes.set(code, { ...request, role, username, expiresAt: now + CODE_LIFETIME_MS });
    return code;
  }

  /** The token request: the code is spent whatever the outcome, so a guessed verifier gets one try. */
  redeem(form: URLSearchParams, now = Date.now()): { role: Role; username: string } {
    const code = form.get('code') ?? '';
    const pending = this.codes.get(code);
    this.codes.delete(code);
    if (!pending || pending.expiresAt <= now) throw new OAuthError('invalid_grant', 'the authorization code is unknown, used or expired.');
    if (form.get('client_id') !== pending.clientId) throw new OAuthError('invalid_grant', 'the code was issued to another client.');
    if (form.get('redirect_uri') !== pending.redirectUri) throw new OAuthError('invalid_grant', 'redirect_uri differs from the authorization request.');
    const verifier = form.get('code_verifier') ?? '';
    if (!/^[A-Za-z0-9._~-]{43,128}$/.test(verifier)) throw new OAuthError('invalid_grant', 'code_verifier must be 43 to 128 characters of [A-Za-z0-9._~-].');
    if (createHash('sha256').update(verifier).digest('base64url') !== pending.codeChallenge) {
      throw new OAuthError('invalid_grant', 'code_verifier does not match the code challenge.');
    }
    return { role: pending.role, username: pending.username };
  }
}

function escapeHtml(s: string): string {
  return s.replace(/[&<>"']/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[c]!);
}

/**
 * The sign-in form of GET /authorize: a user name, a role and the sign-in secret (the content of
 * `secretFile`, which only a local user who can read the data folder has), the request's parameters carried
 * along. `error` (a refused attempt) is shown above the fields.
 */
export function signInPage(request: AuthorizeRequest, issuer: string, secretFile: string, error?: string): string {
  const hidden = Object.entries({
    client_id: request.clientId,
    redirect_uri: request.redirectUri,
    response_type: 'code',
    code_challenge: request.codeChallenge,
    code_challenge_method: 'S256',
    state: request.state,
    scope: request.scope,
  })
    .map(([k, v]) => `<input type="hidden" name="${k}" value="${escapeHtml(v)}">`)
    .join('\n      ');
  const options = ROLES.map((r) => `<option value="${r}"${r === 'Admin' ? ' selected' : ''}>${r}</option>`).join('');
  return `<!doctype html>
<html lang="en">
<head>
  <meta charset="utf-8">
  <meta name="viewport" content="width=device-width, initial-scale=1">
  <title>Sign in: development issuer</title>
  <style>
    body { font: 15px system-ui, sans-serif; background: #f3f4f6; margin: 0; display: grid; place-items: center; min-height: 100vh; }
    form { background: #fff; padding: 24px 28px; border-radius: 8px; box-shadow: 0 1px 4px #0002; width: min(360px, 90vw); }
    h1 { font-size: 18px; margin: 0 0 4px; } p { color: #555; margin: 0 0 16px; font-size: 13px; }
    label { display: block; margin: 12px 0 4px; font-weight: 600; }
    input, select, button { font: inherit; width: 100%; box-sizing: border-box; padding: 8px; }
    button { margin-top: 18px; background: #1d4ed8; color: #fff; border: 0; border-radius: 4px; cursor: pointer; }
    button:focus-visible, input:focus-visible, select:focus-visible { outline: 3px solid #93c5fd; }
    .hint { font-size: 12px; color: #555; margin: 4px 0 0; word-break: break-all; } .error { color: #b91c1c; font-weight: 600; }
  </style>
</head>
<body>
  <main>
    <form method="post" action="/authorize">
      <h1>Sign in</h1>
      <p>Development issuer at ${escapeHtml(issuer)}: any name, any role. Development only.</p>
      ${error ? `<p class="error" role="alert">${escapeHtml(error)}</p>` : ''}
      ${hidden}
      <label for="username">User name</label>
      <input id="username" name="username" autocomplete="username" value="developer@localhost" required maxlength="256">
      <label for="role">Role</label>
      <select id="role" name="role">${options}</select>
      <label for="secret">Sign-in secret</label>
      <input id="secret" name="secret" type="password" autocomplete="off" required maxlength="256" aria-describedby="secret-hint">
      <p class="hint" id="secret-hint">The content of ${escapeHtml(secretFile)} (<code>npm run -s token -- --secret</code> prints it).</p>
      <button type="submit">Sign in</button>
    </form>
  </main>
</body>
</html>
`;
}

/**
 * The `form-action` sources of the sign-in page: the issuer itself (the form posts to it) and the origin of the
 * request's redirect URI (the 302 after the post goes there, and Chromium checks redirects of a form against
 * `form-action` too). Only valid CSP sources: browsers reject an IPv6 literal as a host source
 * (`http://[::1]:*` is logged as invalid and ignored), so a redirect to `[::1]` allows its scheme instead (the
 * request was already checked to be a loopback URI). Without a valid request (an error page), only 'self'.
 */
export function formActionSources(request: AuthorizeRequest | undefined): string {
  if (!request) return "'self'";
  const redirect = new URL(request.redirectUri);
  return redirect.hostname.startsWith('[') ? `'self' ${redirect.protocol}` : `'self' ${redirect.origin}`;
}

/** The redirect back to the client with the code (RFC 6749 4.1.2, RFC 9207 `iss`). */
export function codeRedirect(request: AuthorizeRequest, code: string, issuer: string): string {
  const url = new URL(request.redirectUri);
  url.searchParams.set('code', code);
  if (request.state) url.searchParams.set('state', request.state);
  url.searchParams.set('iss', issuer);
  return url.toString();
}
