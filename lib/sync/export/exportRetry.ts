import type { ExportChange } from '../../connectors/sdk';
import { readExportMaxAttempts } from '../../core/config';
import type { MeshObject } from '../../mesh/model';
import { existingMeshIds } from '../../mesh/store';
import type { RunObjectError } from '../../storage/runs';
import { anchoredCsObjectId, csObjectIdOf, indexCsObjectIds, stagedCsObjectId, type CsObjectRef } from '../space/csIds';
import type { CsObject, ExportError, PendingExport } from '../model';
import { deleteStagedAdds, loadStagedAdds, writeStagedAdds, type StagedAdd } from './stagedAdds';

/**
 * Export retry: a change the target refuses (an add, update, delete or rename of one object) stays pending with
 * its failures counted, and later export runs try it again until `Export__MaxAttempts` failures; from then on
 * export runs skip the object (the target is not called for it) until `POST /api/connectors/{id}/space/
 * {csObjectId}/retry` resets it. A failure never stops the other objects of the page or the run.
 *
 * Where the state lives: on the object's connector-space row (`pendingExport` with its `stagedOn`,
 * `exportError`), or, for an add the target refused (no object there yet), on a staged add
 * (lib/sync/export/stagedAdds.ts). Either is indexed by its csObjectId (lib/sync/space/csIds.ts) when it first fails.
 *
 * An export page ({@link ExportRetry}) leaves out the skipped objects, records each failure (attempts + 1) and
 * each success (error and pending change gone; an add that had failed keeps its staged add's id), and clears
 * the state of an object it looked at that has nothing to send any more (the target was corrected by hand, the
 * object left the provisioning scope). The run's `errors` name the skipped objects' count once (an entry with
 * no object, not counted in `stats.errors`).
 */

/** The failure after `prev`: attempts counted on. */
export const failedAgain = (prev: ExportError | undefined, message: string, runId: string, occurredOn: string): ExportError => ({
  message: message.slice(0, 2000),
  runId,
  occurredOn,
  attempts: (prev?.attempts ?? 0) + 1,
});

/** True when the change has failed `max` times: export runs skip it until it is retried. */
export const exhausted = (e: ExportError | undefined, max: number): boolean => !!e && e.attempts >= max;

/** The pending change of a failed export change (first staged when the same kind of change was pending before). */
export function pendingOf(change: ExportChange, now: string, prev?: PendingExport | null): PendingExport {
  return { kind: change.kind, attributes: change.attributes, stagedOn: prev?.kind === change.kind && prev.stagedOn ? prev.stagedOn : now };
}

/** The run's note about skipped objects (an entry with no object, first in the list). */
export const SKIPPED_NOTE_PREFIX = 'Not exported, skipped until retried: ';
export function skippedNote(count: number, max: number): RunObjectError {
  return {
    message: `${SKIPPED_NOTE_PREFIX}${count} object${count === 1 ? '' : 's'} whose export failed ${max} time${max === 1 ? '' : 's'} (Export__MaxAttempts). POST /api/connectors/{id}/space/{csObjectId}/retry lets the next export try one again.`,
  };
}

/** Skipped mesh ids kept per run (to count each object once across the pages and passes of the run). */
const MAX_SKIPPED_IDS = 1000;

/** The run's totals with these skipped objects added (each counted once) and its note in `errors`. */
export function withSkipped<T extends { errors: RunObjectError[]; skipped?: string[] }>(totals: T, ids: readonly string[], max: number): T {
  if (!ids.length) return totals;
  const seen = new Set(totals.skipped ?? []);
  for (const id of ids) if (seen.size < MAX_SKIPPED_IDS) seen.add(id);
  const errors = totals.errors.filter((e) => e.object !== undefined || !e.message.startsWith(SKIPPED_NOTE_PREFIX));
  return { ...totals, skipped: [...seen], errors: [skippedNote(seen.size, max), ...errors].slice(0, 100) };
}

/**
 * The retry state of one export page. `forPage` reads the connector's staged adds (one partition query) and
 * leaves out the objects to skip; the engine then calls {@link failed} / {@link succeeded} per result,
 * {@link settle} once the page's changes are known, {@link stage} before its writes and {@link commit} after.
 */
export class ExportRetry {
  readonly max = readExportMaxAttempts();
  /** Mesh ids of the objects left out of this page. */
  readonly skipped: string[] = [];
  private readonly index: ({ csObjectId: string } & CsObjectRef)[] = [];
  private readonly toStage: StagedAdd[] = [];
  private readonly unstage = new Set<string>();
  private looked: MeshObject[] = [];

  private constructor(
    private readonly connectorId: string,
    private readonly runId: string,
    private readonly now: string,
    private readonly staged: Map<string, StagedAdd>,
    private readonly rowOf: (doc: MeshObject) => CsObject | undefined,
  ) {}

  /** Load the page's state; `docs` without the objects to skip. */
  static async forPage(
    info: { connectorId: string; runId: string },
    now: string,
    docs: MeshObject[],
    rowOf: (doc: MeshObject) => CsObject | undefined,
  ): Promise<{ retry: ExportRetry; docs: MeshObject[] }> {
    const retry = new ExportRetry(info.connectorId, info.runId, now, docs.length ? await loadStagedAdds(info.connectorId) : new Map(), rowOf);
    const out: MeshObject[] = [];
    for (const d of docs) {
      if (exhausted(retry.stateOf(d), retry.max)) retry.skipped.push(d.id);
      else out.push(d);
    }
    retry.looked = out;
    return { retry, docs: out };
  }

