import { Client } from 'ldapts';
import { startKdc, type Kdc } from '../../support/kdc';
import { serverAvailable } from '../../support/servers';
import { startService, type ServiceUnderTest } from '../../support/service';
import { startSlapd, type Slapd } from '../../support/slapd';
import { folder, sourceRules, waitRun, writeCsv } from '../sync/syncSupport';
import { curl } from './curl';

/**
 * One person is one person (the four-eyes rule over principals), against the real components: an MIT KDC
 * (tickets, curl --negotiate), slapd as the directory that gives Windows callers their UPN (`mail`, through
 * Authentication__Negotiate__Ldap__UpnAttribute) and their Admin group, and the test OIDC issuer for Bearer
 * tokens. A run parks for approval on a file connector whose `adds` threshold is 1; every refusal is a 403
 * problem+json naming the rule and the requester, audited as a failure, and leaves the run waiting.
 *
 * alice: Kerberos alice@EXAMPLE.TEST, directory UPN alice.w@corp.example.test (not her principal).
 * bob: Kerberos bob@EXAMPLE.TEST, directory UPN bob@example.test.
 * carol: Kerberos carol@EXAMPLE.TEST, no UPN in the directory: her realm maps to example.test (UpnRealms).
 */
jest.setTimeout(300_000);

// eslint-disable-next-line @typescript-eslint/no-explicit-any
type Json = any;

const ALICE = { upn: 'alice.w@corp.example.test', preferred_username: 'alice.w@corp.example.test', oid: 'e0000000-0000-4000-8000-00000000000a' };
const BOB = { upn: 'bob@example.test', preferred_username: 'bob@example.test', oid: 'e0000000-0000-4000-8000-00000000000b' };
const CAROL = { upn: 'carol@example.test', preferred_username: 'carol@example.test', oid: 'e0000000-0000-4000-8000-00000000000c' };
const APP = { sub: 'f0000000-0000-4000-8000-0000000000ff', appid: 'sync-robot', oid: 'f0000000-0000-4000-8000-0000000000ff', idtyp: 'app' };

