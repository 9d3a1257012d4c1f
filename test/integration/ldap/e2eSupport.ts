import type { Client } from 'ldapts';
import { closeParkedSearches } from '../../../lib/connectors/ldap';
import type { DirectoryConfig } from '../../../lib/connectors/ldap/schema';
import { iterateMesh } from '../../../lib/mesh/store';
import type { MeshObject } from '../../../lib/mesh/model';
import { SECOND_ADMIN, startService, type ServiceOptions, type ServiceUnderTest } from '../../support/service';
import { startSlapd, type Slapd } from '../../support/slapd';
import { outboundRule, rule, runExport, runImport, sourceRules, waitRun } from '../sync/syncSupport';
import { SlapdFixture } from './ldapFixture';

/**
 * Helpers of the directory connector's end-to-end tests (the running service over HTTP, real slapd): a
 * connector of type `ldap` made with the Admin API, the rules a directory administrator would write, the mesh
 * objects linked to one connector.
 */

/** Create an `ldap` connector over the Admin API; the answer must not carry the bind password. */
export async function ldapConnector(rt: ServiceUnderTest, name: string, config: Record<string, unknown>): Promise<string> {
  const res = await rt.call('POST', 'connectors', { body: { name, type: 'ldap', config } });
  if (res.status !== 201) throw new Error(`create connector: ${res.status} ${res.text}`);
  if (res.text.includes(String(config.bindPassword))) throw new Error('the connector answer shows the bind password');
  return res.body.id as string;
}

/**
 * Rules for users and groups of one directory connector:
 * - users (inetOrgPerson, they have a uid) project as User with the uid as anchor value; groups (groupOfNames)
 *   as Group with the cn, by a projection condition on objectClass;
 * - inbound flows: `dn` (the entry DN, which member and manager values name), uid, cn, names, mail,
 *   container, member, manager;
 * - relationships: `member` and `manager` values (DNs) resolved against the mesh attribute `dn`.
 * The relationship rules are mesh-wide (MeshComposerRule): call {@link relationshipRules} once per service.
 */
export async function directoryRules(rt: ServiceUnderTest, connectorId: string, extraFlows: string[] = []): Promise<void> {
  await rule(rt, { ruleType: 'ProjectionRule', connectorId, sourceAttribute: 'uid', objectType: 'User', priority: 10 });
  await rule(rt, {
    ruleType: 'ProjectionRule',
    connectorId,
    sourceAttribute: 'cn',
    objectType: 'Group',
    priority: 20,
    transformScript: 'object.objectClass.includes("groupOfNames")',
  });
  for (const a of ['dn', 'uid', 'cn', 'givenName', 'sn', 'mail', 'container', 'member', 'manager', ...extraFlows]) {
    await rule(rt, { ruleType: 'FlowRule', connectorId, sourceAttribute: a, targetAttribute: a, confidence: 50 });
  }
}

export async function relationshipRules(rt: ServiceUnderTest): Promise<void> {
  await rule(rt, { ruleType: 'MeshComposerRule', relationshipType: 'member', sourceAttribute: 'member', targetAttribute: 'dn' });
  await rule(rt, { ruleType: 'MeshComposerRule', relationshipType: 'manager', sourceAttribute: 'manager', targetAttribute: 'dn' });
}

/** The mesh objects linked to `connectorId` (read from the service's tables), by anchor value. */
export async function meshOf(connectorId: string): Promise<Map<string, MeshObject>> {
  const out = new Map<string, MeshObject>();
  for await (const page of iterateMesh()) for (const o of page) if (o.links[connectorId] !== undefined) out.set(o.anchorValue, o);
  return out;
}

/** The target ids of `o`'s relationships of one type, sorted. */
export const targets = (o: MeshObject | undefined, type: string): string[] =>
  (o?.relationships ?? [])
    .filter((r) => r.type === type)
    .map((r) => r.targetId)
    .sort();

/** `o`'s relationships as the API shows them (type, target id, anchor and type; no bookkeeping of how they were resolved). */
export const plainRelationships = (o: MeshObject | undefined) =>
  (o?.relationships ?? []).map(({ type, targetId, targetAnchor, targetType }) => ({ type, targetId, targetAnchor, targetType }));

