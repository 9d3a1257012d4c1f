import type { HttpRequest, HttpResponseInit } from '@azure/functions';

/**
 * JSON responses of the Admin API. Dates serialize as ISO 8601 UTC with milliseconds (`Date.toJSON`), and
 * every timestamp the repositories hand out is already such a string.
 */
export function json(status: number, body: unknown, headers: Record<string, string> = {}): HttpResponseInit {
  return { status, headers: { 'content-type': 'application/json; charset=utf-8', ...headers }, body: JSON.stringify(body) };
}

export const ok = (body: unknown): HttpResponseInit => json(200, body);

/** 201 with `Location` (absolute path under the API base, e.g. `/api/connectors/<id>`). */
export function created(location: string, body: unknown): HttpResponseInit {
  return json(201, body, { location });
}

/** 202 with `Location` of the resource that reports progress (a run). */
export function accepted(location: string, body: unknown): HttpResponseInit {
  return json(202, body, { location });
}

export function noContent(): HttpResponseInit {
  return { status: 204 };
}

/** The API base path (`/api`, the `routePrefix` of host.json) followed by `path`. */
export function apiPath(path: string): string {
  return `/api/${path.replace(/^\/+/, '')}`;
}

/** The request's path (for `instance` in problem details). */
export function requestPath(request: HttpRequest): string {
  try {
    return new URL(request.url).pathname;
  } catch {
    return '/';
  }
}
