import { readFileSync } from 'node:fs';
import path from 'node:path';
import { readExportScope } from '../../../lib/sync/export/exportSteps';
import { configOfRun, type ExportConfig } from '../../../lib/sync/run/runConnector';
import { compileRuleSet } from '../../../lib/sync/rules';
import { readConnectorRow } from '../../../lib/storage/connectors';
import { listRules } from '../../../lib/storage/rules';
import { startService, type ServiceUnderTest } from '../../support/service';
import { fileConnector, folder, rule, runExport, runImport, writeCsv } from './syncSupport';

/**
 * An export applies what changed, not the whole mesh: after the first (full) export, an export looks only at
 * the mesh objects changed since (read from the change feed) and at those the target's own import marked; a
 * change of the target's outbound rules or configuration makes the next export a full one again.
 * `objectsProcessed` counts the changes applied.
 */
jest.setTimeout(180_000);

let rt: ServiceUnderTest;
beforeAll(async () => {
  rt = await startService();
});
afterAll(async () => {
  await rt?.dispose();
});

const COLS = ['id', 'employeeId', 'name', 'dept'];
const people = (n: number, renamed: Record<number, string> = {}) =>
  Array.from({ length: n }, (_, i) => ({ id: `p${i}`, employeeId: `E${i}`, name: renamed[i] ?? `Person ${i}`, dept: i % 2 ? 'Sales' : 'R&D' }));

test('idle exports look at nothing; a change exports just that; new rules or configuration make the next export full', async () => {
  const src = folder();
  const dst = folder();
  writeCsv(src, 'hr.csv', COLS, people(20));
  writeCsv(dst, 'export.csv', ['uid', 'name'], []);
  const hr = await fileConnector(rt, 'HR source', src);
  await rule(rt, { ruleType: 'ProjectionRule', connectorId: hr, sourceAttribute: 'employeeId' });
  for (const a of ['employeeId', 'name', 'dept'])
    await rule(rt, { ruleType: 'FlowRule', connectorId: hr, sourceAttribute: a, targetAttribute: a, confidence: 50 });
  const target = await fileConnector(rt, 'HR target', dst, { anchorColumn: 'uid' });
  await rule(rt, { ruleType: 'FlowRule', connectorId: target, direction: 'outbound', sourceAttribute: 'employeeId', targetAttribute: 'uid' });
  await rule(rt, { ruleType: 'FlowRule', connectorId: target, direction: 'outbound', sourceAttribute: 'name', targetAttribute: 'name' });
  const rows = () => readFileSync(path.join(dst, 'export.csv'), 'utf8').trim().split('\n').slice(1).sort();

  expect(await runImport(rt, hr)).toMatchObject({ status: 'Completed', stats: { objectsCreated: 20 } });
  expect(await runExport(rt, target)).toMatchObject({ status: 'Completed', stats: { objectsProcessed: 20, objectsCreated: 20, errors: 0 } });
  expect(rows()).toHaveLength(20);
  // Nothing changed: nothing looked at, nothing done.
  expect(await runExport(rt, target)).toMatchObject({ status: 'Completed', stats: { objectsProcessed: 0, objectsCreated: 0, objectsUpdated: 0, errors: 0 } });

  // Two people renamed in the source: the export updates exactly those two.
  writeCsv(src, 'hr.csv', COLS, people(20, { 3: 'Renamed Three', 7: 'Renamed Seven' }));
  expect(await runImport(rt, hr, { runType: 'DeltaImport' })).toMatchObject({ status: 'Completed', stats: { objectsUpdated: 2 } });
  expect(await runExport(rt, target)).toMatchObject({ status: 'Completed', stats: { objectsProcessed: 2, objectsUpdated: 2, errors: 0 } });
  expect(rows()).toEqual(expect.arrayContaining(['E3,Renamed Three', 'E7,Renamed Seven']));
  expect(await runExport(rt, target)).toMatchObject({ status: 'Completed', stats: { objectsProcessed: 0 } });

  // Someone removes a row in the target: its confirming import marks the object, and the export puts it back.
  writeCsv(
    dst,
    'export.csv',
    ['uid', 'name'],
    rows()
      .filter((r) => !r.startsWith('E5,'))
      .map((r) => ({ uid: r.split(',')[0], name: r.split(',').slice(1).join(',') })),
  );
  expect(await runImport(rt, target, { runType: 'FullImport' })).toMatchObject({ status: 'Completed' });
  expect(await runExport(rt, target)).toMatchObject({ status: 'Completed', stats: { objectsCreated: 1, errors: 0 } });
  expect(rows()).toEqual(expect.arrayContaining(['E5,Person 5']));

  // A new outbound rule: the next export looks at every object again (its values may all change).
  await rule(rt, { ruleType: 'ProjectionRule', connectorId: target, sourceAttribute: 'uid', objectType: 'Ignored', transformScript: 'false' });
  const full = await runExport(rt, target);
  expect(full).toMatchObject({ status: 'Completed', stats: { errors: 0 } });
  // A provisioning condition (connector configuration): the next export is a full one, and respects it.
  const current = (await rt.call('GET', `connectors/${target}`)).body;
  const put = await rt.call('PUT', `connectors/${target}`, {
    body: { name: current.name, config: { ...current.config, provisioningCondition: 'source.dept == "R&D"' } },
  });
  expect(put.status).toBe(200);
  writeCsv(src, 'hr.csv', COLS, [
    ...people(20, { 3: 'Renamed Three', 7: 'Renamed Seven' }),
    { id: 'p20', employeeId: 'E20', name: 'New R&D', dept: 'R&D' },
    { id: 'p21', employeeId: 'E21', name: 'New Sales', dept: 'Sales' },
  ]);
  expect(await runImport(rt, hr, { runType: 'DeltaImport' })).toMatchObject({ status: 'Completed', stats: { objectsCreated: 2 } });
  expect(await runExport(rt, target)).toMatchObject({ status: 'Completed', stats: { objectsCreated: 1, errors: 0 } });
  expect(rows()).toEqual(expect.arrayContaining(['E20,New R&D']));
  expect(rows().some((r) => r.startsWith('E21,'))).toBe(false);
});

