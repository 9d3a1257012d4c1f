import { randomUUID } from 'node:crypto';
import type { HttpRequest, HttpResponseInit, InvocationContext } from '@azure/functions';
import { recordAudit } from '../audit';
import { authenticate, currentAuth } from '../auth/authenticate';
import type { Caller } from '../auth/permissions';
import { AppError } from '../core/errors';
import { SettingsReader } from '../core/config';
import { checkJsonDepth } from '../http/request';
import { observeRequest } from '../telemetry/http';
import { ScimError } from './errors';
import { routeScim, type ScimHooks, type ScimWrite } from './router';
import { MAX_BULK_PAYLOAD } from './schema';

/**
 * The door of the SCIM endpoint (`{base}/scim/v2/...`, docs/scim.md): off unless `Scim:Enabled` is true (every
 * path answers 404 then), Bearer (or Negotiate) authentication as the Admin API does it, then the caller must
 * carry the SCIM role value (`Scim:Role`, default the values of the Operator role) among its role claims or
 * groups. Answers are `application/scim+json`; errors are SCIM error bodies (RFC 7644 3.12), never
 * problem+json: SCIM clients read `status`, `scimType` and `detail`. Every authenticated request is audited
 * (`targetType: scimResource`): each write by its resource, a read (`read`) by its path, a refused request with
 * `outcome: failure` and the reason.
 */
export const SCIM_CONTENT_TYPE = 'application/scim+json; charset=utf-8';

export interface ScimSettings {
  enabled: boolean;
  /** The role values that open the endpoint. */
  roleValues: string[];
}

export function readScimSettings(operatorValues: readonly string[], settings = new SettingsReader()): ScimSettings {
  const role = settings.raw('Scim:Role');
  return {
    enabled: settings.bool('Scim:Enabled', false),
    roleValues: role
      ? role
          .split(',')
          .map((s) => s.trim())
          .filter(Boolean)
      : [...operatorValues],
  };
}

export type ScimHooksFactory = (caller: Caller, context: InvocationContext) => ScimHooks;

function answer(status: number, body: unknown, headers: Record<string, string> = {}): HttpResponseInit {
  const h: Record<string, string> = { 'cache-control': 'no-store', 'x-content-type-options': 'nosniff', ...headers };
  if (body === undefined) return { status, headers: h };
  return { status, headers: { ...h, 'content-type': SCIM_CONTENT_TYPE }, body: JSON.stringify(body) };
}

function errorAnswer(err: ScimError): HttpResponseInit {
  return answer(err.status, err.body(), err.headers);
}

/**
 * The part of the path after `/scim/v2/`, as segments. A client whose configured base already ends in `/scim/v2`
 * and that adds `/scim/` itself (Microsoft's inbound provisioning samples write `https://{endpoint}/scim/Users`)
 * reaches `/scim/v2/scim/Users`: that extra `scim` segment is dropped.
 */
function segmentsOf(url: URL): string[] {
  const p = url.pathname;
  const at = p.toLowerCase().indexOf('/scim/v2');
  const rest = at < 0 ? '' : p.slice(at + '/scim/v2'.length);
  const segments = rest.split('/').filter(Boolean);
  return segments.length > 1 && segments[0].toLowerCase() === 'scim' ? segments.slice(1) : segments;
}

function baseUrlOf(url: URL): string {
  const at = url.pathname.toLowerCase().indexOf('/scim/v2');
  return `${url.protocol}//${url.host}${url.pathname.slice(0, at + '/scim/v2'.length)}`;
}

async function readBody(request: HttpRequest): Promise<unknown> {
  const text = await request.text();
  if (!text.trim()) return undefined;
  if (Buffer.byteLength(text) > MAX_BULK_PAYLOAD) throw new ScimError(413, `The body exceeds ${MAX_BULK_PAYLOAD} bytes.`, 'tooMany');
  try {
    checkJsonDepth(text);
    return JSON.parse(text);
  } catch (err) {
    if (err instanceof AppError) throw new ScimError(400, err.detail, 'invalidSyntax');
    throw new ScimError(400, 'The body is not valid JSON.', 'invalidSyntax');
  }
}

