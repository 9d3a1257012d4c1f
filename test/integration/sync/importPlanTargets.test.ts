import type { Client } from 'ldapts';
import { startPostgres, type Postgres } from '../../support/postgres';
import { serverAvailable } from '../../support/servers';
import { startService, type ServiceUnderTest } from '../../support/service';
import { startSlapd, type Slapd } from '../../support/slapd';
import { ldapConnector, stopSlapdSuite } from '../ldap/e2eSupport';
import { SlapdFixture } from '../ldap/ldapFixture';
import { hrSqlSource, rule, waitRun, outboundRule } from './syncSupport';

/**
 * An import's plan lists what each export target would then get (the running service over HTTP, a real
 * PostgreSQL HR table as the source, a real slapd as the target that disables its leavers after a grace, and a
 * second directory connector with no outbound rule): a dry run of a truncated HR export lists the mesh deletes
 * and, for the target, the disables that would follow with their DNs; an attribute change lists the target's
 * old and new value; a leaver by the provisioning condition is listed although the grace defers it; the
 * connector with no outbound rule gets nothing; counts, filters and paging include the target's items; an
 * apply replays the mesh changes only and LDAP changes only with the export that follows.
 */
jest.setTimeout(300_000);

// eslint-disable-next-line @typescript-eslint/no-explicit-any
type Json = any;

const N = 12;
const ids = Array.from({ length: N }, (_, i) => `E${String(i + 1).padStart(3, '0')}`);

