import type { TSchema } from '@sinclair/typebox';
import { ERROR_CATALOG } from '../core/errors';
import { ROUTES, errorStatuses, type RouteSpec } from './routes';
import type { QueryParam } from '../http/request';
import { registeredSchemas } from '../core/validation/ajv';
import '../schemas/admin';
import '../schemas/connectors';
import '../schemas/rules';
import '../schemas/instances';
import '../schemas/runs';
import '../schemas/mesh';
import '../schemas/meshExplain';
import '../schemas/triggers';
import '../schemas/schedules';
import '../schemas/connectorSpace';
import '../schemas/config';
import '../schemas/leavers';
import '../schemas/orphans';
import '../schemas/correlation';

/**
 * The OpenAPI 3.1 document of the Admin API, generated from the route catalog (lib/api/routes.ts) and the
 * schemas registered with the one Ajv instance: what the document says a body must be is exactly what the
 * API validates. Every operation carries `x-permission` and, where it applies, `x-rate-limit`.
 * Schemas of routes implemented elsewhere are taken from the registry when their module is loaded (in the
 * running service all are); a schema not registered yet is documented as a plain object.
 */
const cache = new Map<number, Record<string, unknown>>();

export function openApiDocument(): Record<string, unknown> {
  const schemas = registeredSchemas();
  const cached = cache.get(schemas.size);
  if (cached) return cached;
  const doc = build(schemas);
  cache.clear();
  cache.set(schemas.size, doc);
  return doc;
}

function build(schemas: ReadonlyMap<string, TSchema>): Record<string, unknown> {
  const components: Record<string, unknown> = {};
  for (const [id, schema] of schemas) components[componentName(id)] = toOpenApiSchema(schema);
  const ref = (id: string) =>
    schemas.has(id) ? { $ref: `#/components/schemas/${componentName(id)}` } : { type: 'object', description: `${id} (schema defined by its module)` };

  const paths: Record<string, Record<string, unknown>> = {};
  for (const r of ROUTES) {
    const path = '/' + r.route;
    paths[path] ??= {};
    paths[path][r.method.toLowerCase()] = operation(r, ref);
  }
  return {
    openapi: '3.1.0',
    info: {
      title: 'Identity synchronization Admin API',
      version: '1.0.0',
      description:
        'Administrative REST interface: connectors, rules, runs, engine instances, mesh objects, license, audit. Errors are application/problem+json (RFC 9457). Permissions per operation are in x-permission; x-rate-limit names the rate-limit policy.',
    },
    jsonSchemaDialect: 'https://spec.openapis.org/oas/3.1/dialect/base',
    servers: [{ url: '/api' }],
    security: [{ bearer: [] }, { negotiate: [] }],
    tags: [...new Set(ROUTES.map((r) => r.tag))].map((name) => ({ name })),
    paths,
    components: {
      schemas: components,
      securitySchemes: {
        bearer: {
          type: 'http',
          scheme: 'bearer',
          bearerFormat: 'JWT',
          description: 'An access token from the configured OIDC authority (Authentication:Jwt).',
        },
        negotiate: { type: 'http', scheme: 'negotiate', description: 'Windows Negotiate (Kerberos, NTLM fallback).' },
      },
      responses: Object.fromEntries(
        Object.values(ERROR_CATALOG)
          .filter((e, i, all) => all.findIndex((x) => x.status === e.status) === i)
          .map((e) => [
            `Problem${e.status}`,
            {
              description: e.title,
              ...(e.status === 401 ? { headers: { 'WWW-Authenticate': { schema: { type: 'string' }, description: 'Every enabled scheme.' } } } : {}),
              ...(e.status === 429 ? { headers: { 'Retry-After': { schema: { type: 'integer' }, description: 'Seconds to wait.' } } } : {}),
              content: { 'application/problem+json': { schema: ref('ProblemDetails') } },
            },
          ]),
      ),
    },
  };
}

