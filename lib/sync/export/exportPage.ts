import {
  appliedBefore,
  exportChanges,
  isConnectorError,
  type AttributeValue,
  type Connector,
  type ExportChange,
  type ExportResult,
} from '../../connectors/sdk';
import { compileExpression } from '../../expression';
import { engineNow } from '../../core/clock';
import { recordDue } from '../dueRecords';
import { encodeMeshObject } from '../../mesh/codec';
import { dnKey, indexKeys, isEmptyValue, type MeshObject } from '../../mesh/model';
import { patchMeshLinks } from '../../mesh/store';
import { readConnectorRow } from '../../storage/connectors';
import type { RunObjectError } from '../../storage/runs';
import { readCsObjects, summarize, writeCsObjects } from '../space/connectorSpace';
import { liveObjects } from '../space/csCache';
import { exportItems, filterByPlan, type ExportRecord } from './exportChanges';
import { exceeded, thresholdsOf } from '../../plans/thresholds';
import { planIndex } from '../../plans/planIndex';
import { writeRunChanges, type StoredChange } from '../../storage/runChanges';
import { isPseudoAttribute } from '../deprovisioning';
import { recordPageLeavers } from '../leavers';
import { exportNeedsRelations, exportRelations, relationshipEchoes } from './exportReferences';
import { listRules } from '../../storage/rules';
import { ExportRetry } from './exportRetry';
import {
  isWriteOnlySecret,
  planExport,
  sameTargetValue,
  shownOf,
  withoutWriteOnlySecrets,
  type DocChange,
  type ExportPlanInput,
  type LinkChange,
} from './plan';
import { attributeValues, joinKeys } from '../planner';
import type { CsObject } from '../model';
import { referencePolicy } from '../references';
import type { RuleSet } from '../rules';
import { type ExportConfig, settingsOf } from '../run/runConnector';
import { csCaches, csCache, waitingDocs, context } from '../run/runContext';
import { knownRow, notePending, noteWritten, relatedLoader } from './exportRun';
import { cancellable } from '../run/runProgress';
import { type RunTotals, type RunInfo, type PageResult, addPage } from '../run/runTypes';
import { markExportDirty, readExportDirty } from '../run/state';
import { resolveUniqueValues } from '../unique/resolve';
import { retryUniqueCollisions } from '../unique/collisions';

export { isWriteOnlySecret, truthyValue, withoutWriteOnlySecrets, type DocChange } from './plan';

// Export: one page of mesh objects loaded, planned (lib/sync/export/plan.ts), gated, applied and recorded

/**
 * Objects to look at again after a page of an export (`SyncState` partition `xa_<runId>`): the objects that
 * name one the export moved or renamed in the target, and those whose related objects were not in the target
 * yet when the page computed their values. Beside them, per run: `xc_` those the pass already changed (a second
 * pass's change of one is not a second object updated) and `xf_` those whose change the target refused (not
 * tried again, nor counted again, by the second pass).
 */
export const againKey = (runId: string) => `xa_${runId}`;
const againChangedKey = (runId: string) => `xc_${runId}`;
const againFailedKey = (runId: string) => `xf_${runId}`;
const addedKey = (runId: string) => `xn_${runId}`;
const movedKey = (runId: string) => `xm_${runId}`;
export async function saveAgain(
  runId: string,
  ids: string[],
  changed: string[] = [],
  failed: string[] = [],
  added: string[] = [],
  moved: string[] = [],
): Promise<void> {
  // Each a row of its own (markExportDirty appends): written at the same time.
  await Promise.all([
    markExportDirty(movedKey(runId), moved),
    markExportDirty(againKey(runId), ids),
    markExportDirty(againChangedKey(runId), changed),
    markExportDirty(againFailedKey(runId), failed),
    markExportDirty(addedKey(runId), added),
  ]);
}
export async function loadAgain(runId: string): Promise<string[]> {
  return (await readExportDirty(againKey(runId))).ids;
}
/** A second pass's view of the first: which objects to look at, which were changed, which failed. */
async function loadFirstPass(runId: string): Promise<{ again: Set<string>; changed: Set<string>; failed: Set<string> }> {
  const [a, c, f] = await Promise.all([readExportDirty(againKey(runId)), readExportDirty(againChangedKey(runId)), readExportDirty(againFailedKey(runId))]);
  return { again: new Set(a.ids), changed: new Set(c.ids), failed: new Set(f.ids) };
}