  /** For the deprovisioning of objects whose mesh object is gone (rows, no mesh objects). */
  static forRows(info: { connectorId: string; runId: string }, now: string): ExportRetry {
    return new ExportRetry(info.connectorId, info.runId, now, new Map(), () => undefined);
  }

  /** True (and noted) when the row's change is to be skipped. */
  skipRow(row: CsObject): boolean {
    if (!exhausted(row.exportError, this.max)) return false;
    this.skipped.push(row.meshId ?? row.anchor);
    return true;
  }

  /** True when there is something to write even without changes (staged adds to drop, cleared rows). */
  get dirty(): boolean {
    return this.unstage.size > 0;
  }

  private liveRow(doc: MeshObject): CsObject | undefined {
    const row = this.rowOf(doc);
    return row && !row.deleted ? row : undefined;
  }

  private stateOf(doc: MeshObject): ExportError | undefined {
    const row = this.liveRow(doc);
    return row ? row.exportError : this.staged.get(doc.id)?.exportError;
  }

  /**
   * A change the target refused. An add becomes (or stays) a staged add; any other change returns the object's
   * row with the pending change and the failure, for the caller to write with the page's rows.
   */
  failed(change: ExportChange, doc: MeshObject, prev: CsObject | undefined, message: string): CsObject | undefined {
    if (change.kind === 'add' || !prev) {
      const before = this.staged.get(doc.id);
      const csObjectId = before?.csObjectId ?? stagedCsObjectId(this.connectorId, doc.id);
      this.toStage.push({
        csObjectId,
        meshId: doc.id,
        objectType: change.objectType,
        pendingExport: pendingOf(change, this.now, before?.pendingExport),
        exportError: failedAgain(before?.exportError, message, this.runId, this.now),
        updatedOn: this.now,
      });
      this.unstage.delete(doc.id);
      this.index.push({ csObjectId, stagedMeshId: doc.id });
      return undefined;
    }
    return this.failedRow(prev, change, message);
  }

  /** The row of a refused change of an object in the target, with the change pending and the failure counted. */
  failedRow(row: CsObject, change: ExportChange, message: string): CsObject {
    this.index.push({ csObjectId: csObjectIdOf(this.connectorId, row), anchor: row.anchor });
    return {
      ...row,
      pendingExport: pendingOf(change, this.now, row.pendingExport),
      exportError: failedAgain(row.exportError, message, this.runId, this.now),
      updatedOn: this.now,
    };
  }

  /** A change applied: the row about to be written loses its failure; an add that had failed keeps its id. */
  succeeded(doc: MeshObject | undefined, row: CsObject): void {
    delete row.exportError;
    row.pendingExport = null;
    const staged = doc ? this.staged.get(doc.id) : undefined;
    if (!staged || !doc) return;
    if (anchoredCsObjectId(this.connectorId, row.anchor) !== staged.csObjectId) row.csObjectId = staged.csObjectId;
    this.index.push({ csObjectId: staged.csObjectId, anchor: row.anchor });
    this.unstage.add(doc.id);
  }

  /**
   * Once the page's changes are known: the objects looked at that have nothing to send any more lose their
   * pending state (rows already planned are cleared in place, the others are added to `rows`), and the staged
   * adds of objects that are not to be added any more go.
   */
  settle(changed: ReadonlySet<string>, rows: CsObject[]): void {
    const planned = new Map(rows.map((r) => [r.anchor, r]));
    for (const doc of this.looked) {
      if (changed.has(doc.id)) continue;
      if (this.staged.has(doc.id)) this.unstage.add(doc.id);
      const row = this.liveRow(doc);
      if (!row || (!row.exportError && !row.pendingExport)) continue;
      const out = planned.get(row.anchor) ?? { ...row, updatedOn: this.now };
      delete out.exportError;
      out.pendingExport = null;
      if (!planned.has(row.anchor)) rows.push(out);
    }
  }

  /** Before the page's writes: the ids of what failed, and the staged adds (so a row never names an unknown id). */
  async stage(): Promise<void> {
    await indexCsObjectIds(this.connectorId, this.index);
    await writeStagedAdds(this.connectorId, this.toStage);
  }

  /** After the page's connector-space rows: the staged adds that were added or are not to be added any more go. */
  async commit(): Promise<void> {
    for (const s of this.toStage) this.unstage.delete(s.meshId);
    await deleteStagedAdds(this.connectorId, this.unstage);
  }

  /** The run's totals with this page's skipped objects counted (once per run) and noted. */
  note<T extends { errors: RunObjectError[]; skipped?: string[] }>(totals: T): T {
    return withSkipped(totals, this.skipped, this.max);
  }
}

/** Staged adds whose mesh object is gone (nothing to add any more) go: the first step of every export. */
export async function dropGoneStagedAdds(connectorId: string): Promise<void> {
  const staged = await loadStagedAdds(connectorId);
  if (!staged.size) return;
  const there = await existingMeshIds([...staged.keys()]);
  await deleteStagedAdds(
    connectorId,
    [...staged.keys()].filter((id) => !there.has(id)),
  );
}
