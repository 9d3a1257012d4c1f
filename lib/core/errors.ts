import { randomUUID } from 'node:crypto';
import type { HttpResponseInit } from '@azure/functions';

/**
 * The one catalog of error codes the API can answer with. Each code has its HTTP status and a title; the
 * `detail` of an AppError is always safe to show (it is written for the caller). Anything that is not an
 * AppError becomes `internal` with a generic detail: its message is logged, never shown.
 */
export const ERROR_CATALOG = {
  validation_failed: { status: 400, title: 'Invalid request parameters' },
  malformed_json: { status: 400, title: 'Malformed JSON body' },
  unsupported_media_type: { status: 415, title: 'Unsupported media type' },
  unauthenticated: { status: 401, title: 'Authentication failed' },
  forbidden: { status: 403, title: 'Forbidden' },
  not_found: { status: 404, title: 'Resource does not exist' },
  method_not_allowed: { status: 405, title: 'Method not allowed' },
  conflict: { status: 409, title: 'Conflict' },
  precondition_failed: { status: 412, title: 'Precondition failed' },
  payload_too_large: { status: 413, title: 'Payload too large' },
  rate_limited: { status: 429, title: 'Too many requests' },
  internal: { status: 500, title: 'Internal server error' },
  service_unavailable: { status: 503, title: 'Service unavailable' },
} as const;

export type ErrorCode = keyof typeof ERROR_CATALOG;

export interface FieldError {
  /** JSON pointer of the offending field (`/config/port`), or the query parameter name (`take`). */
  path: string;
  message: string;
}

export class AppError extends Error {
  readonly status: number;
  constructor(
    readonly code: ErrorCode,
    /** Shown to the caller as `detail`: never put a secret or an internal name here. */
    readonly detail: string,
    /** `members`: RFC 9457 extension members (counts a client acts on), shown next to `detail`. */
    readonly extra: { errors?: FieldError[]; headers?: Record<string, string>; members?: Record<string, unknown> } = {},
  ) {
    super(detail);
    this.name = 'AppError';
    this.status = ERROR_CATALOG[code].status;
  }
}

export const badRequest = (detail: string, errors?: FieldError[]) => new AppError('validation_failed', detail, { errors });
export const notFound = (detail: string) => new AppError('not_found', detail);
export const conflict = (detail: string) => new AppError('conflict', detail);

export interface ProblemDetails {
  type: string;
  title: string;
  status: number;
  detail: string;
  instance: string;
  traceId: string;
  code: ErrorCode;
  errors?: FieldError[];
  [member: string]: unknown;
}

/** RFC 9457 body for an error. `instance` is the request path; `traceId` correlates with the logs. */
export function toProblem(err: unknown, instance: string, traceId: string = randomUUID()): { problem: ProblemDetails; headers: Record<string, string> } {
  const app = err instanceof AppError ? err : undefined;
  const code: ErrorCode = app?.code ?? 'internal';
  const entry = ERROR_CATALOG[code];
  const problem: ProblemDetails = {
    type: `https://httpstatuses.io/${entry.status}`,
    title: entry.title,
    status: entry.status,
    detail: app?.detail ?? 'An unexpected error occurred. The trace id identifies it in the service log.',
    instance,
    traceId,
    code,
  };
  if (app?.extra.members) for (const [k, v] of Object.entries(app.extra.members)) if (!(k in problem)) problem[k] = v;
  if (app?.extra.errors?.length) problem.errors = app.extra.errors;
  return { problem, headers: { ...(app?.extra.headers ?? {}) } };
}

export function problemResponse(err: unknown, instance: string, traceId?: string): HttpResponseInit {
  const { problem, headers } = toProblem(err, instance, traceId);
  return {
    status: problem.status,
    headers: { 'content-type': 'application/problem+json', ...headers },
    body: JSON.stringify(problem),
  };
}
