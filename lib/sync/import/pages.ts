import { importDueTarget, recordDue } from '../dueRecords';
import { contentHash, type AttributeValue, type ConnectorObject } from '../../connectors/sdk';
import { decodeMeshObject, encodeMeshObject } from '../../mesh/codec';
import { dnKey, isEmptyValue, sameValue, type MeshObject } from '../../mesh/model';
import { commitMeshWrite } from '../../mesh/store';
import { leaverClockPage } from '../leavers';
import { readCsObjects, summarize, writeCsObjects, type CsSummary } from '../space/connectorSpace';
import type { CsObject } from '../model';
import { writePageHistory } from './pageHistory';
import { loadPageTombstones } from './tombstones';
import { identityKeys, idsToLoad, joinKeys, planImport, reresolve, WorkingSet, type ObjectPlan } from '../planner';
import { correlationIds } from '../correlation/plan';
import { writePageCorrelation } from '../correlation/apply';
import { csWakeKeys, referencesOf } from '../references';
import { waitingDocs, loadDocs, Held, deferCsWrite, settleCsWrite, dropCaches, type Context, Trace } from '../run/runContext';
import type { PageResult } from '../run/runTypes';
import { markExportDirty } from '../run/state';
import { csObjectIdOf } from '../space/csIds';
import { importFingerprint, meshItems, type MeshPair, type PlannedObject } from '../../plans/record';
import { deleteRunChangeRow, previewKey, writeRunChanges, type StoredChange } from '../../storage/runChanges';
import { listRules } from '../../storage/rules';
import { importTargetItems } from './importTargets';
import { reserveComputedValues } from '../unique/computed';
import { planOutside } from './outsidePlan';

/**
 * The sync engine's steps, one per orchestration activity (orchestrations/syncRun.ts). Each step is
 * idempotent: it may run twice (at-least-once activities, a crash and durable replay) and the second run
 * leaves the same mesh and connector space as the first. Planning (lib/sync/planner.ts) is pure; a step
 * loads what the plan needs, plans, and applies the plan unless the run is a dry run.
 *
 * Order of writes in a page: mesh rows, then the feed, then the connector-space rows. A crash before the
 * connector-space rows leaves their hashes old, so the replayed page plans those objects again and writes the
 * same mesh states again (projected ids are deterministic, contributions replace per connector).
 */

export interface Item {
  anchor: string;
  object: ConnectorObject | null;
  /** Process it even when unchanged (a FullSync, a disconnector that may join now), keeping this content hash. */
  force?: { hash: string; row: CsObject };
}

/**
 * Plan and (unless dry run) apply one page of imported objects and deletions. `record`: the key of the page in
 * the run's changes (lib/storage/runChanges.ts), which are written with the page (`planned` in a dry run,
 * `applied` else); without it (a connector's withdrawal) nothing is recorded.
 */
export async function processItems(ctx: Context, items: Item[], held?: Held, flush = false, record?: string): Promise<PageResult> {
  const page = await planItems(ctx, items, held, flush);
  await reserveItems(ctx, page);
  // A run applying its own plan (approved) drops the page's preview of the targets: the export that follows does it.
  const ownPlan = !!record && !ctx.info.dryRun && ctx.info.planRunId === ctx.info.runId;
  if (!page.planned) {
    await Promise.all([
      record && page.drifted.length ? writeRunChanges(ctx.info.runId, record, page.drifted) : undefined,
      ownPlan ? deleteRunChangeRow(ctx.info.runId, previewKey(record)) : undefined,
    ]);
    return page.result;
  }
  if (ctx.info.dryRun) {
    const changes = record ? pageChanges(ctx, page, 'planned') : [];
    // The mesh objects the page's items change (not those it only touched: relationships, bookkeeping).
    const ids = new Set(changes.filter((c) => c.target === 'mesh' && c.outcome === 'planned' && c.meshObjectId).map((c) => c.meshObjectId!));
    const pairs = [...ids].map((id) => ({ before: page.ws.before.get(id) ?? null, after: page.ws.get(id) }));
    dropCaches(ctx.info.connectorId);
    // What the targets' exports would then get (lib/sync/import/importTargets.ts), in the page's preview row.
    const previews = pairs.length ? await importTargetItems(ctx.info.runId, ctx.allRules ?? (await listRules()), pairs) : [];
    if (record)
      await Promise.all([writeRunChanges(ctx.info.runId, record, changes), writeRunChanges(ctx.info.runId, previewKey(record), previews, { preview: true })]);
    return page.result;
  }
  // The page's changes are written beside its mesh and connector-space rows (a page replayed writes them again).
  await Promise.all([
    applyItems(ctx, page, held, flush),
    record ? writeRunChanges(ctx.info.runId, record, pageChanges(ctx, page, 'applied')) : undefined,
    ownPlan ? deleteRunChangeRow(ctx.info.runId, previewKey(record)) : undefined,
  ]);
  return page.result;
}

