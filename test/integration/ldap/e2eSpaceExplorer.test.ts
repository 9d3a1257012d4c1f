import { mkdirSync } from 'node:fs';
import path from 'node:path';
import { randomUUID } from 'node:crypto';
import { schemaErrors } from '../../../lib/core/validation/ajv';
import { ConnectorSpaceList, ConnectorSpaceObjectDetail } from '../../../lib/schemas/connectorSpace';
import { stagedCsObjectId } from '../../../lib/sync/space/csIds';
import { describeWithServer } from '../../support/servers';
import { startService, type ServiceUnderTest } from '../../support/service';
import { startSlapd, type Slapd } from '../../support/slapd';
import { runExport, runImport, sourceRules, writeCsv } from '../sync/syncSupport';
import { ldapConnector, meshOf, outboundFlows, PEOPLE_OUTBOUND, stopSlapdSuite } from './e2eSupport';
import { SlapdFixture } from './ldapFixture';

/**
 * The connector space explorer against a real directory that refuses two changes (entries in the way): an add
 * (E001: a staged add, listed with anchor null) and a move (E002: a pending update). Every state filter,
 * search, paging and the detail (attributes, the pending change's old/new, exported values) over HTTP; the
 * pending change's new value is what the export writes once the cause is gone.
 */
jest.setTimeout(300_000);