function operation(r: RouteSpec, ref: (id: string) => Record<string, unknown>): Record<string, unknown> {
  const parameters: Record<string, unknown>[] = [];
  for (const p of [...(r.pathParam ? [r.pathParam] : []), ...(r.morePathParams ?? [])]) {
    parameters.push({
      name: p.name,
      in: 'path',
      required: true,
      description: p.description + (p.kind === 'guid' ? ' A value that is not a GUID is a 404.' : ''),
      schema:
        p.kind === 'guid'
          ? { type: 'string', format: 'uuid' }
          : p.kind === 'attribute'
            ? { type: 'string', minLength: 1, maxLength: 256 }
            : { type: 'string', pattern: '^[0-9a-z][0-9a-z-]{0,127}$' },
    });
  }
  if (r.subParam) {
    parameters.push({
      name: r.subParam.name,
      in: 'path',
      required: true,
      description: r.subParam.description + ' A value that is not a GUID is a 400.',
      schema: { type: 'string', format: 'uuid' },
    });
  }
  for (const [name, p] of Object.entries(r.query ?? {})) parameters.push({ name, in: 'query', required: false, schema: queryParamSchema(p) });

  const responses: Record<string, unknown> = {};
  const s = r.success;
  responses[String(s.status)] = {
    description: s.status === 204 ? 'No content' : s.status === 201 ? 'Created' : s.status === 202 ? 'Accepted' : 'OK',
    ...(s.location ? { headers: { Location: { schema: { type: 'string' }, description: 'The URL of the resource.' } } } : {}),
    ...(s.status !== 204
      ? { content: s.text ? { [s.text]: { schema: { type: 'string' } } } : { 'application/json': { schema: s.schema ? ref(s.schema) : { type: 'object' } } } }
      : {}),
  };
  if (r.held)
    responses['202'] = {
      description: 'Accepted: the change loosens a guard rail (or is a forced delete over its threshold) and waits for a second Admin',
      headers: { Location: { schema: { type: 'string' }, description: 'The held change (/api/config/changes/{changeId}).' } },
      content: { 'application/json': { schema: ref('ConfigChange') } },
    };
  for (const status of errorStatuses(r)) responses[String(status)] = { $ref: `#/components/responses/Problem${status}` };

  return {
    operationId: r.name,
    summary: r.summary,
    tags: [r.tag],
    ...(r.permission === 'anonymous' ? { security: [] } : {}),
    'x-permission': r.permission,
    ...(r.rateLimit ? { 'x-rate-limit': r.rateLimit } : {}),
    ...(parameters.length ? { parameters } : {}),
    ...(r.request ? { requestBody: { required: !r.request.optional, content: { 'application/json': { schema: ref(r.request.schema) } } } } : {}),
    responses,
  };
}

function queryParamSchema(p: QueryParam): Record<string, unknown> {
  switch (p.kind) {
    case 'int':
      return {
        type: 'integer',
        ...(p.min !== undefined ? { minimum: p.min } : {}),
        ...(p.max !== undefined ? { maximum: p.max } : {}),
        ...(p.default !== undefined ? { default: p.default } : {}),
      };
    case 'guid':
      return { type: 'string', format: 'uuid' };
    case 'enum':
      return { type: 'string', enum: [...p.values] };
    case 'string':
      return { type: 'string', minLength: 1, maxLength: p.maxLength ?? 256 };
  }
}

const componentName = (id: string) => id.replace(/[^A-Za-z0-9._-]/g, '_');

/** A registered schema as an OpenAPI 3.1 schema: no `$id`, `$ref`s to other registered ids point into components. */
function toOpenApiSchema(schema: TSchema): unknown {
  const plain = JSON.parse(JSON.stringify(schema)) as Record<string, unknown>;
  delete plain.$id;
  return rewriteRefs(plain);
}

function rewriteRefs(node: unknown): unknown {
  if (Array.isArray(node)) return node.map(rewriteRefs);
  if (node && typeof node === 'object') {
    const out: Record<string, unknown> = {};
    for (const [k, v] of Object.entries(node))
      out[k] = k === '$ref' && typeof v === 'string' && !v.startsWith('#') ? `#/components/schemas/${componentName(v)}` : rewriteRefs(v);
    return out;
  }
  return node;
}
