import path from 'node:path';
import os from 'node:os';
import { dumpTable, startService, type ServiceUnderTest } from '../../support/service';
import { startSlapd, type Slapd } from '../../support/slapd';
import { rng } from '../../unit/mesh/meshSupport';

// A folder of the file connector must be inside its roots (the test service's are the temporary folder).
const HR_FOLDER = path.join(os.tmpdir(), 'hr-exports');

/**
 * Fuzz: a few thousand random and mutated request bodies and query strings across the Admin API routes.
 * Properties: no 5xx, every rejected write is a problem+json 4xx, the process stays up, and storage is the
 * same before and after (nothing is written by a rejected request; reads write nothing). Deterministic: the
 * generator is seeded (FUZZ_SEED overrides), and a failure prints the request that caused it.
 */
const SEED = Number(process.env.FUZZ_SEED ?? 20261121);
const ROUNDS = Number(process.env.FUZZ_ROUNDS ?? 3000);
const TABLES = [
  'Connectors',
  'ConnectorNames',
  'Rules',
  'Audit',
  'Operations',
  'ConnectorAssignments',
  'Runs',
  'Schedules',
  'ScheduleRuns',
  'ConnectorSpaceIds',
  'ConnectorSpaceStaged',
  'ConfigVersions',
];

jest.setTimeout(240_000);

let svc: ServiceUnderTest;
let connectorId: string;
let ruleId: string;

const rand = rng(SEED);
const int = (n: number) => Math.floor(rand() * n);
const pick = <T>(xs: readonly T[]): T => xs[int(xs.length)];

const STRINGS = [
  '',
  ' ',
  'a',
  '********',
  'null',
  '0',
  '-1',
  '1e309',
  '__proto__',
  'constructor',
  '../..',
  "' or 1=1 --",
  '\u0000',
  '\ud800',
  'é😀',
  'x'.repeat(300),
  '%00',
  '{}',
  'source +',
  'JoinRule',
  'ldap',
];
function randomValue(depth = 0): unknown {
  switch (int(depth > 2 ? 6 : 9)) {
    case 0:
      return null;
    case 1:
      return rand() < 0.5;
    case 2:
      return pick([0, -1, 1.5, 100, 101, 65536, 2 ** 53, -(2 ** 31), 1e308]);
    case 3:
    case 4:
      return pick(STRINGS);
    case 5:
      return int(1e6).toString(36);
    case 6:
      return Array.from({ length: int(4) }, () => randomValue(depth + 1));
    default: {
      const o: Record<string, unknown> = {};
      for (let i = int(4); i > 0; i--)
        o[pick(['name', 'type', 'config', 'host', 'port', 'ruleType', 'confidence', 'x', '__proto__', 'constructor', ''])] = randomValue(depth + 1);
      return o;
    }
  }
}

const validConnector = () => ({
  name: `fuzz ${int(1e9)}`,
  type: pick(['ldap', 'active_directory', 'sql', 'custom']),
  config: {
    host: 'h',
    baseDN: 'dc=x',
    bindDN: 'cn=y',
    bindPassword: 'fuzz-secret-pw',
    dialect: 'mysql',
    database: 'd',
    user: 'u',
    password: 'p',
    anchorColumn: 'id',
    fullImportQuery: 'q',
    implementation: 'file',
    settings: { path: HR_FOLDER, anchorColumn: 'id' },
  } as Record<string, unknown>,
});
const validSchedule = () =>
  ({
    name: `s${int(1e9)}`,
    cron: pick(['0 */5 * * * *', '*/10 * * * *', '0 30 2 * * *']),
    timeZone: pick(['UTC', 'Europe/Berlin']),
    isEnabled: false,
    steps: [{ runType: 'DeltaImport', connectorIds: [connectorId] }],
    stopOnFailure: true,
  }) as Record<string, unknown>;
const validRule = () =>
  ({
    ruleName: `r${int(1e9)}`,
    ruleType: pick(['JoinRule', 'FlowRule', 'ProjectionRule', 'MeshComposerRule']),
    connectorId,
    sourceAttribute: 'a',
    targetAttribute: 'b',
    confidence: 50,
    transformScript: 'source',
  }) as Record<string, unknown>;

