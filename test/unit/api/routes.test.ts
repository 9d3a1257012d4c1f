import { readdirSync } from 'node:fs';
import path from 'node:path';
import { HttpRequest, InvocationContext } from '@azure/functions';
import { ROUTES, errorStatuses, routeKey } from '../../../lib/api/routes';
import { PERMISSIONS, type Permission, type Role } from '../../../lib/auth/permissions';
import { openApiDocument } from '../../../lib/api/openapi';
import { createCoreApi, FunctionRegistry } from '../../../lib/runtime/registry';
import { resetTableClients } from '../../../lib/storage/tables';

/**
 * The permission test: load every file in functions/ against a capturing `@azure/functions-core`, and check
 * that every HTTP registration has the method, route, permission and rate limit of the route catalog, and
 * that the catalog grants exactly the roles of the contract's "Roles and permissions" table.
 */
const mockRegistry = new FunctionRegistry();
// Jest has its own module loader, so the core module is provided the way installCoreModule does it for Node.
jest.mock('@azure/functions-core', () => createCoreApi(mockRegistry), { virtual: true });

const FUNCTIONS = path.resolve(__dirname, '../../../functions');
for (const file of readdirSync(FUNCTIONS).filter((f) => f.endsWith('.ts'))) require(path.join(FUNCTIONS, file));

interface Registered {
  name: string;
  key: string;
  permission: string;
  rateLimit: string | undefined;
  handler: (req: HttpRequest, ctx: InvocationContext) => Promise<{ status?: number; body?: unknown }>;
}

const http: Registered[] = mockRegistry.byTriggerType('httpTrigger').map((f) => {
  const trigger = f.metadata.bindings[f.triggerName] as { route?: string; methods?: string[] };
  const cb = f.callback as unknown as Registered['handler'] & { permission?: string; rateLimit?: string };
  expect(trigger.methods).toHaveLength(1);
  return {
    name: f.metadata.name,
    key: routeKey(trigger.methods![0], trigger.route ?? f.metadata.name),
    permission: String(cb.permission),
    rateLimit: cb.rateLimit,
    handler: cb,
  };
});

/** Routes of the runtime itself (its admin authorizer), not of the Admin API contract. */
const RUNTIME_ROUTES = new Set([routeKey('GET', 'system/authorize-admin')]);
/** The web console's static files: outside the API (at /console, not /api), anonymous, not in the catalog. */
const CONSOLE_ROUTES = new Set([routeKey('GET', '~/console/{*path}')]);
/**
 * The SCIM endpoint (docs/scim.md): its own protocol (RFC 7644) under /api/scim/v2, with its own role value
 * (`Scim:Role`) and error bodies, not an Admin API route of the catalog.
 */
const SCIM_ROUTES = new Set(['GET', 'POST', 'PUT', 'PATCH', 'DELETE'].map((m) => routeKey(m, 'scim/v2/{*path}')));

const ALL: Role[] = ['Viewer', 'Operator', 'Admin'];
const OPERATE: Role[] = ['Operator', 'Admin'];
const ADMIN: Role[] = ['Admin'];