export interface WorkItem {
  item: Item;
  hash: string;
  sum: CsSummary | undefined;
}

/**
 * A planned page: its objects' plans and the mesh objects they change (`ws.dirty`), in memory only.
 * {@link applyItems} writes it; a dry run drops it; the one-object preview (lib/sync/run/oneObject.ts) reads it.
 */
export interface PagePlan {
  /** False: nothing to plan (every object unchanged). */
  planned: boolean;
  result: PageResult;
  work: WorkItem[];
  plans: ObjectPlan[];
  ws: WorkingSet;
  /** Objects that exist in storage (anything else dirty is new: a candidate for holding). */
  stored: Set<string>;
  tr: Trace;
  /** Applying a plan: the objects of the plan whose inputs changed since (not planned, not touched). */
  drifted: StoredChange[];
  /** How each plan was counted in `result` (a held object is counted again as an error). */
  counted: (Counted | null)[];
}

type Counted = 'created' | 'updated' | 'unchanged' | 'deleted';

/**
 * Whether an imported object's values differ from what the engine knew of it: what it last imported, then what
 * it exported since. A confirming import that reads back what an export wrote changes nothing (the object is
 * counted unchanged); values the engine never knew of an object it added (read for the first time) are not a
 * change either. Without the stored row (a summary only), a new content hash is a change.
 */
export function valuesChanged(
  object: ConnectorObject | null | undefined,
  prev: CsObject | undefined,
  dnValued: (name: string, refNames?: readonly string[]) => boolean = () => false,
): boolean {
  if (!object || !prev || prev.deleted || (!prev.exported && !Object.keys(prev.attributes).length)) return true;
  if ((object.dn ?? null) !== (prev.dn ?? null) && (!object.dn || !prev.dn || dnKey(object.dn) !== dnKey(prev.dn))) return true;
  const known: Record<string, AttributeValue> = { ...prev.attributes, ...(prev.exported ?? {}) };
  const firstRead = !Object.keys(prev.attributes).length;
  const refNames = object.references ? Object.keys(object.references) : undefined;
  for (const k of new Set([...Object.keys(known), ...(firstRead ? [] : Object.keys(object.attributes))])) {
    const a = object.attributes[k];
    const b = known[k];
    if (isEmptyValue(a) && isEmptyValue(b)) continue;
    if (!sameValue(a, b, dnValued(k, refNames) ? { dn: true } : undefined)) return true;
  }
  return false;
}