/** The registered handler of every SCIM method (functions/scim.ts). */
export function scimEndpoint(hooks: ScimHooksFactory) {
  const handler = (request: HttpRequest, context: InvocationContext): Promise<HttpResponseInit> =>
    observeRequest(request, context, () => handle(request, context, hooks));
  return Object.assign(handler, { permission: 'scim' as const, rateLimit: undefined });
}

async function handle(request: HttpRequest, context: InvocationContext, hooks: ScimHooksFactory): Promise<HttpResponseInit> {
  const rt = currentAuth();
  const settings = readScimSettings(rt?.config.roles.Operator ?? []);
  if (!settings.enabled) return errorAnswer(new ScimError(404, 'The SCIM endpoint is not enabled on this service (Scim:Enabled).'));
  // Test collections written for a reference server ask it for a token first (`GET {base}/Token`) and keep
  // whatever JSON `token` the answer carries. This service issues no tokens (they come from the authority): a
  // plain-text 404, so a client keeps the token it was given instead of replacing it with nothing.
  if (segmentsOf(new URL(request.url))[0]?.toLowerCase() === 'token')
    return {
      status: 404,
      headers: { 'content-type': 'text/plain; charset=utf-8' },
      body: 'This service issues no tokens: use a bearer token from the configured authority that carries the SCIM role value (Scim:Role).',
    };
  let caller: Caller;
  try {
    if (!rt) throw new AppError('service_unavailable', 'Authentication is not initialised: the service has not finished starting.');
    const authenticated = await authenticate(request, rt);
    caller = authenticated.caller;
  } catch (err) {
    if (err instanceof AppError) return errorAnswer(new ScimError(err.status, err.detail, undefined, err.extra.headers ?? {}));
    throw err;
  }
  if (!caller.roleClaims?.some((v) => settings.roleValues.includes(v))) {
    return errorAnswer(new ScimError(403, 'The caller does not carry the role value the SCIM endpoint requires (Scim:Role).'));
  }
  const method = request.method.toUpperCase();
  const url = new URL(request.url);
  const writes: ScimWrite[] = [];
  try {
    const body = method === 'GET' || method === 'DELETE' ? undefined : await readBody(request);
    const inner = hooks(caller, context);
    const res = await routeScim(
      { method, segments: segmentsOf(url), query: url.searchParams, ifMatch: request.headers.get('if-match'), body },
      { baseUrl: baseUrlOf(url) },
      {
        settle: async (w) => {
          await inner.settle(w);
          writes.push(...w);
        },
      },
    );
    for (const w of writes) {
      const r = w.after ?? w.before!;
      await recordAudit(caller, w.action, 'scimResource', `${r.resourceType}/${r.id}`);
    }
    // Every request is audited: a read, or a write that changed nothing, by its path.
    if (!writes.length) await recordAudit(caller, auditAction(method), 'scimResource', targetOf(url));
    return answer(res.status, res.body, res.headers);
  } catch (err) {
    if (err instanceof ScimError) {
      await recordAudit(caller, auditAction(method), 'scimResource', targetOf(url), 'failure', err.detail.slice(0, 300));
      return errorAnswer(err);
    }
    const traceId = context.invocationId || randomUUID();
    context.error(`SCIM ${method} failed (traceId ${traceId}):`, err instanceof Error ? (err.stack ?? err.message) : String(err));
    return errorAnswer(new ScimError(500, `The request failed unexpectedly (traceId ${traceId}).`));
  }
}

/** The request's path below /scim/v2 with its query, as an audit target (bounded). */
function targetOf(url: URL): string {
  return ('/' + segmentsOf(url).join('/') + url.search).slice(0, 500);
}

function auditAction(method: string): 'create' | 'update' | 'delete' | 'read' {
  if (method === 'GET') return 'read';
  if (method === 'DELETE') return 'delete';
  if (method === 'POST') return 'create';
  return 'update';
}