/** The contract's permission table, transcribed route by route; `true` marks the `sensitive` policy. */
const CONTRACT: Record<string, [Role[], boolean] | 'anonymous'> = {
  'GET connectors': [ALL, false],
  'GET connectors/{id}': [ALL, false],
  'POST connectors': [ADMIN, true],
  'PUT connectors/{id}': [ADMIN, true],
  'DELETE connectors/{id}': [ADMIN, true],
  'POST connectors/{id}/test': [OPERATE, false],
  'POST connectors/{id}/import': [OPERATE, false],
  'POST connectors/{id}/export': [OPERATE, false],
  'GET connectors/{id}/space': [ALL, false],
  'GET connectors/{id}/space/{csObjectId}': [ALL, false],
  'POST connectors/{id}/space/{csObjectId}/retry': [OPERATE, false],
  'POST connectors/{id}/space/{csObjectId}/preview': [OPERATE, false],
  'POST connectors/{id}/space/{csObjectId}/sync': [OPERATE, false],
  'POST connectors/{id}/space/{csObjectId}/join': [OPERATE, false],
  'POST connectors/{id}/space/{csObjectId}/disconnect': [OPERATE, false],
  'POST connectors/{id}/space/{csObjectId}/undo': [OPERATE, false],
  'GET connectors/{id}/space/{csObjectId}/decisions': [ALL, false],
  'GET connectors/{id}/orphans': [ALL, false],
  'PUT connectors/{id}/orphans/{csObjectId}/keep': [ADMIN, false],
  'DELETE connectors/{id}/orphans/{csObjectId}/keep': [ADMIN, false],
  'GET correlation-cases': [ALL, false],
  'GET correlation-cases/{id}': [ALL, false],
  'POST correlation-cases/decide': [OPERATE, false],
  'POST correlation-cases/{id}/decide': [OPERATE, false],
  'PUT connectors/{id}/instance': [ADMIN, false],
  'DELETE connectors/{id}/instance': [ADMIN, false],
  'GET rules': [ALL, false],
  'GET rules/{id}': [ALL, false],
  'POST rules': [ADMIN, false],
  'PUT rules/{id}': [ADMIN, false],
  'DELETE rules/{id}': [ADMIN, false],
  'GET runs/{id}': [ALL, false],
  'GET runs': [ALL, false],
  'POST runs/{id}/cancel': [OPERATE, false],
  'GET runs/{id}/changes': [ALL, false],
  'POST runs/{id}/apply': [OPERATE, false],
  'POST runs/{id}/approve': [ADMIN, false],
  'POST runs/{id}/reject': [ADMIN, false],
  'GET schedules': [ALL, false],
  'GET schedules/{id}': [ALL, false],
  'POST schedules': [ADMIN, false],
  'PUT schedules/{id}': [ADMIN, false],
  'DELETE schedules/{id}': [ADMIN, false],
  'POST schedules/{id}/run': [OPERATE, false],
  'GET schedules/{id}/runs': [ALL, false],
  'GET schedules/{id}/runs/{scheduleRunId}': [ALL, false],
  'POST schedules/{id}/runs/{scheduleRunId}/cancel': [OPERATE, false],
  'GET instances': [ALL, false],
  'POST instances/{id}/pause': [OPERATE, false],
  'POST instances/{id}/resume': [OPERATE, false],
  'POST instances/{id}/rename': [ADMIN, true],
  'DELETE instances/{id}': [ADMIN, true],
  'GET mesh/objects': [ALL, false],
  'POST mesh/objects/search': [ALL, false],
  'GET mesh/objects/{id}': [ALL, false],
  'GET mesh/objects/{id}/attributes/{name}/explain': [ALL, false],
  'GET mesh/objects/{id}/history': [ALL, false],
  'POST mesh/objects/{id}/restore': [ADMIN, false],
  'GET config/history': [ALL, false],
  'POST config/history/{versionId}/restore': [ADMIN, true],
  'GET config/export': [ADMIN, true],
  'POST config/import': [ADMIN, true],
  'GET config/changes': [ADMIN, false],
  'GET leavers': [ALL, false],
  'GET config/changes/{changeId}': [ADMIN, false],
  'POST config/changes/{changeId}/approve': [ADMIN, true],
  'POST config/changes/{changeId}/reject': [ADMIN, true],
  'GET license': [ADMIN, true],
  'GET audit': [ADMIN, true],
  'GET health': 'anonymous',
  'GET openapi.json': 'anonymous',
  'GET metrics': [ALL, false],
};

const contractKey = (k: string) => routeKey(k.split(' ')[0], k.split(' ')[1]);

describe('route catalog against the contract', () => {
  it('has every contract route exactly once, and no other', () => {
    const keys = ROUTES.map((r) => routeKey(r.method, r.route));
    expect(new Set(keys).size).toBe(keys.length);
    expect(keys.sort()).toEqual(Object.keys(CONTRACT).map(contractKey).sort());
  });

  it.each(ROUTES.map((r) => [routeKey(r.method, r.route), r] as const))('%s grants the roles and rate limit of the contract', (_key, r) => {
    const expected = CONTRACT[Object.keys(CONTRACT).find((k) => contractKey(k) === routeKey(r.method, r.route))!];
    if (expected === 'anonymous') {
      expect(r.permission).toBe('anonymous');
      expect(r.rateLimit).toBeUndefined();
      return;
    }
    expect(r.permission).not.toBe('anonymous');
    expect([...PERMISSIONS[r.permission as Permission]].sort()).toEqual([...expected[0]].sort());
    expect(r.rateLimit === 'sensitive').toBe(expected[1]);
  });
});

