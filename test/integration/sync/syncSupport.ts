import { mkdtempSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { ServiceUnderTest } from '../../support/service';
import { iterateMesh } from '../../../lib/mesh/store';
import type { MeshObject } from '../../../lib/mesh/model';

/** Helpers of the sync engine's HTTP tests: file-connector folders, connectors, rules, runs, the mesh. */

export function folder(prefix = 'ims-sync-'): string {
  return mkdtempSync(path.join(os.tmpdir(), prefix));
}

/** Write `rows` (objects) as a CSV file with the given header. */
export function writeCsv(dir: string, file: string, header: string[], rows: Record<string, string | number | null>[]): void {
  const esc = (v: unknown) => {
    const s = v === null || v === undefined ? '' : String(v);
    return /[",\n]/.test(s) ? '"' + s.replace(/"/g, '""') + '"' : s;
  };
  const text = [header.join(','), ...rows.map((r) => header.map((h) => esc(r[h])).join(','))].join('\n') + '\n';
  writeFileSync(path.join(dir, file), text);
}

export async function fileConnector(
  rt: ServiceUnderTest,
  name: string,
  dir: string,
  settings: Record<string, unknown> = {},
  config: Record<string, unknown> = {},
): Promise<string> {
  const res = await rt.call('POST', 'connectors', {
    body: { name, type: 'custom', config: { implementation: 'file', objectType: 'User', settings: { path: dir, anchorColumn: 'id', ...settings }, ...config } },
  });
  if (res.status !== 201) throw new Error(`create connector: ${res.status} ${res.text}`);
  return res.body.id as string;
}

export async function rule(rt: ServiceUnderTest, body: Record<string, unknown>): Promise<string> {
  const res = await rt.call('POST', 'rules', { body: { ruleName: `r-${Math.random().toString(36).slice(2, 8)}`, ...body } });
  if (res.status !== 201) throw new Error(`create rule: ${res.status} ${res.text}`);
  return res.body.ruleId as string;
}

/** Adds outbound flow rules to one target: `out(meshAttribute, targetAttribute, transformScript?)`; `extra` goes into every rule. */
export function outboundRule(rt: ServiceUnderTest, connectorId: string, extra: Record<string, unknown> = {}) {
  return (sourceAttribute: string, targetAttribute: string, transformScript?: string): Promise<string> =>
    rule(rt, {
      ruleType: 'FlowRule',
      connectorId,
      direction: 'outbound',
      sourceAttribute,
      targetAttribute,
      ...extra,
      ...(transformScript ? { transformScript } : {}),
    });
}

/**
 * The rules of an HR-like source: a projection on `projectOn` (objects of `objectType`) and a flow of each
 * attribute of `flows` to the mesh attribute of the same name, at confidence 50.
 */
export async function sourceRules(rt: ServiceUnderTest, connectorId: string, projectOn: string, flows: readonly string[], objectType = 'User'): Promise<void> {
  await rule(rt, { ruleType: 'ProjectionRule', connectorId, sourceAttribute: projectOn, objectType });
  for (const a of flows) await rule(rt, { ruleType: 'FlowRule', connectorId, sourceAttribute: a, targetAttribute: a, confidence: 50 });
}

/**
 * An HR source in PostgreSQL: a `sql` connector named HR reading `table` (anchor `employee_id`, the given
 * columns), a projection on `employee_id`, and a flow of each `[column, mesh attribute]` at confidence 50.
 */
export async function hrSqlSource(
  rt: ServiceUnderTest,
  pg: { host: string; port: number; user: string; password: string },
  database: string,
  table: string,
  flows: readonly (readonly [string, string])[],
): Promise<string> {
  const res = await rt.call('POST', 'connectors', {
    body: {
      name: 'HR',
      type: 'sql',
      config: {
        dialect: 'postgres',
        host: pg.host,
        port: pg.port,
        database,
        user: pg.user,
        password: pg.password,
        anchorColumn: 'employee_id',
        fullImportQuery: `SELECT ${flows.map(([c]) => c).join(', ')} FROM ${table}`,
      },
    },
  });
  if (res.status !== 201) throw new Error(`create connector: ${res.status} ${res.text}`);
  const id = res.body.id as string;
  await rule(rt, { ruleType: 'ProjectionRule', connectorId: id, sourceAttribute: 'employee_id' });
  for (const [s, t] of flows) await rule(rt, { ruleType: 'FlowRule', connectorId: id, sourceAttribute: s, targetAttribute: t, confidence: 50 });
  return id;
}

const FINAL = ['Completed', 'CompletedWithErrors', 'Failed', 'Cancelled', 'Rejected', 'AwaitingApproval'];

// eslint-disable-next-line @typescript-eslint/no-explicit-any
export async function waitRun(rt: ServiceUnderTest, runId: string, timeoutMs = 120_000): Promise<any> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const res = await rt.call('GET', `runs/${runId}`);
    if (res.status === 200 && FINAL.includes(res.body.status)) return res.body;
    if (Date.now() > deadline) throw new Error(`run ${runId} did not finish: ${res.text}\n${rt.logs().slice(-3000)}`);
    await new Promise((r) => setTimeout(r, 250));
  }
}

// eslint-disable-next-line @typescript-eslint/no-explicit-any
export async function runImport(rt: ServiceUnderTest, connectorId: string, body: Record<string, unknown> = { runType: 'FullImport' }): Promise<any> {
  const res = await rt.call('POST', `connectors/${connectorId}/import`, { body });
  if (res.status !== 202) throw new Error(`import: ${res.status} ${res.text}`);
  return waitRun(rt, res.body.runId);
}

// eslint-disable-next-line @typescript-eslint/no-explicit-any
export async function runExport(rt: ServiceUnderTest, connectorId: string, body: Record<string, unknown> = {}): Promise<any> {
  const res = await rt.call('POST', `connectors/${connectorId}/export`, { body });
  if (res.status !== 202) throw new Error(`export: ${res.status} ${res.text}`);
  return waitRun(rt, res.body.runId);
}

/** The whole mesh (read from the service's tables), by anchor value. */
export async function meshByAnchor(): Promise<Map<string, MeshObject>> {
  const out = new Map<string, MeshObject>();
  for await (const page of iterateMesh()) for (const o of page) out.set(o.anchorValue, o);
  return out;
}

export const valueOf = (o: MeshObject | undefined, attr: string) => o?.attributes[attr]?.value;

/** The leaver suites' HR file: its columns, and person i (employeeId E000001...). */
export const LEAVER_HR = ['id', 'employeeId', 'givenName', 'sn'];
export const leaverRow = (i: number) => ({ id: `h${i}`, employeeId: `E${String(i).padStart(6, '0')}`, givenName: `Given${i}`, sn: `Sn${i}` });

/**
 * The leaver suites' HR source: `people` rows (persons 1..people) written to `dir`, a file connector 'HR' on it
 * that may delete up to `maxDeletions` objects a run, and its source rules (projection on employeeId). Its id.
 */
export async function leaverHrSource(rt: ServiceUnderTest, dir: string, people: number, maxDeletions: number): Promise<string> {
  writeCsv(
    dir,
    'hr.csv',
    LEAVER_HR,
    Array.from({ length: people }, (_, i) => leaverRow(i + 1)),
  );
  const id = await fileConnector(rt, 'HR', dir, {}, { deletionThreshold: { objects: maxDeletions, percent: 100 } });
  await sourceRules(rt, id, 'employeeId', LEAVER_HR.slice(1));
  return id;
}
