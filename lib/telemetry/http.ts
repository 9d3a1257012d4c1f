import type { HttpRequest, HttpResponseInit, InvocationContext } from '@azure/functions';
import { methodLabel, routeLabel } from './labels';
import { httpDuration } from './metrics';
import { withServerSpan } from './tracing';

/**
 * Measure one Admin API request (`meshsync_http_request_duration_seconds`) and, with tracing on, run it in a
 * server span. The route label is the registration's route template, read from the invocation's own
 * registration (`context.options.trigger.route`), which both the local runtime and the Functions host give.
 * `handle` must not throw (the API boundary turns every error into an answer first).
 */
export async function observeRequest(request: HttpRequest, context: InvocationContext, handle: () => Promise<HttpResponseInit>): Promise<HttpResponseInit> {
  const started = performance.now();
  const route = routeLabel({ trigger: context.options?.trigger, functionName: context.functionName });
  const method = methodLabel(request.method);
  const answer = await withServerSpan({ method, route, headers: request.headers }, handle);
  httpDuration.observe({ route, method, status: String(answer.status ?? 200) }, (performance.now() - started) / 1000);
  return answer;
}