/** A valid-looking body made invalid for sure (an unknown property, at the top or inside config) plus random damage. */
function mutated(base: Record<string, unknown>): Record<string, unknown> {
  const body = JSON.parse(JSON.stringify(base)) as Record<string, unknown>;
  for (let i = int(3); i > 0; i--) {
    const k = pick(Object.keys(body));
    if (rand() < 0.3) delete body[k];
    else body[k] = randomValue();
  }
  const config = body.config;
  const target = config && typeof config === 'object' && !Array.isArray(config) && rand() < 0.5 ? (config as Record<string, unknown>) : body;
  target[`fuzz_${int(1e6)}`] = randomValue();
  return body;
}

type Req = { method: string; route: string; body?: unknown; headers?: Record<string, string>; write: boolean };

function randomQuery(): string {
  const params = ['skip', 'take', 'connectorId', 'ruleType', 'targetType', 'targetId', 'actor', 'status', 'instanceId', 'zzz'];
  const parts: string[] = [];
  const encode = (v: string) => {
    try {
      return encodeURIComponent(v);
    } catch {
      return '%ED%A0%80'; // a lone surrogate: send it as invalid UTF-8
    }
  };
  for (let i = int(4); i > 0; i--)
    parts.push(`${pick(params)}=${encode(String(pick([...STRINGS, '50', '200', '201', '-5', '1.5', connectorId, 'FlowRule', 'Completed'])))}`);
  return parts.join('&');
}

function randomId(): string {
  return pick(['00000000-0000-4000-8000-000000000000', 'not-a-guid', '%20', 'A'.repeat(40), "'", '..%2F..', connectorId.toUpperCase().replace(/-/g, '')]);
}

function nextRequest(): Req {
  const rawBody = () => pick<unknown>([randomValue(), '{"name": ', '[1,2', 'true', '"str"', Buffer.from([0xff, 0xfe, 0x00, 0x7b]), '{"a":1}'.repeat(3)]);
  const contentType = () =>
    pick(['application/json', 'application/json; charset=utf-8', 'text/plain', 'application/x-www-form-urlencoded', 'application/problem+json', '']);
  switch (int(21)) {
    case 0:
      return { method: 'POST', route: 'connectors', body: mutated(validConnector()), write: true };
    case 1:
      return { method: 'POST', route: 'connectors', body: rawBody(), headers: { 'content-type': contentType() }, write: true };
    case 2:
      return {
        method: 'PUT',
        route: `connectors/${rand() < 0.7 ? connectorId : randomId()}`,
        body: mutated({ ...validConnector(), type: undefined }),
        write: true,
      };
    case 3:
      return { method: 'DELETE', route: `connectors/${randomId()}`, write: true };
    case 4:
      return { method: 'POST', route: 'rules', body: mutated(validRule()), write: true };
    case 5:
      return {
        method: 'PUT',
        route: `rules/${rand() < 0.7 ? ruleId : randomId()}`,
        body: rand() < 0.8 ? mutated(validRule()) : rawBody(),
        headers: { 'content-type': contentType() },
        write: true,
      };
    case 6:
      return { method: 'DELETE', route: `rules/${randomId()}`, write: true };
    case 7:
      return { method: 'GET', route: `rules?${randomQuery()}`, write: false };
    case 8:
      return { method: 'GET', route: `audit?${randomQuery()}`, write: false };
    case 9:
      return { method: 'GET', route: `runs?${randomQuery()}`, write: false };
    case 10:
      return {
        method: 'GET',
        route: pick([`connectors/${randomId()}`, `rules/${randomId()}`, `runs/${randomId()}`, 'connectors', 'license', 'instances', 'health', 'openapi.json']),
        write: false,
      };
    case 11:
      return {
        method: 'POST',
        route: `instances/${pick(['nope', 'UPPER', randomId()])}/${pick(['pause', 'resume', 'rename'])}`,
        body: { unexpected: randomValue() },
        write: true,
      };
    case 12:
      return { method: 'PUT', route: `connectors/${pick([connectorId, randomId()])}/instance`, body: mutated({ instanceId: 'x' }), write: true };
    case 13:
      return {
        method: 'POST',
        route: 'schedules',
        body: rand() < 0.8 ? mutated(validSchedule()) : rawBody(),
        headers: { 'content-type': contentType() },
        write: true,
      };
    case 14:
      return { method: 'PUT', route: `schedules/${randomId()}`, body: mutated(validSchedule()), write: true };
    case 15:
      return {
        method: 'POST',
        route: pick([`runs/${randomId()}/cancel`, `schedules/${randomId()}/run`, `schedules/${randomId()}/runs/${randomId()}/cancel`]),
        body: rand() < 0.5 ? undefined : randomValue(),
        write: true,
      };
    case 16:
      return { method: 'POST', route: `connectors/${pick([connectorId, randomId()])}/space/${randomId()}/retry`, write: true };
    case 17:
      return {
        method: 'GET',
        route: pick([`schedules?${randomQuery()}`, `schedules/${randomId()}`, `schedules/${randomId()}/runs?${randomQuery()}`]),
        write: false,
      };
    case 18:
      return {
        method: 'POST',
        route: `config/import?${pick(['', 'dryRun=true', 'dryRun=false', 'prune=true', 'dryRun=maybe', 'prune=1'])}`,
        body:
          rand() < 0.8
            ? mutated({ formatVersion: 1, connectors: [{ ...validConnector(), id: connectorId }], rules: [validRule()], schedules: [validSchedule()] })
            : rawBody(),
        headers: { 'content-type': contentType() },
        write: true,
      };
    case 19:
      return rand() < 0.5
        ? { method: 'GET', route: `config/history?${randomQuery()}`, write: false }
        : { method: 'POST', route: `config/history/${randomId()}/restore`, body: rand() < 0.5 ? undefined : randomValue(), write: true };
    default:
      return {
        method: pick(['POST', 'PUT', 'DELETE']),
        route: pick(['connectors', 'rules', 'audit', 'license', 'schedules', 'metrics', 'config/import', 'config/export', 'config/history']),
        body: randomValue(),
        write: true,
      };
  }
}

