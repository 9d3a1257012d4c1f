import { randomUUID } from 'node:crypto';
import http, { type IncomingHttpHeaders, type IncomingMessage, type OutgoingHttpHeaders, type ServerResponse } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import { Transform, type Readable } from 'node:stream';
import type { RpcHttpData, RpcInvocationRequest, RpcTypedData } from './coreTypes';
import type { AdminAuthorization, RuntimeExtension } from './extension';
import type { InvocationOutcome } from './invoke';
import type { Logger } from './logger';
import type { FunctionRegistry, RegisteredFunction } from './registry';
import { RouteTable } from './routes';

/** Reason the Functions host gives for HTTP-triggered invocations. */
export const HTTP_REASON = 'This function was programmatically called via the host APIs.';

/** The response of one HTTP function invocation, before it is written to the caller. */
export interface HttpResult {
  status: number;
  headers: OutgoingHttpHeaders;
  body: Buffer | Readable;
  invocationId?: string;
}

export interface HttpHostOptions {
  registry: FunctionRegistry;
  logger: Logger;
  /** host.json extensions.http.routePrefix ("" allowed). */
  routePrefix: string;
  /** Largest request body accepted, in bytes. */
  bodyLimit: number;
  /** Invoke through the host (Executing/Executed lines, extension input bindings). */
  invoke(fn: RegisteredFunction, request: RpcInvocationRequest, reason: string): Promise<InvocationOutcome>;
  extensions: RuntimeExtension[];
  /** The programming model's HttpUri capability: when set, HTTP invocations are proxied to it (streaming). */
  httpUri?: string;
  /** host.json localRuntime.adminAuthorizationFunction. */
  adminAuthorizationFunction?: string;
  /**
   * How long a request whose forward to the library's HTTP server failed waits for its invocation to settle
   * before it is answered 502 and the invocation is abandoned (default 5000 ms).
   */
  forwardGraceMs?: number;
}

/** Default of HttpHostOptions.forwardGraceMs. */
export const FORWARD_GRACE_MS = 5000;

/** How long a connection refused with 413 lingers (discarding input) before it is destroyed. */
const LINGER_MS = 2000;

const HOP_BY_HOP = new Set([
  'connection',
  'keep-alive',
  'proxy-authenticate',
  'proxy-authorization',
  'te',
  'trailer',
  'trailers',
  'transfer-encoding',
  'upgrade',
]);

class BodyTooLargeError extends Error {
  constructor() {
    super('Request body too large');
  }
}

function isLoopback(address: string | undefined): boolean {
  if (!address) return false;
  return address === '::1' || address.startsWith('127.') || address.startsWith('::ffff:127.');
}

/** One value per header name, as the host passes headers to workers (repeated values joined by ", "). */
function flattenHeaders(headers: IncomingHttpHeaders): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [k, v] of Object.entries(headers)) {
    if (v === undefined) continue;
    out[k] = Array.isArray(v) ? v.join(', ') : v;
  }
  return out;
}

/**
 * The RPC invocation request the host sends for an HTTP trigger (also used by bench/runtime to measure the
 * programming model's own cost without HTTP).
 *
 * Only the plain `headers`/`query`/`params` maps are sent, not the host's `nullable*` duplicates: the library
 * reads a nullable map when it is non-empty and the plain one otherwise, with the same result for string
 * values, and converting the nullable form costs a copy per request. `triggerMetadata` carries what the host
 * sends (route parameters, Query, Headers, sys), the last three computed when first read: the library reads
 * them by name in HTTP streaming mode only (for buffered HTTP triggers it ignores trigger metadata), so
 * serializing them for every request was pure cost.
 */
export function httpInvocationRequest(
  fn: RegisteredFunction,
  params: Record<string, string>,
  method: string,
  url: URL,
  headers: Record<string, string>,
  body: Buffer | null,
  invocationId: string,
): RpcInvocationRequest {
  const query: Record<string, string> = {};
  if (url.search.length > 1) {
    const sp = url.searchParams;
    for (const key of new Set(sp.keys())) query[key] = sp.getAll(key).join(',');
  }
  const httpData: RpcHttpData = { method, url: url.href, headers, query, params };
  if (body) {
    httpData.body = { bytes: body };
    httpData.rawBody = { bytes: body };
  }
  const triggerMetadata = new HttpTriggerMetadata(query, headers, fn.metadata.name) as unknown as Record<string, RpcTypedData>;
  for (const k in params) triggerMetadata[k] = { string: params[k] };
  return { invocationId, functionId: fn.metadata.functionId, inputData: [{ name: fn.triggerName, data: { http: httpData } }], triggerMetadata };
}

