import type { MeshObject } from './model';
import type { CompactPage } from './readModelCompact';
import {
  currentFeedSeq,
  FeedGapError,
  iterateMesh,
  keepOwnFeedRows,
  MESH_PARTITIONS,
  onOwnFeedAppend,
  readFeed,
  releaseOwnFeedRows,
  type FeedEntry,
} from './store';

/**
 * A reader of the mesh and its change feed (lib/mesh/store.ts), for an in-memory copy of the mesh that every
 * runtime process keeps (lib/mesh/readModel.ts).
 *
 * Protocol: note the feed counter, scan the mesh, then apply feed rows after the noted counter in order, and
 * keep tailing. The scan may already show states newer than the counter; replaying the feed from the counter
 * re-applies whole states in commit order, so the copy converges to the committed mesh (a row deleted before
 * the scan reached it comes back as "upsert then tombstone" and ends deleted).
 *
 * The reader reads every row, its own process's too: the mesh is written by the sync engine, never by the
 * reader's consumer, so there is nothing to skip.
 */
export interface MeshFeedConsumer {
  /**
   * Objects found by the initial scan, a page at a time (any order), with their consolidated attributes only:
   * `contributions` and `links` are empty (lib/mesh/store.ts `iterateMesh`, form `consolidated`).
   */
  loadPage(objects: MeshObject[]): void;
  /** Feed entries in commit order (a batch of consecutive rows). */
  applyEntries(entries: FeedEntry[]): void;
  /**
   * A snapshot's page, for a consumer that loads its compact form directly (the read model); without it the
   * consumer gets the page's objects through {@link loadPage}.
   */
  loadSnapshotPage?(page: MeshSnapshotPage): void;
}

/** A page of a snapshot (lib/mesh/readModelSnapshot.ts). */
export interface MeshSnapshotPage {
  readonly compact: CompactPage;
  /** Its objects as a scan hands them on; `attributes`: only these attributes on each (all when absent). */
  objects(attributes?: ReadonlySet<string>): MeshObject[];
}

/**
 * A local copy of the mesh a load may start from instead of scanning the mesh tables (the read model's
 * snapshot, lib/mesh/readModelSnapshot.ts): given the feed's current position, its own position and its
 * objects (as {@link MeshFeedConsumer.loadPage} gets them), or undefined when it is not usable. The load then
 * catches up with the feed from its position, as after a scan.
 */
export interface MeshSnapshotSource {
  open(currentSeq: number): Promise<{ seq: number; pages: AsyncIterable<MeshSnapshotPage> } | undefined>;
}

export interface MeshFeedReaderOptions {
  /** Pause between polls of the feed (ms). Default 250. */
  pollMs?: number;
  /** Mesh partitions scanned at once during the load. Default 4. */
  scanConcurrency?: number;
  /** Rows read per feed request. Default 500. */
  batchRows?: number;
  onError?: (err: unknown) => void;
  /** Where a load may start from instead of a scan. */
  snapshot?: MeshSnapshotSource;
}

/**
 * Something else that wants to see a load's scan (the sync engine's join index, lib/mesh/joinIndex.ts), so
 * that a process scans the mesh once at start and not once per in-memory structure: it gets the feed
 * position noted before the scan, every page scanned (objects as {@link MeshFeedConsumer.loadPage} gets
 * them: consolidated attributes only), and whether the scan finished. A tap that throws is
 * dropped (told `end(false)`); the load goes on.
 */
export interface MeshScanTap {
  /** The attributes it reads of each object: a load from a snapshot hands on only these (a scan, all). */
  readonly attributes?: ReadonlySet<string>;
  begin(seq: number): void;
  page(objects: MeshObject[]): void;
  end(ok: boolean): void;
}

let nextTaps: MeshScanTap[] = [];

/** Show the next load's scan (of any reader in this process) to `tap` too. */
export function tapNextMeshLoad(tap: MeshScanTap): void {
  nextTaps.push(tap);
}

export class MeshFeedReader {
  private seq = 0;
  private timer: NodeJS.Timeout | undefined;
  private stopped = false;
  /** Between startTailing and stop: this process keeps the rows it appends for this reader. */
  private tailing = false;
  private polling: Promise<void> | undefined;
  private pollAgain = false;
  private lastPollAt = 0;

  constructor(
    private readonly consumer: MeshFeedConsumer,
    private readonly options: MeshFeedReaderOptions = {},
  ) {}

  /** The last feed sequence number applied. */
  get position(): number {
    return this.seq;
  }

  /** When the last successful poll finished (epoch ms; 0: never). */
  get lastPoll(): number {
    return this.lastPollAt;
  }

