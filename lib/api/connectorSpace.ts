import type { Caller } from '../auth/permissions';
import { recordAudit } from '../audit';
import { notFound } from '../core/errors';
import { MASK, shownValue } from '../core/secretAttributes';
import type { ConnectorSpaceList, ConnectorSpaceObject, ConnectorSpaceObjectDetail } from '../schemas/connectorSpace';
import { getConnectorRecord } from '../storage/connectors';
import type { NextChange } from '../sync/export/next';
import type { PendingExport } from '../sync/model';
import type { AttributeValue } from '../connectors/sdk';
import { querySpace, type SpaceEntry, type SpaceListState, type SpaceQuery } from '../sync/space/spaceIndex';
import { nextChangeOf, queryComputedState } from '../sync/space/spaceNext';
import { findSpaceObject, retrySpaceObject, type SpaceObject } from '../sync/space/spaceObjects';

/**
 * The connector space as the Admin API sees it: one object by its csObjectId (lib/sync/space/csIds.ts), and the
 * retry of a change the target refused.
 */

const OPERATIONS = { add: 'Add', update: 'Update', delete: 'Delete', rename: 'Rename' } as const;

function pendingView(p: PendingExport | null | undefined, fallbackOn: string): ConnectorSpaceObject['pendingExport'] {
  if (!p) return null;
  return { operation: OPERATIONS[p.kind], attributeCount: Object.keys(p.attributes).length, stagedOn: p.stagedOn ?? fallbackOn };
}

/** The API item of a connector-space object (a row, or a staged add: no anchor yet). */
export function spaceItem(obj: SpaceObject): ConnectorSpaceObject {
  if (obj.kind === 'staged') {
    const s = obj.staged;
    return {
      csObjectId: obj.csObjectId,
      anchor: null,
      dn: null,
      objectType: s.objectType,
      meshObjectId: s.meshId,
      pendingExport: pendingView(s.pendingExport, s.updatedOn),
      awaitingConfirmation: false,
      error: s.exportError ?? null,
      lastImportedOn: null,
      lastExportedOn: null,
    };
  }
  const r = obj.row;
  return {
    csObjectId: obj.csObjectId,
    anchor: r.anchor,
    dn: r.dn ?? null,
    objectType: r.objectType,
    meshObjectId: r.meshId,
    pendingExport: pendingView(r.pendingExport, r.updatedOn),
    awaitingConfirmation: !!r.exported && Object.keys(r.exported).length > 0,
    error: r.exportError ?? null,
    lastImportedOn: r.importedOn ?? null,
    lastExportedOn: r.exportedOn ?? null,
  };
}

/**
 * `POST /connectors/{id}/space/{csObjectId}/retry`: reset the object's export failure (attempts and error) so
 * that the next export tries its pending change again. 404 for an unknown connector or object. Audited as
 * `retry` on the `connectorSpaceObject` (its csObjectId, which names one connector's object).
 */
export async function retryConnectorSpaceObject(connectorId: string, csObjectId: string, caller: Caller): Promise<ConnectorSpaceObject> {
  await getConnectorRecord(connectorId);
  const missing = () => notFound(`Connector-space object '${csObjectId}' does not exist in connector '${connectorId}'.`);
  const found = await findSpaceObject(connectorId, csObjectId);
  if (!found) throw missing();
  const now = await retrySpaceObject(connectorId, found);
  if (!now) throw missing();
  await recordAudit(caller, 'retry', 'connectorSpaceObject', csObjectId);
  return spaceItem(now);
}

/**
 * The attribute that holds a connector's anchor when an export can give it (a SQL table's or a file's
 * `anchorColumn`); directories make their anchors themselves (entryUUID, objectGUID): none.
 */
export function anchorAttributeOf(config: unknown): string | undefined {
  const c = (config ?? {}) as { anchorColumn?: unknown; settings?: { anchorColumn?: unknown } };
  const a = c.anchorColumn ?? c.settings?.anchorColumn;
  return typeof a === 'string' && a ? a : undefined;
}

/** A staged add's anchor-to-be: the value its add sends to the anchor attribute, when it is one scalar. */
export function anchorToBe(values: Record<string, AttributeValue> | undefined, anchorAttribute: string | undefined): string | null {
  const v = anchorAttribute ? valueOf(values, anchorAttribute) : undefined;
  return typeof v === 'string' || typeof v === 'number' ? String(v) : null;
}

/** The API item of an index entry (the same fields as {@link spaceItem}). */
function entryItem(e: SpaceEntry, anchorAttribute: string | undefined): ConnectorSpaceObject {
  return {
    csObjectId: e.csObjectId,
    anchor: e.stagedMeshId ? anchorToBe(e.addValues, anchorAttribute) : e.anchor,
    dn: e.dn,
    objectType: e.objectType,
    meshObjectId: e.meshObjectId,
    pendingExport: e.pendingExport,
    awaitingConfirmation: e.awaitingConfirmation,
    error: e.error,
    lastImportedOn: e.lastImportedOn,
    lastExportedOn: e.lastExportedOn,
    ...(e.dueOn ? { dueOn: e.dueOn } : {}),
  };
}

/**
 * `GET /connectors/{id}/space`: a page of the connector's space, ordered by anchor. 404 unknown connector.
 * `pendingExport` and `scheduledDeprovision` are computed from what the next export would do
 * (lib/sync/space/spaceNext.ts); `partial` says when that computation looked at only part of the objects.
 */