/** What one page of an export reads before it plans: the planner's whole input. */
export async function loadExportInput(
  info: Pick<RunInfo, 'connectorId' | 'preview' | 'runId' | 'planRunId'>,
  rules: RuleSet,
  docs: MeshObject[],
  config: ExportConfig,
  at = engineNow(),
  second = false,
): Promise<ExportPlanInput> {
  const cid = info.connectorId;
  const claim = !info.preview;
  const settings = settingsOf(config);
  // A mesh object back inside the grace of its deprovisioning (the same id): found through the target's
  // connector-space summaries, relinked to its target object and the deprovisioning cancelled.
  const waiting = new Map<string, string>();
  if (settings.graceDays > 0 && docs.some((d) => !d.links[cid])) {
    const ids = new Set(docs.filter((d) => !d.links[cid]).map((d) => d.id));
    for (const [a, sm] of (await csCache(cid, claim)).summaries)
      if (sm.deprov === 'pending' && !sm.deleted && sm.meshId && ids.has(sm.meshId)) waiting.set(sm.meshId, a);
  }
  const anchors = docs.map((d) => d.links[cid] ?? waiting.get(d.id)).filter((a): a is string => !!a);
  const relating = exportNeedsRelations(rules, docs);
  // Independent reads, at the same time.
  const [rows, targetCs, record, allRules] = await Promise.all([
    readCsObjects(cid, anchors),
    relating ? csCache(cid, claim) : null,
    readConnectorRow(cid),
    relating ? listRules() : undefined,
  ]);
  const policy = referencePolicy(cid, record?.type ?? 'custom', record?.config ?? {}, []);
  const targetKind = targetCs ? policy.targetKind : 'anchor';
  const echoes = targetCs && allRules ? relationshipEchoes(allRules) : undefined;
  // Applying a plan, the first pass computes references as its dry run did: none to an object the run added, and
  // the DN an object the run moved had before (the second pass writes both, as the plan's own consequences).
  const frozen = targetCs && info.planRunId && !second;
  const notYet = frozen ? new Set((await readExportDirty(addedKey(info.runId))).ids) : undefined;
  const movedFrom = new Map<string, string>();
  if (frozen)
    for (const m of (await readExportDirty(movedKey(info.runId))).ids) movedFrom.set(m.slice(0, m.indexOf('\u0000')), m.slice(m.indexOf('\u0000') + 1));
  const relations = await exportRelations(rules, docs, {
    connectorId: cid,
    loadDocs: relatedLoader(info.runId),
    dnOf: (anchor) => movedFrom.get(anchor) ?? targetCs?.entry(anchor)?.dn,
    targetKind,
    echoes,
    notYet,
  });
  // References written as DNs are compared as DNs.
  const dnAttributes = new Set<string>();
  if (targetKind === 'dn')
    for (const fr of rules.outbound)
      if (fr.rule.targetAttribute && relations.types.has(fr.rule.sourceAttribute ?? '')) dnAttributes.add(fr.rule.targetAttribute);
  return {
    connectorId: cid,
    at,
    objectType: typeof config.objectType === 'string' ? config.objectType : 'User',
    passwordOnUpdate: config.passwordOnUpdate === true,
    condition: typeof config.provisioningCondition === 'string' ? compileExpression(config.provisioningCondition) : null,
    settings,
    rules,
    docs,
    rows,
    waiting,
    relations,
    dnAttributes,
    dnValued: (name, refNames) => policy.dnValued(name, refNames),
  };
}

/**
 * What the target's next export would send for these mesh objects (as they are given: stored, or planned by an
 * import): the planner over what is stored, reading nothing from the target and writing nothing.
 */
export async function previewExport(connectorId: string, rules: RuleSet, docs: MeshObject[], config: ExportConfig): Promise<DocChange[]> {
  const input = await loadExportInput({ connectorId, preview: true, runId: `preview-${connectorId}` }, rules, docs, config);
  return planExport(input).changes;
}

/** Options of a page: where its changes are recorded, and whether it is a second pass over objects already looked at. */
export interface ExportPageOptions {
  /** The run's changes partition row (lib/storage/runChanges.ts) this page records into. */
  record?: string;
  /** A second pass (references to objects the first added or moved): its objects are not counted again. */
  second?: boolean;
  /** The step's writes: the page's connector-space rows and links wait there for the step's end (see {@link StepWrites}). */
  writes?: StepWrites;
}

