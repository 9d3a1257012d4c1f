import { ConnectorError, redactSecrets } from '../sdk';
import { isRetriableStatus, retryDelayMs } from './backoff';
import type { ScimConfig } from './schema';

/**
 * HTTP to one SCIM server: the credential (a static bearer token, or an OAuth 2.0 client credentials token
 * fetched and kept until shortly before it expires), a timeout per request, retries of 429 and 503 (after
 * `Retry-After`, else jittered exponential backoff; `maxRetries` at most), and errors as ConnectorErrors whose
 * messages never carry a secret. A SCIM error body's `detail` is quoted (shortened, secrets removed): it is
 * what says why the server refused.
 */
export interface ScimResponse {
  status: number;
  headers: Headers;
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  body: any;
}

export interface RequestOptions {
  query?: Record<string, string | number | undefined>;
  body?: unknown;
  headers?: Record<string, string>;
  signal?: AbortSignal;
}

/** The server's words about a failure: `detail` (and `scimType`) of a SCIM error body, shortened. */
function detailOf(body: unknown): string {
  if (!body || typeof body !== 'object') return '';
  const b = body as { detail?: unknown; scimType?: unknown; error?: unknown; error_description?: unknown };
  const text = [b.scimType, b.detail ?? b.error_description ?? b.error].filter((x) => typeof x === 'string' && x).join(': ');
  return text.length > 300 ? text.slice(0, 300) + '...' : text;
}

function sleep(ms: number, signal: AbortSignal | undefined): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) return reject(new ConnectorError('aborted', 'The operation was cancelled.'));
    const timer = setTimeout(() => {
      signal?.removeEventListener('abort', onAbort);
      resolve();
    }, ms);
    const onAbort = () => {
      clearTimeout(timer);
      reject(new ConnectorError('aborted', 'The operation was cancelled.'));
    };
    signal?.addEventListener('abort', onAbort, { once: true });
  });
}

export class ScimClient {
  private accessToken: { value: string; until: number } | undefined;
  /** Requests sent (retries included), for the bench and the run's notes. */
  requests = 0;
  readonly base: string;

  constructor(
    private readonly config: ScimConfig,
    private readonly random: () => number = Math.random,
  ) {
    this.base = config.baseUrl.replace(/\/+$/, '');
  }

  private get timeoutMs(): number {
    return (this.config.timeoutSeconds ?? 30) * 1000;
  }

  private get secrets(): string[] {
    return [this.config.auth.token, this.config.auth.clientSecret, this.accessToken?.value].filter((s): s is string => !!s);
  }

  /** A message safe to show: the secrets (and the token in use) removed. */
  safe(message: string): string {
    return redactSecrets(message, this.secrets);
  }

  private async bearer(signal: AbortSignal | undefined, renew = false): Promise<string> {
    const a = this.config.auth;
    if (a.type === 'bearer') return a.token ?? '';
    if (!renew && this.accessToken && this.accessToken.until > Date.now()) return this.accessToken.value;
    const form = new URLSearchParams({ grant_type: 'client_credentials' });
    if (a.scope) form.set('scope', a.scope);
    const basic = Buffer.from(`${encodeURIComponent(a.clientId ?? '')}:${encodeURIComponent(a.clientSecret ?? '')}`).toString('base64');
    const res = await this.fetch(a.tokenUrl ?? '', {
      method: 'POST',
      headers: { authorization: `Basic ${basic}`, 'content-type': 'application/x-www-form-urlencoded', accept: 'application/json' },
      body: form.toString(),
      signal,
      what: 'the token endpoint (auth.tokenUrl)',
    });
    const body = (await res.json().catch(() => undefined)) as { access_token?: unknown; expires_in?: unknown } | undefined;
    if (res.status === 400 || res.status === 401) {
      throw new ConnectorError(
        'authentication_failed',
        this.safe(`The token endpoint (auth.tokenUrl) refused the client credentials (HTTP ${res.status}${detailOf(body) ? `: ${detailOf(body)}` : ''}).`),
        { retriable: false },
      );
    }
    if (!res.ok || typeof body?.access_token !== 'string') {
      throw new ConnectorError('connection_failed', `The token endpoint (auth.tokenUrl) answered HTTP ${res.status} without an access token.`);
    }
    const seconds = typeof body.expires_in === 'number' ? body.expires_in : 300;
    // Renewed a minute early (or half-way for short-lived tokens): a token must not expire in flight.
    this.accessToken = { value: body.access_token, until: Date.now() + Math.max(seconds - 60, seconds / 2) * 1000 };
    return body.access_token;
  }