/** Plan one page: join, projection, inbound flows, composer and references, on the context's caches only. */
export async function planItems(ctx: Context, items: Item[], held?: Held, flush = false): Promise<PagePlan> {
  const { rules, cs, now } = ctx;
  const tr = new Trace();
  const result: PageResult = { created: 0, updated: 0, deleted: 0, processed: items.length, errors: [], unchanged: 0 };
  const work: WorkItem[] = [];
  for (const item of items) {
    const sum = cs.summaries.get(item.anchor);
    if (item.force) {
      work.push({ item, hash: item.force.hash, sum });
    } else if (item.object) {
      const hash = contentHash(item.object);
      // Unchanged (same content, same rules) is skipped, unless exported values await this import's confirmation.
      if (sum && !sum.deleted && !sum.exported && sum.hash === hash && sum.rulesHash === rules.hash) {
        result.unchanged!++;
        continue;
      }
      work.push({ item, hash, sum });
    } else if (sum && !sum.deleted) {
      work.push({ item, hash: '', sum });
    }
  }
  tr.mark(`hash(${work.length})`);
  const ws = new WorkingSet(ctx.index);
  const stored = new Set<string>();
  const plans: ObjectPlan[] = [];
  const drifted: StoredChange[] = [];
  const counted: (Counted | null)[] = [];
  if (!work.length && !(flush && held?.rows.size)) return { planned: false, result, work, plans, ws, stored, tr, drifted, counted };

  const fullAnchors = work.filter((w) => !w.item.force && (w.sum?.exported || w.sum?.deprov || !w.item.object)).map((w) => w.item.anchor);
  // Rows read whole must be the committed ones: the previous page's write lands first.
  if (fullAnchors.length) await settleCsWrite(ctx.info.runId);
  const full = await readCsObjects(ctx.info.connectorId, fullAnchors);
  const prevOf = (w: (typeof work)[number]): CsObject | undefined => {
    if (w.item.force) return w.item.force.row;
    if (!w.sum) return undefined;
    return (
      full.get(w.item.anchor) ?? {
        anchor: w.item.anchor,
        objectType: w.item.object?.objectType ?? 'User',
        attributes: {},
        hash: w.sum.hash,
        rulesHash: w.sum.rulesHash,
        meshId: w.sum.meshId,
        deleted: w.sum.deleted,
        ...(w.sum.provisioned ? { provisioned: true } : {}),
        ...(w.sum.cid ? { csObjectId: w.sum.cid } : {}),
        ...(w.sum.eo ? { exportedOn: w.sum.eo } : {}),
        updatedOn: now,
      }
    );
  };

  const need = new Set<string>();
  // The index is current: an id it does not know is not in the mesh, so no read is spent on it.
  for (const w of work) for (const id of idsToLoad(rules, ctx.index, w.item.object, prevOf(w))) if (ctx.index.info(id)) need.add(id);
  // Correlation: the mesh objects operators' decisions name and the scored candidates (lib/sync/correlation).
  if (ctx.correlation)
    for (const w of work) {
      const object = w.item.object;
      if (!object) continue;
      for (const id of correlationIds(rules, ctx.index, ctx.correlation, object, w.item.anchor, (jr) => joinKeys(jr, object), ws))
        if (ctx.index.info(id)) need.add(id);
    }
  tr.mark('readCs');
  const load = async (ids: Iterable<string>) => {
    const docs = await loadDocs(ws.missing(ids));
    for (const id of docs.keys()) if (!held?.has(id)) stored.add(id);
    ws.load(docs, ids);
  };
  await load(need);
  tr.mark(`loadDocs(${need.size})`);
  // Applying a plan: objects outside it that the apply records all the same (lib/sync/import/outsidePlan.ts).
  const recorded: { w: WorkItem; plan: ObjectPlan }[] = [];
  if (ctx.plan) {
    // Applying a plan: its objects whose inputs are as planned (lib/plans/planIndex.ts), and those outside it
    // that change only the connector space; the others are left out, for the next run.
    const plan = ctx.plan;
    const before = work.length;
    const kept: WorkItem[] = [];
    const outside: WorkItem[] = [];
    for (const w of work) {
      const verdict = plan.verdict(w.item.anchor, importFingerprint(w.hash, linkedDoc(ws, w)));
      if (verdict === 'drifted') drifted.push(plan.drifted(w.item.anchor, 'Its source object or its mesh object changed since the plan: not applied.'));
      else if (verdict === 'apply') kept.push(w);
      else outside.push(w);
    }
    const csOnly = planOutside(
      { rules, now, clock: ctx.clock, refs: ctx.refs, runId: ctx.info.runId, ...(ctx.correlation ? { correlation: ctx.correlation } : {}) },
      ws,
      outside.map((w) => ({ anchor: w.item.anchor, object: w.item.object, hash: w.hash, prev: prevOf(w) })),
    );
    for (const [i, p] of csOnly) recorded.push({ w: outside[i], plan: p });
    work.splice(0, work.length, ...kept);
    result.leftOut = before - kept.length - recorded.length;
    if (!work.length && !recorded.length && !(flush && held?.rows.size)) return { planned: false, result, work, plans, ws, stored, tr, drifted, counted };
  }
  // Objects about to be projected that may be coming back to their tombstones (nothing is read without any).
  const tombs = await loadPageTombstones(
    ws,
    rules,
    work.map((w) => ({ object: w.item.object, prev: prevOf(w) })),
  );
  if (tombs) tr.mark(`tombstones(${tombs})`);

  // `outside`: recorded from outside the plan being applied; one with its stored content (only the rules' hash
  // is renewed) is counted unchanged, not as an update the plan did not show.
  const count = (w: WorkItem, plan: ObjectPlan, outside = false) => {
    if (w.item.force) keepExportState(plan.cs, w.item.force.row);
    cs.note(plan.cs);
    plans.push(plan);
    let as: Counted | null = null;
    if (plan.outcome === 'created') as = 'created';
    else if (
      plan.outcome === 'updated' &&
      !(outside && w.sum && !w.sum.deleted && w.sum.hash === w.hash) &&
      valuesChanged(w.item.object, prevOf(w), ctx.refs?.policy ? (k, names) => ctx.refs!.policy.dnValued(k, names) : undefined)
    )
      as = 'updated';
    else if (plan.outcome === 'updated') as = 'unchanged';
    else if (plan.outcome === 'deleted') as = 'deleted';
    if (as) result[as]!++;
    counted.push(as);
    if (plan.error) result.errors.push({ object: w.item.anchor, message: plan.error });
    if (plan.cs.unconfirmed?.length && !w.item.force) {
      result.errors.push({ object: w.item.anchor, message: `Exported values did not come back in the confirming import: ${plan.cs.unconfirmed.join(', ')}.` });
    }
  };
  for (const w of work) {
    const plan = planImport(
      { rules, now, clock: ctx.clock, ws, refs: ctx.refs, runId: ctx.info.runId, ...(ctx.correlation ? { correlation: ctx.correlation } : {}) },
      w.item.anchor,
      w.item.object,
      w.hash,
      prevOf(w),
    );
    count(w, plan);
  }
  for (const { w, plan } of recorded) {
    count(w, plan, true);
    work.push(w);
  }
  tr.mark('plan');
  // Late arrivals and removed targets: objects whose references now resolve differently.
  const follow = new Set<string>();
  for (const p of plans) for (const id of p.followUps) follow.add(id);
  // References of this connector waiting for an object of this page (it arrived, got a mesh object, or was
  // renamed), and references to an object whose mesh object changed (a re-join).
  plans.forEach((p, i) => {
    const before = work[i].sum;
    if (before?.meshId && before.meshId !== p.cs.meshId) for (const s of ctx.index.incoming(before.meshId)) follow.add(s);
    if (!p.cs.meshId || p.cs.deleted) return;
    if (before && !before.deleted && before.meshId === p.cs.meshId && before.dn === p.cs.dn) return;
    const dnk = p.cs.dn ? cs.dnKeyOf(p.cs.anchor, p.cs.dn) : undefined;
    for (const { by, key } of csWakeKeys(ctx.info.connectorId, p.cs.anchor, p.cs.dn, dnk)) for (const s of ctx.index.waiting(by, key)) follow.add(s);
  });
  for (const id of ws.dirty) {
    const doc = ws.get(id);
    if (!doc) {
      for (const s of ctx.index.incoming(id)) follow.add(s);
      continue;
    }
    for (const { by, key } of identityKeys(doc, ctx.index.attributes)) for (const s of ctx.index.waiting(by, key)) follow.add(s);
  }
  if (follow.size) {
    await load(follow);
    reresolve(ws, rules, follow, now, ctx.refs);
  }
  tr.mark(`follow(${follow.size})`);
  return { planned: true, result, work, plans, ws, stored, tr, drifted, counted };
}

