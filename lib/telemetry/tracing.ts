import { randomBytes } from 'node:crypto';
import type * as Api from '@opentelemetry/api';
import type { NodeTracerProvider } from '@opentelemetry/sdk-trace-node';

/**
 * OpenTelemetry traces, on only when `OTEL_EXPORTER_OTLP_ENDPOINT` is set ({@link startTracing}, from the
 * telemetry start step). Off, the SDK and the exporter are not loaded and every helper here is a plain call.
 *
 * Spans: one per HTTP request (kind server, child of the request's W3C `traceparent` when it has one), one
 * per run and one per activity of a run, all of a run in one trace. A run crosses activities, and possibly
 * processes, so its span cannot stay open: its ids are chosen when the run's orchestration is started
 * ({@link newRunTrace}, a child of the request that triggered it when there is one) and travel with the run
 * (the orchestration input, then the run's `RunInfo`); each activity's span is a child of them, and the run's
 * own span is written with those ids when the run finishes ({@link endRunSpan}). The orchestrator never makes
 * a span: only activities do, so replays add nothing.
 *
 * Attributes never carry connector configuration, credentials or tokens: names, types, statuses and ids only.
 */

/** The trace context a run carries: the W3C traceparent of its own span, and the span it is a child of. */
export interface RunTrace {
  traceparent: string;
  parentSpanId?: string;
}

interface Tracing {
  api: typeof Api;
  tracer: Api.Tracer;
  provider: NodeTracerProvider;
}

let tracing: Tracing | undefined;
/** Ids the next span takes instead of random ones (a run's span, written when the run ends). */
let forcedIds: { traceId: string; spanId: string } | undefined;

const hex = (bytes: number) => randomBytes(bytes).toString('hex');
const TRACEPARENT = /^00-([0-9a-f]{32})-([0-9a-f]{16})-[0-9a-f]{2}$/;

/** Start tracing to the OTLP/HTTP collector at `endpoint` (its base URL). Idempotent. */
export function startTracing(endpoint: URL): void {
  if (tracing) return;
  // Loaded here, only when tracing is on: with no endpoint the SDK and the exporter are never loaded.
  const api = require('@opentelemetry/api') as typeof Api;
  const { NodeTracerProvider, BatchSpanProcessor } = require('@opentelemetry/sdk-trace-node') as typeof import('@opentelemetry/sdk-trace-node');
  const { OTLPTraceExporter } = require('@opentelemetry/exporter-trace-otlp-http') as typeof import('@opentelemetry/exporter-trace-otlp-http');
  const { resourceFromAttributes } = require('@opentelemetry/resources') as typeof import('@opentelemetry/resources');
  const tracesUrl =
    process.env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT || new URL('v1/traces', endpoint.href.endsWith('/') ? endpoint : new URL(endpoint.href + '/')).href;
  const provider = new NodeTracerProvider({
    resource: resourceFromAttributes({ 'service.name': process.env.OTEL_SERVICE_NAME || 'meshsync' }),
    idGenerator: {
      generateTraceId: () => forcedIds?.traceId ?? hex(16),
      generateSpanId: () => forcedIds?.spanId ?? hex(8),
    },
    spanProcessors: [new BatchSpanProcessor(new OTLPTraceExporter({ url: tracesUrl }))],
  });
  // The AsyncLocalStorage context manager and the W3C trace-context propagator.
  provider.register();
  tracing = { api, tracer: api.trace.getTracer('meshsync'), provider };
}

/** Send what is left and stop (the telemetry step's stop). */
export async function stopTracing(): Promise<void> {
  const t = tracing;
  tracing = undefined;
  await t?.provider.shutdown();
}

export const tracingEnabled = (): boolean => tracing !== undefined;

/** The trace id of the active span, when tracing is on and there is one. */
export function activeTraceId(): string | undefined {
  if (!tracing) return undefined;
  const ctx = tracing.api.trace.getSpan(tracing.api.context.active())?.spanContext();
  return ctx && tracing.api.trace.isSpanContextValid(ctx) ? ctx.traceId : undefined;
}

/** What an HTTP server span is made of; the handler's answer gives its status. */
export interface ServerRequest {
  method: string;
  route: string;
  headers: { get(name: string): string | null };
}

/**
 * Run `handle` inside a server span for the request (a child of its `traceparent` header when valid), and
 * record the answer's status on it. Tracing off: `handle()`.
 */
