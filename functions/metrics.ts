import { app, type HttpResponseInit } from '@azure/functions';
import { authorize } from '../lib/auth/authorize';
import { telemetryConfig } from '../lib/telemetry/config';
import { metricsText } from '../lib/telemetry/metrics';

/** This process's Prometheus registry (each engine process has its own; Prometheus sums them). */
async function getMetrics(): Promise<HttpResponseInit> {
  const { contentType, body } = await metricsText();
  return { status: 200, headers: { 'content-type': contentType }, body };
}

const anonymousAllowed = () => telemetryConfig().allowAnonymousMetrics;

app.http('getMetrics', { route: 'metrics', methods: ['GET'], handler: authorize('metrics.read', getMetrics, { anonymousWhen: anonymousAllowed }) });
