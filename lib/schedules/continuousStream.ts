import { areaLog } from '../core/log';
import { createConnectorFor } from '../connectors/factory';
import { hasChangeStream, isConnectorError, type ChangeStream, type Connector } from '../connectors/sdk';
import { continuousStreamNotifications, continuousStreamUp } from '../telemetry/metrics';

const log = areaLog('continuous');

/**
 * The change stream of a connector in continuous mode (docs/continuous.md, "What each source type does"): kept
 * open by the follower for as long as it follows the connector with `continuous.stream: "auto"`. A notification
 * only wakes the follower, which then looks at the delta from the stored watermark as it does every
 * `intervalSeconds`: nothing depends on the stream, it only cuts the wait.
 *
 * - `up`: open. Opening also wakes the follower once, for whatever changed while the stream was not open.
 * - `down`: it dropped (server restart, network) or could not be opened: reopened after 1 s, then 2, 4... up to
 *   {@link MAX_BACKOFF_MS} while it keeps failing; the follower wakes at the drop and goes on looking every
 *   `intervalSeconds` meanwhile.
 * - `none`: the connector or its server offers no stream (looked for once per follower start).
 *
 * The state is logged at each change and shown by the gauge `meshsync_continuous_stream_up{connector}` (1 up,
 * 0 down, no sample otherwise); the notifications are counted by `meshsync_continuous_stream_notifications_total`.
 */
export type StreamState = 'opening' | 'up' | 'down' | 'none' | 'closed';

export const MAX_BACKOFF_MS = 60_000;
/** A stream that stayed open this long before it dropped is reopened after the shortest wait again. */
const STABLE_MS = 30_000;
/**
 * A persistent search or a change notification gets no answer when the server has registered it, so a change the
 * server applies in the instant after the open is neither notified nor always seen by the look at open: the
 * follower looks again this long after each open.
 */
export const SETTLE_LOOK_MS = 3_000;

/** How the keeper makes the connector whose stream it opens (a test may hand its own). */
export type MakeConnector = (connectorId: string) => Promise<Connector>;
const made: MakeConnector = async (connectorId) => (await createConnectorFor(connectorId)).connector;

export class StreamKeeper {
  state: StreamState = 'opening';
  /** What the server offered ("syncrepl", ...), once known. */
  kind: string | null = null;
  private stream: ChangeStream | null = null;
  private connector: Connector | null = null;
  private timer: NodeJS.Timeout | null = null;
  private settle: NodeJS.Timeout | null = null;
  private failures = 0;

  constructor(
    readonly connectorId: string,
    private name: string,
    private readonly wake: () => void,
    private readonly make: MakeConnector = made,
  ) {
    void this.open();
  }

  /** The connector was renamed: the gauge follows. */
  rename(name: string): void {
    if (name === this.name) return;
    continuousStreamUp.remove({ connector: this.name });
    this.name = name;
    this.show();
  }

  /** Stop for good: the stream and its connector are closed, the gauge sample removed. */
  close(): void {
    this.state = 'closed';
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
    this.release();
    continuousStreamUp.remove({ connector: this.name });
  }

  private release(): void {
    if (this.settle) clearTimeout(this.settle);
    this.settle = null;
    this.stream?.close();
    this.stream = null;
    void this.connector?.close().catch(() => undefined);
    this.connector = null;
  }

  /** A method, not a field read: the state changes while open() awaits. */
  private isClosed(): boolean {
    return this.state === 'closed';
  }

  private show(): void {
    if (this.state === 'up' || this.state === 'down') continuousStreamUp.set({ connector: this.name }, this.state === 'up' ? 1 : 0);
    else continuousStreamUp.remove({ connector: this.name });
  }

  private async open(): Promise<void> {
    this.timer = null;
    let connector: Connector | null = null;
    try {
      connector = await this.make(this.connectorId);
      if (this.isClosed()) return void (await connector.close().catch(() => undefined));
      if (!hasChangeStream(connector)) {
        this.state = 'none';
        return void (await connector.close().catch(() => undefined));
      }
      // Notifications count from the open on (which wakes the follower anyway), and only those of the current stream.
      let opened: ChangeStream | null = null;
      const stream = await connector.openChangeStream(() => {
        if (!opened || this.stream !== opened) return;
        continuousStreamNotifications.inc({ connector: this.name });
        this.wake();
      });
      opened = stream;
      if (this.isClosed()) {
        stream?.close();
        return void (await connector.close().catch(() => undefined));
      }
      if (!stream) {
        this.state = 'none';
        this.show();
        log.info(`Continuous mode of '${this.name}': the source offers no change stream; looking every intervalSeconds only.`);
        return void (await connector.close().catch(() => undefined));
      }
      this.connector = connector;
      this.stream = stream;
      this.kind = stream.kind;
      this.state = 'up';
      this.show();
      const since = Date.now();
      log.info(`Continuous mode of '${this.name}': change stream open (${stream.kind}); a change wakes the follower at once.`);
      this.wake();
      this.settle = setTimeout(() => {
        this.settle = null;
        if (this.stream === stream) this.wake();
      }, SETTLE_LOOK_MS);
      this.settle.unref();
      void stream.ended.then((reason) => this.dropped(stream, reason, Date.now() - since));
    } catch (err) {
      if (connector && this.connector !== connector) await connector.close().catch(() => undefined);
      if (this.isClosed()) return;
      this.retry(`the change stream cannot be opened (${messageOf(err)})`);
    }
  }

  private dropped(stream: ChangeStream, reason: Error, upMs: number): void {
    if (this.state === 'closed' || this.stream !== stream) return;
    this.release();
    if (upMs >= STABLE_MS) this.failures = 0;
    // Whatever the stream would have said from now on, a look sees: wake the follower now.
    this.wake();
    this.retry(`the change stream (${stream.kind}) dropped (${messageOf(reason)})`);
  }

  private retry(why: string): void {
    const waitMs = Math.min(MAX_BACKOFF_MS, 1000 * 2 ** this.failures);
    this.failures++;
    this.state = 'down';
    this.show();
    log.warn(`Continuous mode of '${this.name}': ${why}; trying again in ${Math.round(waitMs / 1000)} s, looking every intervalSeconds meanwhile.`);
    this.timer = setTimeout(() => void this.open(), waitMs);
    this.timer.unref();
  }
}

function messageOf(err: unknown): string {
  return isConnectorError(err) ? err.message : (err as Error)?.message ? String((err as Error).message).slice(0, 300) : String(err);
}
