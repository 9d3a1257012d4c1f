import http from 'node:http';
import net from 'node:net';

export const LOOPBACK = '127.0.0.1';

/** `listen(...)` arguments with the host set to loopback where the caller named none (port, options or no port). */
function loopbackArgs(args: unknown[]): unknown[] {
  const [first, second] = args;
  if (first === undefined || typeof first === 'function') return [{ port: 0, host: LOOPBACK }, ...args.slice(first === undefined ? 1 : 0)];
  if (typeof first === 'number' || (typeof first === 'string' && /^\d+$/.test(first))) {
    return typeof second === 'string' ? args : [first, LOOPBACK, ...args.slice(1)];
  }
  if (first !== null && typeof first === 'object' && !('path' in first) && !('fd' in first) && !('_handle' in first) && !('host' in first)) {
    return [{ ...first, host: LOOPBACK }, ...args.slice(1)];
  }
  return args; // a Unix socket path, a handle, or a host already named
}

function pin<S extends net.Server>(server: S): S {
  const target: net.Server = server;
  const listen = target.listen as (...args: unknown[]) => net.Server;
  target.listen = ((...args: unknown[]) => listen.apply(target, loopbackArgs(args))) as net.Server['listen'];
  return server;
}

/**
 * Run `fn` with every server it creates through `http.createServer` or `net.createServer` listening on
 * loopback unless it names a host. The @azure/functions library opens its HTTP streaming proxy with
 * `server.listen()` (all interfaces) while the host asks for its capabilities; the host is its only client, on
 * the same machine, so nothing else should be able to reach it. The servers keep the pinned `listen` (the
 * library may listen again on another port); the factories are restored when `fn` settles.
 */
export async function withLoopbackServers<T>(fn: () => Promise<T>): Promise<T> {
  const modules = { http: http as { createServer: typeof http.createServer }, net: net as { createServer: typeof net.createServer } };
  const originalHttp = modules.http.createServer;
  const originalNet = modules.net.createServer;
  modules.http.createServer = ((...args: Parameters<typeof http.createServer>) => pin(originalHttp(...args))) as typeof http.createServer;
  modules.net.createServer = ((...args: Parameters<typeof net.createServer>) => pin(originalNet(...args))) as typeof net.createServer;
  try {
    return await fn();
  } finally {
    modules.http.createServer = originalHttp;
    modules.net.createServer = originalNet;
  }
}

/** The proxy URI the library reports (`http://localhost:PORT/`) with the loopback address the proxy is bound to. */
export function loopbackUri(uri: string | undefined): string | undefined {
  if (!uri) return uri;
  try {
    const url = new URL(uri);
    if (url.hostname === 'localhost') url.hostname = LOOPBACK;
    return url.toString();
  } catch {
    return uri;
  }
}
