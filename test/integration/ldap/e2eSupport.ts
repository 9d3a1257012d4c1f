import type { Client } from 'ldapts';
import { closeParkedSearches } from '../../../lib/connectors/ldap';
import { iterateMesh } from '../../../lib/mesh/store';
import type { MeshObject } from '../../../lib/mesh/model';
import { SECOND_ADMIN, type ServiceUnderTest } from '../../support/service';
import { outboundRule, rule, waitRun } from '../sync/syncSupport';

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
export async function engineeringDirectory(rt: ServiceUnderTest, config: Record<string, unknown>): Promise<string> {
  const dir = await ldapConnector(rt, 'Directory', { ...config, exportDnTemplate: '"uid=" + dnEscape(source.uid) + ",ou=Engineering," + baseDN' });
  const out = outboundRule(rt, dir, { confidence: 50 });
  await out('employeeId', 'uid');
  await out('employeeId', 'employeeNumber');
  await out('givenName', 'givenName');
  await out('sn', 'sn');
  await out('givenName', 'cn', 'object.givenName + " " + object.sn');
  await rule(rt, { ruleType: 'JoinRule', connectorId: dir, sourceAttribute: 'employeeNumber', targetAttribute: 'employeeId' });
  return dir;
}
