import { readFileSync, unlinkSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { startService, type ServiceUnderTest } from '../../support/service';
import { fileConnector, folder, meshByAnchor, rule, runExport, runImport, writeCsv } from './syncSupport';

/**
 * An export run whose target goes away part way through a page (a lost connection): what was applied before
 * is recorded (the connector-space rows and the mesh links), the run fails, and the next export applies only
 * the rest. The target is the file connector behind test/fixtures/connectors/flaky-target.js, loaded into the
 * service.
 */
jest.setTimeout(180_000);

const FLAKY = path.join(__dirname, '..', '..', 'fixtures', 'connectors', 'flaky-target.js');

let rt: ServiceUnderTest;
beforeAll(async () => {
  rt = await startService({ env: { NODE_OPTIONS: `${process.env.NODE_OPTIONS ?? ''} --require "${FLAKY}"`.trim() } });
});
afterAll(async () => {
  await rt?.dispose();
});

test('the target lost in the middle of an export batch: the run fails, what it applied is recorded, the next export adds the rest once', async () => {
  // Enough objects that some mesh partition (an export page) holds several: the target fails at the second
  // change of a page, after applying the first.
  const N = 40;
  const src = folder();
  const dst = folder();
  writeCsv(
    src,
    'staff.csv',
    ['id', 'staffId', 'name'],
    Array.from({ length: N }, (_, i) => ({ id: `s${i}`, staffId: `S${String(i).padStart(2, '0')}`, name: `Staff ${i}` })),
  );
  const staff = await fileConnector(rt, 'Staff', src);
  await rule(rt, { ruleType: 'ProjectionRule', connectorId: staff, sourceAttribute: 'staffId', objectType: 'User' });
  for (const a of ['staffId', 'name']) await rule(rt, { ruleType: 'FlowRule', connectorId: staff, sourceAttribute: a, targetAttribute: a, confidence: 50 });
  expect(await runImport(rt, staff)).toMatchObject({ status: 'Completed', stats: { objectsCreated: N } });

  writeCsv(dst, 'export.csv', ['uid', 'name'], []);
  writeFileSync(path.join(dst, '.flaky'), '');
  const created = await rt.call('POST', 'connectors', {
    body: {
      name: 'Flaky target',
      type: 'custom',
      config: { implementation: 'flaky-file', objectType: 'User', settings: { path: dst, anchorColumn: 'uid', failAfter: 1 } },
    },
  });
  expect(created.status).toBe(201);
  const target = created.body.id as string;
  await rule(rt, { ruleType: 'FlowRule', connectorId: target, direction: 'outbound', sourceAttribute: 'staffId', targetAttribute: 'uid', confidence: 50 });
  await rule(rt, { ruleType: 'FlowRule', connectorId: target, direction: 'outbound', sourceAttribute: 'name', targetAttribute: 'name', confidence: 50 });

  const exportedUids = () =>
    readFileSync(path.join(dst, 'export.csv'), 'utf8')
      .trim()
      .split('\n')
      .slice(1)
      .map((l) => l.split(',')[0])
      .sort();
  const failed = await runExport(rt, target);
  expect(failed.status).toBe('Failed');
  expect(failed.error).toMatch(/went away/);
  const first = exportedUids();
  expect(first.length).toBeGreaterThan(0);
  expect(first.length).toBeLessThan(N);
  // What the target has is linked in the mesh (the engine recorded it before failing), the change applied
  // before the failure in the failing page included.
  const linked = [...(await meshByAnchor()).values()]
    .filter((o) => o.links[target])
    .map((o) => o.anchorValue)
    .sort();
  expect(linked).toEqual(first);

  // The target back: only the rest is added, once.
  unlinkSync(path.join(dst, '.flaky'));
  expect(await runExport(rt, target)).toMatchObject({ status: 'Completed', stats: { objectsCreated: N - first.length, errors: 0 } });
  expect(exportedUids()).toEqual(Array.from({ length: N }, (_, i) => `S${String(i).padStart(2, '0')}`));
  expect(await runImport(rt, target)).toMatchObject({ status: 'Completed', stats: { objectsProcessed: N, errors: 0 } });
  expect(await runExport(rt, target)).toMatchObject({ status: 'Completed', stats: { objectsCreated: 0, objectsUpdated: 0 } });
});