/**
 * The reserve step between planning and applying (docs/unique-values.md): the unique values of computed
 * attributes (MeshComposerRule with `unique`) the page's objects need are chosen and reserved
 * (lib/sync/unique/computed.ts); a dry run chooses the same way, reading reservations only. An object whose
 * candidates are all taken is held: it is put back as it was before the page (a new object is not projected),
 * and the connector-space objects that brought it keep their state with the error and no content hash, so the
 * next run of the connector tries them again (as any failed object, "Failed objects" in docs/sync-engine.md).
 */
export async function reserveItems(ctx: Context, page: PagePlan, reserve = !ctx.info.dryRun): Promise<void> {
  if (!page.planned || !ctx.rules.composers.some((cr) => cr.rule.unique && !cr.rule.relationshipType)) return;
  const held = await reserveComputedValues(
    {
      runKey: ctx.info.runId,
      connectorId: ctx.info.connectorId,
      reserve,
      at: new Date(ctx.clock ?? Date.now()),
      index: ctx.index,
      rules: ctx.rules,
      allRules: ctx.allRules ?? (await listRules()),
      now: ctx.now,
      runId: ctx.info.runId,
      clock: { now: ctx.clock ?? Date.parse(ctx.now) },
    },
    page.ws,
    page.stored,
  );
  page.tr.mark(`unique(${held.size} held)`);
  if (!held.size) return;
  for (const id of held.keys()) page.ws.revert(id);
  page.plans.forEach((p, i) => {
    const err = p.cs.meshId ? held.get(p.cs.meshId) : undefined;
    if (!err) return;
    const w = page.work[i];
    const before = w.item.force?.row ?? w.sum;
    const meshId = before && !before.deleted ? (before.meshId ?? null) : null;
    const next: ObjectPlan = { ...p, cs: { ...p.cs, hash: '', meshId, error: err.message }, outcome: 'error', error: err.message, followUps: [] };
    page.plans[i] = next;
    ctx.cs.note(next.cs);
    const as = page.counted[i];
    if (as) page.result[as]!--;
    page.counted[i] = null;
    page.result.errors.push({ object: w.item.anchor, message: err.message });
  });
}