describe('registrations in functions/ against the catalog', () => {
  it('registers only catalog routes (or the runtime’s own), with the catalog name, permission and rate limit', () => {
    expect(http.length).toBeGreaterThan(15);
    for (const reg of http) {
      if (RUNTIME_ROUTES.has(reg.key)) {
        expect(reg.permission).toBe('runtime.admin');
        continue;
      }
      if (CONSOLE_ROUTES.has(reg.key)) {
        expect(reg.permission).toBe('anonymous');
        continue;
      }
      if (SCIM_ROUTES.has(reg.key)) {
        expect(reg.permission).toBe('scim');
        continue;
      }
      const spec = ROUTES.find((r) => routeKey(r.method, r.route) === reg.key);
      expect({ key: reg.key, inCatalog: !!spec }).toEqual({ key: reg.key, inCatalog: true });
      expect({ key: reg.key, name: reg.name, permission: reg.permission, rateLimit: reg.rateLimit }).toEqual({
        key: reg.key,
        name: spec!.name,
        permission: spec!.permission,
        rateLimit: spec!.rateLimit,
      });
    }
  });

  it('registers every catalog route exactly once, under its catalog name: the catalog is the one declaration of the routes', () => {
    const keys = http.map((r) => r.key);
    expect(new Set(keys).size).toBe(keys.length);
    const names = http.map((r) => r.name);
    expect(new Set(names).size).toBe(names.length);
    const registered = new Set(keys);
    const missing = ROUTES.filter((r) => !registered.has(routeKey(r.method, r.route))).map((r) => r.name);
    expect(missing).toEqual([]);
    const extra = http.filter(
      (r) => !RUNTIME_ROUTES.has(r.key) && !CONSOLE_ROUTES.has(r.key) && !SCIM_ROUTES.has(r.key) && !ROUTES.some((c) => routeKey(c.method, c.route) === r.key),
    );
    expect(extra.map((r) => r.key)).toEqual([]);
  });
});

describe('OpenAPI document', () => {
  const doc = openApiDocument() as {
    openapi: string;
    paths: Record<string, Record<string, Record<string, unknown>>>;
    components: { schemas: Record<string, unknown>; responses: Record<string, unknown> };
  };

  it('documents every catalog route with permission and every error response', () => {
    expect(doc.openapi).toBe('3.1.0');
    for (const r of ROUTES) {
      const op = doc.paths['/' + r.route][r.method.toLowerCase()];
      expect(op['x-permission']).toBe(r.permission);
      const responses = op.responses as Record<string, unknown>;
      for (const s of errorStatuses(r)) expect(responses[String(s)]).toEqual({ $ref: `#/components/responses/Problem${s}` });
      expect(responses[String(r.success.status)]).toBeDefined();
    }
  });

  it('documents the Prometheus exposition of GET /metrics as text', () => {
    expect((doc.paths['/metrics'].get.responses as Record<string, unknown>)['200']).toEqual({
      description: 'OK',
      content: { 'text/plain': { schema: { type: 'string' } } },
    });
  });

  it('every $ref resolves inside the document', () => {
    const refs: string[] = [];
    const walk = (n: unknown) => {
      if (Array.isArray(n)) n.forEach(walk);
      else if (n && typeof n === 'object') {
        for (const [k, v] of Object.entries(n)) {
          if (k === '$ref') refs.push(String(v));
          else walk(v);
        }
      }
    };
    walk(doc);
    expect(refs.length).toBeGreaterThan(50);
    for (const ref of refs) {
      const [, section, name] = ref.match(/^#\/components\/(schemas|responses)\/(.+)$/) ?? [];
      expect({ ref, found: !!(section && (doc.components as Record<string, Record<string, unknown>>)[section][name]) }).toEqual({ ref, found: true });
    }
  });
});

describe('health handler', () => {
  it('answers 503 with storage unreachable when the storage account does not answer', async () => {
    const saved = { cs: process.env.AzureWebJobsStorage, name: process.env.Engine__InstanceName };
    process.env.AzureWebJobsStorage =
      'DefaultEndpointsProtocol=http;AccountName=devstoreaccount1;AccountKey=Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw==;TableEndpoint=http://127.0.0.1:9/devstoreaccount1';
    process.env.Engine__InstanceName = 'unit-node';
    resetTableClients();
    try {
      const health = http.find((r) => r.name === 'getHealth')!;
      const res = await health.handler(new HttpRequest({ method: 'GET', url: 'http://127.0.0.1/api/health' }), new InvocationContext());
      expect(res.status).toBe(503);
      expect(JSON.parse(String(res.body))).toEqual({ status: 'unhealthy', instance: 'unit-node', storage: 'unreachable' });
      if (process.env.TEST_STORAGE_CONNECTION_STRING) {
        process.env.AzureWebJobsStorage = process.env.TEST_STORAGE_CONNECTION_STRING;
        const up = await health.handler(new HttpRequest({ method: 'GET', url: 'http://127.0.0.1/api/health' }), new InvocationContext());
        expect(up.status).toBe(200);
      }
    } finally {
      process.env.AzureWebJobsStorage = saved.cs;
      process.env.Engine__InstanceName = saved.name;
      if (saved.cs === undefined) delete process.env.AzureWebJobsStorage;
      if (saved.name === undefined) delete process.env.Engine__InstanceName;
      resetTableClients();
    }
  });
});
