import type { HttpRequest } from '@azure/functions';
import type { JwtPayload } from 'jsonwebtoken';
import { AppError } from '../core/errors';
import type { AuthConfig } from './authConfig';
import { DirectoryUnavailableError, type DirectoryGroups } from './directory';
import { SigningKeysUnavailableError, TokenRejectedError, type JwtValidator } from './jwt';
import type { AuthLogger } from './log';
import { NegotiateFailedError, type NegotiateAuthenticator } from './negotiate';
import type { Caller } from './permissions';
import { bearerPrincipal, negotiatePrincipal, parseUpnRealms } from '../core/principal';
import type { FixedWindowLimiter } from './rateLimit';
import { resolveRoles } from './roles';

/** Everything the request path needs, built once by `startAuth()` (lib/auth/authService.ts). */
export interface AuthRuntime {
  config: AuthConfig;
  /** Present when the Bearer scheme is enabled. */
  jwt?: JwtValidator;
  /** Present when Negotiate is enabled and available on this machine. */
  negotiate?: NegotiateAuthenticator;
  directory?: DirectoryGroups;
  sensitive?: FixedWindowLimiter;
  general?: FixedWindowLimiter;
  log: AuthLogger;
}

let current: AuthRuntime | undefined;

export function installAuth(runtime: AuthRuntime | undefined): void {
  current = runtime;
}

export function currentAuth(): AuthRuntime | undefined {
  return current;
}

export interface Authenticated {
  caller: Caller;
  /** Headers to add to the successful response (the Negotiate mutual-authentication token). */
  headers: Record<string, string>;
}

/**
 * The scheme selector of spec 5.1/5.2: a request carrying `Authorization: Bearer` is validated as a token,
 * any other request goes through Negotiate. Throws AppError: 401 with `WWW-Authenticate` naming every
 * enabled scheme (Bearer with `error="invalid_token"` when a token was refused), 503 when the token issuer's
 * keys or the directory are out of reach, 503 when no scheme at all is available.
 */
export async function authenticate(request: HttpRequest, rt: AuthRuntime): Promise<Authenticated> {
  if (!rt.jwt && !rt.negotiate) {
    throw new AppError('service_unavailable', 'No authentication scheme is available on this service; see the service log.');
  }
  const header = request.headers.get('authorization') ?? '';
  const bearer = /^Bearer\s+(\S+)\s*$/i.exec(header);
  if (bearer) {
    if (!rt.jwt) throw unauthenticated(rt, 'Bearer tokens are not accepted by this service.');
    return { caller: await bearerCaller(bearer[1], rt), headers: {} };
  }
  const negotiate = /^Negotiate\s+(\S+)\s*$/i.exec(header);
  if (negotiate && rt.negotiate) return negotiateCaller(negotiate[1], rt.negotiate, rt);
  if (!header) throw unauthenticated(rt, 'No credentials were supplied.');
  throw unauthenticated(rt, 'The Authorization scheme is not accepted by this service.');
}

async function bearerCaller(token: string, rt: AuthRuntime): Promise<Caller> {
  let claims: JwtPayload;
  try {
    claims = await rt.jwt!.validate(token);
  } catch (err) {
    if (err instanceof TokenRejectedError) {
      rt.log('info', `Bearer token refused: ${err.message}`);
      throw unauthenticated(rt, `${err.failure}: ${err.description}`, err.description);
    }
    if (err instanceof SigningKeysUnavailableError) {
      throw new AppError('service_unavailable', 'The token issuer cannot be reached to obtain its signing keys; try again later.', {
        headers: { 'retry-after': '30' },
      });
    }
    throw err;
  }
  const str = (v: unknown) => (typeof v === 'string' && v ? v : null);
  const strings = (v: unknown) => (Array.isArray(v) ? v.filter((x): x is string => typeof x === 'string') : typeof v === 'string' ? [v] : []);
  const upn = str(claims.upn) ?? str(claims.preferred_username);
  const name = str(claims.preferred_username) ?? str(claims.upn) ?? str(claims.sub) ?? str(claims.oid) ?? 'unknown';
  const principal = bearerPrincipal(claims);
  return {
    scheme: 'Bearer',
    name,
    // An application has no UPN: its audit records name it by its application id.
    upn: principal.kind === 'application' ? (upn ?? principal.display) : upn,
    sid: str(claims.oid),
    roles: resolveRoles(rt.config.roles, { roleClaims: strings(claims.roles), groupIds: strings(claims.groups) }),
    roleClaims: [...strings(claims.roles), ...strings(claims.groups)],
    principal,
  };
}

async function negotiateCaller(token: string, negotiate: NegotiateAuthenticator, rt: AuthRuntime): Promise<Authenticated> {
  let outcome;
  try {
    outcome = await negotiate.accept(token);
  } catch (err) {
    if (err instanceof NegotiateFailedError) {
      rt.log('info', `Negotiate refused: ${err.message}`);
      throw unauthenticated(rt, 'The Negotiate token was refused.');
    }
    throw err;
  }
  if (!outcome.complete) {
    // Another leg would be needed (NTLM); the challenge carries the server's token, as HTTP Negotiate does.
    const challenge = outcome.outputToken ? `Negotiate ${outcome.outputToken}` : 'Negotiate';
    throw new AppError('unauthenticated', 'The Negotiate exchange needs another leg, which this service does not support (use Kerberos).', {
      headers: { 'www-authenticate': challenge },
    });
  }
  let directory;
  try {
    directory = rt.directory ? await rt.directory.lookup(outcome.principal) : { groups: [], sid: null, upn: null };
  } catch (err) {
    if (err instanceof DirectoryUnavailableError) {
      rt.log('warn', `Negotiate: ${err.message}`);
      throw new AppError('service_unavailable', "The directory cannot be reached to resolve the caller's groups; try again later.", {
        headers: { 'retry-after': '30' },
      });
    }
    throw err;
  }
  const caller: Caller = {
    scheme: 'Negotiate',
    name: outcome.principal,
    upn: directory.upn ?? outcome.principal,
    sid: directory.sid,
    roles: resolveRoles(rt.config.roles, { roleClaims: directory.groups }),
    roleClaims: directory.groups,
    principal: negotiatePrincipal(outcome.principal, directory, parseUpnRealms(rt.config.negotiate.upnRealms)),
  };
  return { caller, headers: outcome.outputToken ? { 'www-authenticate': `Negotiate ${outcome.outputToken}` } : {} };
}

/** The `WWW-Authenticate` value naming every enabled scheme (contract: conventions). */
export function challenges(rt: AuthRuntime, bearerError?: string): string {
  const parts: string[] = [];
  if (rt.negotiate) parts.push('Negotiate');
  if (rt.jwt) {
    parts.push(bearerError === undefined ? 'Bearer' : `Bearer error="invalid_token", error_description="${bearerError.replace(/["\\\r\n]/g, "'")}"`);
  }
  return parts.join(', ');
}

function unauthenticated(rt: AuthRuntime, detail: string, bearerError?: string): AppError {
  return new AppError('unauthenticated', detail, { headers: { 'www-authenticate': challenges(rt, bearerError) } });
}