/**
 * The connector-space rows and link changes of a step's pages, written once when the step ends (or stops)
 * instead of after each page: a page's rows span the 64 connector-space and the 64 mesh partitions, so every
 * page costs a transaction per partition, however few rows it has (the first levels of an org chart are pages
 * of 1, 10 and 100 objects). The pages' records (their changes, the marks, the second pass's lists) are written
 * while the next pages run, and the step's end waits for them too ({@link StepWrites.behind}).
 * Meanwhile this process's views show them, as they would after a write: the
 * connector-space summaries (the step's failure drops them) and the run's copies of the objects (the next
 * page's references resolve to the objects just added). Only for a run whose objects this process keeps
 * (lib/sync/export/exportRun.ts); otherwise each page writes its own, as a page read from storage needs.
 *
 * A stop before the write (a crash, a kill) leaves objects in the target that nothing records, as a stop
 * between a page's target call and its write always could: the step runs again, and its adds find them
 * there and take them over ({@link takeOver}).
 */
export class StepWrites {
  private rows: CsObject[] = [];
  private readonly links = new Map<string, { changes: LinkChange[]; now: string }>();
  private readonly docs = new Map<string, MeshObject>();
  private readonly retries: ExportRetry[] = [];
  /** Anchors of queued rows that no row was found for (adds): written as inserts. */
  private created = new Set<string>();

  constructor(
    private readonly info: RunInfo,
    /** Rows beyond which a page writes the step's rows at once (a large step does not hold everything). */
    private readonly max = 12_800,
  ) {}

  /** Writes of the pages' records under way (see {@link behind}), and the first of them that failed. */
  private readonly records: Promise<void>[] = [];
  private failure: { err: unknown } | undefined;

  /** Whether the step has rows or links not written yet. */
  get pending(): boolean {
    return this.rows.length > 0 || this.links.size > 0 || this.retries.length > 0 || this.records.length > 0;
  }

  /**
   * A page's records (its changes, the second pass's lists, the objects the next export looks at again): they
   * name no row of the target and wait for nothing of theirs, so they are written while the next pages run,
   * and {@link flush} waits for them. A failure is kept and thrown by the flush (the step fails and runs again).
   */
  behind(write: Promise<unknown>): undefined {
    this.records.push(
      write.then(
        () => undefined,
        (err: unknown) => {
          this.failure ??= { err };
        },
      ),
    );
    return undefined;
  }

  /** Queue a page's rows and links (its copies of the objects: the link write starts from them). */
  add(
    rows: readonly CsObject[],
    links: readonly LinkChange[],
    docs: readonly MeshObject[],
    now: string,
    retry: ExportRetry,
    created: ReadonlySet<string> = new Set(),
  ): MeshObject[] {
    const cid = this.info.connectorId;
    this.rows.push(...rows);
    for (const a of created) this.created.add(a);
    for (const d of docs) this.docs.set(d.id, d);
    for (const l of links) {
      const e = this.links.get(l.id);
      if (e) e.changes.push(l);
      else this.links.set(l.id, { changes: [l], now });
    }
    this.retries.push(retry);
    const cached = csCaches.get(cid);
    if (cached) for (const r of rows) cached.set(r.anchor, summarize(cid, r));
    // The objects as the write will leave them, for the run's copies.
    const linked: MeshObject[] = [];
    for (const id of new Set(links.map((l) => l.id))) {
      const d = this.docs.get(id);
      if (!d) continue;
      const copy: MeshObject = { ...d, links: { ...d.links }, ...(d.provisioned ? { provisioned: [...d.provisioned] } : {}) };
      if (linkPatch(cid, this.links)(copy)) linked.push(copy);
    }
    notePending(this.info.runId, linked);
    return linked;
  }

  /** Whether the rows queued call for a write before the next page. */
  get full(): boolean {
    return this.rows.length >= this.max;
  }

  /** Write what is queued: the rows first, then the links (as a page does), then the staged adds that went. */
  async flush(): Promise<void> {
    if (!this.pending) return;
    // The pages' records, then the rows and links (written even when a record failed: what the target holds is
    // recorded), then the record's failure fails the step.
    if (this.records.length) await Promise.all(this.records.splice(0));
    await this.writeRows();
    const failure = this.failure;
    this.failure = undefined;
    if (failure) throw failure.err;
  }

  private async writeRows(): Promise<void> {
    const cid = this.info.connectorId;
    const rows = this.rows;
    const links = new Map(this.links);
    const retries = this.retries.splice(0);
    const created = this.created;
    this.rows = [];
    this.created = new Set();
    this.links.clear();
    await writeCsObjects(cid, rows, insertsOf(created));
    const [upserts] = await Promise.all([
      links.size ? patchMeshLinks(links.keys(), linkPatch(cid, links), cid, knownRow(this.info.runId, this.docs)) : [],
      ...retries.map((r) => r.commit()),
    ]);
    this.docs.clear();
    for (const d of upserts) if (waitingDocs.has(d.id)) waitingDocs.set(d.id, encodeMeshObject(d));
    noteWritten(this.info.runId, upserts);
  }
}

