import { HttpHost } from '../../../lib/runtime/httpHost';
import type { InvocationOutcome } from '../../../lib/runtime/invoke';
import { Logger } from '../../../lib/runtime/logger';
import { FunctionRegistry } from '../../../lib/runtime/registry';

/**
 * A route template starting with `~/` is outside the host.json route prefix (the web console at /console while
 * the API stays under /api), as in ASP.NET Core attribute routes. The whole path through a real HTTP host is
 * tested by test/integration/console (the console at /console/, and /api/console/ a 404).
 */
describe('HTTP host: routes outside the route prefix', () => {
  const registry = new FunctionRegistry();
  const http = (name: string, route: string) =>
    registry.registerFunction(
      { name, bindings: { req: { type: 'httpTrigger', direction: 'in', methods: ['GET'], route }, $return: { type: 'http', direction: 'out' } } },
      () => undefined,
    );
  http('getItem', 'items/{id}');
  http('getConsole', '~/console/{*path}');
  const host = new HttpHost({
    registry,
    logger: new Logger({ write: () => undefined }),
    routePrefix: 'api',
    bodyLimit: 1024,
    invoke: () => new Promise<InvocationOutcome>(() => undefined),
    extensions: [],
  });

  it('keeps prefixed routes and rooted routes in separate tables', () => {
    expect(host.routes.all.map((e) => e.target.metadata.name)).toEqual(['getItem']);
    expect(host.rootRoutes.all.map((e) => e.target.metadata.name)).toEqual(['getConsole']);
  });

  it('matches a rooted route against the whole path, with its catch-all', () => {
    expect(host.rootRoutes.match('GET', '/console/mesh/abc')).toMatchObject({ kind: 'match', params: { path: 'mesh/abc' } });
    expect(host.rootRoutes.match('GET', '/console')).toMatchObject({ kind: 'match' });
    expect(host.rootRoutes.match('GET', '/api/console/x').kind).toBe('not-found');
    expect(host.routes.match('GET', '/console/x').kind).toBe('not-found');
  });

  it('lists the rooted route without the prefix', () => {
    expect(host.urlFor('~/console/{*path}', 'http://127.0.0.1:7071')).toBe('http://127.0.0.1:7071/console/{*path}');
    expect(host.urlFor('items/{id}', 'http://127.0.0.1:7071')).toBe('http://127.0.0.1:7071/api/items/{id}');
  });
});
