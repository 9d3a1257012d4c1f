import type { HttpRequest, HttpResponseInit, InvocationContext } from '@azure/functions';
import { methodLabel, routeLabel } from './labels';
import { httpDuration } from './metrics';
import { tracingEnabled, withServerSpan } from './tracing';

type Observe = (seconds: number) => void;

/** Route labels by registered route, and the histogram's children by label values: both bounded by the registrations. */
const routes = new Map<string, string>();
const children = new Map<string, Observe>();

function observerOf(route: string, method: string, status: number): Observe {
  const key = `${route} ${method} ${status}`;
  let observe = children.get(key);
  if (!observe) {
    const child = httpDuration.labels(route, method, String(status));
    observe = (seconds) => child.observe(seconds);
    children.set(key, observe);
  }
  return observe;
}

function routeOf(context: InvocationContext): string {
  const trigger = context.options?.trigger;
  const key = `${trigger?.type}\u0000${typeof trigger?.route === 'string' ? trigger.route : ''}\u0000${context.functionName}`;
  let route = routes.get(key);
  if (route === undefined) routes.set(key, (route = routeLabel({ trigger, functionName: context.functionName })));
  return route;
}

/**
 * Measure one Admin API request (`meshsync_http_request_duration_seconds`) and, with tracing on, run it in a
 * server span. The route label is the registration's route template, read from the invocation's own
 * registration (`context.options.trigger.route`), which both the local runtime and the Functions host give.
 * `handle` must not throw (the API boundary turns every error into an answer first).
 */
export async function observeRequest(request: HttpRequest, context: InvocationContext, handle: () => Promise<HttpResponseInit>): Promise<HttpResponseInit> {
  const started = performance.now();
  const route = routeOf(context);
  const method = methodLabel(request.method);
  const answer = tracingEnabled() ? await withServerSpan({ method, route, headers: request.headers }, handle) : await handle();
  observerOf(route, method, answer.status ?? 200)((performance.now() - started) / 1000);
  return answer;
}