test('settings no export reads (continuous mode, the leaver deadline) leave the next export incremental', async () => {
  const src = folder();
  const dst = folder();
  // People of their own (the first test's stay in the mesh): X0..X9, exported by this test's target only.
  writeCsv(
    src,
    'hr.csv',
    COLS,
    people(10).map((p) => ({ ...p, id: `x${p.id}`, employeeId: `X${p.employeeId}` })),
  );
  writeCsv(dst, 'export.csv', ['uid', 'name'], []);
  const hr = await fileConnector(rt, 'HR source 2', src);
  await rule(rt, { ruleType: 'ProjectionRule', connectorId: hr, sourceAttribute: 'employeeId' });
  for (const a of ['employeeId', 'name']) await rule(rt, { ruleType: 'FlowRule', connectorId: hr, sourceAttribute: a, targetAttribute: a, confidence: 50 });
  const target = await fileConnector(rt, 'HR target 2', dst, { anchorColumn: 'uid' });
  await rule(rt, { ruleType: 'FlowRule', connectorId: target, direction: 'outbound', sourceAttribute: 'employeeId', targetAttribute: 'uid' });
  await rule(rt, { ruleType: 'FlowRule', connectorId: target, direction: 'outbound', sourceAttribute: 'name', targetAttribute: 'name' });
  expect(await runImport(rt, hr)).toMatchObject({ status: 'Completed', stats: { objectsCreated: 10 } });
  // The target provisions every person of the mesh (the first test's too): this test's ten among them.
  expect(await runExport(rt, target)).toMatchObject({ status: 'Completed', stats: { errors: 0 } });
  const exported = readFileSync(path.join(dst, 'export.csv'), 'utf8');
  for (let i = 0; i < 10; i++) expect(exported).toContain(`XE${i},Person ${i}`);
  expect(await runExport(rt, target)).toMatchObject({ status: 'Completed', stats: { objectsProcessed: 0 } });

  const put = async (config: Record<string, unknown>) => {
    const current = (await rt.call('GET', `connectors/${target}`)).body;
    const res = await rt.call('PUT', `connectors/${target}`, { body: { name: current.name, config: { ...current.config, ...config } } });
    expect(res.status).toBe(200);
    return res.body;
  };
  // The scope the next export takes (read in this process from the service's tables).
  const scope = async () => {
    const record = await readConnectorRow(target);
    return (await readExportScope(target, configOfRun(record!.type, record!.config) as ExportConfig, compileRuleSet(target, await listRules()), false)).mode;
  };
  expect(await scope()).toBe('incremental');
  // Continuous mode's settings, the leaver deadline and the deprovisioning defaults written out (as a GET shows
  // them): the configuration changed, the export looks at nothing.
  const current = (await rt.call('GET', `connectors/${target}`)).body;
  await put({
    continuous: { enabled: false, intervalSeconds: 60, reconcileMinutes: 30 },
    deprovisioning: { ...current.config.deprovisioning, deadlineMinutes: 7 },
  });
  expect(await scope()).toBe('incremental');
  expect(await runExport(rt, target)).toMatchObject({ status: 'Completed', stats: { objectsProcessed: 0, objectsCreated: 0, objectsUpdated: 0, errors: 0 } });
  // A setting an export reads (the provisioning condition): the next export looks at every object again.
  await put({ provisioningCondition: 'source.dept != "nobody"' });
  expect(await scope()).toBe('full');
});
