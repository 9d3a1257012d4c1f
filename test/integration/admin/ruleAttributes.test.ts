import { dumpTable, startService, type ServiceUnderTest } from '../../support/service';
import { startSlapd, type Slapd } from '../../support/slapd';
import { fileConnector, folder, writeCsv } from '../sync/syncSupport';

/**
 * A directory connector's rules over HTTP against slapd: the attribute names on the directory's side are looked
 * up in the directory's schema (case-insensitively, as LDAP names are), stored as the schema spells them; an
 * attribute the schema does not have is a 400 naming it, and nothing is stored.
 */
let svc: ServiceUnderTest;
let slapd: Slapd;
let connectorId: string;

beforeAll(async () => {
  svc = await startService();
  slapd = await startSlapd();
  const config = {
    host: 'localhost',
    port: slapd.ldapsPort,
    caCertificate: slapd.caCertificate,
    baseDN: slapd.suffix,
    bindDN: slapd.rootDN,
    bindPassword: slapd.rootPassword,
  };
  connectorId = (await svc.call('POST', 'connectors', { body: { name: 'Schema names', type: 'ldap', config } })).body.id;
  expect(connectorId).toBeDefined();
});

afterAll(async () => {
  await svc?.dispose();
  await slapd?.stop();
});

describe('directory attribute names in rules', () => {
  it('inbound, join and projection names are stored in the schema spelling (employeenumber -> employeeNumber, commonName -> cn); the mesh side as written', async () => {
    const flow = await svc.call('POST', 'rules', {
      body: { ruleName: 'n', ruleType: 'FlowRule', connectorId, sourceAttribute: 'employeenumber', targetAttribute: 'employeeid', confidence: 50 },
    });
    expect(flow.status).toBe(201);
    expect(flow.body).toMatchObject({ sourceAttribute: 'employeeNumber', targetAttribute: 'employeeid' });
    expect((await svc.call('GET', `rules/${flow.body.ruleId}`)).body).toMatchObject({ sourceAttribute: 'employeeNumber' });
    const join = await svc.call('POST', 'rules', {
      body: { ruleName: 'j', ruleType: 'JoinRule', connectorId, sourceAttribute: 'commonName', targetAttribute: 'name' },
    });
    expect(join.body).toMatchObject({ sourceAttribute: 'cn', targetAttribute: 'name' });
    const out = await svc.call('POST', 'rules', {
      body: { ruleName: 'o', ruleType: 'FlowRule', connectorId, direction: 'outbound', sourceAttribute: 'dept', targetAttribute: 'DEPARTMENTNUMBER' },
    });
    expect(out.body).toMatchObject({ sourceAttribute: 'dept', targetAttribute: 'departmentNumber' });
    const container = await svc.call('POST', 'rules', {
      body: { ruleName: 'c', ruleType: 'FlowRule', connectorId, direction: 'outbound', sourceAttribute: 'ou', targetAttribute: 'container' },
    });
    expect(container.body).toMatchObject({ targetAttribute: 'container' });
    // PUT too.
    const put = await svc.call('PUT', `rules/${flow.body.ruleId}`, {
      body: { ruleName: 'n', ruleType: 'FlowRule', connectorId, sourceAttribute: 'MAIL', targetAttribute: 'email', confidence: 50 },
    });
    expect(put.body).toMatchObject({ sourceAttribute: 'mail' });
  });

  it('an attribute the schema does not have: 400 naming it, nothing stored (create and update)', async () => {
    const before = await dumpTable('Rules');
    const res = await svc.call('POST', 'rules', {
      body: { ruleName: 'typo', ruleType: 'FlowRule', connectorId, sourceAttribute: 'employeNumber', targetAttribute: 'employeeId', confidence: 50 },
    });
    expect(res.status).toBe(400);
    expect(res.headers.get('content-type')).toBe('application/problem+json');
    expect(res.body.errors).toEqual([
      { path: '/sourceAttribute', message: "'employeNumber' is not an attribute of the directory's schema (ldap connector) (did you mean 'employeeNumber'?)" },
    ]);
    expect(await dumpTable('Rules')).toEqual(before);
    const { body: r } = await svc.call('POST', 'rules', { body: { ruleName: 'ok', ruleType: 'ProjectionRule', connectorId, sourceAttribute: 'uid' } });
    const put = await svc.call('PUT', `rules/${r.ruleId}`, { body: { ruleName: 'ok', ruleType: 'ProjectionRule', connectorId, sourceAttribute: 'userid2' } });
    expect(put.status).toBe(400);
    expect(put.body.errors).toEqual([{ path: '/sourceAttribute', message: "'userid2' is not an attribute of the directory's schema (ldap connector)" }]);
    expect((await svc.call('GET', `rules/${r.ruleId}`)).body).toMatchObject({ sourceAttribute: 'uid' });
  });
});

describe('file connector column names in rules', () => {
  it('a name the files do not have is a 400 with the closest column, nothing stored; a column in another case is stored as the header spells it', async () => {
    const dir = folder('ims-rule-columns-');
    writeCsv(dir, 'hr.csv', ['id', 'givenName', 'department'], [{ id: '1', givenName: 'Ada', department: 'Sales' }]);
    const hr = await fileConnector(svc, 'HR columns', dir);
    const before = (await svc.call('GET', 'rules')).body.totalCount;

    const typo = await svc.call('POST', 'rules', {
      body: { ruleName: 't', ruleType: 'FlowRule', connectorId: hr, sourceAttribute: 'deparment', targetAttribute: 'department', confidence: 50 },
    });
    expect(typo.status).toBe(400);
    expect(typo.headers.get('content-type')).toMatch(/application\/problem\+json/);
    expect(typo.body.errors).toEqual([
      { path: '/sourceAttribute', message: "'deparment' is not a column of the connector's files (did you mean 'department'?)" },
    ]);
    expect((await svc.call('GET', 'rules')).body.totalCount).toBe(before);

    const cased = await svc.call('POST', 'rules', {
      body: { ruleName: 'c', ruleType: 'JoinRule', connectorId: hr, sourceAttribute: 'GIVENNAME', targetAttribute: 'givenName' },
    });
    expect(cased.status).toBe(201);
    expect(cased.body).toMatchObject({ sourceAttribute: 'givenName' });

    // An outbound flow writes a column of the export file: any name goes, and a join may then read it.
    const out = await svc.call('POST', 'rules', {
      body: { ruleName: 'o', ruleType: 'FlowRule', connectorId: hr, direction: 'outbound', sourceAttribute: 'mail', targetAttribute: 'email' },
    });
    expect(out.status).toBe(201);
    const join = await svc.call('POST', 'rules', {
      body: { ruleName: 'j', ruleType: 'JoinRule', connectorId: hr, sourceAttribute: 'email', targetAttribute: 'mail' },
    });
    expect(join.status).toBe(201);
  });

  it('a folder with no file yet keeps the names as written (nothing to check them against)', async () => {
    const empty = await fileConnector(svc, 'Empty folder', folder('ims-rule-columns-empty-'));
    const res = await svc.call('POST', 'rules', {
      body: { ruleName: 'e', ruleType: 'FlowRule', connectorId: empty, sourceAttribute: 'deparment', targetAttribute: 'department', confidence: 50 },
    });
    expect(res.status).toBe(201);
    expect(res.body).toMatchObject({ sourceAttribute: 'deparment' });
  });
});
