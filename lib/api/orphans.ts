import type { Caller } from '../auth/permissions';
import { recordAudit } from '../audit';
import { conflict, notFound } from '../core/errors';
import { PAGING, page, type ParsedQuery, type QuerySpec } from '../http/request';
import { displayAttributes, displayNameOf } from '../mesh/displayName';
import { getConnectorRecord } from '../storage/connectors';
import { deleteOrphanKeep, putOrphanKeep, type OrphanKeep } from '../storage/orphanKeeps';
import { ORPHAN_REASONS, notTarget, sweepRefusal, sweepTargets, type Orphan } from '../sync/orphans/classify';
import { isExportTarget, loadOrphans } from '../sync/orphans/report';
import { configOfRun, settingsOf } from '../sync/run/runConnector';
import { csObjectIdOf } from '../sync/space/connectorSpace';
import { findSpaceObject } from '../sync/space/spaceObjects';
import type { CsObject } from '../sync/model';

/** `GET /connectors/{id}/orphans?reason=&excluded=&skip=&take=` (docs/orphans.md). */
export const ORPHANS_QUERY = {
  reason: { kind: 'enum', values: ORPHAN_REASONS },
  excluded: { kind: 'enum', values: ['true', 'false'] },
  ...PAGING,
} as const satisfies QuerySpec;

/** An orphan as the API shows it: no attribute values, only the display name (never from a secret attribute). */
export interface OrphanView {
  csObjectId: string;
  anchor: string;
  dn: string | null;
  objectType: string;
  displayName: string;
  reason: Orphan['reason'];
  meshObjectId: string | null;
  since: string;
  targetState: Orphan['targetState'];
  lastImportedOn: string | null;
  excluded: Orphan['excluded'];
}

function displayNameOfRow(row: CsObject): string {
  const byName = new Map(Object.entries(row.attributes).map(([k, v]) => [k.toLowerCase(), v]));
  return displayNameOf(displayAttributes(), { objectType: row.objectType, anchorValue: row.anchor }, (n) => byName.get(n.toLowerCase()));
}

export function orphanView(connectorId: string, o: Orphan): OrphanView {
  return {
    csObjectId: csObjectIdOf(connectorId, o.row),
    anchor: o.row.anchor,
    dn: o.row.dn ?? null,
    objectType: o.row.objectType,
    displayName: displayNameOfRow(o.row),
    reason: o.reason,
    meshObjectId: o.row.meshId,
    since: o.since,
    targetState: o.targetState,
    lastImportedOn: o.row.importedOn ?? null,
    excluded: o.excluded,
  };
}

async function targetConfig(connectorId: string) {
  const c = await getConnectorRecord(connectorId);
  return { name: c.name, config: configOfRun(c.type, c.config) };
}

/**
 * The orphan report of a target connector: its objects joined to no active identity, excluded ones listed with
 * why; filtered by reason and exclusion, paged. `sweepable` counts what a sweep would change now. 404: unknown
 * connector; 409: a connector that is no export target (a source's unjoined objects are not accounts to sweep).
 */
export async function listOrphans(
  connectorId: string,
  q: ParsedQuery<typeof ORPHANS_QUERY>,
): Promise<{ items: OrphanView[]; totalCount: number; sweepable: number }> {
  const { name, config } = await targetConfig(connectorId);
  if (!(await isExportTarget(connectorId))) throw conflict(notTarget(name));
  const { orphans } = await loadOrphans(connectorId, config);
  const sweepable = sweepTargets(orphans, settingsOf(config)).length;
  const all = orphans.filter((o) => (!q.reason || o.reason === q.reason) && (q.excluded === undefined || !!o.excluded === (q.excluded === 'true')));
  return { items: page(all, q.skip, q.take).map((o) => orphanView(connectorId, o)), totalCount: all.length, sweepable };
}

/**
 * A sweep of this connector may start: 409 (nothing started, the refusal audited) when it is no export target
 * or its sweep disables and it has no disable values.
 */
export async function assertSweepable(connectorId: string, caller: Caller): Promise<void> {
  const { name, config } = await targetConfig(connectorId);
  const refused = sweepRefusal(name, settingsOf(config), await isExportTarget(connectorId));
  if (!refused) return;
  await recordAudit(caller, 'trigger', 'connector', connectorId, 'failure', `OrphanSweep refused: ${refused}`);
  throw conflict(refused);
}

async function rowOf(connectorId: string, csObjectId: string): Promise<CsObject> {
  await getConnectorRecord(connectorId);
  const found = await findSpaceObject(connectorId, csObjectId);
  if (!found || found.kind !== 'row' || found.row.deleted)
    throw notFound(`Connector-space object '${csObjectId}' does not exist in connector '${connectorId}' (a staged add has no account to keep).`);
  return found.row;
}

/**
 * `PUT /connectors/{id}/orphans/{csObjectId}/keep`: mark the object kept (an orphan now or later is listed as
 * excluded and never swept). Marking again replaces the note. Audited as `keep` on the `connectorSpaceObject`.
 */
export async function keepOrphan(connectorId: string, csObjectId: string, note: string | undefined, caller: Caller) {
  const row = await rowOf(connectorId, csObjectId);
  const keep: OrphanKeep = { anchor: row.anchor, by: caller.upn ?? caller.principal.display, on: new Date().toISOString(), note: note?.trim() || null };
  await putOrphanKeep(connectorId, keep);
  await recordAudit(caller, 'keep', 'connectorSpaceObject', csObjectId, 'success', keep.note ? `Kept: ${keep.note}` : undefined);
  return { csObjectId, ...keep };
}

/** `DELETE /connectors/{id}/orphans/{csObjectId}/keep`: the mark goes (404 when there is none). Audited as `unkeep`. */
export async function unkeepOrphan(connectorId: string, csObjectId: string, caller: Caller): Promise<void> {
  const row = await rowOf(connectorId, csObjectId);
  if (!(await deleteOrphanKeep(connectorId, row.anchor))) throw notFound(`Connector-space object '${csObjectId}' has no keep mark.`);
  await recordAudit(caller, 'unkeep', 'connectorSpaceObject', csObjectId);
}
