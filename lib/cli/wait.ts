import { SingleBar } from 'cli-progress';
import type { Api } from './api';
import { terminalSafe, writeErr } from './output';

/** A run as the API answers it (the fields the CLI reads). */
export interface Run {
  runId: string;
  connectorId: string;
  runType: string;
  status: string;
  startedAt: string;
  completedAt?: string;
  stats: { objectsProcessed: number; objectsCreated: number; objectsUpdated: number; objectsDeleted: number; errors: number };
  error?: string;
  progress?: { phase: string; objectsProcessed: number; objectsTotal: number | null; updatedOn: string };
  approval?: { reasons: { operation: string; count: number; limit: number }[]; expiresOn: string };
  trigger?: { type: string; planRunId?: string };
}

/** Statuses after which a run changes no more; AwaitingApproval is where waiting stops too. */
const DONE = new Set(['Completed', 'CompletedWithErrors', 'Failed', 'Cancelled', 'Rejected', 'AwaitingApproval']);

export const isDone = (status: string) => DONE.has(status);

/** Poll interval; MESHSYNC_POLL_MS lets tests and impatient operators go faster. */
const pollMs = () => Number(process.env.MESHSYNC_POLL_MS) || 1000;
/** Plain-line progress is written at most this often (and at every phase change). */
const PLAIN_EVERY_MS = 5000;

/**
 * Wait until the run ends (or waits for approval), showing its `progress`: on a terminal a live bar on stderr
 * (phase, objects, rate, ETA; while the total is unknown an indeterminate bar, a block moving along the track,
 * with the count so far), otherwise a plain line on stderr at every phase change and at most every 5 s. The
 * total of an apply is known from its plan: the objects the plan processed (the apply goes through the same
 * ones again). The run as it ended.
 */
export async function waitForRun(api: Api, runId: string, tty = process.stderr.isTTY === true): Promise<Run> {
  let run = await api.get<Run>(`runs/${runId}`);
  const planTotal = await planTotalOf(api, run);
  const view = tty ? new BarView(planTotal) : new LineView(planTotal);
  try {
    while (!isDone(run.status)) {
      view.update(run);
      await new Promise((r) => setTimeout(r, pollMs()));
      run = await api.get<Run>(`runs/${runId}`);
    }
    view.update(run);
  } finally {
    view.stop();
  }
  return run;
}

/** An apply's total: what its plan (the dry run it applies) processed; null for any other run or an unreadable plan. */
async function planTotalOf(api: Api, run: Run): Promise<number | null> {
  const planRunId = run.trigger?.type === 'apply' ? run.trigger.planRunId : undefined;
  if (!planRunId) return null;
  try {
    return (await api.get<Run>(`runs/${planRunId}`)).stats.objectsProcessed;
  } catch {
    return null;
  }
}

/** The run's total: the progress's when the step knows it, else the plan's for an apply, else null (unknown). */
function totalOf(run: Run, planTotal: number | null): number | null {
  return run.progress?.objectsTotal ?? planTotal;
}

/** Objects per second since the run started. */
function rate(run: Run): number {
  const seconds = (Date.now() - Date.parse(run.startedAt)) / 1000;
  const done = run.progress?.objectsProcessed ?? run.stats.objectsProcessed;
  return seconds > 0 ? done / seconds : 0;
}

const BAR_SIZE = 40;
const BLOCK = 8;
const FULL = '\u2588';
const EMPTY = '\u2591';

/**
 * The bar's track: filled in proportion to a known total; with no total a block of 8 moving along it (one step
 * per redraw, 5 a second), so an unknown total is never drawn as a full bar.
 */
export function barTrack(value: number, total: number | null, tick: number): string {
  if (total !== null && total > 0) {
    const filled = Math.max(0, Math.min(BAR_SIZE, Math.round((BAR_SIZE * value) / total)));
    return FULL.repeat(filled) + EMPTY.repeat(BAR_SIZE - filled);
  }
  if (total === 0) return FULL.repeat(BAR_SIZE);
  const span = 2 * (BAR_SIZE - BLOCK);
  const step = tick % span;
  const at = step <= BAR_SIZE - BLOCK ? step : span - step;
  return EMPTY.repeat(at) + FULL.repeat(BLOCK) + EMPTY.repeat(BAR_SIZE - BLOCK - at);
}

interface BarPayload {
  phase: string;
  done: number;
  total: number | null;
  rate: number;
  eta: string;
  finished: boolean;
}

class BarView {
  private tick = 0;
  private readonly bar = new SingleBar(
    {
      // Drawn by us: cli-progress only paces the redraws (a known total fills the track, an unknown one moves a block).
      format: (_options: unknown, _params: unknown, p: BarPayload) => {
        const total = p.finished && p.total === null ? p.done : p.total;
        const track = barTrack(p.done, total, this.tick++);
        const count = p.total !== null ? `${p.done}/${p.total} objects` : p.finished ? `${p.done} objects` : `${p.done} objects (total not known yet)`;
        return `${p.phase} |${track}| ${count} | ${p.rate}/s${p.total === null ? '' : ` | ETA ${p.eta}`}`;
      },
      hideCursor: true,
      clearOnComplete: false,
      stopOnComplete: false,
      fps: 5,
      stream: process.stderr,
    },
    undefined,
  );
  private started = false;

  constructor(private readonly planTotal: number | null) {}

  update(run: Run): void {
    const p = run.progress;
    const done = p?.objectsProcessed ?? run.stats.objectsProcessed;
    const total = totalOf(run, this.planTotal);
    const r = rate(run);
    const payload: BarPayload = {
      phase: terminalSafe(isDone(run.status) ? run.status : (p?.phase ?? run.status)).padEnd(9),
      done,
      total,
      rate: Math.round(r),
      eta: total && r > 0 && done < total ? `${Math.ceil((total - done) / r)}s` : '0s',
      finished: isDone(run.status),
    };
    if (!this.started) {
      this.bar.start(Math.max(total ?? done, 1), done, payload);
      this.started = true;
    } else {
      this.bar.setTotal(Math.max(total ?? done, 1));
      this.bar.update(done, payload);
    }
  }

  stop(): void {
    if (this.started) this.bar.stop();
  }
}

class LineView {
  private lastPhase = '';
  private lastAt = 0;

  constructor(private readonly planTotal: number | null) {}

  update(run: Run): void {
    const phase = isDone(run.status) ? run.status : (run.progress?.phase ?? run.status);
    if (phase === this.lastPhase && Date.now() - this.lastAt < PLAIN_EVERY_MS) return;
    this.lastPhase = phase;
    this.lastAt = Date.now();
    const p = run.progress;
    const done = p?.objectsProcessed ?? run.stats.objectsProcessed;
    const total = totalOf(run, this.planTotal) ?? '?';
    writeErr(`run ${run.runId} ${phase}: ${done}/${total} objects, ${Math.round(rate(run))}/s\n`);
  }

  stop(): void {}
}