export async function listConnectorSpace(connectorId: string, q: Omit<SpaceQuery, 'state'> & { state?: SpaceListState }): Promise<ConnectorSpaceList> {
  const connector = await getConnectorRecord(connectorId);
  const anchorAttribute = anchorAttributeOf(connector.config);
  if (q.state === 'pendingExport' || q.state === 'scheduledDeprovision') {
    const { items, totalCount, partial } = await queryComputedState(connectorId, q.state, q);
    return { items: items.map((e) => entryItem(e, anchorAttribute)), totalCount, ...(partial ? { partial } : {}) };
  }
  const { items, totalCount } = await querySpace(connectorId, { ...q, state: q.state });
  return { items: items.map((e) => entryItem(e, anchorAttribute)), totalCount };
}

/**
 * Secret attributes (lib/core/secretAttributes.ts: passwords, and `Mesh:SecretAttributes`): a pending add may
 * carry one (a write-only one is sent once, never recorded as exported); their values are never shown, only
 * that they are set.
 */
export const SECRET_MASK = MASK;
const shown = (name: string, v: AttributeValue | null | undefined): AttributeValue | null => (v === undefined ? null : shownValue(name, v));
const masked = (values: Record<string, AttributeValue>): Record<string, AttributeValue | null> =>
  Object.fromEntries(Object.entries(values).map(([k, v]) => [k, shown(k, v)]));

/** A value by name, the name matched case-insensitively (directories do not mind case). */
function valueOf(values: Record<string, AttributeValue> | undefined, name: string): AttributeValue | undefined {
  if (!values) return undefined;
  if (name in values) return values[name];
  const lower = name.toLowerCase();
  const key = Object.keys(values).find((k) => k.toLowerCase() === lower);
  return key === undefined ? undefined : values[key];
}

/**
 * The pending change per attribute: `old` the value the space holds now (exported and awaiting confirmation,
 * else as imported; null for an add or an attribute it does not have), `new` the value the change sends.
 */
export function pendingAttributes(
  p: PendingExport,
  imported: Record<string, AttributeValue>,
  exported: Record<string, AttributeValue> | undefined,
): Record<string, { old: AttributeValue | null; new: AttributeValue | null }> {
  const out: Record<string, { old: AttributeValue | null; new: AttributeValue | null }> = {};
  for (const [name, v] of Object.entries(p.attributes)) {
    const old = p.kind === 'add' ? undefined : (valueOf(exported, name) ?? valueOf(imported, name));
    out[name] = { old: shown(name, old), new: shown(name, v) };
  }
  return out;
}

/**
 * `GET /connectors/{id}/space/{csObjectId}`: the item with its attributes, pending change and exported values.
 * The pending change is what the next export would send to the object (lib/sync/export/next.ts), else a change
 * the target refused; an add of a mesh object not in the target yet (listed by `state=pendingExport`) resolves
 * by its csObjectId too, with no attributes.
 */
export async function getConnectorSpaceObject(connectorId: string, csObjectId: string): Promise<ConnectorSpaceObjectDetail> {
  const connector = await getConnectorRecord(connectorId);
  const anchorAttribute = anchorAttributeOf(connector.config);
  const found = await findSpaceObject(connectorId, csObjectId);
  const next = await nextChangeOf(connectorId, csObjectId);
  if (!found) {
    if (!next) throw notFound(`Connector-space object '${csObjectId}' does not exist in connector '${connectorId}'.`);
    const values = Object.fromEntries(Object.entries(next.attributes).map(([k, v]) => [k, v.new ?? null])) as Record<string, AttributeValue>;
    return {
      csObjectId,
      anchor: next.anchor ?? anchorToBe(values, anchorAttribute),
      dn: next.dn,
      objectType: next.objectType,
      meshObjectId: next.meshObjectId,
      pendingExport: { ...computedView(next), attributes: maskedOldNew(next.attributes) },
      awaitingConfirmation: false,
      error: null,
      lastImportedOn: null,
      lastExportedOn: null,
      attributes: {},
      exportedValues: {},
    };
  }
  const item = spaceItem(found);
  if (found.kind === 'staged') item.anchor = anchorToBe(found.staged.pendingExport.attributes, anchorAttribute);
  const p = found.kind === 'row' ? found.row.pendingExport : found.staged.pendingExport;
  const imported = found.kind === 'row' ? found.row.attributes : {};
  const exported = found.kind === 'row' ? found.row.exported : undefined;
  // A change the target refused is shown as every listing shows it (its stored operation and count); the values
  // are what the next export would send.
  const pendingExport = next
    ? { ...computedView(next, item.pendingExport?.stagedOn), ...(item.pendingExport ?? {}), attributes: maskedOldNew(next.attributes) }
    : item.pendingExport && p
      ? { ...item.pendingExport, attributes: pendingAttributes(p, imported, exported) }
      : null;
  return { ...item, attributes: masked(imported), pendingExport, exportedValues: masked(exported ?? {}) };
}

/** The item's `pendingExport` of a computed change (a refused change keeps the time of its first failure). */
function computedView(c: NextChange, stagedOn?: string): NonNullable<ConnectorSpaceObject['pendingExport']> {
  return { operation: c.operation, attributeCount: Object.keys(c.attributes).length, stagedOn: stagedOn ?? c.stagedOn };
}

const maskedOldNew = (a: NextChange['attributes']): Record<string, { old: AttributeValue | null; new: AttributeValue | null }> =>
  Object.fromEntries(Object.entries(a).map(([k, v]) => [k, { old: shown(k, v.old ?? undefined), new: shown(k, v.new ?? undefined) }]));
