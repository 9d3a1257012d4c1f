import { execFileSync } from 'node:child_process';
import net from 'node:net';
import os from 'node:os';
import { startRuntime, type RuntimeProcess } from '../runtime/runtimeProcess';

/**
 * The @azure/functions library serves HTTP streaming through a proxy server of its own that the host forwards
 * each request to. Only the host, in the same process, talks to it: it must listen on loopback, not on every
 * interface. Observed from outside: the listening TCP sockets of the runtime process, as `ss` reports them.
 */

/** `local address:port` of every listening TCP socket owned by `pid`. */
function listeningSockets(pid: number): { host: string; port: number }[] {
  const out = execFileSync('ss', ['-H', '-l', '-t', '-n', '-p'], { encoding: 'utf8' });
  return out
    .split('\n')
    .filter((line) => line.includes(`pid=${pid},`))
    .map((line) => {
      const local = line.trim().split(/\s+/)[3];
      const i = local.lastIndexOf(':');
      return { host: local.slice(0, i), port: Number(local.slice(i + 1)) };
    });
}

/** Resolves with 'connected' or the connection error's code. */
function tryConnect(host: string, port: number): Promise<string> {
  return new Promise((resolve) => {
    const socket = net.connect({ host, port, timeout: 3000 });
    socket.once('connect', () => {
      socket.destroy();
      resolve('connected');
    });
    socket.once('timeout', () => {
      socket.destroy();
      resolve('timeout');
    });
    socket.once('error', (err: NodeJS.ErrnoException) => resolve(err.code ?? err.message));
  });
}

describe('runtime: the HTTP streaming proxy listens on loopback only', () => {
  let rt: RuntimeProcess;

  beforeAll(async () => {
    rt = await startRuntime({ env: { SAMPLE_HTTP_STREAM: 'true' } });
  });

  afterAll(async () => {
    await rt?.stop();
  });

  it('binds every listening socket of the runtime process, the proxy included, to 127.0.0.1', async () => {
    expect(rt.stdout()).toContain('HTTP streaming');
    // Requests still go through the proxy.
    const res = await fetch(`${rt.baseUrl}/api/hello/proxy`);
    expect(res.status).toBe(200);
    const sockets = listeningSockets(rt.proc.pid!);
    const proxy = sockets.filter((s) => s.port !== rt.port);
    expect(sockets.map((s) => s.port)).toContain(rt.port);
    expect(proxy).toHaveLength(1);
    expect(sockets.map((s) => s.host)).toEqual(sockets.map(() => '127.0.0.1'));

    // From another address of this machine, when it has one, the proxy cannot be reached.
    const external = Object.values(os.networkInterfaces())
      .flat()
      .find((a) => a && a.family === 'IPv4' && !a.internal);
    if (external) expect(await tryConnect(external.address, proxy[0].port)).toBe('ECONNREFUSED');
  });
});
