import { appliedBefore, exportChanges, isConnectorError, type AttributeValue, type Connector, type ExportChange, type ExportResult } from '../connectors/sdk';
import { compileExpression } from '../expression';
import { encodeMeshObject } from '../mesh/codec';
import { dnKey, isEmptyValue, sameValue, type MeshObject } from '../mesh/model';
import { commitMeshWrite } from '../mesh/store';
import { readConnectorRow } from '../storage/connectors';
import type { RunObjectError } from '../storage/runs';
import { readCsObjects, summarize, writeCsObjects } from './connectorSpace';
import { liveObjects } from './csCache';
import { exportItems, filterByPlan, type ExportRecord } from './exportChanges';
import { exceeded, thresholdsOf } from '../plans/thresholds';
import { planIndex } from '../plans/planIndex';
import { writeRunChanges, type StoredChange } from '../storage/runChanges';
import { disableValues, dueAt, enableValues, isDue, isPseudoAttribute } from './deprovisioning';
import { exportNeedsRelations, exportRelations } from './exportReferences';
import { ExportRetry } from './exportRetry';
import type { CsObject } from './model';
import { attributeValues } from './planner';
import { referencePolicy } from './references';
import { ruleFailureMessage, ruleValue, type RuleSet } from './rules';
import { type ExportConfig, settingsOf } from './runConnector';
import { csCaches, csCache, waitingDocs, loadDocs, context } from './runContext';
import { cancellable } from './runProgress';
import { type RunTotals, type RunInfo, type PageResult, addPage } from './runTypes';
import { markExportDirty, readExportDirty } from './state';

// Export: one page of mesh objects through the outbound rules, applied in the target and recorded

/**
 * Objects to look at again after a page of an export (`SyncState` partition `xa_<runId>`): the objects that
 * name one the export moved or renamed in the target, and those whose related objects were not in the target
 * yet when the page computed their values.
 */
export const againKey = (runId: string) => `xa_${runId}`;
export async function saveAgain(runId: string, ids: string[]): Promise<void> {
  if (ids.length) await markExportDirty(againKey(runId), ids);
}
export async function loadAgain(runId: string): Promise<string[]> {
  return (await readExportDirty(againKey(runId))).ids;
}

/**
 * Write-only secrets (Active Directory's unicodePwd): the target never shows them, so they are never compared with
 * what it shows and never recorded in the connector space (`exported`): an outbound flow to one is sent with an
 * add, and with an update only when the target's configuration says passwordOnUpdate.
 */
const WRITE_ONLY_SECRETS = new Set(['unicodepwd']);
export const isWriteOnlySecret = (name: string) => WRITE_ONLY_SECRETS.has(name.toLowerCase());
export function withoutWriteOnlySecrets(values: Record<string, AttributeValue>): Record<string, AttributeValue> {
  const out: Record<string, AttributeValue> = {};
  for (const [k, v] of Object.entries(values)) if (!isWriteOnlySecret(k)) out[k] = v;
  return out;
}

/** One change of an export page, with what the engine records when it is applied. */
export interface DocChange {
  change: ExportChange;
  doc: MeshObject;
  prev: CsObject | undefined;
  values: Record<string, AttributeValue>;
  /**
   * Deprovisioning: `disable` (the disable values; the link stays), `delete` (the object deleted and unlinked),
   * `clear` (the object's deprovisioning marker goes: a re-enable, a pending one cancelled, a rehire).
   */
  tag?: 'disable' | 'delete' | 'clear';
  disabled?: { written: string[]; previous: Record<string, AttributeValue> };
}

