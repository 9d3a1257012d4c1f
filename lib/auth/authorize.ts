import type { HttpHandler, HttpRequest, HttpResponseInit, InvocationContext } from '@azure/functions';
import type { Caller, Permission } from './permissions';

/**
 * The one door of every Admin API route: authenticate (Bearer or Negotiate), resolve roles, check the
 * permission, apply the rate-limit policy, run the handler, and render any error as problem+json.
 *
 * CONTRACT (implemented by the caller-authentication work; handlers are written against it):
 * - `authorize(permission, handler, { rateLimit: 'sensitive' })` returns an HttpHandler carrying
 *   `permission` and `rateLimit` as properties, so a test can read them off every registered route.
 * - The handler receives the authenticated `Caller`; errors it throws (AppError or anything) become
 *   problem+json through `problemResponse` in lib/errors.ts.
 * - `anonymous(handler)` is the same boundary without authentication (health, openapi).
 */
export type AuthorizedHandler = (request: HttpRequest, context: InvocationContext, caller: Caller) => Promise<HttpResponseInit>;
export type AnonymousHandler = (request: HttpRequest, context: InvocationContext) => Promise<HttpResponseInit>;

export interface AuthorizeOptions {
  rateLimit?: 'sensitive';
}

export type GuardedHandler = HttpHandler & { permission: Permission | 'anonymous'; rateLimit?: 'sensitive' };

export declare function authorize(permission: Permission, handler: AuthorizedHandler, options?: AuthorizeOptions): GuardedHandler;
export declare function anonymous(handler: AnonymousHandler): GuardedHandler;
