import { authorization } from './auth';
import { CliError, EXIT, exitCodeOfStatus } from './exitCodes';
import { fetchSameOrigin } from './fetchSameOrigin';
import { DEFAULT_URL, getProfile, profileName } from './profiles';

/** The global options every command has. */
export interface GlobalOptions {
  profile?: string;
  url?: string;
  token?: string;
  output?: 'table' | 'json' | 'yaml' | 'wide';
}

interface Problem {
  title?: string;
  status?: number;
  detail?: string;
  errors?: { path: string; message: string }[];
}

/**
 * The Admin API as the CLI sees it: JSON in and out, problem+json answers turned into a {@link CliError} that
 * carries the problem's `detail` and field `errors` and the exit code of its status. The CLI uses nothing
 * else: every command is a call a script could make.
 */
export class Api {
  private constructor(
    readonly baseUrl: string,
    private readonly auth: string | undefined,
  ) {}

  static async connect(options: GlobalOptions): Promise<Api> {
    const name = profileName(options.profile);
    const profile = getProfile(name);
    const url = options.url || process.env.MESHSYNC_URL || profile.url || DEFAULT_URL;
    return new Api(url.replace(/\/+$/, ''), await authorization(name, { ...profile, url }, options.token));
  }

  get<T = unknown>(route: string, query?: Record<string, string | number | undefined>): Promise<T> {
    return this.call<T>('GET', route, undefined, query);
  }

  post<T = unknown>(route: string, body?: unknown, query?: Record<string, string | number | boolean | undefined>): Promise<T> {
    return this.call<T>('POST', route, body, query);
  }

  put<T = unknown>(route: string, body: unknown): Promise<T> {
    return this.call<T>('PUT', route, body);
  }

  delete(route: string): Promise<unknown> {
    return this.call('DELETE', route);
  }

  /** The raw text of a route (metrics, which is not JSON). */
  async text(route: string): Promise<string> {
    const res = await this.fetch('GET', route, undefined, undefined);
    if (!res.ok) await this.fail(res, 'GET', route);
    return res.text();
  }

  async call<T>(method: string, route: string, body?: unknown, query?: Record<string, string | number | boolean | undefined>): Promise<T> {
    const res = await this.fetch(method, route, body, query);
    if (!res.ok) await this.fail(res, method, route);
    if (res.status === 204) return undefined as T;
    const text = await res.text();
    return (text ? JSON.parse(text) : undefined) as T;
  }

  private async fetch(
    method: string,
    route: string,
    body: unknown,
    query: Record<string, string | number | boolean | undefined> | undefined,
  ): Promise<Response> {
    const url = new URL(`${this.baseUrl}/${route.replace(/^\/+/, '')}`);
    for (const [k, v] of Object.entries(query ?? {})) if (v !== undefined && v !== '') url.searchParams.set(k, String(v));
    const headers: Record<string, string> = { accept: 'application/json, application/problem+json' };
    if (this.auth) headers.authorization = this.auth;
    if (body !== undefined) headers['content-type'] = 'application/json';
    try {
      // Never follows a redirect to another origin: the body may hold connector secrets, the header a token.
      return await fetchSameOrigin(url, { method, headers, body: body === undefined ? undefined : JSON.stringify(body), signal: AbortSignal.timeout(120_000) });
    } catch (err) {
      if (err instanceof CliError) throw err;
      const c = (err as { cause?: { code?: string; message?: string } }).cause;
      const cause = c?.code ?? c?.message ?? (err as Error).message;
      throw new CliError(
        `The service at ${this.baseUrl} could not be reached (${cause}). Is it running (npm start), and is --url or the profile's url right?`,
        EXIT.unavailable,
      );
    }
  }

  private async fail(res: Response, method: string, route: string): Promise<never> {
    let problem: Problem = {};
    try {
      problem = (await res.json()) as Problem;
    } catch {
      // a body that is not JSON: the status says enough
    }
    const what = problem.detail || problem.title || res.statusText || 'request failed';
    const details = (problem.errors ?? []).map((e) => `  ${e.path}: ${e.message}`);
    let hint = '';
    if (res.status === 401)
      hint = this.auth ? ' (the token was refused: sign in again with meshsync login)' : ' (not signed in: meshsync login, --token or MESHSYNC_TOKEN)';
    throw new CliError(`${method} /${route.replace(/^\/+/, '')}: ${res.status} ${what}${hint}`, exitCodeOfStatus(res.status), details);
  }
}