/** The stored state of a mesh object without its `updatedOn`, to see whether a page changed anything else. */
const withoutUpdatedOn = (d: MeshObject): string => JSON.stringify({ ...d, updatedOn: '' });

/**
 * Whether the page's state of a stored object is the state it loaded, `updatedOn` aside. Only a state the
 * planner made anew (a copy, not the loaded object changed in place) of an object already stored, not held
 * back and not back from a tombstone, is compared; anything else counts as changed.
 */
function unchangedStored(id: string, doc: MeshObject, ws: WorkingSet, stored: ReadonlySet<string>): boolean {
  const before = ws.before.get(id);
  if (!before || before === doc || !stored.has(id) || ws.revived.has(id)) return false;
  return withoutUpdatedOn(before) === withoutUpdatedOn(doc);
}

/** Write a planned page: mesh rows, the feed, then the connector-space rows (see the order above). */
export async function applyItems(ctx: Context, page: PagePlan, held?: Held, flush = false): Promise<void> {
  const { rules, cs } = ctx;
  const { work, plans, ws, stored, tr } = page;
  try {
    const upserts: MeshObject[] = [];
    const deletes: { id: string; objectType: string; last?: MeshObject }[] = [];
    const holdNow = new Set<string>();
    for (const id of ws.dirty) {
      const doc = ws.get(id);
      // An object back from its tombstone is written now (its tombstone goes with this commit).
      if (doc && held && !flush && doc.pendingReferences.length && !stored.has(id) && !ws.revived.has(id)) {
        holdNow.add(id);
        waitingDocs.set(id, encodeMeshObject(doc));
      } else if (doc) {
        // A stored object the page left as it was (only its updatedOn renewed: a target's import of what its
        // export wrote, a value read again) is not written: no mesh row, no feed entry, so no export looks at it.
        if (unchangedStored(id, doc, ws, stored)) continue;
        upserts.push(doc);
      }
      // Deleted with its last state: it becomes a tombstone (lib/mesh/tombstones.ts).
      else deletes.push({ id, objectType: ws.removedTypes.get(id) ?? ctx.index.info(id)?.objectType ?? 'User', last: ws.removedStates.get(id) });
    }
    // Rows to write: this page's, less those of objects held back, plus the held rows of objects written now.
    let rows: CsObject[] = [];
    for (const p of plans) {
      const id = p.cs.meshId;
      if (id && holdNow.has(id)) {
        const list = held!.rows.get(id) ?? new Map<string, CsObject>();
        list.set(p.cs.anchor, p.cs);
        held!.rows.set(id, list);
      } else rows.push(p.cs);
    }
    if (held) {
      const release = flush ? [...held.rows.keys()] : [...ws.dirty].filter((id) => held.has(id) && !holdNow.has(id));
      const planned = new Set(rows.map((r) => r.anchor));
      for (const id of release) {
        for (const r of held.rows.get(id)!.values()) {
          if (planned.has(r.anchor)) continue;
          planned.add(r.anchor);
          rows.push(r);
        }
        held.rows.delete(id);
        if (!ws.dirty.has(id)) {
          const json = waitingDocs.get(id);
          if (json) upserts.push(decodeMeshObject(json));
        }
      }
      for (const id of holdNow) if (!held.rows.has(id)) held.rows.set(id, new Map());
    }
    const fresh = new Set<string>();
    for (const d of upserts) if (!stored.has(d.id)) fresh.add(d.id);
    // Writes stay in page order: the previous page's connector-space rows are committed before this page writes.
    await settleCsWrite(ctx.info.runId);
    // Objects still waiting for a reference target are kept in the stored form the write encodes.
    const waiting = new Map<string, string>();
    await Promise.all([
      commitMeshWrite({
        upserts,
        deletes,
        fresh,
        stored,
        deletedBy: { run: ctx.info.runId, connector: ctx.info.connectorId },
        revived: upserts.filter((d) => ws.revived.has(d.id)).map((d) => d.id),
        encoded: (d, text) => d.pendingReferences.length && waiting.set(d.id, text),
      }),
      writePageHistory(ctx.info, ws, upserts, deletes, fresh, new Date().toISOString()),
      writePageCorrelation(ctx.info.connectorId, ctx.correlation, plans, ctx.now),
    ]);
    tr.mark(`mesh(${upserts.length}+${deletes.length}, held ${held?.rows.size ?? 0})`);
    // The leaver clock (lib/sync/leavers.ts): deleted objects start their targets' leavers, returning ones cancel theirs.
    await leaverClockPage(ctx.info, ctx.allRules, deletes, ws.revived);
    for (const d of upserts) {
      const text = waiting.get(d.id);
      if (text !== undefined) waitingDocs.set(d.id, text);
      else waitingDocs.delete(d.id);
    }
    for (const d of deletes) waitingDocs.delete(d.id);
    rows = dedupeRows(rows);
    const known = new Set<string>();
    for (const r of rows) if (cs.summaries.has(r.anchor)) known.add(r.anchor);
    for (const r of rows) cs.set(r.anchor, summarize(ctx.info.connectorId, r));
    const write = writeCsObjects(ctx.info.connectorId, rows, (anchor) => known.has(anchor));
    if (held && !flush) {
      deferCsWrite(ctx.info.runId, write);
      tr.mark(`cs(${rows.length}, deferred)`);
    } else {
      await write;
      tr.mark(`cs(${rows.length})`);
    }
    // Future-dated values: when each source object's next one takes effect (docs/dated-changes.md).
    if (rules.dated && !ctx.info.dryRun && !ctx.info.preview) {
      const due = new Map<string, number | undefined>();
      for (const p of plans) due.set(p.cs.anchor, p.cs.deleted ? undefined : p.due);
      await recordDue(ctx.info.runId, importDueTarget(ctx.info.connectorId), due);
    }
    // A target's own import: the objects it saw differ (drift, values not confirmed) and those that name one
    // it saw moved are for its next export to look at (an incremental export reads only what changed). An
    // object that shows what the engine knew of it and what its export wrote (counted unchanged: the
    // confirming import of an export, a first read of what an export added) has nothing new for the export.
    if (rules.outbound.length) {
      const marked = new Set<string>();
      plans.forEach((p, i) => {
        if (!p.cs.meshId) return;
        if (page.counted[i] !== 'unchanged' || p.cs.unconfirmed?.length || p.cs.error) marked.add(p.cs.meshId);
        const before = work[i].sum;
        if (before?.dn && p.cs.dn && dnKey(before.dn) !== dnKey(p.cs.dn)) for (const r of ctx.index.incoming(p.cs.meshId)) marked.add(r);
      });
      await markExportDirty(ctx.info.connectorId, marked);
    }
    tr.print('items');
  } catch (err) {
    dropCaches(ctx.info.connectorId);
    throw err;
  }
}

