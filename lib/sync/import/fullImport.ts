import { ConnectorError, hasFullImport, isConnectorError, type Connector, type ImportPage } from '../../connectors/sdk';
import { importConnectorFor } from './readAttributes';
import { PROCESS_WRITER } from '../../mesh/store';
import { updateRun } from '../../storage/runs';
import { rejoinDisconnectors, addRejoined } from './fullSync';
import { processItems } from './pages';
import { pageKey } from '../../storage/runChanges';
import { log, Held, heldRuns, pendingProgress, settleProgress, settleCsWrite, context, TRACE } from '../run/runContext';
import { progressOf, watchCancel } from '../run/runProgress';
import { DEFAULT_PAGE_SIZE, type RunTotals, type RunInfo, type StepFailure, failure, type PageResult, addPage } from '../run/runTypes';
import { saveSeen } from '../run/state';

// Full import: the pages read from the connector's cursor

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

/**
 * The page's outcome: the next cursor, a restart, a failure, or the run's totals marked `cancelled` when a
 * cancel aborted the page's read (what earlier pages applied is in them; nothing of this page was applied).
 */
export type FullPageOutput =
  | { cursor: string | null; watermark: string | null; totals: RunTotals; restart?: boolean; holder?: string | null; noHold?: boolean }
  | (RunTotals & { cancelled: true })
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
  /** Aborts the connector's read in flight (the signal the iterator was made with): a cancel, or the run's end. */
  controller: AbortController;
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

export async function closeLiveReader(runId: string): Promise<void> {
  const live = liveReaders.get(runId);
  if (!live) return;
  liveReaders.delete(runId);
  // The read ahead may be stuck in the source (a slow query): abort it rather than wait for it.
  live.controller.abort();
  await live.ahead;
  await live.it.return?.().catch(() => undefined);
  await live.connector.close().catch(() => undefined);
}

async function nextImportPage(input: FullPageInput): Promise<IteratorResult<ImportPage> | 'restart'> {
  const live = liveReaders.get(input.info.runId);
  let reader: { connector: Connector; it: AsyncIterator<ImportPage>; controller: AbortController };
  let ahead: LiveReader['ahead'] | undefined;
  if (live && input.cursor !== null && live.cursor === input.cursor) {
    reader = live;
    ahead = live.ahead;
    liveReaders.delete(input.info.runId);
  } else {
    await closeLiveReader(input.info.runId);
    const { connector } = await importConnectorFor(input.info.connectorId);
    if (!hasFullImport(connector)) {
      await connector.close().catch(() => undefined);
      throw new ConnectorError('unsupported', 'This connector cannot import.');
    }
    const controller = new AbortController();
    const options = { pageSize: input.pageSize ?? DEFAULT_PAGE_SIZE, cursor: input.cursor, signal: controller.signal };
    reader = { connector, it: connector.fullImport(options)[Symbol.asyncIterator](), controller };
  }
  // A cancel asked while the page waits for the source aborts the read (the connector stops its query).
  const unwatch = watchCancel(input.info.runId, () => reader.controller.abort());
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
  } finally {
    unwatch();
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
      result = await processItems(
        ctx,
        page.objects.map((o) => ({ anchor: o.anchor, object: o })),
        held,
        last,
        pageKey('i', input.page),
      );
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
    if (TRACE)
      log.info(`page ${input.page}: start ${t0}, read ${t1 - t0} ms, plan and apply ${t2 - t1} ms, seen and stats ${Date.now() - t2} ms, end ${Date.now()}`);
    return { cursor: page.cursor, watermark: last ? (page.watermark ?? null) : null, totals, holder: last ? null : holder, noHold: input.noHold };
  } catch (err) {
    // Nothing of this run may still be writing once the page reports the failure.
    await settleCsWrite(runId).catch(() => undefined);
    await settleProgress(runId).catch(() => undefined);
    await closeLiveReader(runId);
    // The read was aborted by a cancel: the run ends Cancelled with what the pages before applied.
    if (isConnectorError(err) && err.code === 'aborted') return { ...input.totals, cancelled: true };
    return failure(err);
  }
}