export async function withServerSpan<T extends { status?: number }>(request: ServerRequest, handle: () => Promise<T>): Promise<T> {
  const t = tracing;
  if (!t) return handle();
  const { api } = t;
  const parent = api.propagation.extract(api.ROOT_CONTEXT, request.headers, {
    get: (carrier, key) => carrier.get(key) ?? undefined,
    keys: () => ['traceparent', 'tracestate'],
  });
  const attributes = { 'http.request.method': request.method, 'http.route': request.route };
  return t.tracer.startActiveSpan(`${request.method} ${request.route}`, { kind: api.SpanKind.SERVER, attributes }, parent, async (span) => {
    try {
      const answer = await handle();
      const status = answer.status ?? 200;
      span.setAttribute('http.response.status_code', status);
      if (status >= 500) span.setStatus({ code: api.SpanStatusCode.ERROR });
      return answer;
    } catch (err) {
      span.setStatus({ code: api.SpanStatusCode.ERROR });
      throw err;
    } finally {
      span.end();
    }
  });
}

/**
 * The trace context of a run about to start: a child of the active span (the request that triggered the run)
 * when there is one, else a trace of its own. Undefined when tracing is off.
 */
export function newRunTrace(): RunTrace | undefined {
  if (!tracing) return undefined;
  const { api } = tracing;
  const active = api.trace.getSpan(api.context.active())?.spanContext();
  const parent = active && api.trace.isSpanContextValid(active) ? active : undefined;
  return { traceparent: `00-${parent?.traceId ?? hex(16)}-${hex(8)}-01`, ...(parent ? { parentSpanId: parent.spanId } : {}) };
}

function spanContextOf(api: typeof Api, traceparent: string | undefined, spanId?: string): Api.Context | undefined {
  const m = traceparent ? TRACEPARENT.exec(traceparent) : null;
  if (!m) return undefined;
  return api.trace.setSpanContext(api.ROOT_CONTEXT, { traceId: m[1], spanId: spanId ?? m[2], traceFlags: api.TraceFlags.SAMPLED, isRemote: true });
}

/** What an activity span says of its run. */
export interface ActivityOfRun {
  runId?: string;
  runType?: string;
  connectorId?: string;
}

/**
 * Run an activity of a run inside a span that is a child of the run's span. Tracing off, or a run without a
 * trace (started before tracing was on): `handle()`.
 */
export async function withActivitySpan<T>(activity: string, trace: RunTrace | undefined, run: ActivityOfRun, handle: () => Promise<T>): Promise<T> {
  const t = tracing;
  const parent = t && spanContextOf(t.api, trace?.traceparent);
  if (!t || !parent) return handle();
  const attributes: Record<string, string> = { 'meshsync.activity': activity };
  if (run.runId) attributes['meshsync.run.id'] = run.runId;
  if (run.runType) attributes['meshsync.run.type'] = run.runType;
  if (run.connectorId) attributes['meshsync.connector.id'] = run.connectorId;
  return t.tracer.startActiveSpan(activity, { attributes }, parent, async (span) => {
    try {
      return await handle();
    } catch (err) {
      span.setStatus({ code: t.api.SpanStatusCode.ERROR });
      throw err;
    } finally {
      span.end();
    }
  });
}

/** A finished run, as its span shows it. */
export interface FinishedRunSpan {
  runId: string;
  connectorId: string;
  connectorName: string;
  runType: string;
  status: string;
  startedAt: string;
  completedAt?: string;
  objectsProcessed: number;
}

/** Write the span of a finished run with the ids its trace chose at start. No-op when off or untraced. */
export function endRunSpan(run: FinishedRunSpan, trace: RunTrace | undefined): void {
  const t = tracing;
  const m = trace ? TRACEPARENT.exec(trace.traceparent) : null;
  if (!t || !m) return;
  const { api } = t;
  const parent = trace?.parentSpanId ? spanContextOf(api, trace.traceparent, trace.parentSpanId)! : api.ROOT_CONTEXT;
  const attributes = {
    'meshsync.run.id': run.runId,
    'meshsync.run.type': run.runType,
    'meshsync.run.status': run.status,
    'meshsync.connector.id': run.connectorId,
    'meshsync.connector.name': run.connectorName,
    'meshsync.run.objects_processed': run.objectsProcessed,
  };
  forcedIds = { traceId: m[1], spanId: m[2] };
  let span: Api.Span;
  try {
    span = t.tracer.startSpan(`run ${run.runType}`, { attributes, startTime: new Date(run.startedAt) }, parent);
  } finally {
    forcedIds = undefined;
  }
  if (!['Completed', 'CompletedWithErrors'].includes(run.status)) span.setStatus({ code: api.SpanStatusCode.ERROR, message: run.status });
  span.end(run.completedAt ? new Date(run.completedAt) : new Date());
}