  /** fetch with the timeout and the caller's signal; network failures as ConnectorErrors. */
  private async fetch(
    url: string,
    init: { method: string; headers: Record<string, string>; body?: string; signal?: AbortSignal; what: string },
  ): Promise<Response> {
    const signals = [AbortSignal.timeout(this.timeoutMs), ...(init.signal ? [init.signal] : [])];
    this.requests++;
    try {
      return await fetch(url, { method: init.method, headers: init.headers, body: init.body, signal: AbortSignal.any(signals), redirect: 'error' });
    } catch (err) {
      if (init.signal?.aborted) throw new ConnectorError('aborted', 'The operation was cancelled.');
      const e = err as Error & { cause?: { code?: string } };
      if (e.name === 'TimeoutError')
        throw new ConnectorError('timeout', `${init.what} did not answer within ${this.timeoutMs / 1000} s (timeoutSeconds).`, { cause: err });
      if (/redirect/i.test(String((e.cause as Error | undefined)?.message)))
        throw new ConnectorError(
          'configuration_invalid',
          `${init.what} answered with a redirect, which is not followed (the token would go along): set the URL it redirects to.`,
          {
            retriable: false,
          },
        );
      const code = e.cause?.code ? ` (${e.cause.code})` : '';
      throw new ConnectorError('connection_failed', this.safe(`${init.what} could not be reached${code}: ${url.replace(/\?.*$/, '')}.`), { cause: err });
    }
  }

  /**
   * The URL of `path` below baseUrl, with `query`. Never another origin: the token goes only where baseUrl says
   * (a `Location` or `meta.location` the server gives is not followed).
   */
  url(path: string, query: RequestOptions['query'] = {}): string {
    const u = new URL(this.base + (path.startsWith('/') ? path : '/' + path));
    for (const [k, v] of Object.entries(query)) if (v !== undefined) u.searchParams.set(k, String(v));
    return u.toString();
  }

  /**
   * One SCIM request: JSON in, JSON out (`body` undefined for an empty answer). Retries 429 and 503 up to
   * `maxRetries`; with OAuth, a 401 renews the token once. Any other status is returned as is: the caller
   * decides what it means (404 on a delete is success, 409 on an add is a collision).
   */
  async request(method: string, path: string, options: RequestOptions = {}): Promise<ScimResponse> {
    const maxRetries = this.config.maxRetries ?? 4;
    let renewed = false;
    for (let attempt = 0; ; attempt++) {
      const headers: Record<string, string> = {
        accept: 'application/scim+json, application/json',
        authorization: `Bearer ${await this.bearer(options.signal)}`,
        ...(options.body !== undefined ? { 'content-type': 'application/scim+json' } : {}),
        ...(options.headers ?? {}),
      };
      const res = await this.fetch(this.url(path, options.query), {
        method,
        headers,
        body: options.body === undefined ? undefined : JSON.stringify(options.body),
        signal: options.signal,
        what: 'The SCIM server',
      });
      const text = await res.text();
      let body: unknown;
      try {
        body = text ? JSON.parse(text) : undefined;
      } catch {
        body = undefined;
      }
      if (res.status === 401 && this.config.auth.type === 'oauthClientCredentials' && !renewed) {
        renewed = true;
        await this.bearer(options.signal, true);
        continue;
      }
      if (isRetriableStatus(res.status) && attempt < maxRetries) {
        await sleep(retryDelayMs(attempt + 1, res.headers.get('retry-after'), Date.now(), this.random()), options.signal);
        continue;
      }
      return { status: res.status, headers: res.headers, body };
    }
  }

  /**
   * A ConnectorError for an answer that is not what the operation needs. 401/403: authentication_failed; 429/503
   * after the retries: connection_failed (retriable); 404 of a resource: not_found; 409: already_exists; other
   * 4xx: object_error (the server refused this object); 5xx: connection_failed.
   */
  failure(res: ScimResponse, what: string, options: { anchor?: string } = {}): ConnectorError {
    const detail = detailOf(res.body);
    const text = this.safe(`${what}: the SCIM server answered HTTP ${res.status}${detail ? ` (${detail})` : ''}.`);
    const anchor = options.anchor === undefined ? {} : { anchor: options.anchor };
    if (res.status === 401 || res.status === 403) {
      const why =
        res.status === 401 ? 'refused the credentials (auth)' : 'refused access with these credentials (auth): the token lacks a role or scope it needs';
      return new ConnectorError('authentication_failed', this.safe(`${what}: the SCIM server ${why} (HTTP ${res.status}${detail ? `: ${detail}` : ''}).`), {
        retriable: false,
      });
    }
    if (isRetriableStatus(res.status))
      return new ConnectorError('connection_failed', `${text} It was retried ${this.config.maxRetries ?? 4} times.`, { retriable: true, ...anchor });
    if (res.status === 404) return new ConnectorError('not_found', text, { retriable: false, ...anchor });
    if (res.status === 409) return new ConnectorError('already_exists', text, { retriable: false, ...anchor });
    if (res.status >= 400 && res.status < 500) return new ConnectorError('object_error', text, { retriable: false, ...anchor });
    return new ConnectorError('connection_failed', text, { retriable: true, ...anchor });
  }
}