  /** Whether the last {@link load} started from a snapshot rather than a scan. */
  fromSnapshot = false;
  /** The feed position the last {@link load} started from (the snapshot's, or the counter noted before the scan). */
  loadedFrom = 0;

  /**
   * Note the counter, scan the whole mesh into the consumer (or load the snapshot, when one is usable, and
   * take its position instead), then catch up with the feed.
   */
  async load(): Promise<void> {
    let taps = nextTaps;
    nextTaps = [];
    const tell = (f: (t: MeshScanTap) => void) => {
      for (const t of taps) {
        try {
          f(t);
        } catch {
          taps = taps.filter((x) => x !== t);
          end(t, false);
        }
      }
    };
    try {
      const current = await currentFeedSeq();
      const snapshot = await this.options.snapshot?.open(current);
      this.fromSnapshot = !!snapshot;
      this.seq = this.loadedFrom = snapshot ? snapshot.seq : current;
      tell((t) => t.begin(this.seq));
      if (snapshot) {
        for await (const page of snapshot.pages) {
          if (this.consumer.loadSnapshotPage) this.consumer.loadSnapshotPage(page);
          else this.consumer.loadPage(page.objects());
          tell((t) => t.page(page.objects(t.attributes)));
        }
      }
      const partitions = snapshot ? [] : MESH_PARTITIONS.map((_, i) => i);
      const worker = async () => {
        for (let p = partitions.shift(); p !== undefined; p = partitions.shift()) {
          for await (const page of iterateMesh(undefined, p, 'consolidated')) {
            this.consumer.loadPage(page);
            tell((t) => t.page(page));
          }
        }
      };
      await Promise.all(Array.from({ length: this.options.scanConcurrency ?? 4 }, worker));
    } catch (err) {
      for (const t of taps) end(t, false);
      throw err;
    }
    for (const t of taps) end(t, true);
    await this.poll();
  }

  /** Apply every feed row after the current position (one at a time: concurrent calls share the same poll). */
  poll(): Promise<void> {
    if (this.polling) {
      // Rows appended after the running poll read the feed: it reads once more before it settles.
      this.pollAgain = true;
      return this.polling;
    }
    this.polling = (async () => {
      do {
        this.pollAgain = false;
        await this.pollOnce();
      } while (this.pollAgain && !this.stopped);
    })().finally(() => (this.polling = undefined));
    return this.polling;
  }

  private async pollOnce(): Promise<void> {
    const limit = this.options.batchRows ?? 500;
    for (;;) {
      const rows = await readFeed(this.seq, { limit, ownFromMemory: true });
      if (rows.length) {
        // Rows missing right after the position were trimmed while this reader was behind (lib/sync/run/feedTrim.ts
        // keeps every row after a live process's position): the model must be loaded again.
        if (rows[0].seq > this.seq + 1) throw new FeedGapError(this.seq, rows[0].seq);
        // Rows are gapless: stop at a hole (cannot happen with the counter protocol, but never skip one).
        const applied: FeedEntry[] = [];
        let seq = this.seq;
        for (const r of rows) {
          if (r.seq !== seq + 1) break;
          applied.push(...r.entries);
          seq = r.seq;
        }
        if (seq === this.seq) break;
        this.consumer.applyEntries(applied);
        this.seq = seq;
        releaseOwnFeedRows(seq);
      }
      if (rows.length < limit) break;
    }
    this.lastPollAt = Date.now();
  }

  /** Poll every `pollMs` until {@link stop}. A failed poll is reported and retried at the next tick. */
  startTailing(): void {
    if (!this.tailing) {
      keepOwnFeedRows(true);
      onOwnFeedAppend(this.ownAppend);
    }
    this.tailing = true;
    this.stopped = false;
    const tick = async () => {
      try {
        await this.poll();
      } catch (err) {
        this.options.onError?.(err);
      }
      if (!this.stopped) this.schedule(tick);
    };
    this.schedule(tick);
  }

  private schedule(tick: () => Promise<void>): void {
    this.timer = setTimeout(() => void tick(), this.options.pollMs ?? 250);
    this.timer.unref();
  }

  /** This process appended rows: apply them now (reads your own writes), not at the next tick. */
  private readonly ownAppend = () => {
    if (!this.stopped) this.poll().catch((err: unknown) => this.options.onError?.(err));
  };

  async stop(): Promise<void> {
    if (this.tailing) {
      keepOwnFeedRows(false);
      onOwnFeedAppend(this.ownAppend, true);
    }
    this.tailing = false;
    this.stopped = true;
    if (this.timer) clearTimeout(this.timer);
    await this.polling?.catch(() => undefined);
  }
}

function end(tap: MeshScanTap, ok: boolean): void {
  try {
    tap.end(ok);
  } catch {
    // A tap's own failure is its business.
  }
}