let slapd: Slapd;

beforeAll(async () => {
  svc = await startService();
  // Saving a directory connector tests it: the target is a real (throwaway) slapd.
  slapd = await startSlapd({ rootPassword: 'fuzz-target-pw' });
  const target = {
    host: 'localhost',
    port: slapd.ldapsPort,
    caCertificate: slapd.caCertificate,
    baseDN: slapd.suffix,
    bindDN: slapd.rootDN,
    bindPassword: 'fuzz-target-pw',
  };
  connectorId = (await svc.call('POST', 'connectors', { body: { name: 'Fuzz Target', type: 'ldap', config: target } })).body.id;
  expect(connectorId).toBeDefined();
  ruleId = (
    await svc.call('POST', 'rules', { body: { ruleName: 'fuzz rule', ruleType: 'JoinRule', connectorId, sourceAttribute: 'cn', targetAttribute: 'b' } })
  ).body.ruleId;
});

afterAll(async () => {
  await svc?.dispose();
  await slapd?.stop();
});

it(`survives ${ROUNDS} random and mutated requests: no 5xx, rejected writes change nothing`, async () => {
  const before = await Promise.all(TABLES.map(dumpTable));
  const failures: string[] = [];
  const statuses = new Map<number, number>();
  for (let i = 0; i < ROUNDS; i += 8) {
    const batch = Array.from({ length: Math.min(8, ROUNDS - i) }, nextRequest);
    const answers = await Promise.all(
      batch.map(async (r) => {
        const headers = { ...(r.headers ?? {}) };
        if (headers['content-type'] === '') delete headers['content-type'];
        return { r, res: await svc.call(r.method, r.route, { body: r.body, headers }) };
      }),
    );
    for (const { r, res } of answers) {
      statuses.set(res.status, (statuses.get(res.status) ?? 0) + 1);
      const describe = `${r.method} /api/${r.route} ${JSON.stringify(r.body)?.slice(0, 300)} -> ${res.status} ${res.text.slice(0, 300)}`;
      if (res.status >= 500) failures.push(describe);
      else if (r.write && res.status < 400) failures.push(`accepted: ${describe}`);
      else if (res.status >= 400 && res.headers.get('content-type') !== 'application/problem+json') failures.push(`not problem+json: ${describe}`);
    }
    if (failures.length > 10) break;
  }
  expect(failures).toEqual([]);
  expect(svc.running).toBe(true);
  expect((await svc.call('GET', 'health', { role: null })).status).toBe(200);
  const after = await Promise.all(TABLES.map(dumpTable));
  TABLES.forEach((name, i) => expect({ table: name, rows: after[i] }).toEqual({ table: name, rows: before[i] }));
  // Several kinds of rejection were exercised, not one.
  expect([...statuses.keys()].filter((s) => s >= 400).length).toBeGreaterThanOrEqual(4);
  console.log(`fuzz seed ${SEED}: ${ROUNDS} requests, statuses ${JSON.stringify(Object.fromEntries(statuses))}`);
});
