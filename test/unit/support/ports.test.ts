import net from 'node:net';
import { onFreePorts, portFree } from '../../support/ports';

/** The fixtures' port picking (test/support/ports.ts): a start that lost a port to another process is tried again. */

function hold(port: number): Promise<net.Server> {
  return new Promise((resolve) => {
    const server = net.createServer();
    server.listen(port, '127.0.0.1', () => resolve(server));
  });
}

test('a start that fails because another process took its port is tried again on new ports', async () => {
  const held: net.Server[] = [];
  const tried: number[][] = [];
  try {
    const ports = await onFreePorts(2, async (candidate) => {
      tried.push(candidate);
      if (tried.length === 1) {
        held.push(await hold(candidate[1])); // someone else binds the second port first
        throw new Error('server exited during start');
      }
      return candidate;
    });
    expect(tried).toHaveLength(2);
    expect(ports).toEqual(tried[1]);
    expect(new Set(ports).size).toBe(2);
    expect(await portFree(tried[0][1])).toBe(false);
  } finally {
    await Promise.all(held.map((s) => new Promise((r) => s.close(r))));
  }
});

test('any other failure is thrown at once, with its own message', async () => {
  let attempts = 0;
  await expect(
    onFreePorts(1, async () => {
      attempts++;
      throw new Error('bad configuration');
    }),
  ).rejects.toThrow('bad configuration');
  expect(attempts).toBe(1);
});
