/**
 * Label values of the HTTP series, bounded whatever the request: the route is the registration's TEMPLATE
 * (`connectors/{id}`), never the path that was called, and the method one of a fixed list.
 */

/** The route label of an invocation that is not an HTTP registration with a known route. */
export const UNMATCHED_ROUTE = 'unmatched';

const METHODS = new Set(['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS']);

/** What the route label is made from: the invocation's trigger (`context.options.trigger`) and function name. */
export interface RouteSource {
  trigger?: { type?: string; route?: unknown };
  functionName?: string;
}

/**
 * The route template of an HTTP registration, as registered (`connectors/{id}`), with parameter constraints
 * and defaults dropped (`{id:guid}` -> `{id}`, `{id?}` -> `{id}`, `{*rest}` -> `{rest}`). A registration with
 * no route is served at its function name, as the Functions host does. Anything else is {@link UNMATCHED_ROUTE}.
 */
export function routeLabel(source: RouteSource): string {
  const trigger = source.trigger;
  if (!trigger || trigger.type !== 'httpTrigger') return UNMATCHED_ROUTE;
  const raw = typeof trigger.route === 'string' && trigger.route.trim() ? trigger.route : source.functionName;
  if (!raw) return UNMATCHED_ROUTE;
  return raw
    .trim()
    .replace(/^\/+|\/+$/g, '')
    .replace(/\{\*?([A-Za-z_][A-Za-z0-9_]*)[^}]*\}/g, '{$1}');
}

/** The method label: one of the HTTP methods, else `OTHER`. */
export function methodLabel(method: string | undefined): string {
  const m = (method ?? '').toUpperCase();
  return METHODS.has(m) ? m : 'OTHER';
}
