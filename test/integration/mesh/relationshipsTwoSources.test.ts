import { startService, type ServiceUnderTest } from '../../support/service';
import { fileConnector, folder, meshByAnchor, rule, runImport, writeCsv } from '../sync/syncSupport';

/**
 * Two sources that both name a person's manager (each by its own anchor of the manager's row) (a directory's manager and HR's manager id, as the scale bench
 * has them) make one `manager` relationship in the mesh object's detail, not one per source; each source's
 * assertion is still kept on its own, so the relationship stays while one of them asserts it. The running
 * service over HTTP, two file connectors each with its own reference rule.
 */
jest.setTimeout(180_000);

// eslint-disable-next-line @typescript-eslint/no-explicit-any
type Json = any;

let rt: ServiceUnderTest;
beforeAll(async () => {
  rt = await startService();
});
afterAll(async () => {
  await rt?.dispose();
});

const HR = ['id', 'employeeId', 'sn', 'managerId'];
const DIR = ['id', 'employeeId', 'managerId'];

describe('a relationship two sources assert', () => {
  const hrDir = folder();
  const dirDir = folder();
  let hr = '';
  let dir = '';
  const detail = async (anchor: string): Promise<Json> => {
    const id = (await meshByAnchor()).get(anchor)!.id;
    const res = await rt.call('GET', `mesh/objects/${id}`, { role: 'Viewer' });
    expect(res.status).toBe(200);
    return res.body;
  };
  const managers = async (anchor: string) =>
    (await detail(anchor)).relationships.filter((r: Json) => r.relationshipType === 'manager').map((r: Json) => r.targetAnchorValue);

  beforeAll(async () => {
    writeCsv(hrDir, 'hr.csv', HR, [
      { id: 'h1', employeeId: 'E1', sn: 'Boss', managerId: null },
      { id: 'h2', employeeId: 'E2', sn: 'Worker', managerId: 'h1' },
      { id: 'h3', employeeId: 'E3', sn: 'Other', managerId: 'h1' },
    ]);
    writeCsv(dirDir, 'dir.csv', DIR, [
      { id: 'd1', employeeId: 'E1', managerId: null },
      { id: 'd2', employeeId: 'E2', managerId: 'd1' },
      { id: 'd3', employeeId: 'E3', managerId: 'd2' },
    ]);
    hr = await fileConnector(rt, 'HR', hrDir, { referenceColumns: { managerId: 'User' } });
    dir = await fileConnector(rt, 'Directory', dirDir, { referenceColumns: { managerId: 'User' } });
    await rule(rt, { ruleType: 'ProjectionRule', connectorId: hr, sourceAttribute: 'employeeId', objectType: 'User' });
    await rule(rt, { ruleType: 'FlowRule', connectorId: hr, sourceAttribute: 'employeeId', targetAttribute: 'employeeId', confidence: 50 });
    await rule(rt, { ruleType: 'FlowRule', connectorId: hr, sourceAttribute: 'sn', targetAttribute: 'sn', confidence: 50 });
    await rule(rt, { ruleType: 'JoinRule', connectorId: dir, sourceAttribute: 'employeeId', targetAttribute: 'employeeId' });
    await rule(rt, { ruleType: 'MeshComposerRule', connectorId: hr, relationshipType: 'manager', sourceAttribute: 'managerId' });
    await rule(rt, { ruleType: 'MeshComposerRule', connectorId: dir, relationshipType: 'manager', sourceAttribute: 'managerId' });
    expect(await runImport(rt, hr)).toMatchObject({ status: 'Completed', stats: { objectsCreated: 3, errors: 0 } });
    expect(await runImport(rt, dir)).toMatchObject({ status: 'Completed', stats: { errors: 0 } });
  });

  test('the same manager from both sources is listed once; sources that disagree are both listed', async () => {
    const mesh = await meshByAnchor();
    // Stored: one relationship per source that asserts it.
    expect(mesh.get('E2')!.relationships.filter((r) => r.type === 'manager')).toHaveLength(2);
    const e2 = await detail('E2');
    expect(e2.relationships).toEqual([
      { relationshipType: 'manager', targetMeshObjectId: mesh.get('E1')!.id, targetAnchorValue: 'E1', targetObjectType: 'User', targetDisplayName: 'E1' },
    ]);
    // E3: HR says E1, the directory says E2: both are what the sources say.
    expect((await managers('E3')).sort()).toEqual(['E1', 'E2']);
    expect(await managers('E1')).toEqual([]);
  });

  test('one source dropping the manager leaves the other one’s; both dropping it removes it', async () => {
    writeCsv(dirDir, 'dir.csv', DIR, [
      { id: 'd1', employeeId: 'E1', managerId: null },
      { id: 'd2', employeeId: 'E2', managerId: null },
      { id: 'd3', employeeId: 'E3', managerId: 'd2' },
    ]);
    expect(await runImport(rt, dir)).toMatchObject({ status: 'Completed', stats: { errors: 0 } });
    expect(await managers('E2')).toEqual(['E1']);

    writeCsv(hrDir, 'hr.csv', HR, [
      { id: 'h1', employeeId: 'E1', sn: 'Boss', managerId: null },
      { id: 'h2', employeeId: 'E2', sn: 'Worker', managerId: null },
      { id: 'h3', employeeId: 'E3', sn: 'Other', managerId: 'h1' },
    ]);
    expect(await runImport(rt, hr)).toMatchObject({ status: 'Completed', stats: { errors: 0 } });
    expect(await managers('E2')).toEqual([]);
    expect((await managers('E3')).sort()).toEqual(['E1', 'E2']);
  });
});