/**
 * The `known` of writeCsObjects for a page's rows: the rows of adds that found no row are inserts (Azurite looks
 * for the row once instead of twice), the rest upserts. An insert that meets a row after all (a replayed add
 * whose row a stopped run wrote) goes again as an upsert (submitBatched).
 */
function insertsOf(created: ReadonlySet<string>): ((anchor: string) => boolean | undefined) | undefined {
  return created.size ? (anchor) => (created.has(anchor) ? false : undefined) : undefined;
}

export async function exportDocs(
  info: RunInfo,
  connector: Connector & Required<Pick<Connector, 'export'>>,
  rules: RuleSet,
  docs: MeshObject[],
  totals: RunTotals,
  config: ExportConfig,
  options: ExportPageOptions = {},
): Promise<RunTotals> {
  const cid = info.connectorId;
  const { record, second } = options;
  // A page cut short by the target writes at once, after what the step's pages before it queued.
  let writes = options.writes;
  const at = engineNow();
  const now = at.toISOString();
  // A second pass looks again only at the objects the first asked it to (and not at those the target refused).
  const first = second ? await loadFirstPass(info.runId) : null;
  if (first) docs = docs.filter((d) => first.again.has(d.id) && !first.failed.has(d.id));
  const loaded = await loadExportInput(info, rules, docs, config, at, !!second);
  // Objects whose change failed Export__MaxAttempts times are left out (lib/sync/export/exportRetry.ts).
  const anchorOf = (d: MeshObject) => d.links[cid] ?? loaded.waiting.get(d.id);
  const { retry, docs: attempted } = await ExportRetry.forPage(info, now, docs, (d) => loaded.rows.get(anchorOf(d) ?? ''));
  // Unique values (rules with `unique`) are chosen and reserved first: the planner writes them (lib/sync/unique).
  // The page's reservation transaction runs while the page is planned (`pending`); when a value was taken after
  // all (another run reserved it meanwhile: nothing of that transaction was inserted), the page's values are
  // chosen again (one by one) and the page planned again, before anything reaches the target.
  const pending: Promise<string[]>[] = [];
  const uniqueCtx = { runKey: info.runId, connectorId: cid, reserve: !info.dryRun && !info.preview, at };
  let unique = await resolveUniqueValues({ ...uniqueCtx, pending }, loaded, attempted);
  let plan = planExport({ ...loaded, docs: attempted, unique });
  if ((await Promise.all(pending)).some((lost) => lost.length)) {
    unique = await resolveUniqueValues(uniqueCtx, loaded, attempted);
    plan = planExport({ ...loaded, docs: attempted, unique });
  }
  const { changes, errors, quietRows, quietLinks } = plan;
  // Rules that read the clock: when each object's results here change next (docs/dated-changes.md).
  if (!info.dryRun && !info.preview && plan.due.size) await recordDue(info.runId, cid, plan.due);
  // Applying a plan: only its changes, and only those computed from the inputs it was planned from.
  const recordOf = (c: DocChange): ExportRecord => ({ key: c.doc.id, change: c.change, doc: c.doc, prev: c.prev, values: withoutWriteOnlySecrets(c.values) });
  let drifted: StoredChange[] = [];
  let leftOut = 0;
  // A second pass only writes references to objects this run added or moved: when the run applies a plan,
  // they complete the plan's own changes (the plan could not name the DN or key an add would get), not drift.
  if (info.planRunId && !info.preview && !second) {
    const f = filterByPlan(await planIndex(info.planRunId), changes, recordOf);
    changes.splice(0, changes.length, ...f.kept);
    drifted = f.drifted;
    leftOut = f.leftOut;
  }
  retry.settle(new Set(changes.map((c) => c.doc.id)), quietRows);
  // Deprovisioning deletes are held to the deletes threshold like the deletes pass (counted over the run):
  // over it, they are planned (recorded), not applied, and the run waits for approval after this page.
  const deleting = changes.filter((c) => c.tag === 'delete').length;
  let parked: RunTotals['parked'];
  const held: DocChange[] = [];
  if (deleting && !info.dryRun && !info.planRunId) {
    const over = exceeded(
      thresholdsOf(config),
      { deletes: totals.stats.objectsDeleted + deleting },
      liveObjects((await csCache(cid, !info.preview)).summaries),
    );
    if (over.length) {
      parked = over;
      for (let i = changes.length - 1; i >= 0; i--) if (changes[i].tag === 'delete') held.unshift(...changes.splice(i, 1));
    }
  }
  // Stats count objects: a page has at most one change per object. A second pass looks at objects the first
  // already counted: only an object the first pass left unchanged and this one changes is counted (updated).
  const counted = (c: DocChange) => !first || !first.changed.has(c.doc.id);
  let result: PageResult = {
    created: 0,
    updated: 0,
    deleted: 0,
    // A second pass's objects are counted when the first left them unchanged (an object it changes only now).
    processed: second ? changes.filter(counted).length : changes.length + errors.length + plan.left,
    errors,
    ...(leftOut ? { leftOut } : {}),
  };
  const withStop = (t: RunTotals): RunTotals => retry.note(parked ? { ...t, parked: [...(t.parked ?? []), ...parked] } : t);
  const planned = (list: readonly DocChange[]) => exportItems(cid, connector, list.map(recordOf));
  const owed = owedReferences(loaded);
  if (info.dryRun) {
    if (record) await writeRunChanges(info.runId, record, planned(changes));
    result = {
      ...result,
      created: changes.filter((c) => c.change.kind === 'add').length,
      updated: changes.filter((c) => c.change.kind === 'update' && counted(c)).length,
      deleted: changes.filter((c) => c.change.kind === 'delete').length,
    };
    return withStop(owed(addPage(totals, result, [])));
  }
  if (!changes.length && !quietRows.length && !retry.dirty) {
    if (record) await writeRunChanges(info.runId, record, [...drifted, ...planned(held)]);
    // Nothing to send, but references still owed: a later export writes them, and so does this run's second
    // pass when the object they name is added further on.
    await markExportDirty(cid, [...loaded.relations.missingIn]);
    await saveAgain(info.runId, [...loaded.relations.missingIn]);
    return withStop(owed(addPage(totals, result, [])));
  }
  const applied = changes.length
    ? await exportRecordingApplied(
        connector,
        changes.map((c) => c.change),
        info,
      )
    : { results: [] as ExportResult[], interrupted: undefined };
  const taken = await takeOver(info, connector, loaded, changes, applied.results);
  const { notes } = taken;
  let { results } = taken;
  let interrupted = applied.interrupted ?? taken.interrupted;
  // An add refused because a unique value is held in the target outside the engine: the next candidate.
  if (unique && interrupted === undefined) {
    const retried = await retryUniqueCollisions({
      ctx: uniqueCtx,
      loaded: { ...loaded, docs: attempted },
      unique,
      changes,
      results,
      apply: (list) => exportRecordingApplied(connector, list, info),
    });
    results = retried.results;
    interrupted = retried.interrupted;
  }
  const csRows: CsObject[] = [...quietRows];
  const links: LinkChange[] = [...quietLinks];
  let moved = 0;
  const movedIds: string[] = [];
  const movedFrom: string[] = [];
  const failedIds: string[] = [];
  const changedIds: string[] = [];
  const addedIds: string[] = [];
  /** Anchors of rows this page makes (an add with no row before): written as inserts, cheaper than upserts. */
  const created = new Set<string>();
  results.forEach((r, i) => {
    const c = changes[i];
    if (r.status === 'success' && r.notes) notes.push(...r.notes);
    if (r.status === 'error') {
      errors.push({ object: c.doc.anchorValue, message: r.error.message });
      failedIds.push(c.doc.id);
      const pending = retry.failed(c.change, c.doc, c.prev, r.error.message);
      if (pending) csRows.push(pending);
      return;
    }
    changedIds.push(c.doc.id);
    if (c.tag === 'delete') {
      result.deleted++;
      const row: CsObject = { ...c.prev!, meshId: null, deleted: true, hash: '', exported: undefined, updatedOn: now };
      delete row.deprovisioned;
      retry.succeeded(c.doc, row);
      csRows.push(row);
      links.push({ id: c.doc.id, anchor: null, provisioned: false });
      return;
    }
    if (c.change.kind === 'add') {
      result.created++;
      addedIds.push(c.doc.id);
    } else if (counted(c)) result.updated++;
    const base: CsObject = c.prev ?? {
      anchor: r.anchor,
      objectType: c.change.objectType,
      attributes: {},
      hash: '',
      rulesHash: '',
      meshId: c.doc.id,
      updatedOn: now,
    };
    const recorded = withoutWriteOnlySecrets(c.values);
    // A pseudo-attribute of deprovisioning (AD's accountDisabled) is never shown by an import: not awaited.
    if (c.tag) for (const k of Object.keys(recorded)) if (isPseudoAttribute(k)) delete recorded[k];
    const row: CsObject = {
      ...base,
      anchor: r.anchor,
      meshId: c.doc.id,
      deleted: false,
      exported: { ...(base.exported ?? {}), ...recorded },
      pendingExport: null,
      exportedOn: now,
      updatedOn: now,
    };
    if (c.change.kind === 'add') {
      row.provisioned = true;
      if (!c.prev) created.add(r.anchor);
    }
    retry.succeeded(c.doc, row);
    if (c.tag === 'disable')
      row.deprovisioned = { state: 'disabled', reason: 'condition', at: now, written: c.disabled!.written, previous: c.disabled!.previous };
    else if (c.tag === 'clear') delete row.deprovisioned;
    // The DN the target gave the object (an add, a rename or a move): references to it are written with it.
    if (r.dn) {
      if (c.prev?.dn && dnKey(c.prev.dn) !== dnKey(r.dn)) {
        moved++;
        movedIds.push(c.doc.id);
        movedFrom.push(`${r.anchor}\u0000${c.prev.dn}`);
      }
      row.dn = r.dn;
    }
    csRows.push(row);
    // An object this connector added, linked again after its deprovisioning (a rehire joined to it, a return
    // inside the grace): its link is a provisioned one again.
    const owned = c.change.kind === 'add' || (c.tag === 'clear' && !!c.prev?.provisioned && !(c.doc.provisioned ?? []).includes(cid));
    if (c.doc.links[cid] !== r.anchor || owned) links.push({ id: c.doc.id, anchor: r.anchor, ...(owned ? { provisioned: true } : {}) });
  });
  await Promise.all([retry.stage(), recordPageLeavers(info, changes, results)]);
  if (writes && interrupted !== undefined) {
    await writes.flush();
    writes = undefined;
  }
  // The target's rows first, then the links: a stop in between leaves rows naming their mesh objects, which the
  // next export's take-over recognises as its own (a link with no row would leave the object unnamed there).
  if (!writes) await writeCsObjects(cid, csRows, insertsOf(created));
  // For a second pass of an incremental export: the objects that name a moved one, and those with related
  // objects not in the target yet (not when the target's call was interrupted: the step ends or fails).
  const again = interrupted === undefined ? [...loaded.relations.missingIn] : [];
  if (interrupted === undefined && movedIds.length) {
    const index = (await context(info)).index;
    for (const id of movedIds) again.push(...index.incoming(id));
  }
  const changedSet = new Set(changedIds);
  // Beside the links, what names no row of the target and waits for nothing of theirs, written at the same time:
  // the staged adds that went, the objects the next export looks at again, the page's recorded changes and the
  // second pass's list.
  const records = Promise.all([
    // A change the target refused is looked at again by the next export (an incremental one would not see it),
    // and so is an object whose reference named one not in the target yet (an owed reference: the first export
    // that finds the referenced object there writes it).
    markExportDirty(cid, [...failedIds, ...loaded.relations.missingIn]),
    // The page's changes as the target answered them (those answered before an interruption), the drifted ones
    // and the deletes held for approval.
    record
      ? writeRunChanges(info.runId, record, [
          ...exportItems(cid, connector, changes.slice(0, results.length).map(recordOf), results),
          ...drifted,
          ...planned(held),
        ])
      : undefined,
    interrupted === undefined
      ? saveAgain(
          info.runId,
          again,
          again.filter((id) => changedSet.has(id)),
          failedIds,
          info.planRunId ? addedIds : [],
          info.planRunId ? movedFrom : [],
        )
      : undefined,
  ]);
  // With the step's writes, the records go on while the next page is planned and applied: the step's end waits
  // for them (StepWrites.flush), as it waits for the rows and links.
  const [upserts] = await Promise.all([
    writes ? [] : commitLinks(cid, links, now, knownRow(info.runId, new Map(docs.map((d) => [d.id, d])))),
    writes ? undefined : retry.commit(),
    writes ? writes.behind(records) : records,
  ]);
  if (writes) {
    writes.add(csRows, links, docs, now, retry, created);
    if (writes.full) await writes.flush();
  } else {
    for (const d of upserts) if (waitingDocs.has(d.id)) waitingDocs.set(d.id, encodeMeshObject(d));
    noteWritten(info.runId, upserts);
    // This process's summaries follow its own writes (a reload per page would read the whole space again).
    const cached = csCaches.get(cid);
    if (cached) for (const r of csRows) cached.set(r.anchor, summarize(cid, r));
  }
  if (interrupted !== undefined) {
    if (!isAborted(interrupted)) throw interrupted;
    // Cancelled while the target worked on the page: what it committed is recorded above and counted; the
    // changes it did not get to were neither applied nor attempted.
    const processed = Math.max(0, result.processed - (changes.length - results.length));
    return { ...withStop(owed(addPage(totals, { ...result, processed, errors }, []))), cancelled: true };
  }
  const next = owed(addPage(totals, { ...result, errors }, []));
  // What the connector did besides the changes (containers it created): listed in the run, not counted as errors.
  for (const message of notes) if (next.errors.length < 100) next.errors.push({ message });
  if (moved) next.movedInTarget = (totals.movedInTarget ?? 0) + moved;
  return withStop(next);
}

