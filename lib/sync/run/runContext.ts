import { engineNow } from '../../core/clock';
import { areaLog } from '../../core/log';
import { decodeMeshObject } from '../../mesh/codec';
import { IndexOverlay } from '../../mesh/indexOverlay';
import { dropSharedIndex, sharedIndex, type MeshIndex } from '../../mesh/joinIndex';
import type { MeshObject } from '../../mesh/model';
import { PROCESS_WRITER, getMeshObjects } from '../../mesh/store';
import { readConnectorRow } from '../../storage/connectors';
import { listRules, type StoredRule } from '../../storage/rules';
import { loadCsSummaries } from '../space/connectorSpace';
import { CsCache } from '../space/csCache';
import { CsCaches } from '../space/csCaches';
import type { CsObject } from '../model';
import { referencePolicy, type CsLookup } from '../references';
import { compileRuleSet, indexedAttributes, type RuleSet } from '../rules';
import type { RunInfo } from './runTypes';
import { planIndex, type PlanIndex } from '../../plans/planIndex';
import { loadCorrelation, type CorrelationContext } from '../correlation/plan';
import { claimCsOwner, readSyncState } from './state';

/**
 * What this process keeps between a run's steps (the connector-space summaries, mesh objects waiting for a
 * reference target, a full import's held objects and deferred writes) and the context a page is planned in.
 */

/** The engine's step timings, with SYNC_TRACE=1 (the benches read them). */
export const log = areaLog('sync');

/** The connector-space caches of this process: those of connectors with a run going, and a few idle ones. */
export const csCaches = new CsCaches();

/** A run's step or page is going in this process: its connector's cache is kept until the run ends. */
export function noteRun(info: RunInfo): void {
  if (!info.preview) csCaches.runStarted(info.runId, info.connectorId);
}

/**
 * The connector's connector-space summaries, reloaded when another process wrote since this one did. `claim`
 * false (a preview): a reload is not kept and ownership is not claimed, so nothing is written.
 */
export async function csCache(connectorId: string, claim = true): Promise<CsCache> {
  const state = await readSyncState(connectorId);
  const cached = csCaches.get(connectorId);
  if (cached && state.csOwner === PROCESS_WRITER) return cached;
  const started = TRACE ? Date.now() : 0;
  const fresh = new CsCache(await loadCsSummaries(connectorId));
  if (TRACE) log.info(`connector-space summaries of ${connectorId} loaded: ${fresh.summaries.size} rows, ${Date.now() - started} ms`);
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
export const waitingDocs = new Map<string, string>();

/** Mesh objects by id: from the waiting cache when there, else point reads. */
export async function loadDocs(ids: string[]): Promise<Map<string, MeshObject>> {
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
export class Held {
  /** Mesh id -> connector-space rows of the objects joined to it (the doc itself is in `waitingDocs`). */
  readonly rows = new Map<string, Map<string, CsObject>>();
  has(id: string): boolean {
    return this.rows.has(id);
  }
}
export const heldRuns = new Map<string, Held>();

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

export function deferCsWrite(runId: string, write: Promise<void>): void {
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
export const pendingProgress = new Map<string, Promise<{ error?: unknown }>>();

export async function settleProgress(runId: string): Promise<void> {
  const pending = pendingProgress.get(runId);
  if (!pending) return;
  const { error } = await pending;
  pendingProgress.delete(runId);
  if (error !== undefined) throw error;
}

/** Wait for the run's deferred connector-space write; its failure is thrown here (the waiting page fails). */
export async function settleCsWrite(runId: string): Promise<void> {
  const pending = deferredCsWrites.get(runId);
  if (!pending) return;
  const { error } = await pending;
  deferredCsWrites.delete(runId);
  if (error !== undefined) throw error;
}

/** Forget everything cached (after a failed or dry-run page whose effects were applied to caches only). */
export function dropCaches(connectorId: string): void {
  csCaches.delete(connectorId);
  waitingDocs.clear();
  heldRuns.clear();
  dropSharedIndex();
}

export interface Context {
  info: RunInfo;
  rules: RuleSet;
  /** The process's shared index; for a preview, a private layer over it (lib/mesh/indexOverlay.ts). */
  index: MeshIndex | IndexOverlay;
  cs: CsCache;
  /** The connector's references, resolved through its connector space (lib/sync/references.ts). */
  refs: CsLookup;
  now: string;
  /** The engine's clock when the context was made (lib/core/clock.ts): future-dated values take effect by it. */
  clock?: number;
  /** The plan the run applies ({@link RunInfo.planRunId}), loaded once per process. */
  plan?: PlanIndex;
  /** Every rule, as the page read them (an import plan's target previews use them: lib/sync/import/importTargets.ts). */
  allRules?: readonly StoredRule[];
  /** The connector's correlation settings, operators' decisions and open cases, read for the page (lib/sync/correlation). */
  correlation?: CorrelationContext;
}

export async function context(info: RunInfo): Promise<Context> {
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
  noteRun(info);
  const cs = await csCache(info.connectorId);
  const plan = info.planRunId ? await planIndex(info.planRunId) : undefined;
  const correlation = await loadCorrelation(info.connectorId, record?.config);
  return {
    info,
    rules,
    index,
    cs,
    refs: cs.lookup(info.connectorId, policy),
    now: new Date().toISOString(),
    clock: engineNow().getTime(),
    allRules: all,
    correlation,
    ...(plan ? { plan } : {}),
  };
}

export const TRACE = !!process.env.SYNC_TRACE;

/** Step timings of a page for `SYNC_TRACE=1` (bench/sync). */
export class Trace {
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
