// Sign-in: OIDC authorization code with PKCE (S256) against the authority the API trusts. The token lives in
// sessionStorage (this tab only, gone with it); the user's roles come from the token's `roles` claim, mapped
// through the service's configured role values (config.json).

export interface ConsoleConfig {
  authority: string | null;
  clientId: string | null;
  scope: string;
  apiBase: string;
  developmentIssuer: boolean;
  roles: Record<string, string[]>;
}

export type Role = 'Viewer' | 'Operator' | 'Admin';

export interface Session {
  token: string;
  expiresAt: number;
  user: string;
  roles: Role[];
}

const SESSION_KEY = 'meshsync.session';
const PENDING_KEY = 'meshsync.pending';

function b64url(bytes: Uint8Array): string {
  let s = '';
  bytes.forEach((b) => (s += String.fromCharCode(b)));
  return btoa(s).replace(/\+/g, '-').replace(/\//g, '_').replace(/=+$/, '');
}

function randomString(n = 32): string {
  return b64url(crypto.getRandomValues(new Uint8Array(n)));
}

async function discovery(config: ConsoleConfig): Promise<{ authorization_endpoint: string; token_endpoint: string }> {
  const res = await fetch(`${config.authority!.replace(/\/+$/, '')}/.well-known/openid-configuration`);
  if (!res.ok) throw new Error(`The authority's discovery document answered ${res.status}.`);
  return res.json();
}

export function redirectUri(): string {
  return new URL('callback', document.baseURI).toString();
}

export async function signIn(config: ConsoleConfig, returnTo: string): Promise<void> {
  if (!config.authority || !config.clientId) throw new Error('Sign-in is not configured: set Authentication__Jwt__Authority and Console__ClientId.');
  const meta = await discovery(config);
  const verifier = randomString(32);
  const challenge = b64url(new Uint8Array(await crypto.subtle.digest('SHA-256', new TextEncoder().encode(verifier))));
  const state = randomString(16);
  sessionStorage.setItem(PENDING_KEY, JSON.stringify({ verifier, state, returnTo }));
  const url = new URL(meta.authorization_endpoint);
  url.search = new URLSearchParams({
    response_type: 'code',
    client_id: config.clientId,
    redirect_uri: redirectUri(),
    scope: config.scope,
    state,
    code_challenge: challenge,
    code_challenge_method: 'S256',
  }).toString();
  location.assign(url.toString());
}

/** The redirect back: check the state, redeem the code with the verifier. Returns where to go next. */
export async function completeSignIn(config: ConsoleConfig, params: URLSearchParams): Promise<string> {
  const pending = JSON.parse(sessionStorage.getItem(PENDING_KEY) ?? 'null') as { verifier: string; state: string; returnTo: string } | null;
  sessionStorage.removeItem(PENDING_KEY);
  if (params.get('error')) throw new Error(`Sign-in refused: ${params.get('error_description') ?? params.get('error')}`);
  if (!pending || params.get('state') !== pending.state) throw new Error('Sign-in answer does not match a sign-in started here; sign in again.');
  const meta = await discovery(config);
  const res = await fetch(meta.token_endpoint, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams({
      grant_type: 'authorization_code',
      code: params.get('code') ?? '',
      redirect_uri: redirectUri(),
      client_id: config.clientId!,
      code_verifier: pending.verifier,
    }).toString(),
  });
  const body = await res.json().catch(() => ({}));
  if (!res.ok || !body.access_token) throw new Error(`The token endpoint refused the code: ${body.error_description ?? body.error ?? res.status}`);
  const session = toSession(config, body.access_token, body.expires_in);
  sessionStorage.setItem(SESSION_KEY, JSON.stringify(session));
  return pending.returnTo || '';
}

function toSession(config: ConsoleConfig, token: string, expiresIn: number): Session {
  const payload = JSON.parse(atob(token.split('.')[1].replace(/-/g, '+').replace(/_/g, '/'))) as Record<string, unknown>;
  const values = Array.isArray(payload.roles) ? (payload.roles as string[]) : [];
  const roles = (['Viewer', 'Operator', 'Admin'] as Role[]).filter((r) => (config.roles[r] ?? []).some((v) => values.includes(v)));
  const user = String(payload.preferred_username ?? payload.upn ?? payload.name ?? payload.sub ?? 'signed in');
  const exp = typeof payload.exp === 'number' ? payload.exp * 1000 : Date.now() + (expiresIn ?? 3600) * 1000;
  return { token, expiresAt: exp, user, roles };
}

export function currentSession(): Session | null {
  const s = JSON.parse(sessionStorage.getItem(SESSION_KEY) ?? 'null') as Session | null;
  if (!s || s.expiresAt < Date.now() + 30_000) return null;
  return s;
}

export function signOut(): void {
  sessionStorage.removeItem(SESSION_KEY);
}

/** What a role may do, as the Admin API grants it (Viewer reads; Operator runs; Admin changes). */
export function can(session: Session | null, need: Role): boolean {
  if (!session) return false;
  const rank: Record<Role, number> = { Viewer: 1, Operator: 2, Admin: 3 };
  return session.roles.some((r) => rank[r] >= rank[need]);
}
