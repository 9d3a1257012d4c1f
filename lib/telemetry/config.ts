import { ConfigError, SettingsReader } from '../core/config';

/**
 * Observability settings:
 * - `Metrics:AllowAnonymous`: `GET /api/metrics` answers without authentication (default false: Viewer).
 * - `Metrics:StateMaxAgeSeconds`: how long the state gauges (pending exports, errors, mesh objects,
 *   heartbeat age) keep what they read from storage (0-30, default 30).
 * - `OTEL_EXPORTER_OTLP_ENDPOINT`: the OTLP/HTTP collector spans are sent to (its base URL; `/v1/traces` is
 *   appended, or `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT` names the full URL). Unset: no tracing, and the
 *   OpenTelemetry SDK is not even loaded. The SDK reads its other standard variables itself
 *   (`OTEL_SERVICE_NAME`, `OTEL_EXPORTER_OTLP_HEADERS`, `OTEL_BSP_SCHEDULE_DELAY`...).
 */
export interface TelemetryConfig {
  allowAnonymousMetrics: boolean;
  stateMaxAgeSeconds: number;
  otlpEndpoint: URL | undefined;
}

export function readTelemetryConfig(settings = new SettingsReader()): TelemetryConfig {
  const otlpEndpoint = settings.url('OTEL_EXPORTER_OTLP_ENDPOINT');
  if (otlpEndpoint && !['http:', 'https:'].includes(otlpEndpoint.protocol)) {
    throw new ConfigError('OTEL_EXPORTER_OTLP_ENDPOINT', `must be an http or https URL (OTLP/HTTP), not '${otlpEndpoint.protocol}'.`);
  }
  return {
    allowAnonymousMetrics: settings.bool('Metrics:AllowAnonymous', false),
    stateMaxAgeSeconds: settings.int('Metrics:StateMaxAgeSeconds', 30, { min: 0, max: 30 }),
    otlpEndpoint,
  };
}

let current: TelemetryConfig | undefined;

/** The settings, read once per process (checked at start by the telemetry step). */
export function telemetryConfig(): TelemetryConfig {
  return (current ??= readTelemetryConfig());
}
