import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client';
import { areaLog } from '../core/log';
import { Cached } from './cache';

const log = areaLog('metrics');

/**
 * The Prometheus series of this process. Each engine process has its own registry and exposes it at
 * `GET /api/metrics`: counters count what happened in this process (a run is counted by the process that
 * finished it), so dashboards sum over instances. The state gauges read storage through the
 * {@link EngineStateSource} set at start, at most once per {@link STATE_MAX_AGE_MS} whatever the scrape rate.
 */
export const registry = new Registry();
collectDefaultMetrics({ register: registry });

const RUN_BUCKETS = [1, 5, 15, 30, 60, 120, 300, 600, 1800, 3600, 7200];
const HTTP_BUCKETS = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10];

export const runsTotal = new Counter({
  name: 'meshsync_runs_total',
  help: 'Runs that reached a final status, by connector name, run type and status.',
  labelNames: ['connector', 'run_type', 'status'] as const,
  registers: [registry],
});

/** Runs that exceeded a threshold and stopped to wait for an Admin's approval (the mass-change alarm). */
export const runsAwaitingApproval = new Counter({
  name: 'meshsync_runs_awaiting_approval_total',
  help: 'Runs that exceeded a threshold of their connector and wait for approval, by connector name, run type and the threshold operation exceeded.',
  labelNames: ['connector', 'run_type', 'operation'] as const,
  registers: [registry],
});

export const runDuration = new Histogram({
  name: 'meshsync_run_duration_seconds',
  help: 'Duration of finished runs, from start to final status.',
  labelNames: ['connector', 'run_type'] as const,
  buckets: RUN_BUCKETS,
  registers: [registry],
});

export const objectsProcessed = new Counter({
  name: 'meshsync_objects_processed_total',
  help: 'Objects processed by finished runs (stats.objectsProcessed).',
  labelNames: ['connector', 'run_type'] as const,
  registers: [registry],
});

export const httpDuration = new Histogram({
  name: 'meshsync_http_request_duration_seconds',
  help: 'Admin API requests, by route template, method and response status.',
  labelNames: ['route', 'method', 'status'] as const,
  buckets: HTTP_BUCKETS,
  registers: [registry],
});

/** Seconds from a leaver seen (or its grace over) to its deprovisioning confirmed in a target (lib/sync/leavers.ts). */
export const leaverSeconds = new Histogram({
  name: 'meshsync_leaver_seconds',
  help: 'Seconds from a leaver seen by an import (or the end of its grace) to its delete or disable confirmed by an import of the target, by target connector name.',
  labelNames: ['target'] as const,
  buckets: [5, 15, 30, 60, 120, 300, 600, 1800, 3600, 7200, 14400, 43200, 86400],
  registers: [registry],
});

/**
 * Whether the change stream of a connector in continuous mode is open in this process (1) or down and being
 * reopened (0); no sample when the connector has no stream (`continuous.stream: "off"`, a source that offers
 * none). Set by the follower (lib/schedules/continuousStream.ts).
 */
export const continuousStreamUp = new Gauge({
  name: 'meshsync_continuous_stream_up',
  help: 'Change stream of a connector in continuous mode: 1 open, 0 down and being reopened (the looks every intervalSeconds go on), by connector name (see docs/continuous.md).',
  labelNames: ['connector'] as const,
  registers: [registry],
});

/**
 * Notifications of the change streams of connectors in continuous mode, in this process (each wakes the follower,
 * which then looks at the delta). Counted by the follower (lib/schedules/continuousStream.ts).
 */
export const continuousStreamNotifications = new Counter({
  name: 'meshsync_continuous_stream_notifications_total',
  help: 'Notifications received on the change stream of a connector in continuous mode, by connector name (see docs/continuous.md).',
  labelNames: ['connector'] as const,
  registers: [registry],
});

/** The engine's state as the gauges show it: label value -> number, per series. */
export interface EngineState {
  /** Connector name -> changes waiting for the connector's next export. */
  pendingExports: Map<string, number>;
  /** Connector name -> objects of the connector space in error. */
  connectorSpaceErrors: Map<string, number>;
  /** Object type -> mesh objects; null when this process has not loaded the mesh yet (no samples then). */
  meshObjects: Map<string, number> | null;
  /** Instance name -> its last heartbeat (epoch ms); the gauge shows the age at the scrape, not at the read. */
  lastHeartbeat: Map<string, number>;
  /** Target connector name -> leavers past their deadline and not confirmed (absent: not read). */
  lateLeavers?: Map<string, number>;
}

export type EngineStateSource = () => Promise<EngineState>;

/** State gauges are read from storage at most this often. */
export const STATE_MAX_AGE_MS = 30_000;

let state: Cached<EngineState> | undefined;

/** Where the state gauges read from (set by the service's telemetry step; unset, they have no samples). */
export function setEngineStateSource(source: EngineStateSource | undefined, maxAgeMs = STATE_MAX_AGE_MS): void {
  state = source ? new Cached(source, maxAgeMs) : undefined;
}

function stateGauge(name: string, help: string, label: string, pick: (s: EngineState, now: number) => Map<string, number> | null): Gauge<string> {
  return new Gauge({
    name,
    help,
    labelNames: [label],
    registers: [registry],
    async collect() {
      this.reset();
      if (!state) return;
      // A storage hiccup leaves these gauges without samples for one scrape; the other series still answer.
      const read = await state.get().catch((err: unknown) => {
        log.warn(`Reading the engine state for the gauges failed (${(err as Error)?.name ?? 'Error'}); they have no samples this scrape.`);
        return undefined;
      });
      const values = read && pick(read, Date.now());
      for (const [key, value] of values ?? []) this.set({ [label]: key }, value);
    },
  });
}

stateGauge('meshsync_pending_exports', 'Changes waiting for the connector\u2019s next export (see docs/operations.md).', 'connector', (s) => s.pendingExports);
stateGauge('meshsync_connector_space_errors', 'Objects of the connector space in error (see docs/operations.md).', 'connector', (s) => s.connectorSpaceErrors);
stateGauge('meshsync_mesh_objects', 'Objects in the mesh, by object type.', 'object_type', (s) => s.meshObjects);
stateGauge(
  'meshsync_leavers_late',
  'Leavers past their deadline whose delete or disable is not confirmed yet, by target connector name (see docs/leavers.md).',
  'target',
  (s) => s.lateLeavers ?? null,
);
stateGauge('meshsync_instance_heartbeat_age_seconds', 'Seconds since each engine instance\u2019s last heartbeat.', 'instance', (s, now) =>
  ages(s.lastHeartbeat, now),
);

function ages(at: Map<string, number>, now: number): Map<string, number> {
  return new Map([...at].map(([instance, ms]) => [instance, Math.max(0, (now - ms) / 1000)]));
}

/** The exposition of every series, in Prometheus text format. */
export async function metricsText(): Promise<{ contentType: string; body: string }> {
  return { contentType: registry.contentType, body: await registry.metrics() };
}
