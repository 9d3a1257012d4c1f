import { createHash } from 'node:crypto';
import type { AttributeValue } from '../core/values';
import { attributeChanges, shownValue } from '../mesh/history';
import { dnKey, isEmptyValue, sameValue, type MeshObject } from '../mesh/model';
import type { ChangeOperation, ChangeOutcome, StoredChange } from '../storage/runChanges';
import { zeroCounts, type OperationCounts } from './thresholds';

/**
 * The items of a run's changes (lib/storage/runChanges.ts), made from what the engine planned: pure.
 *
 * - Import pages (and FullSync, and a full import's deletes): one `mesh` item per mesh object the page
 *   changes: `Add` (created), `Delete` (removed), `Rename` (its connector object's DN changed, or its anchor
 *   value), else `Update`; with the attributes whose value changes (old and new; secrets masked). An object
 *   whose rules failed is a `failed` item with the error. An object changed only in its relationships or
 *   bookkeeping (no attribute value changes) is not an item.
 * - Export pages: one `connector` item per change sent (or that would be sent) to the target.
 *
 * Fingerprints (`fp`, never shown): what an object's planned change was computed from, compared by an apply
 * (lib/plans/planIndex.ts): for an import, the source object's content hash and the values of the mesh object
 * it was linked to; for an export, the values of the mesh object and the change itself.
 */

/** The values of a mesh object's attributes as one short hash (null object: empty). */
export function meshStateHash(doc: MeshObject | null | undefined): string {
  if (!doc) return '';
  const h = createHash('sha1');
  for (const name of Object.keys(doc.attributes).sort())
    h.update(name)
      .update('\u0000')
      .update(JSON.stringify(doc.attributes[name].value ?? null))
      .update('\u0001');
  return h.digest('base64url').slice(0, 16);
}

/** Characters of the source hash an import's fingerprint keeps. */
const FP_SOURCE = 16;

/**
 * An import object's fingerprint: its source content hash (empty: deleted), cut to 16 characters (96 bits tell
 * a change of one object; the rest is bytes a 100k plan would store for nothing), and its linked mesh object's
 * state. Plans stored before kept the whole hash: {@link storedFingerprint} reads them.
 */
export const importFingerprint = (sourceHash: string, linked: MeshObject | null | undefined): string =>
  `${sourceHash.slice(0, FP_SOURCE)}|${meshStateHash(linked)}`;

/**
 * A stored fingerprint as {@link importFingerprint} makes it now: an import's fingerprint stored with the
 * whole source hash (one `|`, more than 16 characters before it) is cut the same way. Export fingerprints
 * (16 characters before their `|`, or `gone|...` with two) are as they were.
 */
export function storedFingerprint(fp: string): string {
  const bar = fp.indexOf('|');
  return bar > FP_SOURCE && fp.indexOf('|', bar + 1) < 0 ? fp.slice(0, FP_SOURCE) + fp.slice(bar) : fp;
}

/** An export change's fingerprint: the mesh object's state and the change (kind and values). */
export function exportFingerprint(doc: MeshObject, kind: string, values: Record<string, AttributeValue>): string {
  const h = createHash('sha1').update(kind);
  for (const name of Object.keys(values).sort())
    h.update('\u0000')
      .update(name)
      .update('\u0001')
      .update(JSON.stringify(values[name] ?? null));
  return `${meshStateHash(doc)}|${h.digest('base64url').slice(0, 16)}`;
}

/** One connector-space object of an import page as planned (its key in the plan is its anchor). */
export interface PlannedObject {
  anchor: string;
  csObjectId: string | null;
  /** Its mesh object before the page and after it (null: none). */
  meshBefore: string | null;
  meshAfter: string | null;
  dnBefore: string | null;
  dnAfter: string | null;
  error?: string;
  fp: string;
}

/** A mesh object of a page: as loaded (null: new) and as planned (null: removed; undefined: not changed). */
export interface MeshPair {
  before: MeshObject | null;
  after: MeshObject | null;
}

const masked = (name: string, v: AttributeValue | undefined) => shownValue(name, v ?? null) as StoredChange['attributes'][string]['old'];

/** The attributes of a change as the list shows them: `{ name: { old, new } }`, secrets masked. */
export function changedAttributes(before: MeshObject | null, after: MeshObject | null): StoredChange['attributes'] {
  const out: StoredChange['attributes'] = {};
  if (!before !== !after) {
    // An add or a delete (every object of a first dry run): one side's attributes, no union to build.
    const side = (before ?? after)!.attributes;
    for (const name of Object.keys(side).sort()) {
      const v = side[name]?.value ?? null;
      if (sameValue(v, null)) continue;
      out[name] = before ? { old: masked(name, v), new: null } : { old: null, new: masked(name, v) };
    }
    return out;
  }
  for (const c of attributeChanges(before, after)) out[c.attribute] = { old: masked(c.attribute, c.old), new: masked(c.attribute, c.new) };
  return out;
}

