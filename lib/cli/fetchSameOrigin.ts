import { CliError, EXIT } from './exitCodes';

/** Most redirects followed within the origin before giving up. */
const MAX_REDIRECTS = 5;
const REDIRECTS = new Set([301, 302, 303, 307, 308]);

/**
 * fetch() that follows redirects only within the origin it was asked for. A redirect to another origin (host,
 * port or scheme) is refused with a CliError, so neither the request body (which may hold connector secrets)
 * nor the Authorization header nor a client secret ever goes to a host the operator did not name. Within the
 * origin, 307/308 repeat the method and body, 301/302/303 become a GET without body (as browsers do).
 */
export async function fetchSameOrigin(url: URL | string, init: RequestInit, what = 'The service'): Promise<Response> {
  let current = new URL(url);
  const origin = current.origin;
  let request: RequestInit = { ...init, redirect: 'manual' };
  for (let hop = 0; ; hop++) {
    const res = await fetch(current, request);
    if (!REDIRECTS.has(res.status)) return res;
    const location = res.headers.get('location');
    await res.body?.cancel().catch(() => undefined);
    if (!location) return res;
    const next = new URL(location, current);
    if (next.origin !== origin) {
      throw new CliError(
        `${what} at ${origin} answered ${res.status} redirecting to another origin (${next.origin}): not followed, so the request and its credentials are not sent there. Point --url (or the profile's url) at the service itself.`,
        EXIT.unavailable,
      );
    }
    if (hop >= MAX_REDIRECTS)
      throw new CliError(`${what} at ${origin} redirected more than ${MAX_REDIRECTS} times (last to ${next.pathname}).`, EXIT.unavailable);
    if (res.status === 301 || res.status === 302 || res.status === 303) {
      const headers = new Headers(request.headers);
      headers.delete('content-type');
      request = { ...request, method: request.method === 'HEAD' ? 'HEAD' : 'GET', body: undefined, headers };
    }
    current = next;
  }
}
