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
 * (phase, objects, rate, ETA; a count without a bar while the total is unknown), otherwise a plain line on
 * stderr at every phase change and at most every 5 s. The run as it ended.
 */
export async function waitForRun(api: Api, runId: string, tty = process.stderr.isTTY === true): Promise<Run> {
  let run = await api.get<Run>(`runs/${runId}`);
  const view = tty ? new BarView() : new LineView();
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

/** Objects per second since the run started. */
function rate(run: Run): number {
  const seconds = (Date.now() - Date.parse(run.startedAt)) / 1000;
  const done = run.progress?.objectsProcessed ?? run.stats.objectsProcessed;
  return seconds > 0 ? done / seconds : 0;
}

class BarView {
  private readonly bar = new SingleBar(
    {
      format: '{phase} |{bar}| {value}/{totalText} objects | {rate}/s | ETA {etaText}',
      barCompleteChar: '\u2588',
      barIncompleteChar: '\u2591',
      hideCursor: true,
      clearOnComplete: false,
      stopOnComplete: false,
      etaBuffer: 20,
      fps: 5,
      stream: process.stderr,
    },
    undefined,
  );
  private started = false;

  update(run: Run): void {
    const p = run.progress;
    const value = p?.objectsProcessed ?? run.stats.objectsProcessed;
    const total = p?.objectsTotal ?? null;
    const r = rate(run);
    const eta = total && r > 0 && value < total ? `${Math.ceil((total - value) / r)}s` : total ? '0s' : '?';
    const payload = {
      phase: terminalSafe(isDone(run.status) ? run.status : (p?.phase ?? run.status)).padEnd(9),
      totalText: total ?? '?',
      rate: Math.round(r),
      etaText: eta,
    };
    // Unknown total: the bar spans what is done so far (full), the text says "?".
    const barTotal = total ?? Math.max(value, 1);
    if (!this.started) {
      this.bar.start(barTotal, value, payload);
      this.started = true;
    } else {
      this.bar.setTotal(barTotal);
      this.bar.update(value, payload);
    }
  }

  stop(): void {
    if (this.started) this.bar.stop();
  }
}

class LineView {
  private lastPhase = '';
  private lastAt = 0;

  update(run: Run): void {
    const phase = isDone(run.status) ? run.status : (run.progress?.phase ?? run.status);
    if (phase === this.lastPhase && Date.now() - this.lastAt < PLAIN_EVERY_MS) return;
    this.lastPhase = phase;
    this.lastAt = Date.now();
    const p = run.progress;
    const done = p?.objectsProcessed ?? run.stats.objectsProcessed;
    const total = p?.objectsTotal ?? '?';
    writeErr(`run ${run.runId} ${phase}: ${done}/${total} objects, ${Math.round(rate(run))}/s\n`);
  }

  stop(): void {}
}