(serverAvailable('postgres') && serverAvailable('slapd') ? describe : describe.skip)("an import's plan: what each target would then get", () => {
  let pg: Postgres;
  let slapd: Slapd;
  let rt: ServiceUnderTest;
  let f: SlapdFixture;
  let admin: Client;
  let db = '';
  let hr = '';
  let dir = '';
  let other = '';

  const sql = (text: string, values: unknown[] = []) => pg.query(text, values, db);
  const insert = (id: string) =>
    sql('INSERT INTO hr (employee_id, given_name, sn, title, status) VALUES ($1, $2, $3, $4, $5)', [id, `Given${id}`, `Sn${id}`, 'Engineer', 'active']);
  const dnOf = (id: string) => `uid=${id},ou=Engineering,${f.base}`;
  const ldapEntry = async (id: string): Promise<Json> =>
    (await admin.search(dnOf(id), { scope: 'base', attributes: ['title', 'employeeType'] })).searchEntries[0];
  const trigger = async (path: string, body: Record<string, unknown> = {}) => {
    const res = await rt.call('POST', path, { body });
    expect(res.status).toBe(202);
    return waitRun(rt, res.body.runId);
  };
  const changes = async (runId: string, query = ''): Promise<Json> => {
    const res = await rt.call('GET', `runs/${runId}/changes${query}`, { role: 'Viewer' });
    expect(res.status).toBe(200);
    return res.body;
  };
  const dryImport = () => trigger(`connectors/${hr}/import`, { runType: 'FullImport', dryRun: true });

  beforeAll(async () => {
    [pg, slapd] = await Promise.all([startPostgres(), startSlapd()]);
    rt = await startService();
    f = await new SlapdFixture(slapd).init();
    admin = await f.client();
    db = await pg.createDatabase(`importplan${process.pid}`);
    await sql('CREATE TABLE hr (employee_id varchar(20) PRIMARY KEY, given_name text, sn text, title text, status text)');
    for (const id of ids) await insert(id);
    hr = await hrSqlSource(rt, pg, db, 'hr', [
      ['employee_id', 'employeeId'],
      ['given_name', 'givenName'],
      ['sn', 'sn'],
      ['title', 'title'],
      ['status', 'employeeStatus'],
    ]);
    dir = await ldapConnector(
      rt,
      'Directory',
      f.config({
        exportDnTemplate: '"uid=" + dnEscape(source.uid) + ",ou=Engineering," + baseDN',
        provisioningCondition: 'source.employeeStatus != "terminated"',
        deprovisioning: { action: 'disable', disableAttributes: { employeeType: 'disabled' }, graceDays: 3, onConditionFalse: true },
        thresholds: { deletes: {} },
      }),
    );
    const out = outboundRule(rt, dir, { confidence: 50 });
    await out('employeeId', 'uid');
    await out('employeeId', 'employeeNumber');
    await out('givenName', 'givenName');
    await out('sn', 'sn');
    await out('givenName', 'cn', 'object.givenName + " " + object.sn');
    await out('title', 'title');
    await rule(rt, { ruleType: 'JoinRule', connectorId: dir, sourceAttribute: 'employeeNumber', targetAttribute: 'employeeId' });
    // A second directory connector that only imports (a join rule, no outbound flow): not an export target.
    other = await ldapConnector(rt, 'Directory (read only)', f.config());
    await rule(rt, { ruleType: 'JoinRule', connectorId: other, sourceAttribute: 'employeeNumber', targetAttribute: 'employeeId' });

    expect(await trigger(`connectors/${hr}/import`, { runType: 'FullImport' })).toMatchObject({ status: 'Completed', stats: { objectsCreated: N, errors: 0 } });
    expect(await trigger(`connectors/${dir}/export`)).toMatchObject({ status: 'Completed', stats: { objectsCreated: N, errors: 0 } });
    expect(await trigger(`connectors/${dir}/import`, { runType: 'FullImport' })).toMatchObject({ status: 'Completed', stats: { errors: 0 } });
  });
  afterAll(async () => {
    await stopSlapdSuite({ admin, rt, f, slapd });
    await pg?.stop();
  });

  test('a dry run of a truncated HR export: the mesh deletes, and the disables LDAP would then get (deferred by its grace), with their DNs', async () => {
    await sql('DELETE FROM hr WHERE employee_id > $1', ['E004']);
    const plan = await dryImport();
    expect(plan).toMatchObject({ status: 'Completed', dryRun: true, plan: { expiresOn: expect.any(String) } });
    const all = await changes(plan.runId, '?take=200');
    expect(all.totalCount).toBe(16);
    const mesh = all.items.filter((i: Json) => i.target === 'mesh');
    expect(mesh.map((i: Json) => [i.anchor, i.operation, i.outcome, i.connectorId]).sort()).toEqual(ids.slice(4).map((id) => [id, 'Delete', 'planned', hr]));
    const ldap = all.items.filter((i: Json) => i.target === 'connector');
    expect(ldap.map((i: Json) => i.dn).sort()).toEqual(ids.slice(4).map(dnOf));
    for (const i of ldap)
      expect(i).toEqual({
        target: 'connector',
        connectorId: dir,
        operation: 'Update',
        csObjectId: expect.any(String),
        meshObjectId: mesh.find((m: Json) => i.dn === dnOf(m.anchor)).meshObjectId,
        anchor: expect.any(String),
        dn: i.dn,
        attributes: { employeeType: { old: null, new: 'disabled' } },
        outcome: 'planned',
        error: null,
      });
    // The connector with no outbound rule gets nothing.
    expect(all.items.filter((i: Json) => i.connectorId === other)).toEqual([]);
    // Filters and paging count the target's items: the 8 deletes are the mesh's, the 8 updates LDAP's.
    expect((await changes(plan.runId, '?operation=Delete')).totalCount).toBe(8);
    const updates = await changes(plan.runId, '?operation=Update&outcome=planned');
    expect(updates.totalCount).toBe(8);
    expect(updates.items.every((i: Json) => i.target === 'connector')).toBe(true);
    const windows = [await changes(plan.runId, '?take=5'), await changes(plan.runId, '?skip=5&take=5'), await changes(plan.runId, '?skip=15&take=5')];
    expect(windows.map((w) => w.totalCount)).toEqual([16, 16, 16]);
    expect(windows.map((w) => w.items.length)).toEqual([5, 5, 1]);
    expect([...windows[0].items, ...windows[1].items]).toEqual(all.items.slice(0, 10));
    expect(windows[2].items).toEqual(all.items.slice(15));
    // A dry run writes nothing: every entry is there, none disabled.
    for (const id of ids) expect([(await ldapEntry(id)).employeeType ?? []].flat()).toEqual([]);
    for (const id of ids.slice(4)) await insert(id);
  });

  test('a dry run that changes a flowed attribute lists the target attribute old and new; its apply replays the mesh only', async () => {
    await sql('UPDATE hr SET title = $1 WHERE employee_id = $2', ['Lead', 'E002']);
    const plan = await dryImport();
    const list = await changes(plan.runId);
    expect(list.totalCount).toBe(2);
    expect(list.items).toEqual([
      expect.objectContaining({
        target: 'mesh',
        connectorId: hr,
        anchor: 'E002',
        operation: 'Update',
        attributes: { title: { old: 'Engineer', new: 'Lead' } },
      }),
      expect.objectContaining({
        target: 'connector',
        connectorId: dir,
        dn: dnOf('E002'),
        operation: 'Update',
        attributes: { title: { old: 'Engineer', new: 'Lead' } },
        outcome: 'planned',
      }),
    ]);
    const started = await rt.call('POST', `runs/${plan.runId}/apply`, { role: 'Operator' });
    expect(started.status).toBe(202);
    const applied = await waitRun(rt, started.body.runId);
    expect(applied).toMatchObject({ status: 'Completed', stats: { objectsUpdated: 1 } });
    expect((await changes(applied.runId)).items).toEqual([
      expect.objectContaining({ target: 'mesh', anchor: 'E002', operation: 'Update', outcome: 'applied' }),
    ]);
    expect((await ldapEntry('E002')).title).toBe('Engineer');
    // The export that follows plans again from the mesh and sends what the preview showed.
    const exported = await trigger(`connectors/${dir}/export`);
    expect(exported).toMatchObject({ status: 'Completed', stats: { objectsUpdated: 1 } });
    expect((await changes(exported.runId)).items).toEqual([
      expect.objectContaining({ target: 'connector', connectorId: dir, dn: dnOf('E002'), attributes: { title: { old: 'Engineer', new: 'Lead' } } }),
    ]);
    expect((await ldapEntry('E002')).title).toBe('Lead');
  });

  test('a leaver by the provisioning condition is listed with its disable, although the grace defers it', async () => {
    await sql('UPDATE hr SET status = $1 WHERE employee_id = $2', ['terminated', 'E003']);
    const plan = await dryImport();
    const list = await changes(plan.runId);
    expect(list.items).toEqual([
      expect.objectContaining({
        target: 'mesh',
        anchor: 'E003',
        operation: 'Update',
        attributes: { employeeStatus: { old: 'active', new: 'terminated' } },
      }),
      expect.objectContaining({
        target: 'connector',
        connectorId: dir,
        dn: dnOf('E003'),
        operation: 'Update',
        attributes: { employeeType: { old: null, new: 'disabled' } },
      }),
    ]);
    expect(list.totalCount).toBe(2);
  });
});