describeWithServer('slapd')('connector space explorer (slapd, Azurite, over HTTP)', () => {
  let slapd: Slapd;
  let rt: ServiceUnderTest;
  let f: SlapdFixture;
  let hr: string;
  let dir: string;
  let hrDir: string;
  const people: Record<string, string>[] = [];
  const header = ['id', 'employeeId', 'givenName', 'sn', 'department'];
  const person = (n: number, department = 'Engineering') => ({ id: `h${n}`, employeeId: `E00${n}`, givenName: `Given${n}`, sn: `Surname${n}`, department });
  const writePeople = () => writeCsv(hrDir, 'people.csv', header, people);
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  const space = async (connectorId: string, query = ''): Promise<any> => {
    const res = await rt.call('GET', `connectors/${connectorId}/space${query}`, { role: 'Viewer' });
    expect(res.status).toBe(200);
    expect(schemaErrors(ConnectorSpaceList, res.body)).toEqual([]);
    return res.body;
  };
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  const anchorsOf = (body: any) => (body.items as { anchor: string | null; dn: string | null }[]).map((i) => i.dn ?? i.anchor);

  beforeAll(async () => {
    slapd = await startSlapd();
    rt = await startService();
    f = await new SlapdFixture(slapd).init();
    await f.seed([
      { key: 'E001', givenName: 'Other', sn: 'One', container: 'Engineering' },
      { key: 'E002', givenName: 'Other', sn: 'Two', container: 'Sales' },
    ]);
    hrDir = path.join(rt.dataDir, 'files', 'hr');
    mkdirSync(hrDir, { recursive: true });
    people.push(person(1), person(2), person(3));
    writePeople();
    const res = await rt.call('POST', 'connectors', {
      body: { name: 'HR', type: 'custom', config: { implementation: 'file', objectType: 'User', settings: { path: hrDir, anchorColumn: 'id' } } },
    });
    hr = res.body.id as string;
    await sourceRules(rt, hr, 'employeeId', ['employeeId', 'givenName', 'sn', 'department']);
    dir = await ldapConnector(rt, 'Directory', f.config());
    await outboundFlows(rt, dir, PEOPLE_OUTBOUND);
  });
  afterAll(() => stopSlapdSuite({ rt, f, slapd }));

  test('states, search, paging and detail follow imports and exports; the pending change is what the export writes', async () => {
    expect(await runImport(rt, hr)).toMatchObject({ status: 'Completed', stats: { objectsCreated: 3 } });
    const all = await space(hr);
    expect(all.totalCount).toBe(3);
    expect(all.items.map((i: { anchor: string }) => i.anchor)).toEqual(['h1', 'h2', 'h3']);
    expect(all.items[0]).toMatchObject({
      objectType: 'User',
      pendingExport: null,
      awaitingConfirmation: false,
      error: null,
      lastImportedOn: expect.any(String),
      lastExportedOn: null,
    });
    const h2 = await rt.call('GET', `connectors/${hr}/space/${all.items[1].csObjectId}`, { role: 'Viewer' });
    expect(h2.status).toBe(200);
    expect(h2.body.attributes).toEqual({ id: 'h2', employeeId: 'E002', givenName: 'Given2', sn: 'Surname2', department: 'Engineering' });

    // Export: E002 and E003 are added (awaiting confirmation); E001's add is refused (a staged add in error).
    const run1 = await runExport(rt, dir);
    expect(run1).toMatchObject({ status: 'CompletedWithErrors', stats: { objectsCreated: 2, errors: 1 } });
    const e001 = (await meshOf(hr)).get('E001')!.id;
    const refused = `An entry with the DN 'uid=E001,ou=Engineering,${f.base}' already exists.`;
    const dn2 = `uid=E002,ou=Engineering,${f.base}`;
    const dn3 = `uid=E003,ou=Engineering,${f.base}`;
    const body = await space(dir);
    expect(body.totalCount).toBe(3);
    expect(anchorsOf(body).slice(0, 2).sort()).toEqual([dn2, dn3]);
    const staged = body.items[2];
    expect(staged).toEqual({
      csObjectId: stagedCsObjectId(dir, e001),
      anchor: null,
      dn: null,
      objectType: 'User',
      meshObjectId: e001,
      pendingExport: { operation: 'Add', attributeCount: 5, stagedOn: expect.any(String) },
      awaitingConfirmation: false,
      error: { message: refused, runId: run1.runId, occurredOn: expect.any(String), attempts: 1 },
      lastImportedOn: null,
      lastExportedOn: null,
    });
    expect(anchorsOf(await space(dir, '?state=awaitingConfirmation')).sort()).toEqual([dn2, dn3]);
    expect((await space(dir, '?state=error')).items).toEqual([staged]);
    expect((await space(dir, '?state=pendingExport')).items).toEqual([staged]);
    expect((await space(dir, '?state=joined')).totalCount).toBe(3);
    expect((await space(dir, '?state=disconnector')).totalCount).toBe(0);
    const stagedDetail = await rt.call('GET', `connectors/${dir}/space/${staged.csObjectId}`, { role: 'Viewer' });
    expect(stagedDetail.status).toBe(200);
    expect(schemaErrors(ConnectorSpaceObjectDetail, stagedDetail.body)).toEqual([]);
    expect(stagedDetail.body.pendingExport.attributes).toMatchObject({ uid: { old: null, new: 'E001' }, departmentNumber: { old: null, new: 'Engineering' } });

    // Import the directory: the adds are confirmed, the entries in the way are disconnectors.
    expect(await runImport(rt, dir)).toMatchObject({ status: 'Completed' });
    expect((await space(dir, '?state=awaitingConfirmation')).totalCount).toBe(0);
    const disconnectors = await space(dir, '?state=disconnector');
    expect(anchorsOf(disconnectors).sort()).toEqual([`uid=E001,ou=Engineering,${f.base}`, `uid=E002,ou=Sales,${f.base}`]);
    expect(disconnectors.items.every((i: { meshObjectId: string | null }) => i.meshObjectId === null)).toBe(true);
    expect((await space(dir, '?state=joined')).totalCount).toBe(3);

    // E002 moves to Sales, where an entry is in the way: its update stays pending, in error.
    people[1].department = 'Sales';
    writePeople();
    expect(await runImport(rt, hr)).toMatchObject({ status: 'Completed' });
    const run2 = await runExport(rt, dir);
    expect(run2).toMatchObject({ status: 'CompletedWithErrors' });
    const errors = await space(dir, '?state=error');
    expect(errors.totalCount).toBe(2);
    const moved = errors.items.find((i: { dn: string | null }) => i.dn === dn2);
    expect(moved).toMatchObject({
      meshObjectId: (await meshOf(hr)).get('E002')!.id,
      pendingExport: { operation: 'Update', attributeCount: 1 },
      error: { runId: run2.runId, attempts: 1, message: expect.any(String) },
    });
    expect(moved.error.message.length).toBeGreaterThan(0);
    const detail = await rt.call('GET', `connectors/${dir}/space/${moved.csObjectId}`, { role: 'Viewer' });
    expect(detail.status).toBe(200);
    expect(schemaErrors(ConnectorSpaceObjectDetail, detail.body)).toEqual([]);
    expect(detail.body.pendingExport.attributes).toEqual({ departmentNumber: { old: 'Engineering', new: 'Sales' } });
    expect(detail.body.attributes).toMatchObject({ uid: 'E002', departmentNumber: 'Engineering' });

    // Search: case-insensitive substring of the anchor or the dn; paging with counts.
    expect(anchorsOf(await space(dir, '?search=UID%3DE003'))).toEqual([dn3]);
    expect((await space(dir, '?search=ou%3Dsales')).totalCount).toBe(1);
    const full = await space(dir);
    expect(full.totalCount).toBe(5);
    const pageOf = await space(dir, '?skip=1&take=2');
    expect(pageOf).toEqual({ totalCount: 5, items: full.items.slice(1, 3) });
    expect((await space(dir, '?objectType=Group')).totalCount).toBe(0);
    // Every listed id resolves.
    for (const i of full.items) expect((await rt.call('GET', `connectors/${dir}/space/${i.csObjectId}`, { role: 'Viewer' })).body).toMatchObject(i);

    // The cause goes: the export writes exactly the pending new value.
    await f.remove('E001');
    await f.remove('E002');
    expect(await runExport(rt, dir)).toMatchObject({ status: 'Completed', stats: { objectsCreated: 1, objectsUpdated: 1, errors: 0 } });
    const { searchEntries } = await (await f.client()).search(`uid=E002,ou=Sales,${f.base}`, { scope: 'base', attributes: ['departmentNumber'] });
    expect(searchEntries[0].departmentNumber).toBe(detail.body.pendingExport.attributes.departmentNumber.new);
    expect((await space(dir, '?state=error')).totalCount).toBe(0);
    expect((await space(dir, '?state=pendingExport')).totalCount).toBe(0);
    const e001Now = await rt.call('GET', `connectors/${dir}/space/${staged.csObjectId}`);
    expect(e001Now.body).toMatchObject({ anchor: expect.any(String), dn: `uid=E001,ou=Engineering,${f.base}`, awaitingConfirmation: true, error: null });
  });

  test('bad input is 400 problem+json, unknown ones 404, no caller 401', async () => {
    for (const q of ['?take=201', '?take=-1', '?skip=1.5', '?state=broken', '?search=']) {
      const res = await rt.call('GET', `connectors/${dir}/space${q}`);
      expect(res.status).toBe(400);
      expect(res.headers.get('content-type')).toMatch(/application\/problem\+json/);
      expect(res.body.code).toBe('validation_failed');
    }
    expect((await rt.call('GET', `connectors/${dir}/space/not-a-guid`)).status).toBe(400);
    expect((await rt.call('GET', `connectors/${randomUUID()}/space`)).status).toBe(404);
    expect((await rt.call('GET', `connectors/${dir}/space/${randomUUID()}`)).status).toBe(404);
    expect((await rt.call('GET', `connectors/${dir}/space`, { role: null })).status).toBe(401);
  });
});
