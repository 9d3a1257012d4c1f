import { SettingsReader } from '../core/config';

/**
 * Observability settings:
 * - `Metrics:AllowAnonymous`: `GET /api/metrics` answers without authentication (default false: Viewer).
 * - `OTEL_EXPORTER_OTLP_ENDPOINT`: the OTLP/HTTP collector spans are sent to (its base URL; `/v1/traces` is
 *   appended, or `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT` names the full URL). Unset: no tracing, and the
 *   OpenTelemetry SDK is not even loaded. The SDK reads its other standard variables itself
 *   (`OTEL_SERVICE_NAME`, `OTEL_EXPORTER_OTLP_HEADERS`, `OTEL_BSP_SCHEDULE_DELAY`...).
 */
export interface TelemetryConfig {
  allowAnonymousMetrics: boolean;
  otlpEndpoint: URL | undefined;
}

export function readTelemetryConfig(settings = new SettingsReader()): TelemetryConfig {
  return {
    allowAnonymousMetrics: settings.bool('Metrics:AllowAnonymous', false),
    otlpEndpoint: settings.url('OTEL_EXPORTER_OTLP_ENDPOINT'),
  };
}

let current: TelemetryConfig | undefined;

/** The settings, read once per process (checked at start by the telemetry step). */
export function telemetryConfig(): TelemetryConfig {
  return (current ??= readTelemetryConfig());
}