/**
 * The page's owed references on the totals: `notInTarget` (how many related objects were left out) and `owed`,
 * one line per object that names one, which the run lists as errors if they are still owed when it ends.
 */
function owedReferences(loaded: ExportPlanInput): (t: RunTotals) => RunTotals {
  return (t) => {
    const r = loaded.relations;
    if (!r.notInTarget) return t;
    const lines = [...(t.owed ?? [])];
    for (const d of loaded.docs)
      if (r.missingIn.has(d.id) && lines.length < 100)
        lines.push({
          object: d.anchorValue,
          message: 'A reference names an object that is not in the target: it is written by the first export that finds that object there.',
        });
    return { ...t, notInTarget: (t.notInTarget ?? 0) + r.notInTarget, owed: lines, owedCount: (t.owedCount ?? 0) + r.missingIn.size };
  };
}

/**
 * Adds the target refused because the object is there already (an add re-sent after a crash between the
 * target's answer and the record, or after a lost link): when the object found is not another mesh object's,
 * it is taken over, updated to the values the add would have written, and recorded as this export's add. One
 * that belongs to another mesh object stays an error naming it.
 */
async function takeOver(
  info: RunInfo,
  connector: Connector & Required<Pick<Connector, 'export'>>,
  loaded: ExportPlanInput,
  changes: readonly DocChange[],
  results: ExportResult[],
): Promise<{ results: ExportResult[]; notes: string[]; interrupted?: unknown }> {
  const notes: string[] = [];
  const candidates: number[] = [];
  results.forEach((r, i) => {
    if (r.status === 'error' && r.error.code === 'already_exists' && r.existing && changes[i].change.kind === 'add') candidates.push(i);
  });
  if (!candidates.length) return { results, notes };
  const cs = await csCache(info.connectorId, !info.preview);
  const out = [...results];
  const updates: { i: number; change: ExportChange }[] = [];
  for (const i of candidates) {
    const r = results[i] as Extract<ExportResult, { status: 'error' }>;
    const existing = r.existing!;
    const c = changes[i];
    const owner = cs.summaries.get(existing.anchor);
    if (owner && !owner.deleted && owner.meshId && owner.meshId !== c.doc.id) {
      out[i] = { ...r, error: { ...r.error, message: `${r.error.message} It belongs to another mesh object (${owner.meshId}): not taken over.` } };
      continue;
    }
    // Only this object's own earlier add: its row names this mesh object, or the object there joins it by the
    // target's join rules, or it holds every value the add writes. An object made outside the engine for
    // someone else stays an error.
    const ours =
      (owner && !owner.deleted && owner.meshId === c.doc.id) ||
      joinsByRules(loaded, existing.attributes, c.doc) ||
      holdsAll(loaded, existing.attributes, c.change.attributes);
    if (!ours) continue;
    const diff: Record<string, AttributeValue> = {};
    for (const [k, v] of Object.entries(c.change.attributes))
      if (!sameTargetValue(loaded.dnAttributes, k, existing.attributes[k], v) && !(v === null && existing.attributes[k] === undefined)) diff[k] = v;
    notes.push(`${existing.dn ?? existing.anchor}: the add found the object there already (an add re-sent after an interruption); it was taken over.`);
    if (!Object.keys(diff).length) out[i] = { status: 'success', anchor: existing.anchor, ...(existing.dn ? { dn: existing.dn } : {}) };
    else
      updates.push({
        i,
        change: {
          kind: 'update',
          anchor: existing.anchor,
          objectType: c.change.objectType,
          attributes: diff,
          previous: existing.attributes,
          state: c.change.state ?? c.change.attributes,
        },
      });
  }
  if (updates.length) {
    const { results: ur, interrupted } = await exportRecordingApplied(
      connector,
      updates.map((u) => u.change),
      info,
    );
    updates.forEach((u, k) => {
      const r = ur[k];
      const existing = (results[u.i] as Extract<ExportResult, { status: 'error' }>).existing!;
      if (!r) return;
      out[u.i] = r.status === 'success' ? { status: 'success', anchor: existing.anchor, dn: r.dn ?? existing.dn } : r;
    });
    // Interrupted part way: the take-overs not done stay the refusals they were; the caller records the rest.
    if (interrupted !== undefined) return { results: out, notes, interrupted };
  }
  return { results: out, notes };
}

