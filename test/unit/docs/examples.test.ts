import { existsSync } from 'node:fs';
import path from 'node:path';
import type { HttpRequest } from '@azure/functions';
import { createRequestInnerErrors } from '../../../lib/api/connectors';
import { ROUTES, type RouteSpec } from '../../../lib/api/routes';
import { PERMISSIONS } from '../../../lib/auth/permissions';
import { ruleRequestInnerErrors } from '../../../lib/api/rules';
import { AppError, type FieldError } from '../../../lib/core/errors';
import { parseQuery } from '../../../lib/http/request';
import '../../../lib/api/openapi';
import { schemaById, schemaErrors } from '../../../lib/core/validation/ajv';
import { codeBlocks, docFiles, readDoc, REPO, requestsOf, type CodeBlock, type ExampleRequest } from '../../support/markdown';

/**
 * Every example request in README.md and docs/*.md is one the API accepts: its route exists, its query string
 * parses, and its body passes the route's request schema in the service's one Ajv instance plus the checks
 * the API runs on it before any I/O (a connector's `config` by its type's schema and checks, a rule's
 * per-type fields and scripts). Shell variables in a body are replaced the way a reader's shell would: by
 * the values the tutorial's environment block exports, a GUID for an id captured from an answer
 * (`HR=$(field id)`), and a sample text for the rest.
 */

const SAMPLE_ID = '3f9a1c2e-5b7d-4e8f-9a0b-1c2d3e4f5a6b';
/** Samples for variables whose value the docs compute with a command (the tutorial's CA as one JSON string). */
const SAMPLES: Record<string, string> = {
  LDAP_CA: '-----BEGIN CERTIFICATE-----\\nMIIBszCCAVmgAwIBAgIUQ2FtcGxl\\n-----END CERTIFICATE-----\\n',
};

