import { currentSession } from './auth';

export class ApiError extends Error {
  constructor(
    readonly status: number,
    message: string,
    readonly errors: { path: string; message: string }[] = [],
  ) {
    super(message);
  }
}

let apiBase = '/api';
let onUnauthorized: () => void = () => undefined;

export function configureApi(base: string, unauthorized: () => void): void {
  apiBase = base.replace(/\/+$/, '');
  onUnauthorized = unauthorized;
}

export type Query = Record<string, string | number | boolean | undefined | null>;

/** One Admin API call with the user's token; a problem+json answer becomes an ApiError with its detail. */
export async function api<T = unknown>(method: string, path: string, opts: { query?: Query; body?: unknown } = {}): Promise<T> {
  const url = new URL(`${apiBase}/${path}`, location.origin);
  for (const [k, v] of Object.entries(opts.query ?? {})) if (v !== undefined && v !== null && v !== '') url.searchParams.set(k, String(v));
  const session = currentSession();
  const headers: Record<string, string> = { accept: 'application/json' };
  if (session) headers.authorization = `Bearer ${session.token}`;
  if (opts.body !== undefined) headers['content-type'] = 'application/json';
  const res = await fetch(url, { method, headers, body: opts.body === undefined ? undefined : JSON.stringify(opts.body) });
  if (res.status === 401) onUnauthorized();
  if (res.status === 204) return undefined as T;
  const text = await res.text();
  const body = text ? JSON.parse(text) : undefined;
  if (!res.ok) throw new ApiError(res.status, body?.detail ?? `${method} ${path}: ${res.status}`, body?.errors ?? []);
  return body as T;
}

export interface Page<T> {
  items: T[];
  totalCount: number;
}
