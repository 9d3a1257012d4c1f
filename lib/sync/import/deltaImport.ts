import { hasDeltaImport, isConnectorError, type DeltaChange, type ObjectError } from '../../connectors/sdk';
import { csReferenceBy, dnKey } from '../../mesh/model';
import { updateRun } from '../../storage/runs';
import { readCsObjects } from '../space/connectorSpace';
import { liveObjects } from '../space/csCache';
import { exceeded, thresholdsOf } from '../../plans/thresholds';
import { pageKey } from '../../storage/runChanges';
import { rejoinDisconnectors, addRejoined } from './fullSync';
import { processItems, storedObject } from './pages';
import { RULES_CHANGED_NOTE } from '../rulesChange';
import { importConnectorFor, newlyReadNote } from './readAttributes';
import { withConnector } from '../run/runConnector';
import { log, loadDocs, type Context, context, TRACE } from '../run/runContext';
import { cancelAsked, cancellable, progressOf } from '../run/runProgress';
import { DEFAULT_PAGE_SIZE, type RunTotals, type RunInfo, type StepFailure, failure, addPage } from '../run/runTypes';
import { readSyncState } from '../run/state';

// Delta import

export type DeltaOutput = { fullImportRequired: string } | { watermark: string | null; totals: RunTotals; fullSyncNext?: boolean } | StepFailure;

/**
 * A delta import. Connectors give no cursor inside a delta (an interrupted delta is read again from the
 * committed watermark), so this one step reads the changes, checks the deletes threshold, then plans and
 * applies them page by page, reporting progress after each page. The watermark is committed by the
 * orchestration afterwards. Deletes over the threshold: every page is planned, not applied (its changes
 * recorded `planned`), and the run waits for approval (`totals.parked`); the approved run reads the delta again
 * and applies its plan. A run applying a plan gives no watermark when it left objects out (the next delta
 * reads them again).
 */
export async function deltaImport(
  info: RunInfo,
  config: { deletionThreshold?: unknown; thresholds?: unknown; fullSyncOnRuleChange?: unknown },
  totals: RunTotals,
): Promise<DeltaOutput> {
  try {
    const made = await importConnectorFor(info.connectorId);
    return await withConnector(made, async (connector) => {
      if (!hasDeltaImport(connector)) return { fullImportRequired: 'This connector has no delta import.' };
      // The rules read attributes the stored objects lack: a delta would bring them for changed objects only.
      if (made.missing.length) return { fullImportRequired: newlyReadNote(made.missing) };
      const { watermark, fullRulesHash } = await readSyncState(info.connectorId);
      const changes: DeltaChange[] = [];
      const readErrors: ObjectError[] = [];
      let next: string | null = watermark;
      // A cancel asked while the changes are read aborts the read (the connector stops its query): nothing of
      // the delta is applied yet, and the run ends Cancelled with the old watermark.
      const read = await cancellable(info.runId, async (signal) => {
        try {
          for await (const page of connector.deltaImport(watermark, { pageSize: DEFAULT_PAGE_SIZE, signal })) {
            if (page.fullImportRequired) return { fullImportRequired: page.fullImportRequired.reason };
            changes.push(...page.changes);
            readErrors.push(...page.errors);
            if (page.nextWatermark !== undefined) next = page.nextWatermark;
          }
        } catch (err) {
          if (isConnectorError(err) && err.code === 'aborted') return 'aborted' as const;
          throw err;
        }
        return null;
      });
      if (read === 'aborted') return { watermark: null, totals: { ...totals, cancelled: true } };
      if (read) return read;
      if (TRACE) log.info(`delta read ${changes.length} changes`);
      const ctx = await context(info);
      if (TRACE) log.info(`delta context ready`);
      resolveDeletesByDn(ctx, changes);
      await dropDeletedReferences(ctx, changes);
      // Rules changed since the last full pass: unchanged objects were processed with the old ones.
      const rulesChanged = fullRulesHash !== null && fullRulesHash !== ctx.rules.hash;
      const fullSyncNext = rulesChanged && config.fullSyncOnRuleChange === true;
      if (rulesChanged && !fullSyncNext) totals = { ...totals, errors: [...totals.errors, { message: RULES_CHANGED_NOTE }] };
      const rejoined = await rejoinDisconnectors(ctx);
      if (rejoined) totals = addRejoined(totals, rejoined);
      const deletes = changes.filter((c) => c.kind === 'delete' && ctx.cs.summaries.get(c.anchor)?.deleted === false).length;
      const over = info.dryRun || info.planRunId ? [] : exceeded(thresholdsOf(config), { deletes }, liveObjects(ctx.cs.summaries));
      if (over.length) {
        // The whole delta is planned (recorded with its fingerprints) and nothing applied.
        const dry = { ...info, dryRun: true };
        for (let i = 0; i < changes.length; i += DEFAULT_PAGE_SIZE) {
          const slice = changes.slice(i, i + DEFAULT_PAGE_SIZE);
          await processItems(
            await context(dry),
            slice.map((ch) => ({ anchor: ch.anchor, object: ch.kind === 'delete' ? null : (ch.object ?? null) })),
            undefined,
            false,
            pageKey('t', i / DEFAULT_PAGE_SIZE),
          );
        }
        return { watermark: null, totals: { ...totals, parked: over } };
      }
      let t = totals;
      let firstErrors = readErrors;
      for (let i = 0; i < changes.length || i === 0; i += DEFAULT_PAGE_SIZE) {
        const slice = changes.slice(i, i + DEFAULT_PAGE_SIZE);
        const c = i === 0 ? ctx : await context(info);
        const result = await processItems(
          c,
          slice.map((ch) => ({ anchor: ch.anchor, object: ch.kind === 'delete' ? null : (ch.object ?? null) })),
          undefined,
          false,
          pageKey('t', i / DEFAULT_PAGE_SIZE),
        );
        t = addPage(t, result, firstErrors);
        firstErrors = [];
        const run = await updateRun(info.runId, { stats: t.stats, errors: t.errors, progress: progressOf('applying', t, changes.length) });
        if (!changes.length) break;
        // Asked to stop: what was applied stays; the orchestration ends the run with no watermark.
        if (cancelAsked(run) && i + DEFAULT_PAGE_SIZE < changes.length) return { watermark: null, totals: { ...t, cancelled: true } };
      }
      return { watermark: next, totals: t, ...(fullSyncNext ? { fullSyncNext } : {}) };
    });
  } catch (err) {
    return failure(err);
  }
}

