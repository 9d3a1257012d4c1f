import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { freePort } from '../../../lib/runtime/azurite';
import { HttpHost } from '../../../lib/runtime/httpHost';
import type { InvocationOutcome } from '../../../lib/runtime/invoke';
import { Logger } from '../../../lib/runtime/logger';
import { FunctionRegistry } from '../../../lib/runtime/registry';

/**
 * HTTP streaming forwards each request to the library's own HTTP server. When that forward fails, the
 * library never sees the request and its invocation waits for it forever: the host must not wait with it.
 */
describe('HTTP host: a failing forward to the worker never hangs a request', () => {
  const lines: string[] = [];
  let host: HttpHost;
  let resetting: http.Server;
  let base: string;
  let invocations = 0;

  async function startHost(httpUri: string): Promise<void> {
    const registry = new FunctionRegistry();
    registry.registerFunction(
      { name: 'echo', bindings: { req: { type: 'httpTrigger', direction: 'in', methods: ['GET', 'POST'] }, $return: { type: 'http', direction: 'out' } } },
      () => undefined,
    );
    host = new HttpHost({
      registry,
      logger: new Logger({ write: (l) => lines.push(l) }),
      routePrefix: 'api',
      bodyLimit: 1024 * 1024,
      // Like the library's invocation waiting in waitForProxyRequest for a request that never arrives.
      invoke: () => {
        invocations++;
        return new Promise<InvocationOutcome>(() => undefined);
      },
      extensions: [],
      httpUri,
      forwardGraceMs: 300,
    });
    const address = await host.listen(0, '127.0.0.1');
    host.open();
    base = `http://127.0.0.1:${address.port}`;
  }

  afterEach(async () => {
    await host?.close(1000);
    await new Promise<void>((resolve) => (resetting ? resetting.close(() => resolve()) : resolve()));
  });

  function get(path: string, agent: http.Agent, method = 'GET', body?: string): Promise<number> {
    return new Promise((resolve, reject) => {
      const req = http.request(`${base}${path}`, { method, agent }, (res) => {
        res.resume();
        res.on('end', () => resolve(res.statusCode ?? 0));
      });
      req.on('error', reject);
      req.end(body);
    });
  }

  it('answers 1,024 concurrent requests 502 in bounded time when the worker server resets every forward', async () => {
    resetting = http.createServer((req) => req.socket.destroy());
    await new Promise<void>((resolve) => resetting.listen(0, '127.0.0.1', () => resolve()));
    await startHost(`http://127.0.0.1:${(resetting.address() as AddressInfo).port}/`);
    const agent = new http.Agent({ keepAlive: true, maxSockets: 1024 });
    const t0 = Date.now();
    const statuses = await Promise.all(
      Array.from({ length: 1024 }, (_, i) => (i % 2 ? get(`/api/echo?i=${i}`, agent) : get('/api/echo', agent, 'POST', 'x'.repeat(1000)))),
    );
    const elapsed = Date.now() - t0;
    agent.destroy();
    expect(statuses.filter((s) => s !== 502)).toEqual([]);
    expect(invocations).toBeGreaterThanOrEqual(1024);
    // 300 ms grace per request, all waiting side by side: far below what a hang would take.
    expect(elapsed).toBeLessThan(20_000);
    expect(lines.join('')).toMatch(/Forwarding invocation [0-9a-f-]+ of 'echo' to the worker's HTTP server failed \(.+\); the invocation is abandoned\./);
  }, 60_000);

  it('answers 502 when nothing listens where the worker server should be, and closes without waiting', async () => {
    const port = await freePort();
    await startHost(`http://127.0.0.1:${port}/`);
    const agent = new http.Agent({ keepAlive: true, maxSockets: 64 });
    const statuses = await Promise.all(Array.from({ length: 64 }, () => get('/api/echo', agent)));
    agent.destroy();
    expect(new Set(statuses)).toEqual(new Set([502]));
    const t0 = Date.now();
    await host.close(10_000);
    // No request is still in flight: close does not sit out its grace period.
    expect(Date.now() - t0).toBeLessThan(2000);
  });
});