/** Whether a target object's values join `doc` by one of the target's join rules. */
function joinsByRules(loaded: ExportPlanInput, attributes: Record<string, AttributeValue>, doc: MeshObject): boolean {
  const meshValues = attributeValues(doc);
  for (const jr of loaded.rules.joins) {
    const keys = new Set(joinKeys(jr, { attributes }));
    if (indexKeys(meshValues[jr.rule.targetAttribute ?? ''] ?? null).some((k) => keys.has(k))) return true;
  }
  return false;
}

/** Whether a target object already holds every value an add writes (the add itself, answered but not recorded). */
function holdsAll(loaded: ExportPlanInput, attributes: Record<string, AttributeValue>, add: Record<string, AttributeValue>): boolean {
  const written = Object.entries(add).filter(([k, v]) => !isEmptyValue(v) && !isWriteOnlySecret(k));
  return written.length > 0 && written.every(([k, v]) => sameTargetValue(loaded.dnAttributes, k, attributes[k], v));
}

/**
 * Link changes written on the mesh objects as stored now (read again, and written only if nobody wrote them
 * since: lib/mesh/store.ts patchMeshLinks), not on the states the page loaded: another run (an export to
 * another target, an import) may write them at the same time, and a whole-state write from the page's copy
 * would undo its links (the next export would add those objects again).
 */
