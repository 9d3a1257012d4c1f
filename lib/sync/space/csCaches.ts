import { readIdleCsCaches } from '../../core/config';
import type { CsCache } from './csCache';

/** A run not heard of for this long (no page of it in this process) no longer keeps its connector's cache. */
const RUN_QUIET_MS = 60 * 60 * 1000;

/**
 * The connector-space caches of a process ({@link CsCache}, one per connector), bounded: a connector's
 * summaries stay in memory while a run of it is going (its pages reuse them instead of reading the whole
 * space again), and for at most `Sync:IdleConnectorSpaceCaches` idle connectors (default 2), the ones used
 * last; the others are dropped when their run ends, and read again from storage by the connector's next run.
 * At 1,000,000 objects a connector's summaries are hundreds of megabytes, so three connectors (a directory, an
 * HR source, an export target) kept forever were most of the engine's memory.
 *
 * A run is going from its first step ({@link runStarted}, also noted by each of its pages, which may run in a
 * process that did not begin it) to its last ({@link runEnded}). A run this process has not heard of for an
 * hour (it ended in another process) no longer counts.
 */
export class CsCaches {
  /** Connector id -> cache, least recently used first. */
  private readonly caches = new Map<string, CsCache>();
  /** Run id -> its connector and when this process last heard of it. */
  private readonly runs = new Map<string, { connectorId: string; at: number }>();
  /** Connectors whose cache is kept like a running one's: those this process follows in continuous mode, and their targets. */
  private pinned = new Set<string>();

  constructor(
    private readonly idleLimit: () => number = () => readIdleCsCaches(),
    private readonly clock: () => number = Date.now,
  ) {}

  get size(): number {
    return this.caches.size;
  }

  /** The connector's cache (now the most recently used), if kept. */
  get(connectorId: string): CsCache | undefined {
    const c = this.caches.get(connectorId);
    if (c) {
      this.caches.delete(connectorId);
      this.caches.set(connectorId, c);
    }
    return c;
  }

  has(connectorId: string): boolean {
    return this.caches.has(connectorId);
  }

  /** Keep the connector's cache (the most recently used); idle ones over the limit go. */
  set(connectorId: string, cache: CsCache): this {
    this.caches.delete(connectorId);
    this.caches.set(connectorId, cache);
    this.trim();
    return this;
  }

  delete(connectorId: string): boolean {
    return this.caches.delete(connectorId);
  }

  clear(): void {
    this.caches.clear();
    this.runs.clear();
    this.pinned.clear();
  }

  /** A run of the connector is going (its first step, or one of its pages). */
  runStarted(runId: string, connectorId: string): void {
    this.runs.set(runId, { connectorId, at: this.clock() });
  }

  /** The run ended (or was let go of): its connector's cache stays only as one of the idle ones. */
  runEnded(runId: string): void {
    if (this.runs.delete(runId)) this.trim();
  }

  /** Connectors with a run going in this process. */
  running(): Set<string> {
    const now = this.clock();
    const out = new Set<string>();
    for (const [runId, r] of this.runs) {
      if (now - r.at > RUN_QUIET_MS) this.runs.delete(runId);
      else out.add(r.connectorId);
    }
    return out;
  }

  /**
   * Keep these connectors' caches as if a run of each were going (continuous mode, docs/continuous.md: runs of
   * them follow one another every few seconds, and each would otherwise read the whole space again). Replaces
   * the previous set; the caches no longer pinned become idle ones.
   */
  pin(connectorIds: Iterable<string>): void {
    this.pinned = new Set(connectorIds);
    this.trim();
  }

  /** Drop the least recently used idle caches over the limit. */
  private trim(): void {
    const running = this.running();
    const idle = [...this.caches.keys()].filter((id) => !running.has(id) && !this.pinned.has(id));
    const limit = this.idleLimit();
    for (const id of idle.slice(0, Math.max(0, idle.length - limit))) this.caches.delete(id);
  }
}
