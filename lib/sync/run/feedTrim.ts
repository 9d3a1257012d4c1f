import { readFeedExportRetentionDays, readFeedRetentionMinutes, readFeedTrimSeconds } from '../../core/config';
import { areaLog } from '../../core/log';
import type { ServiceStep } from '../../core/service';
import { sharedIndexPosition } from '../../mesh/joinIndex';
import { meshReadModelPosition } from '../../mesh/readModel';
import {
  currentFeedSeq,
  deleteFeedHold,
  deleteFeedRows,
  forgetOwnRowsBefore,
  oldestFeedRows,
  PROCESS_WRITER,
  readFeedHolds,
  writeFeedHold,
} from '../../mesh/store';
import { listExportSeqs } from './state';

/**
 * The trim of the mesh change feed (table `MeshFeed`). Every row carries whole object states, so a feed never
 * trimmed grows with every change for ever: at 100,000 identities it held 40 % of the storage after the first
 * imports, and a 1 % delta a day adds as much again every few months (docs/sync-engine.md, "The change feed").
 *
 * Who needs a row, and so what is kept:
 * - every process's readers (its mesh read model, its join index) need the rows after the position they have
 *   applied. Each process writes that position as its hold at every tick; the rows after the lowest hold of
 *   a live process (a hold written within `Mesh:FeedRetentionMinutes`) are kept. A process that stops
 *   writing its hold for longer is taken for gone: if it comes back, its readers find the gap and load again
 *   from the mesh.
 * - an export connector needs the rows after its last export (its incremental export reads them), at most
 *   `Mesh:FeedExportRetentionDays`: past that they go, and its next export looks at every object (it finds
 *   the gap and says so in the log).
 * - the last 50 rows, and every row written within `Mesh:FeedRetentionMinutes`, are always kept: a process
 *   that is loading (its scan notes a position first), a restart that loads the read model's snapshot
 *   (lib/mesh/readModelSnapshot.ts needs the row at its position), a reader a little behind.
 * Rows go oldest first, at most {@link MAX_ROWS_A_TICK} a tick, so a backlog drains over several ticks.
 * Several processes may trim at once: a row already gone is no error.
 */

const log = areaLog('mesh');
/** The newest rows, always kept. */
export const KEEP_LAST_ROWS = 50;
export const MAX_ROWS_A_TICK = 10_000;

export interface TrimOptions {
  /** Rows younger than this (ms) are kept, and holds older than this are ignored. */
  retentionMs: number;
  /** Rows an export has not consumed are kept while younger than this (ms). */
  exportRetentionMs: number;
  /** This process's own position (its hold), when it has readers. */
  ownPosition?: number;
  now?: number;
  maxRows?: number;
}

export interface TrimResult {
  deleted: number;
  /** Rows at and after this position were not candidates (the last rows and the live holds). */
  keptFrom: number;
}

/** Trim once: delete the feed rows nobody needs (see the module comment). */
export async function trimFeed(o: TrimOptions): Promise<TrimResult> {
  const now = o.now ?? Date.now();
  const current = await currentFeedSeq();
  let keptFrom = current - KEEP_LAST_ROWS + 1;
  if (o.ownPosition !== undefined) keptFrom = Math.min(keptFrom, o.ownPosition);
  for (const h of await readFeedHolds()) {
    const age = now - Date.parse(h.at);
    if (h.writer === PROCESS_WRITER && o.ownPosition !== undefined) continue;
    if (age <= o.retentionMs) keptFrom = Math.min(keptFrom, h.seq);
    // A hold unrefreshed for longer than both retentions is a process long gone.
    else if (age > Math.max(o.retentionMs, o.exportRetentionMs)) await deleteFeedHold(h.writer);
  }
  let exportFrom = keptFrom;
  for (const x of await listExportSeqs()) exportFrom = Math.min(exportFrom, x.exportSeq + 1);
  if (keptFrom <= 1) return { deleted: 0, keptFrom };
  const doomed: number[] = [];
  for (const row of await oldestFeedRows(keptFrom, o.maxRows ?? MAX_ROWS_A_TICK)) {
    const age = now - row.at;
    // Rows come oldest first: the first one to keep ends the trim (the ones after it are younger).
    if (!(age > o.retentionMs && (row.seq < exportFrom || age > o.exportRetentionMs))) break;
    doomed.push(row.seq);
  }
  if (doomed.length) await deleteFeedRows(doomed);
  return { deleted: doomed.length, keptFrom };
}

/**
 * This process's position: the lowest of its readers' (undefined while its read model is not loaded); and the
 * lowest position a reader has applied (the record of the rows this process wrote can forget those before it).
 */
export function ownFeedPosition(): { position: number; applied: number } | undefined {
  const model = meshReadModelPosition();
  if (model === undefined) return undefined;
  const index = sharedIndexPosition();
  return index === undefined ? { position: model, applied: model } : { position: Math.min(model, index.position), applied: Math.min(model, index.applied) };
}

let timer: NodeJS.Timeout | null = null;
let running: Promise<void> | undefined;

async function tick(retentionMs: number, exportRetentionMs: number): Promise<void> {
  const own = ownFeedPosition();
  // Loading: this process does not know yet which rows it needs, so it trims nothing.
  if (own === undefined) return;
  await writeFeedHold(own.position);
  forgetOwnRowsBefore(own.applied);
  const r = await trimFeed({ retentionMs, exportRetentionMs, ownPosition: own.position });
  if (r.deleted) log.info(`Trimmed the mesh change feed: ${r.deleted} row(s) before position ${r.keptFrom} removed.`);
}

/**
 * The feed's trim as a service step: every `Mesh:FeedTrimSeconds` (default 5 minutes) this process writes its
 * hold and trims. At stop it writes its hold once more (a restart within the retention finds the rows its
 * snapshot needs). Reads the settings at start, so a malformed value stops the start naming it.
 */
export const feedTrimStep: ServiceStep = {
  name: 'meshFeedTrim',
  async start() {
    const retentionMs = readFeedRetentionMinutes() * 60_000;
    const exportRetentionMs = readFeedExportRetentionDays() * 86_400_000;
    const seconds = readFeedTrimSeconds();
    timer = setInterval(() => {
      if (running) return;
      running = tick(retentionMs, exportRetentionMs)
        .catch((err) => log.warn(`Trimming the mesh change feed failed: ${err instanceof Error ? err.message : String(err)}`))
        .finally(() => (running = undefined));
    }, seconds * 1000);
    timer.unref();
  },
  async stop() {
    if (timer) clearInterval(timer);
    timer = null;
    await running;
    const own = ownFeedPosition();
    if (own !== undefined) await writeFeedHold(own.position).catch(() => undefined);
  },
};