/** HTTP trigger metadata: route parameters as own properties; Query, Headers and sys built on first read. */
class HttpTriggerMetadata {
  // Private fields stay out of enumeration: object rest and Object.entries see the route parameters only.
  readonly #query: Record<string, string>;
  readonly #headers: Record<string, string>;
  readonly #methodName: string;
  #q: RpcTypedData | undefined;
  #h: RpcTypedData | undefined;
  #s: RpcTypedData | undefined;

  constructor(query: Record<string, string>, headers: Record<string, string>, methodName: string) {
    this.#query = query;
    this.#headers = headers;
    this.#methodName = methodName;
  }

  get Query(): RpcTypedData {
    return (this.#q ??= { json: JSON.stringify(this.#query) });
  }

  get Headers(): RpcTypedData {
    return (this.#h ??= { json: JSON.stringify(this.#headers) });
  }

  get sys(): RpcTypedData {
    return (this.#s ??= { json: JSON.stringify({ MethodName: this.#methodName, UtcNow: new Date().toISOString(), RandGuid: randomUUID() }) });
  }
}

function typedDataToBuffer(data: RpcTypedData | null | undefined): Buffer {
  if (!data) return Buffer.alloc(0);
  if (data.bytes) return Buffer.from(data.bytes.buffer, data.bytes.byteOffset, data.bytes.byteLength);
  if (data.stream) return Buffer.from(data.stream);
  if (typeof data.string === 'string') return Buffer.from(data.string);
  if (typeof data.json === 'string') return Buffer.from(data.json);
  if (typeof data.int === 'number') return Buffer.from(String(data.int));
  if (typeof data.double === 'number') return Buffer.from(String(data.double));
  return Buffer.alloc(0);
}

interface RpcCookie {
  name?: string;
  value?: string;
  domain?: { value?: string } | null;
  path?: { value?: string } | null;
  expires?: { value?: { seconds?: number | string } } | null;
  secure?: { value?: boolean } | null;
  httpOnly?: { value?: boolean } | null;
  sameSite?: string | null;
  maxAge?: { value?: number } | null;
}

/** RpcHttpCookie to a Set-Cookie header value, as the host does. */
export function serializeCookie(c: RpcCookie): string {
  let s = `${c.name ?? ''}=${encodeURIComponent(c.value ?? '')}`;
  if (c.domain?.value) s += `; Domain=${c.domain.value}`;
  if (c.path?.value) s += `; Path=${c.path.value}`;
  if (c.expires?.value?.seconds !== undefined) s += `; Expires=${new Date(Number(c.expires.value.seconds) * 1000).toUTCString()}`;
  if (c.maxAge?.value !== undefined) s += `; Max-Age=${Math.floor(c.maxAge.value)}`;
  if (c.secure?.value) s += '; Secure';
  if (c.httpOnly?.value) s += '; HttpOnly';
  if (c.sameSite === 'lax') s += '; SameSite=Lax';
  else if (c.sameSite === 'strict') s += '; SameSite=Strict';
  else if (c.sameSite === 'explicitNone') s += '; SameSite=None';
  return s;
}

const httpOutputs = new WeakMap<RegisteredFunction, string[]>();

/** The HTTP data of a response: the `$return` http binding, else the first named http output binding. */
function findHttpOutput(fn: RegisteredFunction, outcome: InvocationOutcome): RpcHttpData | undefined {
  let outs = httpOutputs.get(fn);
  if (!outs) {
    outs = Object.entries(fn.metadata.bindings)
      .filter(([, b]) => b.direction === 'out' && String(b.type).toLowerCase() === 'http')
      .map(([name]) => name);
    httpOutputs.set(fn, outs);
  }
  for (const name of outs) {
    if (name === '$return') {
      if (outcome.response.returnValue?.http) return outcome.response.returnValue.http;
      continue;
    }
    const hit = outcome.response.outputData?.find((o) => o.name === name)?.data?.http;
    if (hit) return hit;
  }
  return undefined;
}

export function problemBody(status: number, title: string, detail: string, instance: string, traceId: string): Buffer {
  return Buffer.from(JSON.stringify({ type: `https://httpstatuses.io/${status}`, title, status, detail, instance, traceId }));
}

/**
 * The HTTP front end of the runtime: Functions route templates under the route prefix, runtime routes under
 * `/runtime/` for extensions, request bodies up to a limit, and each request turned into the RPC invocation
 * request the Functions host sends a worker (or, when the app enabled HTTP streaming, proxied to the
 * library's own HTTP server with an `x-ms-invocation-id` header, as the host does).
 */
export class HttpHost {
  readonly routes = new RouteTable<RegisteredFunction>();
  /** Routes whose template starts with `~/`: matched against the whole path, outside the route prefix. */
  readonly rootRoutes = new RouteTable<RegisteredFunction>();
  private server: http.Server | undefined;
  private inFlight = 0;
  private idleWaiters: (() => void)[] = [];
  private readyGate: Promise<void>;
  private openGate!: () => void;
  private readonly proxyAgent = new http.Agent({ keepAlive: true, maxSockets: 256 });
  private readonly prefix: string;
  private hostPort = '127.0.0.1';

  constructor(private readonly options: HttpHostOptions) {
    this.readyGate = new Promise((resolve) => (this.openGate = resolve));
    this.prefix = options.routePrefix.replace(/^\/+|\/+$/g, '');
    for (const fn of options.registry.byTriggerType('httpTrigger')) {
      const trigger = fn.metadata.bindings[fn.triggerName];
      const route = typeof trigger.route === 'string' && trigger.route.trim() !== '' ? trigger.route : fn.metadata.name;
      const methods = Array.isArray(trigger.methods) ? (trigger.methods as unknown[]).map((m) => String(m).toUpperCase()) : [];
      // `~/` opts out of the route prefix, as in ASP.NET Core attribute routes (the console at /console).
      if (route.startsWith('~/')) this.rootRoutes.add(route, methods, fn);
      else this.routes.add(route, methods, fn);
    }
  }

  /** The public URL of a route template (for the `Functions:` listing). */
  urlFor(route: string, baseUrl: string): string {
    if (route.startsWith('~/')) return `${baseUrl}/${route.slice(2)}`;
    const r = route.replace(/^\/+/, '');
    return `${baseUrl}/${this.prefix ? `${this.prefix}/` : ''}${r}`;
  }

  async listen(port: number, host: string): Promise<AddressInfo> {
    const server = http.createServer({ keepAliveTimeout: 5000 }, (req, res) => void this.handle(req, res));
    // Expect: 100-continue is answered only once the route and the declared length are known to be fine.
    server.on('checkContinue', (req, res) => void this.handle(req, res, true));
    this.server = server;
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(port, host, () => {
        server.off('error', reject);
        resolve();
      });
    });
    const address = server.address() as AddressInfo;
    this.hostPort = `${host.includes(':') ? `[${host}]` : host}:${address.port}`;
    return address;
  }

  /** Let requests through (they wait until the host has started its extensions). */
  open(): void {
    this.openGate();
  }

  /** Stop accepting connections and wait (bounded) for requests in flight. */
  async close(graceMs: number): Promise<void> {
    const server = this.server;
    if (!server) return;
    const closed = new Promise<void>((resolve) => server.close(() => resolve()));
    server.closeIdleConnections();
    if (this.inFlight > 0) {
      await Promise.race([new Promise<void>((resolve) => this.idleWaiters.push(resolve)), new Promise((r) => setTimeout(r, graceMs).unref())]);
    }
    server.closeAllConnections();
    await closed;
    this.proxyAgent.destroy();
  }

  private requestDone(): void {
    this.inFlight--;
    if (this.inFlight === 0) {
      this.idleWaiters.splice(0).forEach((w) => w());
      // A closing server keeps keep-alive sockets open until they idle out: close them now.
      if (this.server && !this.server.listening) this.server.closeIdleConnections();
    }
  }

  private async handle(req: IncomingMessage, res: ServerResponse, expectsContinue = false): Promise<void> {
    const started = process.hrtime.bigint();
    this.inFlight++;
    const info: { route: string; invocationId?: string; functionName?: string } = { route: '-' };
    res.once('close', () => {
      this.requestDone();
      if (!this.options.logger.enabled('information', 'Host.Http')) return;
      const durationMs = Math.round(Number(process.hrtime.bigint() - started) / 1e4) / 100;
      this.options.logger.info(
        'Host.Http',
        `HTTP ${req.method} ${info.route} ${res.statusCode} ${durationMs}ms${info.invocationId ? ` (Functions.${info.functionName}, Id=${info.invocationId})` : ''}`,
        { method: req.method, route: info.route, status: res.statusCode, durationMs, invocationId: info.invocationId, functionName: info.functionName },
      );
    });
    await this.readyGate;
    const url = new URL(req.url ?? '/', `http://${req.headers.host ?? this.hostPort}`);
    // Problem responses carry a trace id; a successful invocation never needs one.
    let trace: string | undefined;
    const traceId = (): string => (trace ??= randomUUID());
    try {
      const pathname = url.pathname;
      if (pathname === '/runtime' || pathname.startsWith('/runtime/')) {
        // Log the extension's prefix only: runtime paths can carry keys (the durable client's per-process key).
        info.route = pathname.split('/').slice(0, 4).join('/') + '/{*path}';
        for (const ext of this.options.extensions) {
          if (ext.handleHttp && (await ext.handleHttp(req, res, url))) return;
        }
        return this.sendProblem(res, 404, 'Not Found', 'No runtime route matches the request path.', pathname, traceId());
      }
      const prefix = this.prefix ? `/${this.prefix}` : '';
      const lowerPath = pathname.toLowerCase();
      let rel: string | undefined;
      if (!prefix) rel = pathname;
      else if (lowerPath === prefix.toLowerCase() || lowerPath.startsWith(prefix.toLowerCase() + '/')) rel = pathname.slice(prefix.length);
      let match = rel === undefined ? ({ kind: 'not-found' } as const) : this.routes.match(req.method ?? 'GET', rel);
      let rooted = false;
      if (match.kind === 'not-found' && this.rootRoutes.all.length) {
        match = this.rootRoutes.match(req.method ?? 'GET', pathname);
        rooted = true;
      }
      if (match.kind === 'not-found') {
        return this.sendProblem(res, 404, 'Not Found', 'No function matches the request path.', pathname, traceId());
      }
      if (match.kind === 'method-not-allowed') {
        info.route = pathname;
        res.setHeader('Allow', match.allow.join(', '));
        return this.sendProblem(res, 405, 'Method Not Allowed', `The method ${req.method} is not allowed on this route.`, pathname, traceId());
      }
      info.route = rooted
        ? `/${match.entry.template.template.replace(/^[~/]+/, '')}`
        : `/${prefix ? this.prefix + '/' : ''}${match.entry.template.template.replace(/^\/+/, '')}`;
      const declared = Number(req.headers['content-length'] ?? 0);
      if (declared > this.options.bodyLimit) return this.sendTooLarge(res, pathname, traceId());
      if (expectsContinue) res.writeContinue();
      const invocationId = randomUUID();
      info.invocationId = invocationId;
      info.functionName = match.entry.target.metadata.name;
      const hasBody = req.method !== 'GET' && req.method !== 'HEAD';
      let result: HttpResult | 'too-large';
      if (this.options.httpUri) {
        result = await this.dispatchStreaming(match.entry.target, match.params, req, url, hasBody ? req : null, invocationId);
      } else {
        const body = hasBody ? await readBody(req, this.options.bodyLimit) : (req.resume(), Buffer.alloc(0));
        if (body === 'too-large') return this.sendTooLarge(res, pathname, traceId());
        result = await this.dispatchBuffered(match.entry.target, match.params, req, url, body, invocationId);
      }
      if (result === 'too-large') return this.sendTooLarge(res, pathname, traceId());
      this.writeResult(req, res, result);
    } catch (err) {
      this.options.logger.error('Host.Http', `Request failed: ${(err as Error)?.message ?? String(err)}`, { traceId: traceId() });
      if (!res.headersSent)
        this.sendProblem(
          res,
          500,
          'Internal Server Error',
          'An unexpected error occurred. The trace id identifies it in the service log.',
          url.pathname,
          traceId(),
        );
      else res.destroy();
    }
  }

  private writeResult(req: IncomingMessage, res: ServerResponse, result: HttpResult): void {
    res.writeHead(result.status, result.headers);
    if (Buffer.isBuffer(result.body)) {
      res.end(req.method === 'HEAD' ? undefined : result.body);
      return;
    }
    const body = result.body;
    if (req.method === 'HEAD') {
      body.resume();
      res.end();
      return;
    }
    body.on('error', () => res.destroy());
    body.pipe(res);
  }

  private sendProblem(res: ServerResponse, status: number, title: string, detail: string, instance: string, traceId: string, close = false): void {
    const body = problemBody(status, title, detail, instance, traceId);
    const headers: OutgoingHttpHeaders = { 'content-type': 'application/problem+json', 'content-length': body.length };
    if (close) headers.connection = 'close';
    res.writeHead(status, headers);
    res.end(body);
  }

  private sendTooLarge(res: ServerResponse, instance: string, traceId: string): void {
    // Connection: close, so the rest of the body is never processed. Closing a socket that still has unread
    // bytes makes TCP send a reset, which can destroy the 413 before the client reads it: so after the
    // response, half-close and discard what still arrives for a moment (a lingering close), then destroy.
    const socket = res.socket as (Socket & { destroySoon?: () => void }) | null;
    if (socket) {
      socket.destroySoon = () => {
        socket.end();
        setTimeout(() => socket.destroy(), LINGER_MS).unref();
      };
    }
    this.sendProblem(res, 413, 'Payload Too Large', `The request body exceeds the limit of ${this.options.bodyLimit} bytes.`, instance, traceId, true);
  }

  private async dispatchBuffered(
    fn: RegisteredFunction,
    params: Record<string, string>,
    req: { method?: string; headers: IncomingHttpHeaders },
    url: URL,
    body: Buffer,
    invocationId: string,
  ): Promise<HttpResult> {
    const method = (req.method ?? 'GET').toUpperCase();
    const request = httpInvocationRequest(fn, params, method, url, flattenHeaders(req.headers), body.length ? body : null, invocationId);
    const outcome = await this.options.invoke(fn, request, HTTP_REASON);
    if (outcome.response.result?.status === 'failure') return this.failure(url, invocationId);
    const httpOut = findHttpOutput(fn, outcome);
    if (!httpOut) return { status: 204, headers: {}, body: Buffer.alloc(0), invocationId };
    const status = Number(httpOut.statusCode ?? 200);
    const headers: OutgoingHttpHeaders = {};
    for (const [k, v] of Object.entries(httpOut.headers ?? {})) {
      if (!HOP_BY_HOP.has(k.toLowerCase())) headers[k] = v;
    }
    const cookies = (httpOut.cookies ?? []) as RpcCookie[];
    if (cookies.length) headers['set-cookie'] = cookies.map(serializeCookie);
    const bytes = typedDataToBuffer(httpOut.body);
    headers['content-length'] = bytes.length;
    return { status: Number.isInteger(status) && status >= 100 && status <= 999 ? status : 500, headers, body: bytes, invocationId };
  }

  private badGateway(url: URL, invocationId: string): HttpResult {
    const body = problemBody(
      502,
      'Bad Gateway',
      'The function did not receive the request. The trace id identifies it in the service log.',
      url.pathname,
      invocationId,
    );
    return { status: 502, headers: { 'content-type': 'application/problem+json', 'content-length': body.length }, body, invocationId };
  }

  private failure(url: URL, invocationId: string): HttpResult {
    const body = problemBody(
      500,
      'Internal Server Error',
      'An unexpected error occurred. The trace id identifies it in the service log.',
      url.pathname,
      invocationId,
    );
    return { status: 500, headers: { 'content-type': 'application/problem+json', 'content-length': body.length }, body, invocationId };
  }

  /**
   * HTTP streaming (app.setup({ enableHttpStream: true })): the invocation request carries headers and
   * params in trigger metadata, and the request itself, body included, is proxied to the library's server
   * with `x-ms-invocation-id`; the library answers that proxied request with the function's response.
   */
  private async dispatchStreaming(
    fn: RegisteredFunction,
    params: Record<string, string>,
    req: { method?: string; headers: IncomingHttpHeaders; url?: string },
    url: URL,
    body: Readable | null,
    invocationId: string,
  ): Promise<HttpResult | 'too-large'> {
    const method = (req.method ?? 'GET').toUpperCase();
    const headers = flattenHeaders(req.headers);
    const request = httpInvocationRequest(fn, params, method, url, headers, null, invocationId);
    const target = new URL(url.pathname + url.search, this.options.httpUri);
    const proxyHeaders: OutgoingHttpHeaders = {};
    for (const [k, v] of Object.entries(req.headers)) if (!HOP_BY_HOP.has(k) && k !== 'host' && v !== undefined) proxyHeaders[k] = v;
    proxyHeaders['x-ms-invocation-id'] = invocationId;
    proxyHeaders['x-forwarded-host'] = url.host;
    proxyHeaders['x-forwarded-proto'] = url.protocol.replace(/:$/, '');
    let tooLarge = false;
    let proxyReq!: http.ClientRequest;
    let gotResponse!: Promise<IncomingMessage>;
    const forward = (): void => {
      proxyReq = http.request(target, { method, headers: proxyHeaders, agent: this.proxyAgent });
      gotResponse = new Promise<IncomingMessage>((resolve, reject) => {
        proxyReq.once('response', resolve);
        proxyReq.once('error', reject);
      });
      gotResponse.catch(() => undefined);
    };
    forward();
    const invocation = this.options.invoke(fn, request, HTTP_REASON);
    // Whatever happens below, a rejected invocation is never left unhandled.
    invocation.catch(() => undefined);
    if (body) {
      const limiter = byteLimiter(this.options.bodyLimit);
      limiter.on('error', (err) => {
        if (err instanceof BodyTooLargeError) tooLarge = true;
        proxyReq.destroy(err);
      });
      body.on('error', (err) => proxyReq.destroy(err));
      body.pipe(limiter).pipe(proxyReq);
    } else {
      proxyReq.end();
    }
    type First = { kind: 'response'; res: IncomingMessage } | { kind: 'outcome'; outcome: InvocationOutcome } | { kind: 'error'; err: unknown };
    const race = (): Promise<First> =>
      Promise.race([
        gotResponse.then(
          (r) => ({ kind: 'response' as const, res: r }),
          (err: unknown) => ({ kind: 'error' as const, err }),
        ),
        invocation.then((o) => ({ kind: 'outcome' as const, outcome: o })),
      ]);
    let first = await race();
    // A keep-alive socket the library's server closed as we reused it fails before the server read anything:
    // a body-less request is sent once more (the library never saw the first copy, so nothing runs twice).
    if (first.kind === 'error' && !body && proxyReq.reusedSocket && isResetBeforeResponse(first.err)) {
      forward();
      proxyReq.end();
      first = await race();
    }
    let proxyRes: IncomingMessage | undefined;
    if (first.kind === 'response') proxyRes = first.res;
    else if (first.kind === 'outcome') {
      if (first.outcome.response.result?.status === 'failure') {
        proxyReq.destroy();
        return tooLarge ? 'too-large' : this.failure(url, invocationId);
      }
      // The library has written its response to the proxy before the invocation completed; it is on its way.
      const late = await Promise.race([gotResponse.catch(() => undefined), delay(2000)]);
      if (!late) {
        proxyReq.destroy();
        return { status: 204, headers: {}, body: Buffer.alloc(0), invocationId };
      }
      proxyRes = late;
    } else {
      // The forward failed. The library may have received the request (then the invocation settles soon, as
      // the handler sees its body end early), or not (then it waits for a request that never comes): wait a
      // bounded time, then answer 502 and stop waiting for that invocation.
      const outcome = await Promise.race([invocation.catch(() => undefined), delay(this.options.forwardGraceMs ?? FORWARD_GRACE_MS)]);
      if (tooLarge) return 'too-large';
      if (outcome?.response.result?.status === 'failure') return this.failure(url, invocationId);
      const reason = (first.err as Error)?.message ?? String(first.err);
      this.options.logger.error(
        'Host.Http',
        `Forwarding invocation ${invocationId} of '${fn.metadata.name}' to the worker's HTTP server failed (${reason})${outcome ? '' : '; the invocation is abandoned'}.`,
        { invocationId, functionName: fn.metadata.name },
      );
      return this.badGateway(url, invocationId);
    }
    const outHeaders: OutgoingHttpHeaders = {};
    for (const [k, v] of Object.entries(proxyRes.headers)) {
      if (!HOP_BY_HOP.has(k) && k !== 'x-ms-invocation-id' && v !== undefined) outHeaders[k] = v;
    }
    return { status: proxyRes.statusCode ?? 500, headers: outHeaders, body: proxyRes, invocationId };
  }

  /**
   * Ask the app's authorization function (host.json `localRuntime.adminAuthorizationFunction`) whether the
   * caller may use a runtime admin route: it is invoked with GET, the caller's headers and path; 2xx allows.
   * Without that setting only loopback callers are allowed.
   */
  async authorizeAdmin(req: IncomingMessage): Promise<AdminAuthorization> {
    const name = this.options.adminAuthorizationFunction;
    if (!name) {
      if (isLoopback(req.socket.remoteAddress)) return { ok: true };
      const body = problemBody(
        403,
        'Forbidden',
        'Runtime admin routes accept loopback callers only.',
        new URL(req.url ?? '/', 'http://x').pathname,
        randomUUID(),
      );
      return { ok: false, status: 403, headers: { 'content-type': 'application/problem+json' }, body };
    }
    const fn = this.options.registry.get(name);
    if (!fn) throw new Error(`Admin authorization function '${name}' is not registered.`);
    const url = new URL(req.url ?? '/', `http://${req.headers.host ?? this.hostPort}`);
    const invocationId = randomUUID();
    const getReq = { method: 'GET', headers: req.headers, url: req.url };
    const result = this.options.httpUri
      ? await this.dispatchStreaming(fn, {}, getReq, url, null, invocationId)
      : await this.dispatchBuffered(fn, {}, getReq, url, Buffer.alloc(0), invocationId);
    if (result === 'too-large') return { ok: false, status: 413 };
    const body = Buffer.isBuffer(result.body) ? result.body : await collect(result.body);
    if (result.status >= 200 && result.status < 300) return { ok: true };
    const headers: Record<string, string> = {};
    for (const [k, v] of Object.entries(result.headers)) {
      if (k.toLowerCase() !== 'content-length' && v !== undefined) headers[k] = Array.isArray(v) ? v.join(', ') : String(v);
    }
    return { ok: false, status: result.status, headers, body };
  }

  get address(): AddressInfo | undefined {
    return (this.server?.address() as AddressInfo | null) ?? undefined;
  }
}

function delay(ms: number): Promise<undefined> {
  return new Promise((resolve) => setTimeout(() => resolve(undefined), ms).unref());
}

function isResetBeforeResponse(err: unknown): boolean {
  const code = (err as NodeJS.ErrnoException | undefined)?.code;
  return code === 'ECONNRESET' || code === 'EPIPE';
}

function byteLimiter(limit: number): Transform {
  let seen = 0;
  return new Transform({
    transform(chunk: Buffer, _enc, cb) {
      seen += chunk.length;
      if (seen > limit) cb(new BodyTooLargeError());
      else cb(null, chunk);
    },
  });
}

/** Read a request body up to `limit` bytes; past it, stop reading and report 'too-large'. */
export function readBody(req: IncomingMessage, limit: number): Promise<Buffer | 'too-large'> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    const onData = (chunk: Buffer) => {
      size += chunk.length;
      if (size > limit) {
        cleanup();
        req.pause();
        resolve('too-large');
        return;
      }
      chunks.push(chunk);
    };
    const onEnd = () => {
      cleanup();
      resolve(chunks.length === 1 ? chunks[0] : Buffer.concat(chunks, size));
    };
    const onError = (err: Error) => {
      cleanup();
      reject(err);
    };
    const cleanup = () => {
      req.off('data', onData);
      req.off('end', onEnd);
      req.off('error', onError);
    };
    req.on('data', onData);
    req.on('end', onEnd);
    req.on('error', onError);
  });
}

async function collect(stream: Readable): Promise<Buffer> {
  const chunks: Buffer[] = [];
  for await (const c of stream) chunks.push(Buffer.isBuffer(c) ? c : Buffer.from(c as Uint8Array));
  return Buffer.concat(chunks);
}