/**
 * A stored object processed again (no source read) confirms nothing: what was exported and awaits the next
 * import stays as it was.
 */
function keepExportState(row: CsObject, stored: CsObject): void {
  delete row.unconfirmed;
  delete row.exported;
  delete row.pendingExport;
  if (stored.exported) row.exported = stored.exported;
  if (stored.unconfirmed) row.unconfirmed = stored.unconfirmed;
  if (stored.pendingExport) row.pendingExport = stored.pendingExport;
  if (stored.importedOn) row.importedOn = stored.importedOn;
  else delete row.importedOn;
}

/** The last row per anchor (a page that lists an anchor twice plans it twice). */
function dedupeRows(rows: CsObject[]): CsObject[] {
  const byAnchor = new Map<string, CsObject>();
  for (const r of rows) byAnchor.set(r.anchor, r);
  return byAnchor.size === rows.length ? rows : [...byAnchor.values()];
}

/** A stored connector-space row as the object the connector last showed (attributes, DN, references). */
export function storedItem(row: CsObject): Item {
  return { anchor: row.anchor, object: storedObject(row), force: { hash: row.hash, row } };
}

/** The connector object a stored row holds (its references from the names it kept), with other attributes if given. */
export function storedObject(row: CsObject, attributes = row.attributes): ConnectorObject {
  const object: ConnectorObject = { anchor: row.anchor, objectType: row.objectType, attributes };
  if (row.dn) object.dn = row.dn;
  const references = referencesOf(object, row.refNames);
  if (Object.keys(references).length) object.references = references;
  return object;
}

