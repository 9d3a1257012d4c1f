import { randomUUID } from 'node:crypto';
import type { HttpHandler, HttpRequest, HttpResponseInit, InvocationContext } from '@azure/functions';
import { AppError, problemResponse } from '../core/errors';
import { observeRequest } from '../telemetry/http';
import { activeTraceId } from '../telemetry/tracing';
import { authenticate, currentAuth } from './authenticate';
import { roleHasPermission, type Caller, type Permission } from './permissions';

/**
 * The one door of every Admin API route: authenticate (Bearer or Negotiate), resolve roles, check the
 * permission, apply the rate-limit policy, run the handler, and render any error as problem+json.
 *
 * CONTRACT (implemented by the caller-authentication work; handlers are written against it):
 * - `authorize(permission, handler, { rateLimit: 'sensitive' })` returns an HttpHandler carrying
 *   `permission` and `rateLimit` as properties, so a test can read them off every registered route.
 * - The handler receives the authenticated `Caller`; errors it throws (AppError or anything) become
 *   problem+json through `problemResponse` in lib/core/errors.ts.
 * - `anonymous(handler)` is the same boundary without authentication (health, openapi).
 * - `anonymousWhen`: a setting that opens the route to anonymous callers when true (read per request; the
 *   route keeps its permission for everyone else).
 * - Every answer is measured (`meshsync_http_request_duration_seconds`) and, with tracing on, made inside a
 *   server span whose trace id is the problem's `traceId` (lib/telemetry).
 *
 * Order: authenticate (401/503), permission (403), rate limit (429 with Retry-After), handler. The
 * `sensitive` policy counts per identity name; every other authorized route counts against the general
 * policy when `RateLimiting__General__Enabled` is true.
 */
export type AuthorizedHandler = (request: HttpRequest, context: InvocationContext, caller: Caller) => Promise<HttpResponseInit>;
export type AnonymousHandler = (request: HttpRequest, context: InvocationContext) => Promise<HttpResponseInit>;

export interface AuthorizeOptions {
  rateLimit?: 'sensitive';
  /** When this answers true, the route needs no authentication (such as `Metrics:AllowAnonymous`). */
  anonymousWhen?: () => boolean;
}

export type GuardedHandler = HttpHandler & { permission: Permission | 'anonymous'; rateLimit?: 'sensitive' };

export function authorize(permission: Permission, handler: AuthorizedHandler, options: AuthorizeOptions = {}): GuardedHandler {
  const guarded = (request: HttpRequest, context: InvocationContext): Promise<HttpResponseInit> =>
    observeRequest(request, context, () => authorized(request, context));
  const authorized = async (request: HttpRequest, context: InvocationContext): Promise<HttpResponseInit> => {
    try {
      if (options.anonymousWhen?.()) return withApiHeaders(await handler(request, context, ANONYMOUS_CALLER));
      const rt = currentAuth();
      if (!rt) throw new AppError('service_unavailable', 'Authentication is not initialised: the service has not finished starting.');
      const { caller, headers } = await authenticate(request, rt);
      if (!caller.roles.some((role) => roleHasPermission(role, permission))) {
        throw new AppError('forbidden', `The caller's role does not grant the permission '${permission}' this operation requires.`);
      }
      const limiter = options.rateLimit === 'sensitive' ? rt.sensitive : rt.general;
      const decision = limiter?.take(caller.name);
      if (decision && !decision.allowed) {
        throw new AppError('rate_limited', `Rate limit exceeded for '${caller.name}'; retry after ${decision.retryAfterSeconds} s.`, {
          headers: { 'retry-after': String(decision.retryAfterSeconds) },
        });
      }
      return withApiHeaders(withHeaders(await handler(request, context, caller), headers));
    } catch (err) {
      return withApiHeaders(renderError(err, request, context));
    }
  };
  return Object.assign(guarded, { permission, rateLimit: options.rateLimit });
}

/** The caller a route opened to anonymous callers by `anonymousWhen` sees: no identity, no role. */
const ANONYMOUS_CALLER: Caller = Object.freeze({
  scheme: 'Bearer',
  name: 'anonymous',
  upn: null,
  sid: null,
  roles: [],
  principal: { key: 'anonymous', kind: 'application', aliases: ['anonymous'], display: 'anonymous' },
}) as Caller;

export function anonymous(handler: AnonymousHandler): GuardedHandler {
  const guarded = (request: HttpRequest, context: InvocationContext): Promise<HttpResponseInit> =>
    observeRequest(request, context, () => answer(request, context));
  const answer = async (request: HttpRequest, context: InvocationContext): Promise<HttpResponseInit> => {
    try {
      return withApiHeaders(await handler(request, context));
    } catch (err) {
      return withApiHeaders(renderError(err, request, context));
    }
  };
  return Object.assign(guarded, { permission: 'anonymous' as const, rateLimit: undefined });
}

function renderError(err: unknown, request: HttpRequest, context: InvocationContext): HttpResponseInit {
  // With tracing on, the id of the request's trace; else the invocation's id (one per request).
  const traceId = activeTraceId() ?? (context.invocationId || randomUUID());
  // Only what is not an AppError is unexpected; its message goes to the log, never to the caller.
  if (!(err instanceof AppError)) context.error(`Unhandled error (traceId ${traceId}):`, err instanceof Error ? (err.stack ?? err.message) : String(err));
  return problemResponse(err, pathOf(request), traceId);
}

function pathOf(request: HttpRequest): string {
  try {
    return new URL(request.url).pathname;
  } catch {
    return '/';
  }
}

/**
 * On every answer of the API, success or problem+json, anonymous routes included: answers carry identities,
 * configuration and audit records, so no cache (browser or proxy) keeps them, and no browser guesses a type
 * other than the declared one. A handler that sets its own Cache-Control keeps it.
 */
const API_HEADERS: Record<string, string> = { 'x-content-type-options': 'nosniff', 'cache-control': 'no-store' };

function withApiHeaders(response: HttpResponseInit): HttpResponseInit {
  return withHeaders(response, API_HEADERS);
}

function withHeaders(response: HttpResponseInit, extra: Record<string, string>): HttpResponseInit {
  if (!Object.keys(extra).length) return response;
  const headers = new Headers(response.headers as ConstructorParameters<typeof Headers>[0]);
  for (const [k, v] of Object.entries(extra)) if (!headers.has(k)) headers.set(k, v);
  return { ...response, headers: Object.fromEntries(headers.entries()) };
}
