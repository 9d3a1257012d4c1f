import { ConfigError, SettingsReader } from '../../../lib/core/config';
import { readTelemetryConfig } from '../../../lib/telemetry/config';

describe('telemetry settings', () => {
  const read = (env: Record<string, string>) => readTelemetryConfig(new SettingsReader(env));

  it('defaults: metrics for Viewers, state read at most every 30 s, no tracing', () => {
    expect(read({})).toEqual({ allowAnonymousMetrics: false, stateMaxAgeSeconds: 30, otlpEndpoint: undefined });
  });

  it('reads the settings in either spelling', () => {
    const cfg = read({ Metrics__AllowAnonymous: 'true', 'Metrics:StateMaxAgeSeconds': '5', OTEL_EXPORTER_OTLP_ENDPOINT: 'http://collector:4318' });
    expect(cfg).toEqual({ allowAnonymousMetrics: true, stateMaxAgeSeconds: 5, otlpEndpoint: new URL('http://collector:4318') });
  });

  it.each([
    ['Metrics__AllowAnonymous', 'maybe', 'Metrics:AllowAnonymous'],
    ['Metrics__StateMaxAgeSeconds', '31', 'Metrics:StateMaxAgeSeconds'],
    ['Metrics__StateMaxAgeSeconds', 'soon', 'Metrics:StateMaxAgeSeconds'],
    ['OTEL_EXPORTER_OTLP_ENDPOINT', 'not a url', 'OTEL_EXPORTER_OTLP_ENDPOINT'],
    ['OTEL_EXPORTER_OTLP_ENDPOINT', 'grpc://collector:4317', 'OTEL_EXPORTER_OTLP_ENDPOINT'],
  ])('a bad %s (%s) fails naming the setting', (name, value, setting) => {
    let err: unknown;
    try {
      read({ [name]: value });
    } catch (e) {
      err = e;
    }
    expect(err).toBeInstanceOf(ConfigError);
    expect((err as ConfigError).setting).toBe(setting);
  });
});