export async function exportDocs(
  info: RunInfo,
  connector: Connector & Required<Pick<Connector, 'export'>>,
  rules: RuleSet,
  docs: MeshObject[],
  totals: RunTotals,
  config: ExportConfig,
  observe?: (changes: readonly DocChange[]) => void,
  record?: string,
): Promise<RunTotals> {
  const cid = info.connectorId;
  const at = new Date();
  const now = at.toISOString();
  const settings = settingsOf(config);
  // A mesh object back inside the grace of its deprovisioning (the same id): found through the target's
  // connector-space summaries, relinked to its target object and the deprovisioning cancelled.
  const waiting = new Map<string, string>();
  if (settings.graceDays > 0 && docs.some((d) => !d.links[cid])) {
    const ids = new Set(docs.filter((d) => !d.links[cid]).map((d) => d.id));
    for (const [a, sm] of (await csCache(cid, !info.preview)).summaries)
      if (sm.deprov === 'pending' && !sm.deleted && sm.meshId && ids.has(sm.meshId)) waiting.set(sm.meshId, a);
  }
  const anchorOf = (d: MeshObject): string | undefined => d.links[cid] ?? waiting.get(d.id);
  const anchors = docs.map(anchorOf).filter((a): a is string => !!a);
  const existing = await readCsObjects(cid, anchors);
  // Objects whose change failed Export__MaxAttempts times are left out (lib/sync/exportRetry.ts).
  const { retry, docs: attempted } = await ExportRetry.forPage(info, now, docs, (d) => existing.get(anchorOf(d) ?? ''));
  docs = attempted;
  const changes: DocChange[] = [];
  const errors: RunObjectError[] = [];
  // Rows (and links) that change without a change in the target: pending marks, cancellations, objects left.
  const quietRows: CsObject[] = [];
  const quietDocs: MeshObject[] = [];
  let left = 0;
  const condition = typeof config.provisioningCondition === 'string' ? compileExpression(config.provisioningCondition) : null;
  const targetCs = exportNeedsRelations(rules, docs) ? await csCache(cid, !info.preview) : null;
  const relations = await exportRelations(rules, docs, {
    connectorId: cid,
    loadDocs,
    dnOf: (anchor) => targetCs?.entry(anchor)?.dn,
    targetKind: targetCs ? await targetReferenceKind(cid) : 'anchor',
  });
  const unlinkedDoc = (doc: MeshObject): MeshObject => {
    const d = structuredClone(doc);
    delete d.links[cid];
    if (d.provisioned) d.provisioned = d.provisioned.filter((c) => c !== cid);
    d.updatedOn = now;
    return d;
  };
  for (const doc of docs) {
    const values: Record<string, AttributeValue> = {};
    const meshValues = attributeValues(doc);
    const anchor = anchorOf(doc);
    const prev = anchor ? existing.get(anchor) : undefined;
    const isAdd = !anchor || !prev || prev.deleted;
    const marker = isAdd ? undefined : prev!.deprovisioned;
    // Back inside its grace (not linked here, found by its pending deprovisioning).
    const restored = !isAdd && !doc.links[cid];
    try {
      // Scope first: the outbound rules run only for objects in the target (joined there) or about to be
      // provisioned (the provisioning condition holds); an object out of scope is not looked at further.
      if (isAdd && condition && !truthyValue(condition.evaluate({ source: meshValues, object: meshValues }))) continue;
      // onConditionFalse: a provisioned object whose condition stopped holding is deprovisioned.
      if (!isAdd && settings.onConditionFalse && condition && !truthyValue(condition.evaluate({ source: meshValues, object: meshValues }))) {
        if (marker && marker.state !== 'pending') continue; // already disabled or left: not updated while out of scope
        if (settings.graceDays > 0 && !(marker?.state === 'pending' && isDue(marker.due, at))) {
          if (!marker)
            quietRows.push({ ...prev!, deprovisioned: { state: 'pending', reason: 'condition', at: now, due: dueAt(at, settings.graceDays) }, updatedOn: now });
          continue;
        }
        if (settings.action === 'delete') {
          changes.push({ change: { kind: 'delete', anchor: anchor!, objectType: prev!.objectType, attributes: {} }, doc, prev, values: {}, tag: 'delete' });
        } else if (settings.action === 'disable') {
          const d = disableValues(settings, prev!);
          changes.push({
            change: { kind: 'update', anchor: anchor!, objectType: prev!.objectType, attributes: d.attributes, previous: prev!.attributes },
            doc,
            prev,
            values: d.attributes,
            tag: 'disable',
            disabled: { written: Object.keys(d.attributes), previous: d.previous },
          });
        } else {
          left++;
          const row: CsObject = { ...prev!, meshId: null, deprovisioned: { state: 'none', reason: 'condition', at: now }, updatedOn: now };
          quietRows.push(row);
          quietDocs.push(unlinkedDoc(doc));
        }
        continue;
      }
      const related = relations.relatedOf(doc);
      for (const fr of rules.outbound) {
        if (!fr.rule.targetAttribute || values[fr.rule.targetAttribute] !== undefined) continue;
        const name = fr.rule.sourceAttribute ?? '';
        const source = relations.types.has(name) ? relations.valueOf(doc, name) : (meshValues[name] ?? null);
        // An absent source value is not evaluated (unless the rule says so): the attribute is left out of an
        // add and cleared by an update.
        values[fr.rule.targetAttribute] = isEmptyValue(source) && !fr.rule.evaluateWhenAbsent ? null : ruleValue(fr, source, meshValues, { related });
      }
    } catch (err) {
      errors.push({ object: doc.anchorValue, message: ruleFailureMessage(err, 'The outbound rules could not be applied') });
      continue;
    }
    if (isAdd) {
      changes.push({
        change: { kind: 'add', objectType: typeof config.objectType === 'string' ? config.objectType : 'User', attributes: values },
        doc,
        prev,
        values,
      });
      continue;
    }
    const shown = { ...prev!.attributes, ...(prev!.exported ?? {}) };
    const diff: Record<string, AttributeValue> = {};
    for (const [k, v] of Object.entries(values)) if (!isWriteOnlySecret(k) && !sameValue(shown[k], v)) diff[k] = v;
    // A write-only secret goes with an update only when the target says passwordOnUpdate (then with every update).
    if (Object.keys(diff).length && config.passwordOnUpdate === true)
      for (const [k, v] of Object.entries(values)) if (isWriteOnlySecret(k) && !isEmptyValue(v)) diff[k] = v;
    // A disabled object linked again (a rehire, the condition holding again) is enabled: AD's accountDisabled
    // false, the other disable attributes given their flow's value or the value they had before.
    if (marker?.state === 'disabled') Object.assign(diff, enableValues(marker, values));
    const tag = marker ? ('clear' as const) : undefined;
    if (Object.keys(diff).length)
      changes.push({
        change: { kind: 'update', anchor: anchor!, objectType: prev!.objectType, attributes: diff, previous: prev!.attributes },
        doc,
        prev,
        values: diff,
        tag,
      });
    else if (marker || restored) {
      const row: CsObject = { ...prev!, meshId: doc.id, updatedOn: now };
      delete row.deprovisioned;
      quietRows.push(row);
      if (restored) {
        const d = structuredClone(doc);
        d.links[cid] = anchor!;
        if (prev!.provisioned) d.provisioned = [...new Set([...(d.provisioned ?? []), cid])];
        d.updatedOn = now;
        quietDocs.push(d);
      }
    }
  }
  // Applying a plan: only its changes, and only those computed from the inputs it was planned from.
  const recordOf = (c: DocChange): ExportRecord => ({ key: c.doc.id, change: c.change, doc: c.doc, prev: c.prev, values: withoutWriteOnlySecrets(c.values) });
  let drifted: StoredChange[] = [];
  let leftOut = 0;
  if (info.planRunId && !info.preview) {
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
  // objectsProcessed counts the changes applied or attempted (and the objects whose rules failed, and those
  // left as they are by deprovisioning), not the mesh objects looked at.
  let result: PageResult = { created: 0, updated: 0, deleted: 0, processed: changes.length + errors.length + left, errors, ...(leftOut ? { leftOut } : {}) };
  const withStop = (t: RunTotals): RunTotals => retry.note(parked ? { ...t, parked: [...(t.parked ?? []), ...parked] } : t);
  const planned = (list: readonly DocChange[]) => exportItems(cid, connector, list.map(recordOf));
  if (info.dryRun) {
    observe?.(changes);
    if (record) await writeRunChanges(info.runId, record, planned(changes));
    result = {
      ...result,
      created: changes.filter((c) => c.change.kind === 'add').length,
      updated: changes.filter((c) => c.change.kind === 'update').length,
      deleted: changes.filter((c) => c.change.kind === 'delete').length,
    };
    return withStop(addPage(totals, result, []));
  }
  if (!changes.length && !quietRows.length && !retry.dirty) {
    if (record) await writeRunChanges(info.runId, record, [...drifted, ...planned(held)]);
    return withStop(addPage(totals, result, []));
  }
  const { results, interrupted } = changes.length
    ? await exportRecordingApplied(
        connector,
        changes.map((c) => c.change),
        info,
      )
    : { results: [] as ExportResult[], interrupted: undefined };
  const csRows: CsObject[] = [...quietRows];
  const meshUpserts: MeshObject[] = [...quietDocs];
  let moved = 0;
  const movedIds: string[] = [];
  const failedIds: string[] = [];
  const notes: string[] = [];
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
    if (c.tag === 'delete') {
      result.deleted++;
      const row: CsObject = { ...c.prev!, meshId: null, deleted: true, hash: '', exported: undefined, updatedOn: now };
      delete row.deprovisioned;
      retry.succeeded(c.doc, row);
      csRows.push(row);
      meshUpserts.push(unlinkedDoc(c.doc));
      return;
    }
    if (c.change.kind === 'add') result.created++;
    else result.updated++;
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
    if (c.change.kind === 'add') row.provisioned = true;
    retry.succeeded(c.doc, row);
    if (c.tag === 'disable')
      row.deprovisioned = { state: 'disabled', reason: 'condition', at: now, written: c.disabled!.written, previous: c.disabled!.previous };
    else if (c.tag === 'clear') delete row.deprovisioned;
    // The DN the target gave the object (an add, a rename or a move): references to it are written with it.
    if (r.dn) {
      if (c.prev?.dn && dnKey(c.prev.dn) !== dnKey(r.dn)) {
        moved++;
        movedIds.push(c.doc.id);
      }
      row.dn = r.dn;
    }
    csRows.push(row);
    // An object this connector added, linked again after its deprovisioning (a rehire joined to it, a return
    // inside the grace): its link is a provisioned one again.
    const owned = c.change.kind === 'add' || (c.tag === 'clear' && !!c.prev?.provisioned && !(c.doc.provisioned ?? []).includes(info.connectorId));
    if (c.doc.links[info.connectorId] !== r.anchor || owned) {
      const doc = structuredClone(c.doc);
      doc.links[info.connectorId] = r.anchor;
      if (owned) doc.provisioned = [...new Set([...(doc.provisioned ?? []), info.connectorId])];
      doc.updatedOn = now;
      meshUpserts.push(doc);
    }
  });
  await retry.stage();
  await commitMeshWrite({ upserts: meshUpserts, deletes: [], exportOf: info.connectorId });
  for (const d of meshUpserts) if (waitingDocs.has(d.id)) waitingDocs.set(d.id, encodeMeshObject(d));
  await writeCsObjects(info.connectorId, csRows);
  await retry.commit();
  // This process's summaries follow its own writes (a reload per page would read the whole space again).
  const cached = csCaches.get(info.connectorId);
  if (cached) for (const r of csRows) cached.set(r.anchor, summarize(info.connectorId, r));
  // A change the target refused is looked at again by the next export (an incremental one would not see it).
  await markExportDirty(info.connectorId, failedIds);
  // The page's changes as the target answered them (those answered before an interruption), the drifted ones
  // and the deletes held for approval.
  if (record)
    await writeRunChanges(info.runId, record, [
      ...exportItems(cid, connector, changes.slice(0, results.length).map(recordOf), results),
      ...drifted,
      ...planned(held),
    ]);
  if (interrupted !== undefined) {
    if (!isAborted(interrupted)) throw interrupted;
    // Cancelled while the target worked on the page: what it committed is recorded above and counted; the
    // changes it did not get to were neither applied nor attempted.
    return { ...withStop(addPage(totals, { ...result, processed: result.processed - (changes.length - results.length), errors }, [])), cancelled: true };
  }
  const next = addPage(totals, { ...result, errors }, []);
  // What the connector did besides the changes (containers it created): listed in the run, not counted as errors.
  for (const message of notes) if (next.errors.length < 100) next.errors.push({ message });
  if (relations.notInTarget) next.notInTarget = (totals.notInTarget ?? 0) + relations.notInTarget;
  if (moved) next.movedInTarget = (totals.movedInTarget ?? 0) + moved;
  // For a second pass of an incremental export: the objects that name a moved one, and those with related
  // objects not in the target yet.
  const again = [...relations.missingIn];
  if (movedIds.length) {
    const index = (await context(info)).index;
    for (const id of movedIds) again.push(...index.incoming(id));
  }
  await saveAgain(info.runId, again);
  return withStop(next);
}

/** How a target connector names the objects its references point at (a DN, or an anchor). */
async function targetReferenceKind(connectorId: string): Promise<'dn' | 'anchor'> {
  const record = await readConnectorRow(connectorId);
  return referencePolicy(connectorId, record?.type ?? 'custom', record?.config ?? {}, []).targetKind;
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

/** A connector call that stopped because a cancel aborted it. */
export const isAborted = (err: unknown): boolean => isConnectorError(err) && err.code === 'aborted';

export const truthyValue = (v: unknown) => (typeof v === 'string' ? v !== '' && !/^(false|0|no)$/i.test(v) : !!v);