/** True when a change empties an attribute that had a value (a `blanks` threshold counts such updates). */
export function blanks(attributes: StoredChange['attributes']): boolean {
  return Object.values(attributes).some((a) => !isEmptyValue(a.old) && isEmptyValue(a.new));
}

/**
 * The mesh items of an import page: for each changed mesh object, the connector object that changed it (when
 * one of the page did). `outcome` is `applied` for a page written, `planned` for a page only planned.
 */
export function meshItems(objects: readonly PlannedObject[], mesh: ReadonlyMap<string, MeshPair>, outcome: ChangeOutcome): StoredChange[] {
  const items: StoredChange[] = [];
  const byMesh = new Map<string, PlannedObject>();
  for (const o of objects) {
    if (o.error) {
      items.push({
        target: 'mesh',
        operation: o.meshBefore ? 'Update' : 'Add',
        csObjectId: o.csObjectId,
        meshObjectId: o.meshBefore,
        anchor: o.anchor,
        dn: o.dnAfter ?? o.dnBefore,
        attributes: {},
        outcome: 'failed',
        error: o.error,
        key: o.anchor,
        fp: o.fp,
      });
      continue;
    }
    if (o.meshAfter) byMesh.set(o.meshAfter, o);
    if (o.meshBefore && !byMesh.has(o.meshBefore)) byMesh.set(o.meshBefore, o);
  }
  for (const [id, pair] of mesh) {
    const o = byMesh.get(id);
    const attributes = changedAttributes(pair.before, pair.after);
    const renamed = !!o && !!o.dnBefore && !!o.dnAfter && dnKey(o.dnBefore) !== dnKey(o.dnAfter);
    const anchorRenamed = !!pair.before && !!pair.after && !sameValue(pair.before.anchorValue, pair.after.anchorValue);
    let operation: ChangeOperation;
    if (!pair.before && pair.after) operation = 'Add';
    else if (pair.before && !pair.after) operation = 'Delete';
    else if (renamed || anchorRenamed) operation = 'Rename';
    else if (Object.keys(attributes).length) operation = 'Update';
    else continue;
    items.push({
      target: 'mesh',
      operation,
      csObjectId: o?.csObjectId ?? null,
      meshObjectId: id,
      anchor: o?.anchor ?? null,
      dn: o ? (o.dnAfter ?? o.dnBefore) : null,
      attributes,
      outcome,
      error: null,
      ...(o ? { key: o.anchor, fp: o.fp } : {}),
    });
  }
  return items;
}

/** One change of an export page, as planned or as the target answered it. */
export interface ExportItem {
  kind: 'add' | 'update' | 'delete' | 'rename';
  /** The object's key in the plan (the mesh id; `cs:<anchor>` for a deprovisioning of an object whose mesh object is gone). */
  key: string;
  meshObjectId: string | null;
  csObjectId: string | null;
  anchor: string | null;
  dnBefore: string | null;
  dnAfter: string | null;
  /** What the target shows now, and the values the change writes (connector-side names). */
  shown: Record<string, AttributeValue>;
  values: Record<string, AttributeValue>;
  outcome: ChangeOutcome;
  error?: string;
  fp: string;
}

/** The connector items of an export page. */
export function connectorItems(changes: readonly ExportItem[]): StoredChange[] {
  return changes.map((c) => {
    const attributes: StoredChange['attributes'] = {};
    if (c.kind !== 'delete') for (const [name, v] of Object.entries(c.values)) attributes[name] = { old: masked(name, c.shown[name]), new: masked(name, v) };
    else for (const [name, v] of Object.entries(c.shown)) attributes[name] = { old: masked(name, v), new: null };
    const moved = c.kind === 'update' && !!c.dnBefore && !!c.dnAfter && dnKey(c.dnBefore) !== dnKey(c.dnAfter);
    const operation: ChangeOperation = c.kind === 'add' ? 'Add' : c.kind === 'delete' ? 'Delete' : moved || c.kind === 'rename' ? 'Rename' : 'Update';
    return {
      target: 'connector',
      operation,
      csObjectId: c.csObjectId,
      meshObjectId: c.meshObjectId,
      anchor: c.anchor,
      dn: c.dnAfter ?? c.dnBefore,
      attributes,
      outcome: c.outcome,
      error: c.error ?? null,
      ...(c.fp ? { key: c.key, fp: c.fp } : {}),
    };
  });
}

/** The threshold counts of a page's items (failed and drifted items change nothing: not counted). */
export function operationCounts(items: readonly StoredChange[]): OperationCounts {
  const counts = zeroCounts();
  for (const c of items) {
    if (c.outcome === 'failed' || c.outcome === 'drifted') continue;
    if (c.operation === 'Add') counts.adds++;
    else if (c.operation === 'Delete') counts.deletes++;
    else if (c.operation === 'Rename') counts.renames++;
    else counts.updates++;
    if (c.operation !== 'Add' && c.operation !== 'Delete' && blanks(c.attributes)) counts.blanks++;
  }
  return counts;
}