/** The mesh ids of these anchors, sorted. */
export const idsOf = (mesh: Map<string, MeshObject>, anchors: string[]): string[] => anchors.map((a) => mesh.get(a)!.id).sort();

/**
 * PUT a connector with `patch` merged into its config (a key set to undefined is dropped); a change that waits
 * for a second Admin (202) is approved by {@link SECOND_ADMIN}. Answers 200 when the change is in effect.
 */
// eslint-disable-next-line @typescript-eslint/no-explicit-any
export async function putConnectorConfig(rt: ServiceUnderTest, id: string, patch: Record<string, unknown>): Promise<{ status: number; body: any }> {
  const current = await rt.call('GET', `connectors/${id}`);
  const res = await rt.call('PUT', `connectors/${id}`, { body: { name: current.body.name, config: { ...current.body.config, ...patch } } });
  if (res.status === 202) {
    const approved = await rt.call('POST', `config/changes/${res.body.changeId}/approve`, { as: SECOND_ADMIN });
    if (approved.status !== 200) throw new Error(`approving the config change: ${approved.status} ${approved.text}`);
    return { status: 200, body: res.body };
  }
  return res;
}

/** Poll `check` until it is true (directory overlays and the mesh read model work in the background). */
export async function waitFor(what: string, check: () => Promise<boolean>, timeoutMs = 30_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`waited in vain for ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

/** How many entries under `base` match `filter` (as the directory's administrator). */
export async function count(admin: Client, base: string, filter: string): Promise<number> {
  return (await admin.search(base, { scope: 'sub', filter, attributes: ['1.1'] })).searchEntries.length;
}

/** Trigger an import and return the run id at once (for tests that act while it runs). */
export async function startImport(rt: ServiceUnderTest, connectorId: string, runType: 'FullImport' | 'DeltaImport'): Promise<string> {
  const res = await rt.call('POST', `connectors/${connectorId}/import`, { body: { runType } });
  if (res.status !== 202) throw new Error(`import: ${res.status} ${res.text}`);
  return res.body.runId as string;
}

export { waitRun };

/** Outbound flow rules of a directory target, one per `[mesh attribute, directory attribute]` pair, confidence 50. */
export async function outboundFlows(rt: ServiceUnderTest, connectorId: string, pairs: ReadonlyArray<readonly [string, string]>): Promise<void> {
  for (const [sourceAttribute, targetAttribute] of pairs)
    await rule(rt, { ruleType: 'FlowRule', connectorId, direction: 'outbound', sourceAttribute, targetAttribute, confidence: 50 });
}

/** The outbound flows of the people tests: uid from the employee id, names, department. */
export const PEOPLE_OUTBOUND = [
  ['employeeId', 'uid'],
  ['givenName', 'givenName'],
  ['sn', 'sn'],
  ['sn', 'cn'],
  ['department', 'departmentNumber'],
] as const;

/**
 * The end of a slapd end-to-end suite: the admin connection, the service, the fixture's temporary state, the
 * searches the connector parked in this process, and slapd, in that order; each may be missing (a failed start).
 */
export async function stopSlapdSuite(parts: {
  admin?: Client;
  rt?: ServiceUnderTest;
  f?: { cleanup(): Promise<void> };
  slapd?: { stop(): Promise<void> };
}): Promise<void> {
  await parts.admin?.unbind().catch(() => undefined);
  await parts.rt?.dispose();
  await parts.f?.cleanup();
  await closeParkedSearches();
  await parts.slapd?.stop();
}

/**
 * The directory target of the HR-file suites: entries `uid=<employeeId>,ou=Engineering,<base>` with uid,
 * employeeNumber, givenName, sn and cn flowing out, joined back by employeeNumber. `config`: the fixture's
 * connector config (its DN template is set here).
 */
export async function engineeringDirectory(
  rt: ServiceUnderTest,
  config: Record<string, unknown>,
  moreFlows: ReadonlyArray<readonly [string, string]> = [],
): Promise<string> {
  const dir = await ldapConnector(rt, 'Directory', { ...config, exportDnTemplate: '"uid=" + dnEscape(source.uid) + ",ou=Engineering," + baseDN' });
  const out = outboundRule(rt, dir, { confidence: 50 });
  await out('employeeId', 'uid');
  await out('employeeId', 'employeeNumber');
  await out('givenName', 'givenName');
  await out('sn', 'sn');
  await out('givenName', 'cn', 'object.givenName + " " + object.sn');
  for (const [from, to] of moreFlows) await out(from, to);
  await rule(rt, { ruleType: 'JoinRule', connectorId: dir, sourceAttribute: 'employeeNumber', targetAttribute: 'employeeId' });
  return dir;
}

/** What {@link startHrDirectory} starts and makes: stop it with {@link stopSlapdSuite}. */
export interface HrDirectory {
  slapd: Slapd;
  rt: ServiceUnderTest;
  f: SlapdFixture;
  admin: Client;
  /** The HR file connector's id (named HR). */
  hr: string;
  /** The directory connector's id (named Directory, see {@link engineeringDirectory}). */
  dir: string;
}

/** Both deletion thresholds out of the way (a test removes most of its few people). */
export const NO_DELETION_LIMIT = { deletionThreshold: { objects: 10, percent: 100 } } as const;

/**
 * The set-up of the suites with an HR file source and a slapd target: a slapd and the service (started side by
 * side), a fixture subtree, the HR connector (`custom` file connector over `hrDir`, anchor column id, whose
 * hr.csv the suite wrote) projecting on employeeId with `hrFlows` flowing in, the {@link engineeringDirectory}
 * (its config from the fixture, `directory` merged in, `moreFlows` flowing out besides), then the first sync:
 * an HR full import and a directory export that each create `people`, and the directory's confirming import.
 * What started is stopped again when a step fails.
 */
export async function startHrDirectory(o: {
  hrDir: string;
  people: number;
  hrFlows: readonly string[];
  /** Merged into the HR connector's config (e.g. {@link NO_DELETION_LIMIT}). */
  hrConfig?: Record<string, unknown>;
  directory?: Partial<DirectoryConfig>;
  moreFlows?: ReadonlyArray<readonly [string, string]>;
  service?: ServiceOptions;
}): Promise<HrDirectory> {
  const [slapd, rt] = await Promise.allSettled([startSlapd(), startService(o.service)]);
  const parts: Partial<HrDirectory> = {
    slapd: slapd.status === 'fulfilled' ? slapd.value : undefined,
    rt: rt.status === 'fulfilled' ? rt.value : undefined,
  };
  try {
    if (slapd.status === 'rejected') throw slapd.reason;
    if (rt.status === 'rejected') throw rt.reason;
    const s = { slapd: slapd.value, rt: rt.value } as HrDirectory;
    s.f = parts.f = await new SlapdFixture(s.slapd).init();
    s.admin = parts.admin = await s.f.client();
    const res = await s.rt.call('POST', 'connectors', {
      body: {
        name: 'HR',
        type: 'custom',
        config: { implementation: 'file', objectType: 'User', settings: { path: o.hrDir, anchorColumn: 'id' }, ...o.hrConfig },
      },
    });
    if (res.status !== 201) throw new Error(`create HR connector: ${res.status} ${res.text}`);
    s.hr = res.body.id as string;
    await sourceRules(s.rt, s.hr, 'employeeId', o.hrFlows);
    s.dir = await engineeringDirectory(s.rt, s.f.config(o.directory), o.moreFlows);
    const created = { status: 'Completed', stats: { objectsCreated: o.people, errors: 0 } };
    expect(await runImport(s.rt, s.hr)).toMatchObject(created);
    expect(await runExport(s.rt, s.dir)).toMatchObject(created);
    // The confirming import: the entries' values (employeeNumber for the join rule) are in the connector space.
    expect(await runImport(s.rt, s.dir)).toMatchObject({ status: 'Completed', stats: { errors: 0 } });
    return s;
  } catch (err) {
    await stopSlapdSuite(parts);
    throw err;
  }
}