async function commitLinks(cid: string, links: readonly LinkChange[], now: string, known?: Parameters<typeof patchMeshLinks>[3]): Promise<MeshObject[]> {
  if (!links.length) return [];
  const byId = new Map<string, { changes: LinkChange[]; now: string }>();
  for (const l of links) {
    const e = byId.get(l.id);
    if (e) e.changes.push(l);
    else byId.set(l.id, { changes: [l], now });
  }
  return patchMeshLinks(byId.keys(), linkPatch(cid, byId), cid, known);
}

/** The patch of {@link patchMeshLinks} that applies each object's link changes (false: nothing changes). */
function linkPatch(cid: string, byId: ReadonlyMap<string, { changes: readonly LinkChange[]; now: string }>): (d: MeshObject) => boolean {
  return (d) => {
    const e = byId.get(d.id);
    if (!e) return false;
    const before = [d.links[cid] ?? null, ...(d.provisioned ?? [])];
    for (const l of e.changes) {
      if (l.anchor === null) delete d.links[cid];
      else d.links[cid] = l.anchor;
      if (l.provisioned === true) d.provisioned = d.provisioned?.includes(cid) ? d.provisioned : [...(d.provisioned ?? []), cid];
      else if (l.provisioned === false && d.provisioned) d.provisioned = d.provisioned.filter((c) => c !== cid);
    }
    if (d.provisioned && !d.provisioned.length) delete d.provisioned;
    const after = [d.links[cid] ?? null, ...(d.provisioned ?? [])];
    if (after.length === before.length && after.every((v, i) => v === before[i])) return false;
    d.updatedOn = e.now;
    return true;
  };
}

/**
 * Apply changes through the connector. A run-level failure part way (a lost connection) gives the results
 * applied before it and the failure: the caller records what was applied, then throws `interrupted`. For a
 * run (not a preview), a cancel asked while the connector works aborts its call ({@link cancellable}): the
 * failure is then `aborted` ({@link isAborted}), and the caller ends the step as cancelled instead.
 */
export async function exportRecordingApplied(
  connector: Connector,
  changes: ExportChange[],
  info: Pick<RunInfo, 'runId' | 'preview'>,
): Promise<{ results: ExportResult[]; interrupted?: unknown }> {
  const target = connector as Connector & { export: NonNullable<Connector['export']> };
  try {
    return {
      results: info.preview ? await exportChanges(target, changes) : await cancellable(info.runId, (signal) => exportChanges(target, changes, { signal })),
    };
  } catch (err) {
    return { results: appliedBefore(err), interrupted: err };
  }
}

export { shownOf };
export type { RunObjectError };

/** A connector call that stopped because a cancel aborted it. */
export const isAborted = (err: unknown): boolean => isConnectorError(err) && err.code === 'aborted';