/**
 * Deletes after which the source dropped the deleted object's DN from every object that named it, without
 * reporting those objects (Active Directory's linked values: a group loses a deleted member and its
 * uSNChanged does not move; `DeltaChange.referencesDropped`). The engine drops the value itself: this
 * connector's objects that reference a deleted one (through its mesh object's incoming relationships, or a
 * pending reference on its DN) are processed as updates without it, so inbound flows copy the right value.
 * Objects the delta reads anyway are left to it.
 */
async function dropDeletedReferences(ctx: Context, changes: DeltaChange[]): Promise<void> {
  const cid = ctx.info.connectorId;
  const gone = new Map<string, string>();
  const meshIds: string[] = [];
  for (const c of changes) {
    if (c.kind !== 'delete' || !c.referencesDropped || !c.anchor) continue;
    const e = ctx.cs.entry(c.anchor);
    if (!e?.dn) continue;
    gone.set(dnKey(e.dn), c.anchor);
    if (e.meshId) meshIds.push(e.meshId);
  }
  if (!gone.size) return;
  const sources = new Set<string>();
  for (const id of meshIds) for (const s of ctx.index.incoming(id)) sources.add(s);
  for (const key of gone.keys()) for (const s of ctx.index.waiting(csReferenceBy('dn', cid), key)) sources.add(s);
  const inDelta = new Set(changes.map((c) => c.anchor));
  const anchors = [...(await loadDocs([...sources])).values()].map((d) => d.links[cid]).filter((a): a is string => !!a && !inDelta.has(a));
  if (!anchors.length) return;
  for (const row of (await readCsObjects(cid, anchors)).values()) {
    if (row.deleted) continue;
    const attributes = { ...row.attributes };
    let changed = false;
    for (const name of row.refNames ?? []) {
      const v = attributes[name];
      const values = Array.isArray(v) ? v : v === null || v === undefined ? [] : [v];
      const kept = values.filter((x) => !gone.has(dnKey(String(x))));
      if (kept.length === values.length) continue;
      changed = true;
      if (kept.length) attributes[name] = kept;
      else delete attributes[name];
    }
    if (!changed) continue;
    changes.push({ kind: 'update', anchor: row.anchor, objectType: row.objectType, object: storedObject(row, attributes) });
  }
}

/**
 * Deletes the source names by DN only (no anchor, see DeltaChange): found by that DN in the connector space as
 * it stands before the delta. A DN the space does not know names an object never imported: nothing to do.
 */
function resolveDeletesByDn(ctx: Context, changes: DeltaChange[]): void {
  for (let i = changes.length - 1; i >= 0; i--) {
    const c = changes[i];
    if (c.kind !== 'delete' || c.anchor || !c.dn) continue;
    const anchor = ctx.cs.anchorOfDn(dnKey(c.dn));
    if (anchor === undefined) changes.splice(i, 1);
    else changes[i] = { ...c, anchor };
  }
}
