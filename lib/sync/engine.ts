import { createConnectorFor } from '../connectors/factory';
import { recordRunFinished } from '../telemetry/runs';
import type { RunTrace } from '../telemetry/tracing';
import {
  ConnectorError,
  contentHash,
  appliedBefore,
  exportChanges,
  hasDeltaImport,
  hasExport,
  hasFullImport,
  isConnectorError,
  type AttributeValue,
  type Connector,
  type ConnectorObject,
  type DeltaChange,
  type ExportChange,
  type ExportResult,
  type ImportPage,
  type ObjectError,
} from '../connectors/sdk';
import { setConnectorRunState } from '../storage/connectors';
import { listRules } from '../storage/rules';
import { completeRun, getRun, updateRun, type RunObjectError, type RunStats, type TerminalRunStatus } from '../storage/runs';
import { decodeMeshObject, encodeMeshObject } from '../mesh/codec';
import { dropSharedIndex, sharedIndex, type MeshIndex } from '../mesh/joinIndex';
import { IndexOverlay } from '../mesh/indexOverlay';
import { PROCESS_WRITER, commitMeshWrite, currentFeedSeq, getMeshObjects, iterateMesh, readFeed } from '../mesh/store';
import { loadCsSummaries, readCsObjects, readCsPartition, summarize, writeCsObjects, type CsSummary } from './connectorSpace';
import { CsCache } from './csCache';
import { csWakeKeys, referencePolicy, referencesOf, type CsLookup } from './references';
import { readConnectorRow } from '../storage/connectors';
import { csReferenceBy, dnKey, isEmptyValue, sameValue, type MeshObject } from '../mesh/model';
import { type CsObject } from './model';
import { writePageHistory } from './pageHistory';
import { attributeValues, disconnectorJoinKeys, identityKeys, idsToLoad, planImport, reresolve, WorkingSet, type ObjectPlan } from './planner';
import { deprovisioningSettings, disableValues, dueAt, enableValues, isDue, isPseudoAttribute, type DeprovisioningSettings } from './deprovisioning';
import { compileExpression } from '../expression';
import { exportNeedsRelations, exportRelations } from './exportReferences';
import { compileRuleSet, indexedAttributes, ruleFailureMessage, ruleValue, type RuleSet } from './rules';
import { RULES_CHANGED_NOTE } from './rulesChange';
import { dropGoneStagedAdds, ExportRetry } from './exportRetry';
import {
  claimCsOwner,
  clearExportDirty,
  deleteRunState,
  loadDeletePage,
  loadExportPage,
  loadSeen,
  markExportDirty,
  readExportDirty,
  readSyncState,
  saveDeletePage,
  saveExportPage,
  saveExportState,
  saveFullRulesHash,
  saveSeen,
  saveWatermark,
} from './state';
import { areaLog } from '../core/log';
import { cancelAsked, progressOf } from './runProgress';

/** The engine's step timings, with SYNC_TRACE=1 (the benches read them). */
const log = areaLog('sync');

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

export const DEFAULT_PAGE_SIZE = 2000;

export interface RunTotals {
  stats: RunStats;
  errors: RunObjectError[];
  /**
   * Export: related objects left out of a relationship's value because they were not in the target yet. When
   * the same pass added objects, the orchestration runs the partitions once more to write those references.
   */
  notInTarget?: number;
  /**
   * Export: objects the pass renamed or moved in the target. Relationship values computed earlier in the pass
   * named their old DN, so the orchestration runs the partitions once more.
   */
  movedInTarget?: number;
  /** Export: deprovisioning deletes (a provisioning condition that stopped holding) passed the deletion threshold. */
  stopped?: string;
  /** The run was asked to stop (see lib/sync/runProgress.ts): the step ended at a page boundary. */
  cancelled?: boolean;
  /** Export: objects skipped for reaching Export__MaxAttempts (lib/sync/exportRetry.ts), counted once per run. */
  skipped?: string[];
}

/** What the export steps read from the connector's configuration (see {@link runConfig}). */
type ExportConfig = {
  objectType?: unknown;
  provisioningCondition?: unknown;
  passwordOnUpdate?: unknown;
  deletionThreshold?: unknown;
  deprovisioning?: unknown;
  connectorType?: unknown;
};
const settingsOf = (config: ExportConfig): DeprovisioningSettings =>
  deprovisioningSettings(config as Record<string, unknown>, typeof config.connectorType === 'string' ? config.connectorType : '');

/**
 * How an export goes (decided by its first step, {@link planExport}):
 * - `full`: every mesh object of the connector's type, partition by partition (the first export, or after its
 *   outbound rules or configuration changed);
 * - `incremental`: only the mesh objects changed since the last export (read from the change feed), those the
 *   target's own imports marked (drift, unconfirmed values, a referenced object moved there), and those whose
 *   export failed: its cost follows the changes, not the size of the mesh;
 * - `none`: the connector has no outbound rule.
 * `seq`, `hash` and `dirtyKeys` are recorded by the run's end when it completes.
 */
export type ExportPlan =
  | { mode: 'none' }
  | { mode: 'full'; seq: number; hash: string; dirtyKeys: string[] }
  | { mode: 'incremental'; seq: number; hash: string; dirtyKeys: string[]; pages: number; deleted: number };

export interface RunInfo {
  runId: string;
  connectorId: string;
  runType: 'FullImport' | 'DeltaImport' | 'Export' | 'FullSync';
  dryRun: boolean;
  /** The run's trace context, when tracing was on as it started (lib/telemetry/tracing.ts). */
  trace?: RunTrace;
  /** A one-object preview (no run): reads only, never claims a connector space (see {@link csCache}). */
  preview?: boolean;
}

export const emptyTotals = (): RunTotals => ({ stats: { objectsProcessed: 0, objectsCreated: 0, objectsUpdated: 0, objectsDeleted: 0, errors: 0 }, errors: [] });

/** A run-level failure reported by a step (the run ends Failed with this message). */
export interface StepFailure {
  failed: string;
}

function failure(err: unknown): StepFailure {
  if (isConnectorError(err)) return { failed: err.message };
  throw err;
}

/** Read the run; Failed-style answer when the connector or its configuration is unusable. */
export async function beginRun(runId: string): Promise<RunInfo | (StepFailure & { info?: RunInfo })> {
  const run = await getRun(runId);
  if (!run) return { failed: 'The run no longer exists.' };
  const info: RunInfo = { runId, connectorId: run.connectorId, runType: run.runType, dryRun: !!run.dryRun };
  try {
    const { connector } = await createConnectorFor(run.connectorId);
    await connector.close();
  } catch (err) {
    // The run exists, so it is finished as Failed (releasing the connector's run lock).
    if (isConnectorError(err)) return { failed: err.message, info };
    return { failed: 'The connector does not exist or its configuration cannot be read.', info };
  }
  if (run.status === 'Queued') {
    // Conditional: a run cancelled while Queued stays Cancelled.
    try {
      await updateRun(runId, { status: 'Running' }, { etag: run.etag });
    } catch {
      return { failed: 'The run is no longer Queued: it does not run.' };
    }
  }
  return info;
}

// ---------------------------------------------------------------------------------------------------------
// Caches of this process

const csCaches = new Map<string, CsCache>();

/**
 * The connector's connector-space summaries, reloaded when another process wrote since this one did. `claim`
 * false (a preview): a reload is not kept and ownership is not claimed, so nothing is written.
 */
async function csCache(connectorId: string, claim = true): Promise<CsCache> {
  const state = await readSyncState(connectorId);
  const cached = csCaches.get(connectorId);
  if (cached && state.csOwner === PROCESS_WRITER) return cached;
  const fresh = new CsCache(await loadCsSummaries(connectorId));
  if (!claim) return fresh;
  await claimCsOwner(connectorId, PROCESS_WRITER);
  csCaches.set(connectorId, fresh);
  return fresh;
}

/**
 * Mesh objects this process wrote that still wait for a reference target, in their stored form
 * (lib/mesh/codec.ts): when the target arrives, re-resolving them needs no read. Objects another process
 * changes leave it (index feed sync).
 */
const waitingDocs = new Map<string, string>();

/** Mesh objects by id: from the waiting cache when there, else point reads. */
async function loadDocs(ids: string[]): Promise<Map<string, MeshObject>> {
  const out = new Map<string, MeshObject>();
  const read: string[] = [];
  for (const id of ids) {
    const json = waitingDocs.get(id);
    if (json) out.set(id, decodeMeshObject(json));
    else read.push(id);
  }
  for (const [id, doc] of await getMeshObjects(read)) out.set(id, doc);
  return out;
}