(serverAvailable('kdc') && serverAvailable('slapd') ? describe : describe.skip)('four-eyes over principals: Bearer, Negotiate, applications', () => {
  let kdc: Kdc;
  let slapd: Slapd;
  let svc: ServiceUnderTest;
  // The service principal is HTTP/localhost: Negotiate calls go to localhost, not 127.0.0.1 (the port may change on a restart).
  const base = () => `http://localhost:${svc.port}/api`;
  const krb: Record<string, Record<string, string>> = {};
  let n = 0;

  beforeAll(async () => {
    [kdc, slapd] = await Promise.all([startKdc(), startSlapd()]);
    for (const user of ['alice', 'bob', 'carol']) {
      await kdc.addUser(user, `${user}-pw`);
      krb[user] = await kdc.kinit(user, `${user}-pw`);
    }
    const client = new Client({ url: slapd.url });
    await client.bind(slapd.rootDN, slapd.rootPassword);
    const people = `ou=people,${slapd.suffix}`;
    await client.add(`uid=alice,${people}`, { objectClass: ['inetOrgPerson'], uid: 'alice', cn: 'alice', sn: 'w', mail: ALICE.upn });
    await client.add(`uid=bob,${people}`, { objectClass: ['inetOrgPerson'], uid: 'bob', cn: 'bob', sn: 'b', mail: BOB.upn });
    await client.add(`uid=carol,${people}`, { objectClass: ['inetOrgPerson'], uid: 'carol', cn: 'carol', sn: 'c' });
    await client.add(`cn=Sync Admins,ou=groups,${slapd.suffix}`, {
      objectClass: ['groupOfNames'],
      cn: 'Sync Admins',
      member: ['alice', 'bob', 'carol'].map((u) => `uid=${u},${people}`),
    });
    await client.unbind();
    svc = await startService({
      env: {
        ...kdc.env,
        Authentication__Negotiate__Enabled: 'true',
        Authentication__Negotiate__ServicePrincipal: 'HTTP@localhost',
        Authentication__Negotiate__Ldap__Url: slapd.url,
        Authentication__Negotiate__Ldap__BindDN: slapd.rootDN,
        Authentication__Negotiate__Ldap__BindPassword: slapd.rootPassword,
        Authentication__Negotiate__Ldap__BaseDN: slapd.suffix,
        Authentication__Negotiate__Ldap__UpnAttribute: 'mail',
        Authentication__Negotiate__UpnRealms: 'EXAMPLE.TEST=example.test',
        Service__Roles__Admin: 'Service.Admin,Sync Admins',
      },
    });
  }, 180_000);

  afterAll(async () => {
    await svc?.dispose();
    await Promise.all([kdc?.stop(), slapd?.stop()]);
  });

  const bearer = async (claims: Record<string, unknown>) => ({ authorization: `Bearer ${await svc.mint({ ...claims, roles: ['Service.Admin'] })}` });

  /** A file source (3 new rows, `adds` threshold 1) whose first import will park. */
  async function source(): Promise<string> {
    const dir = folder('ims-foureyes-');
    writeCsv(
      dir,
      'people.csv',
      ['id', 'employeeId'],
      [1, 2, 3].map((i) => ({ id: `p${i}`, employeeId: `E${i}` })),
    );
    const res = await svc.call('POST', 'connectors', {
      body: {
        name: `HR ${++n}`,
        type: 'custom',
        config: { implementation: 'file', objectType: 'User', settings: { path: dir, anchorColumn: 'id' }, thresholds: { adds: { count: 1 } } },
      },
    });
    expect(res.status).toBe(201);
    await sourceRules(svc, res.body.id, 'employeeId', ['employeeId']);
    return res.body.id;
  }

  /** Trigger the import with these headers (Bearer) or this Kerberos client (Negotiate) and wait until it parks. */
  async function parkedBy(connectorId: string, who: { headers?: Record<string, string>; negotiateEnv?: Record<string, string> }): Promise<Json> {
    const res = await curl(`${base()}/connectors/${connectorId}/import`, { method: 'POST', json: { runType: 'FullImport' }, ...who });
    expect(res.status).toBe(202);
    const run = await waitRun(svc, res.body.runId);
    expect(run.status).toBe('AwaitingApproval');
    return run;
  }

  const approve = (runId: string, who: { headers?: Record<string, string>; negotiateEnv?: Record<string, string> }) =>
    curl(`${base()}/runs/${runId}/approve`, { method: 'POST', ...who });

  const meshCount = async () => (await svc.call('GET', 'mesh/objects?take=1')).body.totalCount as number;

  /** The refusal is a 403 problem naming the rule and the requester; the run still waits, unapproved; the mesh is as it was. */
  async function expectRefused(runId: string, attempt: () => Promise<Json>, detail: RegExp): Promise<void> {
    const before = await meshCount();
    const answer = await attempt();
    expect(answer.status).toBe(403);
    expect(answer.headers['content-type']).toBe('application/problem+json');
    expect(answer.body).toMatchObject({ status: 403, code: 'forbidden' });
    expect(answer.body.detail).toMatch(detail);
    const after = (await svc.call('GET', `runs/${runId}`)).body;
    expect(after.status).toBe('AwaitingApproval');
    expect(after.approvedBy).toBeUndefined();
    expect(await meshCount()).toBe(before);
  }

  const runAudit = async (runId: string) => (await svc.call('GET', `audit?targetType=run&targetId=${runId}`)).body.items as Json[];
  const connectorAudit = async (id: string) => (await svc.call('GET', `audit?targetType=connector&targetId=${id}`)).body.items as Json[];

  it('Bearer alice triggers; Negotiate alice (her directory UPN) cannot approve; Negotiate bob approves and is recorded as the approver', async () => {
    const hr = await source();
    const run = await parkedBy(hr, { headers: await bearer(ALICE) });
    expect(run.approval).toMatchObject({ requestedBy: ALICE.upn, requester: ALICE.upn });
    expect((await connectorAudit(hr)).find((r) => r.action === 'trigger')).toMatchObject({
      actorUpn: ALICE.upn,
      actorSid: ALICE.oid,
      actorKey: `upn:${ALICE.upn}`,
      actorKind: 'person',
      scheme: 'Bearer',
    });

    await expectRefused(
      run.runId,
      () => approve(run.runId, { negotiateEnv: krb.alice }),
      new RegExp(`four-eyes rule \\(Approvals__RequireSecondPerson\\).*asked for by ${ALICE.upn}.*upn:${ALICE.upn}`),
    );

    const ok = await approve(run.runId, { negotiateEnv: krb.bob });
    expect(ok.status).toBe(202);
    expect(await waitRun(svc, run.runId)).toMatchObject({ status: 'Completed', approvedBy: BOB.upn, stats: { objectsCreated: 3 } });
    const listed = (await svc.call('GET', `runs?connectorId=${hr}`)).body.items;
    expect(listed).toEqual([expect.objectContaining({ runId: run.runId, approvedBy: BOB.upn })]);
    expect(await runAudit(run.runId)).toEqual([
      expect.objectContaining({
        action: 'approve',
        outcome: 'success',
        actorUpn: BOB.upn,
        actorKey: `upn:${BOB.upn}`,
        actorKind: 'person',
        scheme: 'Negotiate',
      }),
      expect.objectContaining({
        action: 'approve',
        outcome: 'failure',
        actorUpn: ALICE.upn,
        actorKey: `upn:${ALICE.upn}`,
        actorKind: 'person',
        scheme: 'Negotiate',
        details: expect.stringMatching(/^Refused: The four-eyes rule/),
      }),
    ]);
  });

  it('the reverse: Negotiate alice triggers; a Bearer token with her UPN (and an oid of its own) cannot approve; Bearer bob can', async () => {
    const hr = await source();
    const run = await parkedBy(hr, { negotiateEnv: krb.alice });
    expect(run.approval).toMatchObject({ requester: ALICE.upn });
    expect((await connectorAudit(hr)).find((r) => r.action === 'trigger')).toMatchObject({
      actorUpn: ALICE.upn,
      actorKey: `upn:${ALICE.upn}`,
      actorKind: 'person',
      scheme: 'Negotiate',
    });
    const sameAlice = await bearer({ ...ALICE, oid: 'e0000000-0000-4000-8000-0000000000aa' });
    await expectRefused(run.runId, () => approve(run.runId, { headers: sameAlice }), /four-eyes rule/);
    expect((await approve(run.runId, { headers: await bearer(BOB) })).status).toBe(202);
    expect(await waitRun(svc, run.runId)).toMatchObject({ status: 'Completed', approvedBy: BOB.upn });
  });

  it('a realm mapped to a UPN suffix: Bearer carol@example.test triggers, Negotiate carol@EXAMPLE.TEST (no directory UPN) cannot approve', async () => {
    const hr = await source();
    const run = await parkedBy(hr, { headers: await bearer(CAROL) });
    await expectRefused(run.runId, () => approve(run.runId, { negotiateEnv: krb.carol }), new RegExp(`asked for by ${CAROL.upn}.*upn:${CAROL.upn}`));
    expect((await curl(`${base()}/runs/${run.runId}/reject`, { method: 'POST', negotiateEnv: krb.bob })).status).toBe(200);
  });

  it('two Bearer tokens with one UPN and different oids are one person', async () => {
    const hr = await source();
    const run = await parkedBy(hr, { headers: await bearer(BOB) });
    const sameUpn = await bearer({ ...BOB, oid: 'e0000000-0000-4000-8000-0000000000bb' });
    await expectRefused(run.runId, () => approve(run.runId, { headers: sameUpn }), new RegExp(`upn:${BOB.upn}`));
    expect((await svc.call('POST', `runs/${run.runId}/reject`)).status).toBe(200);
  });

  describe('applications (app-only tokens)', () => {
    let byAlice: Json;
    let byApp: Json;
    let appSource: string;

    it('an application may trigger (audited as the application); it may not approve while Approvals__AllowApplications is off', async () => {
      byAlice = await parkedBy(await source(), { headers: await bearer(ALICE) });
      appSource = await source();
      byApp = await parkedBy(appSource, { headers: await bearer(APP) });
      expect(byApp.trigger).toMatchObject({ type: 'manual', actorUpn: APP.appid });
      expect(byApp.approval).toMatchObject({ requester: APP.appid });
      expect((await connectorAudit(appSource)).find((r) => r.action === 'trigger')).toMatchObject({
        actorUpn: APP.appid,
        actorKey: `app:${APP.appid}`,
        actorKind: 'application',
        scheme: 'Bearer',
      });
      const app = await bearer(APP);
      await expectRefused(byAlice.runId, () => approve(byAlice.runId, { headers: app }), /application \(sync-robot.*Approvals__AllowApplications is false/);
      expect(await runAudit(byAlice.runId)).toEqual([
        expect.objectContaining({ action: 'approve', outcome: 'failure', actorKey: `app:${APP.appid}`, actorKind: 'application', scheme: 'Bearer' }),
      ]);
    });

    it("with Approvals__AllowApplications=true it approves a person's run, never its own", async () => {
      await svc.stop();
      await svc.start({ Approvals__AllowApplications: 'true' });
      const app = await bearer(APP);
      await expectRefused(byApp.runId, () => approve(byApp.runId, { headers: app }), /application sync-robot asked for this run itself/);
      // The same application under another token (another sub and oid, the same appid) is the same application.
      const again = await bearer({ ...APP, sub: 'another-sub', oid: 'f0000000-0000-4000-8000-0000000000fe' });
      await expectRefused(byApp.runId, () => approve(byApp.runId, { headers: again }), /asked for this run itself/);
      const ok = await approve(byAlice.runId, { headers: app });
      expect(ok.status).toBe(202);
      expect(await waitRun(svc, byAlice.runId)).toMatchObject({ status: 'Completed', approvedBy: APP.appid });
      // A person approves the application's run.
      expect((await approve(byApp.runId, { headers: await bearer(BOB) })).status).toBe(202);
      expect(await waitRun(svc, byApp.runId)).toMatchObject({ status: 'Completed', approvedBy: BOB.upn });
    });
  });
});
