import net from 'node:net';
import { freePort } from '../../lib/runtime/azurite';

/** Whether `port` on 127.0.0.1 can be bound now (nothing else holds it). */
export function portFree(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const probe = net.createServer();
    probe.once('error', () => resolve(false));
    probe.listen(port, '127.0.0.1', () => probe.close(() => resolve(true)));
  });
}

/**
 * Start a server on `count` free loopback ports. A port is free when picked, but another process (a parallel
 * suite, an Azurite) can take it before the server binds it: the server then fails to start. When `start`
 * throws and one of its ports can no longer be bound, it is tried again on new ports (up to 5 times); any
 * other failure is thrown at once.
 */
export async function onFreePorts<T>(count: number, start: (ports: number[]) => Promise<T>): Promise<T> {
  for (let attempt = 1; ; attempt++) {
    const ports: number[] = [];
    while (ports.length < count) {
      const port = await freePort();
      if (!ports.includes(port)) ports.push(port);
    }
    try {
      return await start(ports);
    } catch (error) {
      if (attempt >= 5) throw error;
      const taken = (await Promise.all(ports.map(portFree))).some((free) => !free);
      if (!taken) throw error;
    }
  }
}
