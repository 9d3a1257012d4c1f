import { randomBytes, randomUUID } from 'node:crypto';
import type { IncomingMessage, Server, ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import express from 'express';
import SCIMMY from 'scimmy';
import SCIMMYRouters from 'scimmy-routers';

/**
 * A reference SCIM 2.0 server for the SCIM client connector's tests: SCIMMY (the npm SCIM library) and its
 * express routers, with in-memory Users and Groups, on 127.0.0.1 at a free port. SCIMMY parses and answers the
 * protocol (filters, paging, PATCH, Bulk, errors); the handlers here only keep the resources. What SCIMMY leaves
 * to its host is done as a real server would: `meta` (created, lastModified in whole seconds, `W/"n"`
 * versions), a 409 on a taken userName, ETag headers and `If-Match` (412).
 *
 * Faults are injected in the server itself (`fault()`): the Nth request from now answers 429 or 503 with a
 * `Retry-After`, so the client's backoff is exercised over HTTP. An OAuth token endpoint (`/oauth/token`,
 * client credentials, HTTP Basic) issues tokens the server accepts beside the static one.
 *
 * SCIMMY keeps its declarations in the module: one reference server per test file.
 */
type Json = Record<string, unknown>;

/** What the handlers use of express's request and response (express ships no types). */
type Req = IncomingMessage & { params: Record<string, string>; path: string; originalUrl: string; body?: Json; header(name: string): string | undefined };
interface Res extends ServerResponse {
  status(code: number): Res;
  type(t: string): Res;
  send(body: string): void;
  json(body: unknown): void;
}
type Next = () => void;

export interface Fault {
  /** Which request, counted from the call to fault(): 1 is the next one. */
  nth: number;
  status: 429 | 503;
  retryAfter?: string;
  /** How many requests in a row from the nth get the fault (default 1). */
  times?: number;
}

export interface LoggedRequest {
  method: string;
  path: string;
  status: number;
  ifMatch?: string;
  authorization?: string;
}

export interface ReferenceServer {
  /** `http://127.0.0.1:<port>/scim/v2` */
  baseUrl: string;
  tokenUrl: string;
  token: string;
  oauthClient: { clientId: string; clientSecret: string };
  users: Map<string, Json>;
  groups: Map<string, Json>;
  requests: LoggedRequest[];
  fault(f: Fault): void;
  /** What ServiceProviderConfig says (the handlers behave the same). */
  configure(c: { patch?: boolean; etag?: boolean; bulkMaxOperations?: number }): void;
  /** Change a user behind the client's back (as another admin would), bumping its version and lastModified. */
  touch(type: 'User' | 'Group', id: string, change: Json): void;
  /** Create or replace a resource with this id server-side (a fixture's seed), with meta as a write would set it. */
  put(type: 'User' | 'Group', id: string, data: Json): void;
  /** Forget every resource, request and fault (a fresh server for the next test). */
  clear(): void;
  stop(): Promise<void>;
}

const now = () => new Date(Math.floor(Date.now() / 1000) * 1000).toISOString().replace('.000Z', 'Z');
const plain = (v: unknown): Json => JSON.parse(JSON.stringify(v)) as Json;

export async function startScimReference(): Promise<ReferenceServer> {
  const users = new Map<string, Json>();
  const groups = new Map<string, Json>();
  const requests: LoggedRequest[] = [];
  const token = randomBytes(24).toString('base64url');
  const oauthClient = { clientId: 'scim-test-client', clientSecret: randomBytes(16).toString('hex') };
  const issued = new Set<string>();
  let faults: (Fault & { at: number })[] = [];
  let counter = 0;

  const store = (type: 'User' | 'Group') => (type === 'User' ? users : groups);
  const stamp = (r: Json, type: 'User' | 'Group', previous?: Json): Json => {
    const prev = (previous?.meta ?? {}) as Json;
    const n = previous ? Number(/\d+/.exec(String(prev.version))?.[0] ?? 0) + 1 : 1;
    const t = now();
    return { ...r, meta: { resourceType: type, created: prev.created ?? t, lastModified: t, version: `W/"${n}"` } };
  };
  const taken = (userName: unknown, except?: string) =>
    [...users.values()].some((u) => u.id !== except && String(u.userName).toLowerCase() === String(userName).toLowerCase());

  const ingress = (type: 'User' | 'Group') => (resource: { id?: string }, instance: unknown) => {
    const data = plain(instance);
    delete data.meta;
    const map = store(type);
    if (type === 'User' && taken(data.userName, resource.id))
      throw new SCIMMY.Types.Error(409, 'uniqueness', `The userName '${String(data.userName)}' is already taken.`);
    if (resource.id) {
      const prev = map.get(resource.id);
      if (!prev) throw new SCIMMY.Types.Error(404, null!, `Resource ${resource.id} not found`);
      const next = stamp({ ...data, id: resource.id }, type, prev);
      map.set(resource.id, next);
      return next;
    }
    const id = randomUUID();
    const created = stamp({ ...data, id }, type);
    map.set(id, created);
    return created;
  };
  const egress = (type: 'User' | 'Group') => (resource: { id?: string; filter?: { match(v: Json[]): Json[] } }) => {
    const map = store(type);
    if (resource.id) {
      const r = map.get(resource.id);
      if (!r) throw new SCIMMY.Types.Error(404, null!, `Resource ${resource.id} not found`);
      return r;
    }
    const all = [...map.values()];
    return resource.filter ? resource.filter.match(all) : all;
  };
  const degress = (type: 'User' | 'Group') => (resource: { id?: string }) => {
    if (!resource.id || !store(type).delete(resource.id)) throw new SCIMMY.Types.Error(404, null!, `Resource ${resource.id} not found`);
  };

  SCIMMY.Resources.declare(SCIMMY.Resources.User, {
    ingress: ingress('User'),
    egress: egress('User'),
    degress: degress('User'),
    extensions: [{ schema: SCIMMY.Schemas.EnterpriseUser, required: false }],
  } as never);
  SCIMMY.Resources.declare(SCIMMY.Resources.Group, { ingress: ingress('Group'), egress: egress('Group'), degress: degress('Group') } as never);

  const app = express();
  app.use((req: Req, res: Res, next: Next) => {
    const entry: LoggedRequest = {
      method: req.method ?? '',
      path: req.originalUrl,
      status: 0,
      ...(req.headers['if-match'] ? { ifMatch: String(req.headers['if-match']) } : {}),
      ...(req.headers.authorization ? { authorization: String(req.headers.authorization) } : {}),
    };
    requests.push(entry);
    res.on('finish', () => (entry.status = res.statusCode));
    // Express 5 computes req.query anew at each access, so the routers' conversion of startIndex and count to
    // numbers would be lost and SCIMMY would not page: the query is made a plain property first.
    Object.defineProperty(req, 'query', { value: { ...(req as unknown as { query: Json }).query }, writable: true, configurable: true, enumerable: true });
    counter++;
    const f = faults.find((x) => counter >= x.at && counter < x.at + (x.times ?? 1));
    if (f && req.path.startsWith('/scim/')) {
      if (f.retryAfter !== undefined) res.setHeader('Retry-After', f.retryAfter);
      res
        .status(f.status)
        .type('application/scim+json')
        .send(JSON.stringify({ schemas: ['urn:ietf:params:scim:api:messages:2.0:Error'], status: String(f.status), detail: 'Slow down.' }));
      return;
    }
    next();
  });
  // A moved endpoint: everything below /moved answers 302 to the same path without it.
  app.use('/moved', (req: Req, res: Res) => {
    res.statusCode = 302;
    res.setHeader('Location', req.originalUrl.replace(/^\/moved/, ''));
    res.end();
  });
  app.post('/oauth/token', express.urlencoded({ extended: false }), (req: Req, res: Res) => {
    const [id, secret] = Buffer.from(String(req.headers.authorization ?? '').replace(/^Basic /, ''), 'base64')
      .toString()
      .split(':')
      .map(decodeURIComponent);
    if (req.body?.grant_type !== 'client_credentials' || id !== oauthClient.clientId || secret !== oauthClient.clientSecret) {
      res.status(401).json({ error: 'invalid_client' });
      return;
    }
    const t = randomBytes(24).toString('base64url');
    issued.add(t);
    res.json({ access_token: t, token_type: 'Bearer', expires_in: 3600 });
  });
  // ETags and If-Match, which SCIMMY leaves to its host: a version that is not the current one is 412.
  app.use('/scim/v2/:kind/:id', (req: Req, res: Res, next: Next) => {
    const map = /^users$/i.test(req.params.kind) ? users : /^groups$/i.test(req.params.kind) ? groups : undefined;
    const current = map?.get(req.params.id);
    const version = (current?.meta as Json | undefined)?.version;
    const ifMatch = req.headers['if-match'];
    if (current && ifMatch && ifMatch !== '*' && ifMatch !== version) {
      res
        .status(412)
        .type('application/scim+json')
        .send(
          JSON.stringify({ schemas: ['urn:ietf:params:scim:api:messages:2.0:Error'], status: '412', scimType: 'invalidVers', detail: 'Version mismatch.' }),
        );
      return;
    }
    if (current && req.method === 'GET' && typeof version === 'string') res.setHeader('ETag', version);
    next();
  });
  const routers = new SCIMMYRouters({
    type: 'bearer',
    handler: (req: Req) => {
      const given = String(req.header('Authorization') ?? '').replace(/^Bearer /, '');
      if (given !== token && !issued.has(given)) throw new Error('The bearer token is not valid.');
      return 'reference-admin';
    },
  });
  app.use('/scim/v2', routers);
  SCIMMY.Config.set({ etag: false, bulk: { supported: true, maxOperations: 50 } } as never);

  const server: Server = await new Promise((resolve) => {
    const s: Server = app.listen(0, '127.0.0.1', () => resolve(s));
  });
  const port = (server.address() as AddressInfo).port;
  return {
    baseUrl: `http://127.0.0.1:${port}/scim/v2`,
    tokenUrl: `http://127.0.0.1:${port}/oauth/token`,
    token,
    oauthClient,
    users,
    groups,
    requests,
    fault(f) {
      faults = [...faults, { ...f, at: counter + f.nth }];
    },
    configure(c) {
      if (c.patch !== undefined) SCIMMY.Config.set('patch', c.patch as never);
      if (c.etag !== undefined) SCIMMY.Config.set('etag', c.etag as never);
      if (c.bulkMaxOperations !== undefined) SCIMMY.Config.set('bulk', { supported: true, maxOperations: c.bulkMaxOperations } as never);
    },
    touch(type, id, change) {
      const map = store(type);
      const prev = map.get(id);
      if (!prev) throw new Error(`no ${type} ${id}`);
      map.set(id, stamp({ ...prev, ...change }, type, prev));
    },
    put(type, id, data) {
      const map = store(type);
      map.set(id, stamp({ ...data, id }, type, map.get(id)));
    },
    clear() {
      users.clear();
      groups.clear();
      requests.length = 0;
      faults = [];
    },
    stop: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