/** Values of the shell variables the docs use, from `export NAME=value` lines and `NAME=$(field ...)` captures. */
function shellValues(blocks: CodeBlock[]): Map<string, string> {
  // The tutorial runs in the project folder.
  const values = new Map<string, string>([['PWD', REPO]]);
  for (const b of blocks) {
    for (const line of b.code.split('\n')) {
      const capture = /^\s*([A-Za-z_]\w*)=\$\(field (id|ruleId|runId)\)\s*$/.exec(line);
      // One GUID per captured name: two connectors of one example (a schedule step's connectorIds) differ.
      if (capture && !values.has(capture[1])) values.set(capture[1], SAMPLE_ID.slice(0, -4) + String(values.size).padStart(4, '0'));
      if (!/^\s*export\s/.test(line)) continue;
      // export A=1 B='two' C=$(cmd): literal values only; a computed one gets a sample text.
      for (const m of line.replace(/^\s*export\s+/, '').matchAll(/([A-Za-z_]\w*)=('[^']*'|"[^"]*"|\$\([^)]*\)|\S*)/g)) {
        const raw = m[2];
        values.set(m[1], raw.startsWith('$(') ? (SAMPLES[m[1]] ?? 'sample') : raw.replace(/^['"]|['"]$/g, ''));
      }
    }
  }
  return values;
}

function expand(text: string, values: Map<string, string>, where: string): string {
  return text.replace(/\$\{?([A-Za-z_]\w*)\}?/g, (_, name: string) => {
    const v = values.get(name);
    if (v === undefined) throw new Error(`${where}: the example uses $${name}, which no export or capture in the docs sets`);
    return v;
  });
}

function routeOf(req: ExampleRequest): RouteSpec | undefined {
  const segments = req.path.replace(/^\/+|\/+$/g, '').split('/');
  return ROUTES.find((r) => {
    if (r.method !== req.method) return false;
    const parts = r.route.split('/');
    return parts.length === segments.length && parts.every((p, i) => p.startsWith('{') || p.toLowerCase() === segments[i].toLowerCase());
  });
}

/** What the API would answer 400 for, without I/O; empty when it accepts the request. */
function problems(req: ExampleRequest, values: Map<string, string>): string[] {
  const where = `${req.file}:${req.line} ${req.method} ${req.path}`;
  const route = routeOf(req);
  if (!route) return [`${where}: no such route`];
  const out: string[] = [];
  if (req.query) {
    if (!route.query) out.push(`${where}: the route takes no query string`);
    else {
      try {
        parseQuery({ query: new URLSearchParams(expand(req.query, values, where)) } as unknown as HttpRequest, route.query);
      } catch (err) {
        const fields = err instanceof AppError ? err.extra.errors : undefined;
        out.push(`${where}: query string: ${JSON.stringify(fields ?? String(err))}`);
      }
    }
  }
  if (req.body === undefined) {
    if (route.request && !route.request.optional) out.push(`${where}: the route needs a body`);
    return out;
  }
  if (!route.request) return [...out, `${where}: the route takes no body`];
  let body: unknown;
  try {
    body = JSON.parse(expand(req.body, values, where));
  } catch (err) {
    return [...out, `${where}: the body is not JSON (${(err as Error).message})`];
  }
  const schema = schemaById(route.request.schema);
  if (!schema) return [...out, `${where}: no schema ${route.request.schema}`];
  const errors: FieldError[] = schemaErrors(schema, body);
  if (route.name === 'createConnector') errors.push(...createRequestInnerErrors(body));
  if (route.name === 'createRule' || route.name === 'updateRule') errors.push(...ruleRequestInnerErrors(body));
  for (const e of errors) out.push(`${where}: ${e.path} ${e.message}`);
  return out;
}

// Which folders a file connector may use is the deployment's choice (Connectors__File__Roots): the examples are
// checked as on a service whose one root is `/`, so a path is still checked for everything else (absolute, no
// `.`/`..` segments, resolvable).
process.env.Connectors__File__Roots = '/';

const files = docFiles();
const blocks = files.flatMap((f) => codeBlocks(f, readDoc(f)));
const requests = blocks.flatMap(requestsOf);
const values = shellValues(blocks);

describe('example requests in the docs', () => {
  test('are found in every form the docs use', () => {
    const forms = new Set(requests.map((r) => r.form));
    expect([...forms].sort()).toEqual(['api', 'curl', 'http']);
    // Every `api METHOD` line of the tutorial and every curl to the API is an extracted request.
    const apiLines = blocks.flatMap((b) => b.code.split('\n')).filter((l) => /^\s*api\s+(GET|POST|PUT|DELETE)\s/.test(l)).length;
    expect(requests.filter((r) => r.form === 'api')).toHaveLength(apiLines);
    expect(requests.filter((r) => r.file === 'docs/tutorial.md' && r.body !== undefined).length).toBeGreaterThan(30);
  });

  test('name an existing route, with a query string and a body the API accepts', () => {
    const found = requests.flatMap((r) => problems(r, values));
    expect(found).toEqual([]);
  });

  test('the check refuses what the API refuses (a wrong body, an unknown route, a bad query)', () => {
    const base = { file: 'x.md', line: 1, form: 'http' as const, query: '' };
    expect(
      problems(
        {
          ...base,
          method: 'POST',
          path: '/rules',
          body: '{ "ruleName": "r", "ruleType": "FlowRule", "connectorId": "' + SAMPLE_ID + '", "sourceAttribute": "a", "targetAttribute": "b" }',
        },
        values,
      ),
    ).toEqual(['x.md:1 POST /rules: /confidence is required for an inbound FlowRule']);
    expect(
      problems(
        {
          ...base,
          method: 'POST',
          path: '/connectors',
          body: '{ "name": "d", "type": "ldap", "config": { "host": "h", "baseDN": "dc=x", "bindDN": "cn=a", "bindPassword": "p", "security": "tls" } }',
        },
        values,
      ),
    ).toEqual([expect.stringMatching(/\/config\/security must be one of: ldaps, starttls, none/)]);
    expect(problems({ ...base, method: 'POST', path: '/connectors/x/sync' }, values)).toEqual(['x.md:1 POST /connectors/x/sync: no such route']);
    expect(problems({ ...base, method: 'GET', path: '/runs', query: 'status=Done' }, values)[0]).toMatch(/must be one of/);
  });
});

/**
 * The docs stand alone: they describe the service themselves and never send the reader to a document outside
 * the repository (a product specification, a contract document, a tracker's issue, a sibling folder).
 */
const OUTSIDE: Array<[RegExp, string]> = [
  [/\bthe spec\b|\bspec(?:'s)? \d|\(spec\b|\bspecification\b/i, 'a specification outside the repository'],
  [/\bthe contract(?:'s)?\b(?! suite| test)|\bcontract's\b|\bcontract\.md\b/i, 'a contract document outside the repository'],
  [/\.\.\/shared\b|\/work\/shared|\bshared\/|admin-api\.md in shared/i, 'a folder outside the repository'],
  [/\bthe issue\b|\bissue \d+\b|\bissues? #\d+/i, 'an issue of a tracker'],
];

describe('the docs stand alone', () => {
  test.each(files)('%s sends the reader nowhere outside the repository', (file) => {
    const hits: string[] = [];
    readDoc(file)
      .split('\n')
      .forEach((line, i) => {
        for (const [re, what] of OUTSIDE) if (re.test(line)) hits.push(`${file}:${i + 1}: ${what}: ${line.trim()}`);
      });
    expect(hits).toEqual([]);
  });

  test('docs/admin-api.md lists every route of the API with its roles and success status, and no other', () => {
    const rows = new Map<string, string>();
    for (const m of readDoc('docs/admin-api.md').matchAll(/^\| `((?:GET|POST|PUT|DELETE) \/api\/\S+)` \| ([^|]+) \| (\d{3}) \|/gm))
      rows.set(m[1], `${m[2].trim()} | ${m[3]}`);
    const expected = new Map(
      ROUTES.map((r) => {
        const roles = r.permission === 'anonymous' ? 'anyone' : PERMISSIONS[r.permission].join(', ');
        return [`${r.method} /api/${r.route}`, `${roles}${r.rateLimit ? `, ${r.rateLimit}` : ''} | ${r.success.status}`];
      }),
    );
    expect(Object.fromEntries(rows)).toEqual(Object.fromEntries(expected));
  });

  test('every link to a file of the repository leads to one', () => {
    const broken: string[] = [];
    for (const file of files) {
      for (const m of readDoc(file).matchAll(/\]\(([^)#\s]+)(?:#[^)]*)?\)/g)) {
        const target = m[1];
        if (/^[a-z]+:/i.test(target)) continue;
        if (!existsSync(path.resolve(path.dirname(path.join(REPO, file)), target))) broken.push(`${file}: ${target}`);
      }
    }
    expect(broken).toEqual([]);
  });
});