/**
 * New mesh objects of a full import that still wait for a reference target (a manager later in the file), held
 * back in memory with their connector-space rows instead of being written now and rewritten when the target
 * arrives: in a random-order import that is about half the objects, and a rewrite costs more than an insert.
 * A held object is written (mesh row, feed, connector-space rows) by the page where its references resolve,
 * or by the last page. Crash safety: neither its mesh row nor its connector-space row exists, so nothing
 * half-written is left; a page that finds the held objects of its run lost (crash, another process, a failed
 * page) restarts the import from the first page without holding (`holder` in {@link FullPageInput}), and
 * the restarted import writes everything the lost pages held (their hashes are not in the connector space).
 */
class Held {
  /** Mesh id -> connector-space rows of the objects joined to it (the doc itself is in `waitingDocs`). */
  readonly rows = new Map<string, Map<string, CsObject>>();
  has(id: string): boolean {
    return this.rows.has(id);
  }
}
const heldRuns = new Map<string, Held>();

/**
 * A run's previous page's connector-space write, still in flight (runs that hold objects back, see
 * {@link Held}): a page returns once its mesh rows and feed are committed, and its connector-space rows are
 * written while the next page reads and plans (storage works while the engine computes). The next page waits
 * for it before it writes anything, and the last page before it returns. Lost with the process like the held
 * objects, and recovered the same way: the next page finds the run's Held gone and restarts the import without
 * holding, which writes the rows again. Not cleared with the caches: whatever happens, a page of the run waits
 * for its predecessor's write before going on.
 */
const deferredCsWrites = new Map<string, Promise<{ error?: unknown }>>();

function deferCsWrite(runId: string, write: Promise<void>): void {
  deferredCsWrites.set(
    runId,
    write.then(
      () => ({}),
      (error: unknown) => ({ error }),
    ),
  );
}

/**
 * A run's last page progress write (its stats and errors on the run), still in flight: while this process
 * holds the run, a page returns without waiting for it. It is off the path of the pages' writes (they do not
 * wait for it); the next page's progress write waits for it (so progress lands in page order), as do the last
 * page and a failing one, and its failure fails the page that waits.
 */
const pendingProgress = new Map<string, Promise<{ error?: unknown }>>();

async function settleProgress(runId: string): Promise<void> {
  const pending = pendingProgress.get(runId);
  if (!pending) return;
  const { error } = await pending;
  pendingProgress.delete(runId);
  if (error !== undefined) throw error;
}

/** Wait for the run's deferred connector-space write; its failure is thrown here (the waiting page fails). */
async function settleCsWrite(runId: string): Promise<void> {
  const pending = deferredCsWrites.get(runId);
  if (!pending) return;
  const { error } = await pending;
  deferredCsWrites.delete(runId);
  if (error !== undefined) throw error;
}

/** Forget everything cached (after a failed or dry-run page whose effects were applied to caches only). */
function dropCaches(connectorId: string): void {
  csCaches.delete(connectorId);
  waitingDocs.clear();
  heldRuns.clear();
  dropSharedIndex();
}

interface Context {
  info: RunInfo;
  rules: RuleSet;
  /** The process's shared index; for a preview, a private layer over it (lib/mesh/indexOverlay.ts). */
  index: MeshIndex | IndexOverlay;
  cs: CsCache;
  /** The connector's references, resolved through its connector space (lib/sync/references.ts). */
  refs: CsLookup;
  now: string;
}

async function context(info: RunInfo): Promise<Context> {
  const started = TRACE ? Date.now() : 0;
  const [all, record] = await Promise.all([listRules(), readConnectorRow(info.connectorId)]);
  const rules = compileRuleSet(info.connectorId, all);
  const policy = referencePolicy(info.connectorId, record?.type ?? 'custom', record?.config ?? {}, all);
  const index = await sharedIndex(indexedAttributes(all));
  if (TRACE) log.info(`context: rules and join index (${index.builtFrom}, ${index.size}) ${Date.now() - started} ms`);
  if (!index.onForeignChange) {
    // A new index (first use, or rebuilt): cached and held objects may not match it any more.
    waitingDocs.clear();
    heldRuns.clear();
    index.onForeignChange = (id) => waitingDocs.delete(id);
  }
  const cs = await csCache(info.connectorId);
  return { info, rules, index, cs, refs: cs.lookup(info.connectorId, policy), now: new Date().toISOString() };
}

// ---------------------------------------------------------------------------------------------------------
// Processing a page of imported objects

const TRACE = !!process.env.SYNC_TRACE;

/** Step timings of a page for `SYNC_TRACE=1` (bench/sync). */
class Trace {
  private t = Date.now();
  private readonly parts: string[] = [];
  mark(what: string): void {
    if (!TRACE) return;
    const now = Date.now();
    this.parts.push(`${what} ${now - this.t}`);
    this.t = now;
  }
  print(head: string): void {
    if (TRACE) log.info(`${head}: ${this.parts.join(', ')}`);
  }
}

interface Item {
  anchor: string;
  object: ConnectorObject | null;
  /** Process it even when unchanged (a FullSync, a disconnector that may join now), keeping this content hash. */
  force?: { hash: string; row: CsObject };
}

interface PageResult {
  created: number;
  updated: number;
  deleted: number;
  processed: number;
  errors: RunObjectError[];
}

/** Plan and (unless dry run) apply one page of imported objects and deletions. */
async function processItems(ctx: Context, items: Item[], held?: Held, flush = false): Promise<PageResult> {
  const page = await planItems(ctx, items, held, flush);
  if (!page.planned) return page.result;
  if (ctx.info.dryRun) {
    dropCaches(ctx.info.connectorId);
    return page.result;
  }
  await applyItems(ctx, page, held, flush);
  return page.result;
}

interface WorkItem {
  item: Item;
  hash: string;
  sum: CsSummary | undefined;
}

/**
 * A planned page: its objects' plans and the mesh objects they change (`ws.dirty`), in memory only.
 * {@link applyItems} writes it; a dry run drops it; the one-object preview (lib/sync/oneObject.ts) reads it.
 */
interface PagePlan {
  /** False: nothing to plan (every object unchanged). */
  planned: boolean;
  result: PageResult;
  work: WorkItem[];
  plans: ObjectPlan[];
  ws: WorkingSet;
  /** Objects that exist in storage (anything else dirty is new: a candidate for holding). */
  stored: Set<string>;
  tr: Trace;
}

