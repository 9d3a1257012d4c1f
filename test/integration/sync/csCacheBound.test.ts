import { startService, type ServiceUnderTest } from '../../support/service';
import { fileConnector, folder, meshByAnchor, rule, runImport, writeCsv } from './syncSupport';

/**
 * Connector-space summaries kept while a connector runs and for `Sync__IdleConnectorSpaceCaches` idle
 * connectors (the ones used last; set to 1 here, the default is 2): a connector whose summaries were dropped reloads them at its
 * next run, and that run is exactly what it would have been with them kept. The reloads are seen in the
 * engine's trace lines (SYNC_TRACE).
 */
jest.setTimeout(180_000);

const HR = ['id', 'employeeId', 'givenName', 'department'];
const IT = ['id', 'employeeId', 'mail'];

let rt: ServiceUnderTest;
afterAll(async () => {
  await rt?.dispose();
});

describe('connector-space caches bounded (one idle connector)', () => {
  const hrDir = folder();
  const itDir = folder();
  let hr = '';
  let it = '';
  const loads = (since: number, connectorId: string) =>
    [...rt.logsSince(since).matchAll(new RegExp(`connector-space summaries of ${connectorId} loaded: (\\d+) rows`, 'g'))].map((m) => Number(m[1]));

  beforeAll(async () => {
    rt = await startService({ env: { SYNC_TRACE: '1', LOG_FORMAT: 'text', Sync__IdleConnectorSpaceCaches: '1' } });
    writeCsv(hrDir, 'hr.csv', HR, [
      { id: 'h1', employeeId: 'E1', givenName: 'Ada', department: 'R&D' },
      { id: 'h2', employeeId: 'E2', givenName: 'Alan', department: 'R&D' },
      { id: 'h3', employeeId: 'E3', givenName: 'Grace', department: 'Navy' },
    ]);
    writeCsv(itDir, 'it.csv', IT, [
      { id: 'i1', employeeId: 'E1', mail: 'ada@it.test' },
      { id: 'i2', employeeId: 'E2', mail: 'alan@it.test' },
    ]);
    hr = await fileConnector(rt, 'HR', hrDir);
    it = await fileConnector(rt, 'IT', itDir);
    await rule(rt, { ruleType: 'ProjectionRule', connectorId: hr, sourceAttribute: 'employeeId', objectType: 'User' });
    for (const a of ['employeeId', 'givenName', 'department'])
      await rule(rt, { ruleType: 'FlowRule', connectorId: hr, sourceAttribute: a, targetAttribute: a, confidence: 50 });
    await rule(rt, { ruleType: 'JoinRule', connectorId: it, sourceAttribute: 'employeeId', targetAttribute: 'employeeId' });
    await rule(rt, { ruleType: 'FlowRule', connectorId: it, sourceAttribute: 'mail', targetAttribute: 'mail', confidence: 50 });
    expect(await runImport(rt, hr)).toMatchObject({ status: 'Completed', stats: { objectsCreated: 3 } });
    expect(await runImport(rt, it)).toMatchObject({ status: 'Completed', stats: { objectsProcessed: 2, errors: 0 } });
  });

  test("another connector's run ended: the first one's summaries were dropped, reloaded by its next run, which writes nothing", async () => {
    const mark = rt.logMark();
    const before = await meshByAnchor();
    const run = await runImport(rt, hr);
    expect(run).toMatchObject({ status: 'Completed', stats: { objectsProcessed: 3, objectsCreated: 0, objectsUpdated: 0, objectsDeleted: 0 } });
    expect(loads(mark, hr)).toEqual([3]);
    const after = await meshByAnchor();
    expect([...after.values()].map((o) => o.updatedOn)).toEqual([...before.values()].map((o) => o.updatedOn));
  });

  test('the connector used last keeps its summaries while idle: its next run reads none', async () => {
    const mark = rt.logMark();
    writeCsv(hrDir, 'hr.csv', HR, [
      { id: 'h1', employeeId: 'E1', givenName: 'Ada', department: 'Research' },
      { id: 'h2', employeeId: 'E2', givenName: 'Alan', department: 'R&D' },
      { id: 'h3', employeeId: 'E3', givenName: 'Grace', department: 'Navy' },
    ]);
    const run = await runImport(rt, hr);
    expect(run).toMatchObject({ status: 'Completed', stats: { objectsProcessed: 3, objectsCreated: 0, objectsUpdated: 1, objectsDeleted: 0 } });
    expect(loads(mark, hr)).toEqual([]);
    expect((await meshByAnchor()).get('E1')!.attributes.department.value).toBe('Research');
  });

  test('the other connector, dropped meanwhile, reloads what it wrote and finds its rows unchanged', async () => {
    const mark = rt.logMark();
    const run = await runImport(rt, it);
    expect(run).toMatchObject({ status: 'Completed', stats: { objectsProcessed: 2, objectsCreated: 0, objectsUpdated: 0, objectsDeleted: 0 } });
    expect(loads(mark, it)).toEqual([2]);
    expect((await meshByAnchor()).get('E1')!.links).toEqual({ [hr]: 'h1', [it]: 'i1' });
  });
});
