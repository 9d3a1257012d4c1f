import { HttpRequest, InvocationContext, type HttpResponseInit } from '@azure/functions';
import { SettingsReader } from '../../../lib/core/config';
import { authorize, type AuthorizeOptions } from '../../../lib/auth/authorize';
import type { Caller, Permission } from '../../../lib/auth/permissions';
import type { AuthLogger } from '../../../lib/auth/log';

/** Settings as the Functions host would hand them over (environment variables), nothing else. */
export const settings = (env: Record<string, string>) => new SettingsReader(env);

/** A logger that keeps the lines, so tests can assert on what the service logs. */
export function memoryLog(): AuthLogger & { lines: string[] } {
  const lines: string[] = [];
  const log = ((level, message) => {
    lines.push(`${level}: ${message}`);
  }) as AuthLogger & { lines: string[] };
  log.lines = lines;
  return log;
}

export interface Answer {
  status: number;
  headers: Record<string, string>;
  body: Record<string, unknown>;
}

/** Call a guarded echo handler the way the Functions host would, and read back status, headers and JSON body. */
export async function call(permission: Permission, headers: Record<string, string>, options: AuthorizeOptions = {}): Promise<Answer> {
  const handler = authorize(permission, async (_req, _ctx, caller: Caller) => ({ status: 200, jsonBody: caller }), options);
  const request = new HttpRequest({ method: 'GET', url: 'http://localhost/api/probe', headers });
  const res = (await handler(request, new InvocationContext({ invocationId: 'test-invocation' }))) as HttpResponseInit;
  const h: Record<string, string> = {};
  for (const [k, v] of Object.entries((res.headers ?? {}) as Record<string, string>)) h[k.toLowerCase()] = v;
  const body = res.jsonBody ?? (typeof res.body === 'string' ? JSON.parse(res.body) : {});
  return { status: res.status ?? 200, headers: h, body };
}

export const bearer = (token: string) => ({ authorization: `Bearer ${token}` });