/** The mesh object an import object was linked to when the page loaded it (its fingerprint's mesh state). */
function linkedDoc(ws: WorkingSet, w: WorkItem): MeshObject | null {
  const id = w.item.force?.row.meshId ?? w.sum?.meshId ?? null;
  return id ? (ws.before.get(id) ?? null) : null;
}

/**
 * The run's change items of a planned page (lib/plans/record.ts): one per mesh object it changes, named by the
 * connector object that changed it, and the drifted objects of a plan being applied. A `planned` page carries
 * each object's fingerprint (an apply compares it); an `applied` one does not need it.
 */
export function pageChanges(ctx: Context, page: PagePlan, outcome: 'applied' | 'planned'): StoredChange[] {
  const cid = ctx.info.connectorId;
  const objects: PlannedObject[] = page.plans.map((p, i) => {
    const w = page.work[i];
    const before = w.item.force?.row ?? w.sum;
    return {
      anchor: p.cs.anchor,
      csObjectId: csObjectIdOf(cid, p.cs),
      meshBefore: before && !before.deleted ? (before.meshId ?? null) : null,
      meshAfter: p.cs.deleted ? null : p.cs.meshId,
      dnBefore: before?.dn ?? null,
      dnAfter: p.cs.dn ?? null,
      ...(p.error ? { error: p.error } : {}),
      fp: outcome === 'planned' ? importFingerprint(w.hash, linkedDoc(page.ws, w)) : '',
    };
  });
  const mesh = new Map<string, MeshPair>();
  for (const id of page.ws.dirty) mesh.set(id, { before: page.ws.before.get(id) ?? null, after: page.ws.get(id) });
  const items = meshItems(objects, mesh, outcome);
  if (outcome === 'applied') for (const c of items) delete c.fp;
  return [...items, ...page.drifted];
}