/** Plan one page: join, projection, inbound flows, composer and references, on the context's caches only. */
async function planItems(ctx: Context, items: Item[], held?: Held, flush = false): Promise<PagePlan> {
  const { rules, cs, now } = ctx;
  const tr = new Trace();
  const result: PageResult = { created: 0, updated: 0, deleted: 0, processed: items.length, errors: [] };
  const work: WorkItem[] = [];
  for (const item of items) {
    const sum = cs.summaries.get(item.anchor);
    if (item.force) {
      work.push({ item, hash: item.force.hash, sum });
    } else if (item.object) {
      const hash = contentHash(item.object);
      // Unchanged (same content, same rules) is skipped, unless exported values await this import's confirmation.
      if (sum && !sum.deleted && !sum.exported && sum.hash === hash && sum.rulesHash === rules.hash) continue;
      work.push({ item, hash, sum });
    } else if (sum && !sum.deleted) {
      work.push({ item, hash: '', sum });
    }
  }
  tr.mark(`hash(${work.length})`);
  const ws = new WorkingSet(ctx.index);
  const stored = new Set<string>();
  const plans: ObjectPlan[] = [];
  if (!work.length && !(flush && held?.rows.size)) return { planned: false, result, work, plans, ws, stored, tr };

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
  tr.mark('readCs');
  const load = async (ids: Iterable<string>) => {
    const docs = await loadDocs(ws.missing(ids));
    for (const id of docs.keys()) if (!held?.has(id)) stored.add(id);
    ws.load(docs, ids);
  };
  await load(need);
  tr.mark(`loadDocs(${need.size})`);

  for (const w of work) {
    const plan = planImport({ rules, now, ws, refs: ctx.refs, runId: ctx.info.runId }, w.item.anchor, w.item.object, w.hash, prevOf(w));
    if (w.item.force) keepExportState(plan.cs, w.item.force.row);
    cs.note(plan.cs);
    plans.push(plan);
    if (plan.outcome === 'created') result.created++;
    else if (plan.outcome === 'updated') result.updated++;
    else if (plan.outcome === 'deleted') result.deleted++;
    if (plan.error) result.errors.push({ object: w.item.anchor, message: plan.error });
    if (plan.cs.unconfirmed?.length && !w.item.force) {
      result.errors.push({ object: w.item.anchor, message: `Exported values did not come back in the confirming import: ${plan.cs.unconfirmed.join(', ')}.` });
    }
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
  return { planned: true, result, work, plans, ws, stored, tr };
}

/** Write a planned page: mesh rows, the feed, then the connector-space rows (see the order above). */
async function applyItems(ctx: Context, page: PagePlan, held?: Held, flush = false): Promise<void> {
  const { rules, cs } = ctx;
  const { work, plans, ws, stored, tr } = page;
  try {
    const upserts: MeshObject[] = [];
    const deletes: { id: string; objectType: string }[] = [];
    const holdNow = new Set<string>();
    for (const id of ws.dirty) {
      const doc = ws.get(id);
      if (doc && held && !flush && doc.pendingReferences.length && !stored.has(id)) {
        holdNow.add(id);
        waitingDocs.set(id, encodeMeshObject(doc));
      } else if (doc) upserts.push(doc);
      else deletes.push({ id, objectType: ws.removedTypes.get(id) ?? ctx.index.info(id)?.objectType ?? 'User' });
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
      commitMeshWrite({ upserts, deletes, fresh, stored, encoded: (d, text) => d.pendingReferences.length && waiting.set(d.id, text) }),
      writePageHistory(ctx.info, ws, upserts, deletes, fresh, new Date().toISOString()),
    ]);
    tr.mark(`mesh(${upserts.length}+${deletes.length}, held ${held?.rows.size ?? 0})`);
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
    // A target's own import: the objects it saw differ (drift, values not confirmed) and those that name one
    // it saw moved are for its next export to look at (an incremental export reads only what changed).
    if (rules.outbound.length) {
      const marked = new Set<string>();
      plans.forEach((p, i) => {
        if (!p.cs.meshId) return;
        marked.add(p.cs.meshId);
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

function addPage(totals: RunTotals, page: PageResult, readErrors: ObjectError[]): RunTotals {
  const errors = [...totals.errors];
  for (const e of [...page.errors, ...readErrors.map((x) => ({ object: x.anchor ?? x.location, message: x.message }))]) {
    if (errors.length < 100) errors.push(e.object === undefined ? { message: e.message } : { object: e.object, message: e.message });
  }
  return {
    ...(totals.notInTarget ? { notInTarget: totals.notInTarget } : {}),
    ...(totals.movedInTarget ? { movedInTarget: totals.movedInTarget } : {}),
    ...(totals.skipped ? { skipped: totals.skipped } : {}),
    stats: {
      objectsProcessed: totals.stats.objectsProcessed + page.processed + readErrors.length,
      objectsCreated: totals.stats.objectsCreated + page.created,
      objectsUpdated: totals.stats.objectsUpdated + page.updated,
      objectsDeleted: totals.stats.objectsDeleted + page.deleted,
      errors: totals.stats.errors + page.errors.length + readErrors.length,
    },
    errors,
  };
}

async function withConnector<T>(connectorId: string, fn: (c: Connector) => Promise<T>): Promise<T> {
  const { connector } = await createConnectorFor(connectorId);
  try {
    return await fn(connector);
  } finally {
    await connector.close().catch(() => undefined);
  }
}

// ---------------------------------------------------------------------------------------------------------
// Processing stored connector-space objects again (joins re-evaluated, FullSync)

/** A stored connector-space row as the object the connector last showed (attributes, DN, references). */
function storedItem(row: CsObject): Item {
  return { anchor: row.anchor, object: storedObject(row), force: { hash: row.hash, row } };
}

/** The connector object a stored row holds (its references from the names it kept), with other attributes if given. */
function storedObject(row: CsObject, attributes = row.attributes): ConnectorObject {
  const object: ConnectorObject = { anchor: row.anchor, objectType: row.objectType, attributes };
  if (row.dn) object.dn = row.dn;
  const references = referencesOf(object, row.refNames);
  if (Object.keys(references).length) object.references = references;
  return object;
}

/**
 * Disconnectors of this connector that a mesh object could join now (one appeared or changed since they were
 * imported: a HR person projected after the directory was read) go through the rules again. Found through
 * their join keys (kept light in the connector-space summaries) looked up in the join index: no scan of the
 * space or of the mesh. Run at the start of every run of the connector, so an export joins such an object
 * instead of adding it a second time.
 */
async function rejoinDisconnectors(ctx: Context): Promise<PageResult | null> {
  const anchors: string[] = [];
  for (const [anchor, s] of ctx.cs.summaries) {
    // Objects whose rules failed are tried again by every run until they succeed (MIM's pending imports):
    // a delta would not read them again, and their change would be lost.
    if (s.failed && !s.deleted) {
      anchors.push(anchor);
      continue;
    }
    if (!ctx.rules.joins.length || s.deleted || s.meshId || !s.joinKeys) continue;
    for (const jk of s.joinKeys) {
      const i = jk.indexOf('\u0000');
      if (ctx.index.find(jk.slice(0, i) || undefined, jk.slice(i + 1)).length) {
        anchors.push(anchor);
        break;
      }
    }
  }
  if (!anchors.length) return null;
  const rows = await readCsObjects(ctx.info.connectorId, anchors);
  const items = [...rows.values()].filter((r) => !r.deleted && (!r.meshId || ctx.cs.summaries.get(r.anchor)?.failed)).map(storedItem);
  let total: PageResult = { created: 0, updated: 0, deleted: 0, processed: 0, errors: [] };
  for (let i = 0; i < items.length; i += DEFAULT_PAGE_SIZE) {
    const r = await processItems(i === 0 ? ctx : await context(ctx.info), items.slice(i, i + DEFAULT_PAGE_SIZE));
    total = { created: total.created + r.created, updated: total.updated + r.updated, deleted: 0, processed: total.processed + r.processed, errors: [...total.errors, ...r.errors] };
  }
  return total;
}

/** Join re-evaluation at the start of a run, counted in the run's stats when `count` (an export's count its exports only). */
async function rejoinAtStart(info: RunInfo, totals: RunTotals, count: boolean): Promise<RunTotals> {
  const r = await rejoinDisconnectors(await context(info));
  return r && count ? addRejoined(totals, r) : totals;
}

/** Objects re-evaluated at the start of a run count as updates of the connector space, not new objects of the source. */
const addRejoined = (totals: RunTotals, r: PageResult): RunTotals => addPage(totals, { ...r, created: 0, updated: r.created + r.updated }, []);

export { CS_PARTITIONS } from './connectorSpace';

export interface FullSyncPageInput {
  info: RunInfo;
  /** The connector-space partition (0 to CS_PARTITIONS less one). */
  partition: number;
  totals: RunTotals;
}

/**
 * A FullSync: no source read; every connector-space object of the connector goes through the current rules
 * again (joins, projection, flows, references), as after a rule change. One partition of the space per step.
 * Objects known only from an export (nothing imported yet) are left as they are.
 */
export async function fullSyncPage(input: FullSyncPageInput): Promise<RunTotals | StepFailure> {
  try {
    let totals = input.totals;
    if (input.partition === 0) totals = await rejoinAtStart(input.info, totals, true);
    const rows = (await readCsPartition(input.info.connectorId, input.partition)).filter((r) => !r.deleted && (r.hash !== '' || Object.keys(r.attributes).length > 0));
    for (let i = 0; i < rows.length; i += DEFAULT_PAGE_SIZE) {
      const ctx = await context(input.info);
      const result = await processItems(ctx, rows.slice(i, i + DEFAULT_PAGE_SIZE).map(storedItem));
      totals = addPage(totals, result, []);
      if (i + DEFAULT_PAGE_SIZE < rows.length && cancelAsked(await updateRun(input.info.runId, { stats: totals.stats, errors: totals.errors, progress: progressOf('applying', totals) }))) return { ...totals, cancelled: true };
    }
    await updateRun(input.info.runId, { stats: totals.stats, errors: totals.errors, progress: progressOf('applying', totals) });
    return totals;
  } catch (err) {
    return failure(err);
  }
}

// ---------------------------------------------------------------------------------------------------------
// Full import

export interface FullPageInput {
  info: RunInfo;
  cursor: string | null;
  page: number;
  totals: RunTotals;
  pageSize?: number;
  /** The process holding this run's waiting objects back (see {@link Held}); null on the first page. */
  holder?: string | null;
  /** Write every object at once (after held objects were lost once in this run). */
  noHold?: boolean;
}

export type FullPageOutput =
  | { cursor: string | null; watermark: string | null; totals: RunTotals; restart?: boolean; holder?: string | null; noHold?: boolean }
  | StepFailure;

/**
 * A full import's open reader, kept between pages in this process: the next page continues it instead of
 * reopening the source at the cursor (reopening is for crashes and for pages that land on another process;
 * some connectors pay for a resume). Keyed by run; used only when the page asks for exactly the cursor it
 * last yielded.
 */
interface LiveReader {
  connector: Connector;
  it: AsyncIterator<ImportPage>;
  cursor: string;
  /**
   * The page after `cursor`, already being read (read-ahead: the source is read while this process and
   * storage work on the page before). Settled, never rejected: a read error is handed to the page that asks.
   */
  ahead: Promise<{ next: IteratorResult<ImportPage> } | { error: unknown }>;
}
const liveReaders = new Map<string, LiveReader>();

function readAhead(it: AsyncIterator<ImportPage>): LiveReader['ahead'] {
  return it.next().then(
    (next) => ({ next }),
    (error: unknown) => ({ error }),
  );
}

async function closeLiveReader(runId: string): Promise<void> {
  const live = liveReaders.get(runId);
  if (!live) return;
  liveReaders.delete(runId);
  await live.ahead;
  await live.it.return?.().catch(() => undefined);
  await live.connector.close().catch(() => undefined);
}

async function nextImportPage(input: FullPageInput): Promise<IteratorResult<ImportPage> | 'restart'> {
  const live = liveReaders.get(input.info.runId);
  let reader: { connector: Connector; it: AsyncIterator<ImportPage> };
  let ahead: LiveReader['ahead'] | undefined;
  if (live && input.cursor !== null && live.cursor === input.cursor) {
    reader = live;
    ahead = live.ahead;
    liveReaders.delete(input.info.runId);
  } else {
    await closeLiveReader(input.info.runId);
    const { connector } = await createConnectorFor(input.info.connectorId);
    if (!hasFullImport(connector)) {
      await connector.close().catch(() => undefined);
      throw new ConnectorError('unsupported', 'This connector cannot import.');
    }
    reader = { connector, it: connector.fullImport({ pageSize: input.pageSize ?? DEFAULT_PAGE_SIZE, cursor: input.cursor })[Symbol.asyncIterator]() };
  }
  try {
    let next: IteratorResult<ImportPage>;
    if (ahead) {
      const got = await ahead;
      if ('error' in got) throw got.error;
      next = got.next;
    } else next = await reader.it.next();
    if (!next.done && next.value.cursor !== null) liveReaders.set(input.info.runId, { ...reader, cursor: next.value.cursor, ahead: readAhead(reader.it) });
    else {
      await reader.it.return?.().catch(() => undefined);
      await reader.connector.close().catch(() => undefined);
    }
    return next;
  } catch (err) {
    await reader.connector.close().catch(() => undefined);
    if (isConnectorError(err) && err.code === 'cursor_invalid') return 'restart';
    throw err;
  }
}

/** Read one page of a full import from `cursor`, plan and apply it, record what it saw. */
export async function fullImportPage(input: FullPageInput): Promise<FullPageOutput> {
  const { runId } = input.info;
  try {
    const t0 = Date.now();
    // The previous page's connector-space write (deferred) goes on while this page reads and plans, unless
    // this process no longer holds the run (its caches were dropped): then it lands before anything is read.
    if (input.holder !== PROCESS_WRITER || !heldRuns.has(runId)) await settleCsWrite(runId);
    const ctx = await context(input.info);
    // Disconnectors a mesh object could join now: unchanged objects of the source are not planned again.
    if (input.page === 0 && input.cursor === null && !input.noHold) {
      const rejoined = await rejoinDisconnectors(ctx);
      if (rejoined) input = { ...input, totals: addRejoined(input.totals, rejoined) };
    }
    let held: Held | undefined;
    let holder = input.holder ?? null;
    if (!input.info.dryRun && !input.noHold) {
      if (holder === null) {
        held = new Held();
        heldRuns.set(runId, held);
        holder = PROCESS_WRITER;
      } else {
        held = holder === PROCESS_WRITER ? heldRuns.get(runId) : undefined;
        if (!held) {
          // The objects earlier pages held back are gone with the process that held them: start over.
          await closeLiveReader(runId);
          await settleProgress(runId).catch(() => undefined);
          return { cursor: null, watermark: null, totals: input.totals, restart: true, holder: null, noHold: true };
        }
      }
    }
    const next = await nextImportPage(input);
    if (next === 'restart') {
      await settleCsWrite(runId);
      await settleProgress(runId);
      return { cursor: null, watermark: null, totals: input.totals, restart: true, holder, noHold: input.noHold };
    }
    const t1 = Date.now();
    if (next.done) {
      if (held?.rows.size) await processItems(ctx, [], held, true);
      await settleCsWrite(runId);
      await settleProgress(runId);
      heldRuns.delete(runId);
      return { cursor: null, watermark: null, totals: input.totals, holder: null };
    }
    const page = next.value;
    const last = page.cursor === null;
    // The anchors the page saw are written while it is planned and applied (the page returns after both).
    const seen = [...page.objects.map((o) => o.anchor), ...page.errors.flatMap((e) => (e.anchor ? [e.anchor] : []))];
    const seenSaved = saveSeen(runId, input.page, seen).then(
      () => null,
      (error: unknown) => ({ error }),
    );
    let result: PageResult;
    try {
      result = await processItems(ctx, page.objects.map((o) => ({ anchor: o.anchor, object: o })), held, last);
      if (last) {
        await settleCsWrite(runId);
        heldRuns.delete(runId);
      }
    } finally {
      await seenSaved;
    }
    const t2 = Date.now();
    const seenFailed = await seenSaved;
    if (seenFailed) throw seenFailed.error;
    const totals = addPage(input.totals, result, page.errors);
    await settleProgress(runId);
    const progress = updateRun(runId, { stats: totals.stats, errors: totals.errors, progress: progressOf('reading', totals) });
    // While this process holds the run, the page returns without waiting for its progress write (see
    // pendingProgress); the last page waits.
    if (held && !last)
      pendingProgress.set(
        runId,
        progress.then(
          () => ({}),
          (error: unknown) => ({ error }),
        ),
      );
    else await progress;
    if (TRACE) log.info(`page ${input.page}: start ${t0}, read ${t1 - t0} ms, plan and apply ${t2 - t1} ms, seen and stats ${Date.now() - t2} ms, end ${Date.now()}`);
    return { cursor: page.cursor, watermark: last ? (page.watermark ?? null) : null, totals, holder: last ? null : holder, noHold: input.noHold };
  } catch (err) {
    // Nothing of this run may still be writing once the page reports the failure.
    await settleCsWrite(runId).catch(() => undefined);
    await settleProgress(runId).catch(() => undefined);
    await closeLiveReader(runId);
    return failure(err);
  }
}

export interface DeletionPlan {
  toDelete: number;
  existing: number;
  pages: number;
  exceeds: string | null;
}

/** After the last page: which objects the import did not see (to delete), against the deletion threshold. */
export async function planFullImportDeletes(info: RunInfo, config: { deletionThreshold?: unknown }): Promise<DeletionPlan> {
  const seen = await loadSeen(info.runId);
  // This process's summaries when it wrote the space last (the pages of this run, usually), else from storage.
  const { summaries } = await csCache(info.connectorId);
  const gone: string[] = [];
  let existing = 0;
  for (const [anchor, s] of summaries) {
    if (s.deleted) continue;
    existing++;
    if (!seen.has(anchor)) gone.push(anchor);
  }
  gone.sort();
  let pages = 0;
  for (let i = 0; i < gone.length; i += DEFAULT_PAGE_SIZE) await saveDeletePage(info.runId, pages++, gone.slice(i, i + DEFAULT_PAGE_SIZE));
  return { toDelete: gone.length, existing, pages, exceeds: thresholdExceeded(gone.length, existing, config.deletionThreshold) };
}

/** How many objects a connector space holds now (its summaries less the deleted): a threshold's percent base. */
function liveObjects(summaries: ReadonlyMap<string, CsSummary>): number {
  let n = 0;
  for (const s of summaries.values()) if (!s.deleted) n++;
  return n;
}

/**
 * The deletion threshold: a run stops before deleting anything when it would delete more than `objects`
 * (default 500) or more than `percent` (default 20) of the connector's objects. `deletionThreshold` in the
 * connector config is a number (objects) or `{ objects, percent }`.
 */
export function thresholdExceeded(toDelete: number, existing: number, setting: unknown): string | null {
  let objects = 500;
  let percent = 20;
  if (typeof setting === 'number') objects = setting;
  else if (setting && typeof setting === 'object') {
    const s = setting as { objects?: unknown; percent?: unknown };
    if (typeof s.objects === 'number') objects = s.objects;
    if (typeof s.percent === 'number') percent = s.percent;
  }
  if (toDelete > objects) return `The run would delete ${toDelete} objects, more than the threshold of ${objects}; nothing was deleted.`;
  if (existing > 0 && toDelete * 100 > percent * existing) {
    return `The run would delete ${toDelete} of ${existing} objects (${Math.round((toDelete * 1000) / existing) / 10} %), more than the threshold of ${percent} %; nothing was deleted.`;
  }
  return null;
}

/** Apply one page of the planned deletes. */
export async function fullImportDeletePage(info: RunInfo, page: number, totals: RunTotals): Promise<RunTotals> {
  const anchors = await loadDeletePage(info.runId, page);
  const ctx = await context(info);
  const result = await processItems(ctx, anchors.map((anchor) => ({ anchor, object: null })));
  const next = addPage(totals, result, []);
  await updateRun(info.runId, { stats: next.stats, errors: next.errors, progress: progressOf('applying', next) });
  return next;
}

// ---------------------------------------------------------------------------------------------------------
// Delta import

export type DeltaOutput = { fullImportRequired: string } | { watermark: string | null; totals: RunTotals; stopped?: string; fullSyncNext?: boolean } | StepFailure;

/**
 * A delta import. Connectors give no cursor inside a delta (an interrupted delta is read again from the
 * committed watermark), so this one step reads the changes, checks the deletion threshold, then plans and
 * applies them page by page, reporting progress after each page. The watermark is committed by the
 * orchestration afterwards.
 */
export async function deltaImport(info: RunInfo, config: { deletionThreshold?: unknown; fullSyncOnRuleChange?: unknown }, totals: RunTotals): Promise<DeltaOutput> {
  try {
    return await withConnector(info.connectorId, async (connector) => {
      if (!hasDeltaImport(connector)) return { fullImportRequired: 'This connector has no delta import.' };
      const { watermark, fullRulesHash } = await readSyncState(info.connectorId);
      const changes: DeltaChange[] = [];
      const readErrors: ObjectError[] = [];
      let next: string | null = watermark;
      for await (const page of connector.deltaImport(watermark, { pageSize: DEFAULT_PAGE_SIZE })) {
        if (page.fullImportRequired) return { fullImportRequired: page.fullImportRequired.reason };
        changes.push(...page.changes);
        readErrors.push(...page.errors);
        if (page.nextWatermark !== undefined) next = page.nextWatermark;
      }
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
      const stop = thresholdExceeded(deletes, liveObjects(ctx.cs.summaries), config.deletionThreshold);
      if (stop) return { watermark: null, totals, stopped: stop };
      let t = totals;
      let firstErrors = readErrors;
      for (let i = 0; i < changes.length || i === 0; i += DEFAULT_PAGE_SIZE) {
        const slice = changes.slice(i, i + DEFAULT_PAGE_SIZE);
        const c = i === 0 ? ctx : await context(info);
        const result = await processItems(c, slice.map((ch) => ({ anchor: ch.anchor, object: ch.kind === 'delete' ? null : (ch.object ?? null) })));
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

// ---------------------------------------------------------------------------------------------------------
// One object (lib/sync/oneObject.ts): one stored connector-space object through the page pipeline

/** An export change a target's next export would make, with the values the target shows now. */
export interface PlannedExport {
  connectorId: string;
  kind: ExportChange['kind'];
  meshId: string;
  prev: CsObject | undefined;
  dn: string | null;
  values: Record<string, AttributeValue>;
  /** What the target shows now (its last import, then what was exported to it since). */
  shown: Record<string, AttributeValue>;
}

export interface OneObjectPlan {
  plan: ObjectPlan;
  /** The mesh objects the plan changes: as stored (null: new) and as planned (null: deleted). */
  mesh: { id: string; before: MeshObject | null; after: MeshObject | null }[];
  exports: PlannedExport[];
}

/**
 * One stored connector-space object through the same steps as a FullSync page ({@link planItems}, then
 * {@link applyItems} when `apply`), and the changes every target's export would make for the mesh objects the
 * plan changes (the export's own planning, {@link exportDocs} as a dry run). Without `apply` nothing is
 * written and no cache of the process changes: the plan runs on a private layer of the join index and a
 * private overlay of the connector-space cache, and the source's cache is not claimed.
 */
export async function planOneObject(info: RunInfo, row: CsObject, apply: boolean): Promise<OneObjectPlan> {
  const ctx = apply ? await context(info) : await previewContext(info);
  const page = await planItems(ctx, [storedItem(row)]);
  try {
    const plan = page.plans[0];
    const ids = new Set(page.ws.dirty);
    if (plan.cs.meshId) ids.add(plan.cs.meshId);
    const before = await getMeshObjects([...ids]);
    const mesh = [...ids].map((id) => ({ id, before: before.get(id) ?? null, after: page.ws.has(id) ? page.ws.get(id) : (before.get(id) ?? null) }));
    const exports = await plannedExports(mesh.map((m) => m.after).filter((d): d is MeshObject => !!d));
    if (apply) {
      await applyItems(ctx, page);
      for (const id of new Set(exports.map((e) => e.connectorId))) await markExportDirty(id, [...ids]);
    }
    return { plan, mesh, exports };
  } catch (err) {
    // A sync's plan was applied to the shared caches: not committed, they are dropped (as after a failed page).
    if (apply) dropCaches(info.connectorId);
    throw err;
  }
}

/** A staged add (a target's object not added yet): the export its mesh object would get from that target now. */
export async function planStagedObject(connectorId: string, meshId: string, apply: boolean): Promise<PlannedExport[]> {
  const docs = [...(await getMeshObjects([meshId])).values()];
  const exports = (await plannedExports(docs)).filter((e) => e.connectorId === connectorId);
  if (apply) await markExportDirty(connectorId, [meshId]);
  return exports;
}

async function previewContext(info: RunInfo): Promise<Context> {
  const [all, record, state] = await Promise.all([listRules(), readConnectorRow(info.connectorId), readSyncState(info.connectorId)]);
  const rules = compileRuleSet(info.connectorId, all);
  const policy = referencePolicy(info.connectorId, record?.type ?? 'custom', record?.config ?? {}, all);
  const index = new IndexOverlay(await sharedIndex(indexedAttributes(all)));
  // The summaries as stored, shared read-only (planning only reads them; its notes go to this overlay).
  const cached = csCaches.get(info.connectorId);
  const cs = new CsCache(cached && state.csOwner === PROCESS_WRITER ? cached.summaries : await loadCsSummaries(info.connectorId));
  return { info: { ...info, dryRun: true, preview: true }, rules, index, cs, refs: cs.lookup(info.connectorId, policy), now: new Date().toISOString() };
}

/** Every target (a connector with an enabled outbound rule): what its next export would do with `docs`. */
async function plannedExports(docs: MeshObject[]): Promise<PlannedExport[]> {
  const all = await listRules();
  const targets = [...new Set(all.filter((r) => r.ruleType === 'FlowRule' && r.direction === 'outbound' && r.isEnabled !== false && r.connectorId).map((r) => r.connectorId!))].sort();
  const out: PlannedExport[] = [];
  for (const target of targets) {
    const rules = compileRuleSet(target, all);
    if (!rules.outbound.length) continue;
    const made = await createConnectorFor(target);
    const { connector } = made;
    const config = configOfRun(made.type, made.config) as ExportConfig;
    const objectType = typeof config.objectType === 'string' ? config.objectType : 'User';
    const mine = docs.filter((d) => d.objectType === objectType);
    try {
      if (!mine.length) continue;
      const info: RunInfo = { runId: `preview-${target}`, connectorId: target, runType: 'Export', dryRun: true, preview: true };
      await exportDocs(info, connector as Connector & Required<Pick<Connector, 'export'>>, rules, mine, emptyTotals(), config, (changes) => {
        for (const c of changes) {
          const dn = c.change.kind === 'add' ? (connector.plannedDn?.(c.change) ?? null) : (c.prev?.dn ?? null);
          const shown = c.prev && !c.prev.deleted ? { ...c.prev.attributes, ...(c.prev.exported ?? {}) } : {};
          out.push({ connectorId: target, kind: c.change.kind, meshId: c.doc.id, prev: c.prev, dn, values: withoutWriteOnlySecrets(c.values), shown });
        }
      });
    } finally {
      await connector.close().catch(() => undefined);
    }
  }
  return out;
}

// ---------------------------------------------------------------------------------------------------------
// Export

export interface ExportPageInput {
  info: RunInfo;
  /** Index into the mesh partitions (0..15), then the deletes pass (16). */
  partition: number;
  totals: RunTotals;
  /** The second pass over the partitions (references to objects the first pass added). */
  second?: boolean;
}

/**
 * Export one mesh partition: for every mesh object of the connector's object type, the outbound flow rules
 * give the connector-side values; an object with no connector-space object here is an add (when the
 * provisioning condition holds), one whose values differ from what the target last showed is an update.
 * Applied through the connector (exportBatch), then the connector space records what was exported (awaiting
 * the confirming import) and the mesh object links to it.
 */
export async function exportPartition(input: ExportPageInput, config: ExportConfig): Promise<RunTotals | StepFailure> {
  const { info } = input;
  try {
    return await withConnector(info.connectorId, async (connector) => {
      if (!hasExport(connector)) throw new ConnectorError('unsupported', 'This connector cannot export.');
      const rules = compileRuleSet(info.connectorId, await listRules());
      if (!rules.outbound.length) return input.totals;
      const objectType = typeof config.objectType === 'string' ? config.objectType : 'User';
      let totals = input.totals;
      const docs: MeshObject[] = [];
      for await (const page of iterateMesh(objectType, input.partition)) docs.push(...page);
      for (let start = 0; start < docs.length; start += DEFAULT_PAGE_SIZE) {
        totals = await exportDocs(info, connector as Connector & Required<Pick<Connector, 'export'>>, rules, docs.slice(start, start + DEFAULT_PAGE_SIZE), totals, config);
        // Progress for GET /runs/{id}, as an import's pages write it.
        const run = await updateRun(info.runId, { stats: totals.stats, errors: totals.errors, progress: progressOf('exporting', totals) });
        if (totals.stopped) break;
        if (cancelAsked(run) && start + DEFAULT_PAGE_SIZE < docs.length) return { ...totals, cancelled: true };
      }
      return totals;
    });
  } catch (err) {
    return failure(err);
  }
}

/** What an export runs with: its rules (outbound and the rest) and its connector's configuration. */
async function exportHash(connectorId: string, rules: RuleSet): Promise<string> {
  const record = await readConnectorRow(connectorId);
  return `${rules.hash}/${record?.updatedOn ?? ''}`;
}

/**
 * The first step of an export: joins re-evaluated (a disconnector a mesh object could join now is joined, not
 * added again), then the choice of a full or an incremental export (see {@link ExportPlan}); for an incremental
 * one, the mesh ids to look at are written in pages, and the ids deleted since.
 */
export async function planExport(info: RunInfo, config: ExportConfig): Promise<ExportPlan | StepFailure> {
  try {
    const rules = compileRuleSet(info.connectorId, await listRules());
    if (!rules.outbound.length) return { mode: 'none' };
    await rejoinAtStart(info, emptyTotals(), false);
    if (!info.dryRun) await dropGoneStagedAdds(info.connectorId);
    const hash = await exportHash(info.connectorId, rules);
    const state = await readSyncState(info.connectorId);
    // Noted before anything is read: a change after it is the next export's.
    const seq = await currentFeedSeq();
    const dirty = await readExportDirty(info.connectorId);
    if (state.exportSeq === null || state.exportHash !== hash) return { mode: 'full', seq, hash, dirtyKeys: dirty.keys };
    const objectType = typeof config.objectType === 'string' ? config.objectType : 'User';
    const changed = new Set<string>();
    const deleted = new Set<string>();
    for (let from = state.exportSeq; from < seq; ) {
      // A few rows at a time: a row holds up to a page of whole states, and only their ids are kept.
      const rows = await readFeed(from, { limit: 5, skipExportOf: info.connectorId });
      if (!rows.length) break;
      for (const r of rows) {
        if (r.seq > seq) break;
        for (const en of r.entries) {
          // This connector's own export wrote it (a link to what it added): nothing new for it.
          if (en.objectType !== objectType || ('x' in en && en.x === info.connectorId)) continue;
          if ('deleted' in en) {
            changed.delete(en.id);
            deleted.add(en.id);
          } else {
            deleted.delete(en.id);
            changed.add(en.id);
          }
        }
      }
      from = rows[rows.length - 1].seq;
    }
    // Marked objects (drift, failed changes): as they are now; the ones gone from the mesh are deletes to try again.
    const present = await getMeshObjects(dirty.ids);
    for (const id of dirty.ids) {
      if (present.has(id)) {
        if (!deleted.has(id)) changed.add(id);
      } else {
        changed.delete(id);
        deleted.add(id);
      }
    }
    // Deprovisionings waiting for their grace that are due now: found in the target's connector-space summaries
    // (no scan of the mesh). Gone from the mesh: a delete to deprovision; still there (a provisioning condition
    // that stopped holding): looked at again.
    if (settingsOf(config).graceDays > 0) {
      const due: string[] = [];
      const at = new Date();
      for (const s of (await csCache(info.connectorId)).summaries.values()) if (s.deprov === 'pending' && !s.deleted && s.meshId && isDue(s.due, at)) due.push(s.meshId);
      const there = await getMeshObjects(due);
      for (const id of due) {
        if (there.has(id)) {
          if (!deleted.has(id)) changed.add(id);
        } else deleted.add(id);
      }
    }
    const ids = [...changed].sort();
    let pages = 0;
    for (let i = 0; i < ids.length; i += DEFAULT_PAGE_SIZE) await saveExportPage(info.runId, pages++, ids.slice(i, i + DEFAULT_PAGE_SIZE));
    await saveExportPage(info.runId, -1, [...deleted]);
    return { mode: 'incremental', seq, hash, dirtyKeys: dirty.keys, pages, deleted: deleted.size };
  } catch (err) {
    return failure(err);
  }
}

export interface ExportIdsInput {
  info: RunInfo;
  /** A page written by {@link planExport}; -2: the objects the pages asked to look at again (see `again`). */
  page: number;
  totals: RunTotals;
}

/** Export one page of an incremental export: the listed mesh objects that still exist (and are of the type). */
export async function exportIdsPage(input: ExportIdsInput, config: ExportConfig): Promise<RunTotals | StepFailure> {
  const { info } = input;
  try {
    return await withConnector(info.connectorId, async (connector) => {
      if (!hasExport(connector)) throw new ConnectorError('unsupported', 'This connector cannot export.');
      const rules = compileRuleSet(info.connectorId, await listRules());
      const objectType = typeof config.objectType === 'string' ? config.objectType : 'User';
      const ids = input.page === -2 ? await loadAgain(info.runId) : await loadExportPage(info.runId, input.page);
      const docs = [...(await getMeshObjects(ids)).values()].filter((d) => d.objectType === objectType);
      const totals = await exportDocs(info, connector as Connector & Required<Pick<Connector, 'export'>>, rules, docs, input.totals, config);
      await updateRun(info.runId, { stats: totals.stats, errors: totals.errors, progress: progressOf('exporting', totals) });
      return totals;
    });
  } catch (err) {
    return failure(err);
  }
}

/** Incremental deprovisioning: the target's objects whose mesh object was deleted since the last export. */
export async function exportDeletedSince(info: RunInfo, totals: RunTotals, config: ExportConfig = {}): Promise<RunTotals | StepFailure | { stopped: string }> {
  try {
    const ids = await loadExportPage(info.runId, -1);
    if (!ids.length) return totals;
    const stillThere = await getMeshObjects(ids);
    const gone = new Set(ids.filter((id) => !stillThere.has(id)));
    const { summaries } = await csCache(info.connectorId);
    const anchors: string[] = [];
    let existing = 0;
    for (const [anchor, s] of summaries) {
      if (s.deleted) continue;
      existing++;
      if (s.meshId && gone.has(s.meshId)) anchors.push(anchor);
    }
    return await deprovision(info, totals, config, anchors, existing);
  } catch (err) {
    return failure(err);
  }
}

/**
 * Objects to look at again after a page of an export (`SyncState` partition `xa_<runId>`): the objects that
 * name one the export moved or renamed in the target, and those whose related objects were not in the target
 * yet when the page computed their values.
 */
const againKey = (runId: string) => `xa_${runId}`;
async function saveAgain(runId: string, ids: string[]): Promise<void> {
  if (ids.length) await markExportDirty(againKey(runId), ids);
}
async function loadAgain(runId: string): Promise<string[]> {
  return (await readExportDirty(againKey(runId))).ids;
}

/**
 * Write-only secrets (Active Directory's unicodePwd): the target never shows them, so they are never compared with
 * what it shows and never recorded in the connector space (`exported`): an outbound flow to one is sent with an
 * add, and with an update only when the target's configuration says passwordOnUpdate.
 */
const WRITE_ONLY_SECRETS = new Set(['unicodepwd']);
export const isWriteOnlySecret = (name: string) => WRITE_ONLY_SECRETS.has(name.toLowerCase());
function withoutWriteOnlySecrets(values: Record<string, AttributeValue>): Record<string, AttributeValue> {
  const out: Record<string, AttributeValue> = {};
  for (const [k, v] of Object.entries(values)) if (!isWriteOnlySecret(k)) out[k] = v;
  return out;
}

/** One change of an export page, with what the engine records when it is applied. */
interface DocChange {
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

async function exportDocs(
  info: RunInfo,
  connector: Connector & Required<Pick<Connector, 'export'>>,
  rules: RuleSet,
  docs: MeshObject[],
  totals: RunTotals,
  config: ExportConfig,
  observe?: (changes: readonly DocChange[]) => void,
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
    for (const [a, sm] of (await csCache(cid, !info.preview)).summaries) if (sm.deprov === 'pending' && !sm.deleted && sm.meshId && ids.has(sm.meshId)) waiting.set(sm.meshId, a);
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
          if (!marker) quietRows.push({ ...prev!, deprovisioned: { state: 'pending', reason: 'condition', at: now, due: dueAt(at, settings.graceDays) }, updatedOn: now });
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
      changes.push({ change: { kind: 'add', objectType: typeof config.objectType === 'string' ? config.objectType : 'User', attributes: values }, doc, prev, values });
      continue;
    }
    const shown = { ...prev!.attributes, ...(prev!.exported ?? {}) };
    const diff: Record<string, AttributeValue> = {};
    for (const [k, v] of Object.entries(values)) if (!isWriteOnlySecret(k) && !sameValue(shown[k], v)) diff[k] = v;
    // A write-only secret goes with an update only when the target says passwordOnUpdate (then with every update).
    if (Object.keys(diff).length && config.passwordOnUpdate === true) for (const [k, v] of Object.entries(values)) if (isWriteOnlySecret(k) && !isEmptyValue(v)) diff[k] = v;
    // A disabled object linked again (a rehire, the condition holding again) is enabled: AD's accountDisabled
    // false, the other disable attributes given their flow's value or the value they had before.
    if (marker?.state === 'disabled') Object.assign(diff, enableValues(marker, values));
    const tag = marker ? ('clear' as const) : undefined;
    if (Object.keys(diff).length) changes.push({ change: { kind: 'update', anchor: anchor!, objectType: prev!.objectType, attributes: diff, previous: prev!.attributes }, doc, prev, values: diff, tag });
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
  retry.settle(new Set(changes.map((c) => c.doc.id)), quietRows);
  // Deprovisioning deletes are held to the deletion threshold like the deletes pass (counted over the run).
  const deleting = changes.filter((c) => c.tag === 'delete').length;
  let stopped: string | undefined;
  if (deleting) {
    stopped = thresholdExceeded(totals.stats.objectsDeleted + deleting, liveObjects((await csCache(cid, !info.preview)).summaries), config.deletionThreshold) ?? undefined;
    if (stopped) for (let i = changes.length - 1; i >= 0; i--) if (changes[i].tag === 'delete') changes.splice(i, 1);
  }
  // objectsProcessed counts the changes applied or attempted (and the objects whose rules failed, and those
  // left as they are by deprovisioning), not the mesh objects looked at.
  let result: PageResult = { created: 0, updated: 0, deleted: 0, processed: changes.length + errors.length + left, errors };
  const withStop = (t: RunTotals): RunTotals => retry.note(stopped ? { ...t, stopped } : t);
  if (info.dryRun) {
    observe?.(changes);
    result = {
      ...result,
      created: changes.filter((c) => c.change.kind === 'add').length,
      updated: changes.filter((c) => c.change.kind === 'update').length,
      deleted: changes.filter((c) => c.change.kind === 'delete').length,
    };
    return withStop(addPage(totals, result, []));
  }
  if (!changes.length && !quietRows.length && !retry.dirty) return withStop(addPage(totals, result, []));
  const { results, interrupted } = changes.length ? await exportRecordingApplied(connector, changes.map((c) => c.change)) : { results: [] as ExportResult[], interrupted: undefined };
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
    const base: CsObject = c.prev ?? { anchor: r.anchor, objectType: c.change.objectType, attributes: {}, hash: '', rulesHash: '', meshId: c.doc.id, updatedOn: now };
    const recorded = withoutWriteOnlySecrets(c.values);
    // A pseudo-attribute of deprovisioning (AD's accountDisabled) is never shown by an import: not awaited.
    if (c.tag) for (const k of Object.keys(recorded)) if (isPseudoAttribute(k)) delete recorded[k];
    const row: CsObject = { ...base, anchor: r.anchor, meshId: c.doc.id, deleted: false, exported: { ...(base.exported ?? {}), ...recorded }, pendingExport: null, exportedOn: now, updatedOn: now };
    if (c.change.kind === 'add') row.provisioned = true;
    retry.succeeded(c.doc, row);
    if (c.tag === 'disable') row.deprovisioned = { state: 'disabled', reason: 'condition', at: now, written: c.disabled!.written, previous: c.disabled!.previous };
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
  if (interrupted !== undefined) throw interrupted;
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
 * applied before it and the failure: the caller records what was applied, then throws `interrupted`.
 */
async function exportRecordingApplied(connector: Connector, changes: ExportChange[]): Promise<{ results: ExportResult[]; interrupted?: unknown }> {
  try {
    return { results: await exportChanges(connector as Connector & { export: NonNullable<Connector['export']> }, changes) };
  } catch (err) {
    return { results: appliedBefore(err), interrupted: err };
  }
}

const truthyValue = (v: unknown) => (typeof v === 'string' ? v !== '' && !/^(false|0|no)$/i.test(v) : !!v);

/**
 * Deprovisioning: connector-space objects of this (target) connector whose mesh object is gone are deleted in
 * the target.
 */
export async function exportDeletes(info: RunInfo, totals: RunTotals, config: ExportConfig = {}): Promise<RunTotals | StepFailure | { stopped: string }> {
  try {
    return await withConnector(info.connectorId, async (connector) => {
      if (!hasExport(connector)) throw new ConnectorError('unsupported', 'This connector cannot export.');
      const rules = compileRuleSet(info.connectorId, await listRules());
      if (!rules.outbound.length) return totals;
      const summaries = await loadCsSummaries(info.connectorId);
      const linked = [...summaries].filter(([, s]) => !s.deleted && s.meshId);
      const docs = await getMeshObjects(linked.map(([, s]) => s.meshId!));
      const gone = linked.filter(([, s]) => !docs.has(s.meshId!)).map(([a]) => a);
      let existing = 0;
      for (const s of summaries.values()) if (!s.deleted) existing++;
      return await deprovisionWith(connector, info, totals, config, gone, existing);
    });
  } catch (err) {
    return failure(err);
  }
}

/** Delete these anchors in the target (their mesh objects are gone), within the deletion threshold. */
async function deprovision(info: RunInfo, totals: RunTotals, config: ExportConfig, gone: string[], existing: number): Promise<RunTotals | { stopped: string }> {
  if (!gone.length) return totals;
  return withConnector(info.connectorId, async (connector) => {
    if (!hasExport(connector)) throw new ConnectorError('unsupported', 'This connector cannot export.');
    return deprovisionWith(connector, info, totals, config, gone, existing);
  });
}

/**
 * Deprovision these anchors (their mesh objects are gone) as the connector's `deprovisioning` says: deleted
 * (within the deletion threshold), disabled (the disable values written, the object unlinked and kept with a
 * marker and its join keys, so that a rehire joined to it re-enables it) or left as they are and unlinked
 * (`none`). With `graceDays`, the first export that finds one gone only marks it pending; the export after its
 * due time applies it.
 */
async function deprovisionWith(connector: Connector, info: RunInfo, totals: RunTotals, config: ExportConfig, gone: string[], existing: number): Promise<RunTotals | { stopped: string }> {
  const result: PageResult = { created: 0, updated: 0, deleted: 0, processed: 0, errors: [] };
  if (!gone.length) return addPage(totals, result, []);
  const settings = settingsOf(config);
  const at = new Date();
  const now = at.toISOString();
  const prev = await readCsObjects(info.connectorId, gone);
  const retry = ExportRetry.forRows(info, now);
  const deletes: CsObject[] = [];
  const disables: CsObject[] = [];
  const left: CsObject[] = [];
  const marks: CsObject[] = [];
  const lapsed: CsObject[] = [];
  for (const anchor of gone) {
    const row = prev.get(anchor) ?? { anchor, objectType: 'User', attributes: {}, hash: '', rulesHash: '', meshId: null, updatedOn: now };
    if (retry.skipRow(row)) continue;
    const m = row.deprovisioned;
    if (m && m.state !== 'pending') {
      // Disabled because its condition stopped holding (still linked), and now its mesh object is gone too:
      // unlinked, as a disabled leaver is (a rehire joined to it enables it).
      if (row.meshId) lapsed.push(row);
      continue;
    }
    if (settings.graceDays > 0 && !(m?.state === 'pending' && isDue(m.due, at))) {
      if (!m) marks.push({ ...row, deprovisioned: { state: 'pending', reason: 'gone', at: now, due: dueAt(at, settings.graceDays) }, updatedOn: now });
      continue;
    }
    if (settings.action === 'delete') deletes.push(row);
    else if (settings.action === 'disable') disables.push(row);
    else left.push(row);
  }
  result.processed = deletes.length + disables.length + left.length;
  // The deletion threshold holds for deletes (a source connector deleted, a source emptied): the run stops
  // before deleting anything in the target. A disable or an object left as it is is not a delete.
  const stop = thresholdExceeded(deletes.length, existing, config.deletionThreshold);
  if (stop) return { stopped: stop };
  if (info.dryRun) return retry.note(addPage(totals, { ...result, deleted: deletes.length, updated: disables.length }, []));
  const rules = disables.length || left.length || lapsed.length ? compileRuleSet(info.connectorId, await listRules()) : null;
  const unlinked = (row: CsObject, deprovisioned: NonNullable<CsObject['deprovisioned']>): CsObject => {
    const out: CsObject = { ...row, meshId: null, deprovisioned, updatedOn: now };
    // Its join keys: a mesh object that could join it (a rehire) joins it at the start of a later run.
    const jk = rules ? disconnectorJoinKeys(rules, storedObject(row)) : [];
    if (jk.length) out.joinKeys = jk;
    else delete out.joinKeys;
    return out;
  };
  const disabled = disables.map((row) => ({ row, ...disableValues(settings, row) }));
  const changes: ExportChange[] = [
    ...deletes.map((row): ExportChange => ({ kind: 'delete', anchor: row.anchor, objectType: row.objectType, attributes: {} })),
    ...disabled.map((d): ExportChange => ({ kind: 'update', anchor: d.row.anchor, objectType: d.row.objectType, attributes: d.attributes, previous: d.row.attributes })),
  ];
  const { results, interrupted } = changes.length ? await exportRecordingApplied(connector, changes) : { results: [] as ExportResult[], interrupted: undefined };
  const rows: CsObject[] = [...marks];
  const failedIds: string[] = [];
  results.forEach((r, i) => {
    const row = i < deletes.length ? deletes[i] : disabled[i - deletes.length].row;
    if (r.status === 'error') {
      result.errors.push({ object: row.anchor, message: r.error.message });
      if (row.meshId) failedIds.push(row.meshId);
      rows.push(retry.failedRow(row, changes[i], r.error.message));
      return;
    }
    if (i < deletes.length) {
      result.deleted++;
      const out: CsObject = { ...row, meshId: null, deleted: true, hash: '', exported: undefined, updatedOn: now };
      delete out.deprovisioned;
      retry.succeeded(undefined, out);
      rows.push(out);
      return;
    }
    const d = disabled[i - deletes.length];
    result.updated++;
    const exported = { ...(row.exported ?? {}) };
    for (const [k, v] of Object.entries(d.attributes)) if (!isPseudoAttribute(k)) exported[k] = v;
    const out: CsObject = {
      ...unlinked(row, { state: 'disabled', reason: row.deprovisioned?.reason ?? 'gone', at: now, written: Object.keys(d.attributes), previous: d.previous }),
      // Nothing awaits confirmation when only a pseudo-attribute was written (AD's accountDisabled).
      exported: Object.keys(exported).length ? exported : undefined,
    };
    retry.succeeded(undefined, out);
    rows.push(out);
  });
  for (const row of left) rows.push(unlinked(row, { state: 'none', reason: row.deprovisioned?.reason ?? 'gone', at: now }));
  for (const row of lapsed) rows.push(unlinked(row, row.deprovisioned!));
  await retry.stage();
  await writeCsObjects(info.connectorId, rows);
  const cached = csCaches.get(info.connectorId);
  if (cached) for (const r of rows) cached.set(r.anchor, summarize(info.connectorId, r));
  // A change the target refused is tried again by the next export.
  await markExportDirty(info.connectorId, failedIds);
  if (interrupted !== undefined) throw interrupted;
  return retry.note(addPage(totals, result, []));
}

// ---------------------------------------------------------------------------------------------------------
// End of a run

export interface FinishInput {
  info: RunInfo;
  status: TerminalRunStatus;
  totals: RunTotals;
  error?: string;
  /** The watermark to commit (imports that completed); undefined: keep the stored one. */
  watermark?: string | null;
  /** The run put every object of the connector through the rules (a full import or a FullSync). */
  fullPass?: boolean;
  /** An export that completes records what it considered (see {@link ExportPlan}). */
  exportState?: { seq: number; hash: string; dirtyKeys: string[] };
}

/**
 * Let go of what this process holds for a run that ended without its last step (its orchestration terminated
 * or gone, see lib/runs/runs.ts): the connector's open reader (a paged search, a database cursor) and the
 * objects a full import held back. A page still in flight finishes on its own.
 */
export async function releaseRun(runId: string): Promise<void> {
  heldRuns.delete(runId);
  await closeLiveReader(runId).catch(() => undefined);
}

/** Commit the watermark (only now: the data it covers is committed), set lastSync/status, finish the run. */
export async function finishRun(input: FinishInput): Promise<void> {
  const { info } = input;
  // A run cancelled between pages may still have its last page's writes in flight in this process.
  await settleCsWrite(info.runId).catch(() => undefined);
  await settleProgress(info.runId).catch(() => undefined);
  await closeLiveReader(info.runId);
  heldRuns.delete(info.runId);
  const run = await getRun(info.runId);
  if (!run || !['Running', 'Queued'].includes(run.status)) return;
  const completed = input.status === 'Completed' || input.status === 'CompletedWithErrors';
  if (completed && !info.dryRun) await updateRun(info.runId, { stats: input.totals.stats, progress: progressOf('finishing', input.totals) });
  if (!info.dryRun && completed && input.watermark !== undefined && info.runType !== 'Export') await saveWatermark(info.connectorId, input.watermark);
  if (!info.dryRun && completed && input.fullPass) await saveFullRulesHash(info.connectorId, compileRuleSet(info.connectorId, await listRules()).hash);
  if (!info.dryRun && completed && input.exportState) {
    await saveExportState(info.connectorId, input.exportState.seq, input.exportState.hash);
    await clearExportDirty(info.connectorId, input.exportState.dirtyKeys);
  }
  // An export's list of objects to look at again (see saveAgain) goes with the run.
  if (info.runType === 'Export') await clearExportDirty(againKey(info.runId), (await readExportDirty(againKey(info.runId))).keys).catch(() => undefined);
  const now = new Date().toISOString();
  if (input.status === 'Failed') await setConnectorRunState(info.connectorId, { status: 'error' }).catch(() => undefined);
  else if (completed) await setConnectorRunState(info.connectorId, { status: 'active', ...(info.runType !== 'Export' && !info.dryRun ? { lastSync: now } : {}) }).catch(() => undefined);
  const outcome: Parameters<typeof completeRun>[1] = { status: input.status, stats: input.totals.stats };
  if (input.totals.errors.length) outcome.errors = input.totals.errors;
  if (input.error) outcome.error = input.error;
  else if (input.status === 'Cancelled') outcome.error = `The run was cancelled by ${run.cancel?.requestedBy ?? 'a caller'}: what it applied before it stopped stays applied, and no watermark was committed.`;
  await recordRunFinished(await completeRun(info.runId, outcome), info.trace);
  await deleteRunState(info.runId).catch(() => undefined);
}

/** The connector's stored config (for the threshold and export settings), without secrets. */
export async function runConfig(connectorId: string): Promise<Record<string, unknown>> {
  const { type, config } = await createConnectorFor(connectorId);
  return configOfRun(type, config);
}

function configOfRun(type: string, config: Record<string, unknown>): Record<string, unknown> {
  return {
    deletionThreshold: config.deletionThreshold,
    deprovisioning: config.deprovisioning,
    connectorType: type,
    fullSyncOnRuleChange: config.fullSyncOnRuleChange,
    objectType: config.objectType,
    provisioningCondition: config.provisioningCondition,
    passwordOnUpdate: config.passwordOnUpdate,
  };
}

/**
 * Connector deletion: every object of the connector's space is treated as deleted (its contributions are
 * recalled, mesh objects left with no connector are deleted, relationships re-resolved), then the space and
 * the sync state go. Safe to repeat after a crash.
 */
export async function withdrawConnector(connectorId: string): Promise<void> {
  const info: RunInfo = { runId: 'withdraw', connectorId, runType: 'FullImport', dryRun: false };
  const summaries = await loadCsSummaries(connectorId);
  const anchors = [...summaries].filter(([, s]) => !s.deleted && s.meshId).map(([a]) => a);
  for (let i = 0; i < anchors.length; i += DEFAULT_PAGE_SIZE) {
    const ctx = await context(info);
    await processItems(ctx, anchors.slice(i, i + DEFAULT_PAGE_SIZE).map((anchor) => ({ anchor, object: null })));
  }
  csCaches.delete(connectorId);
}
