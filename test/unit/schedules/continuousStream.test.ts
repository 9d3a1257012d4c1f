import { ConnectorError, type ChangeStream, type Connector } from '../../../lib/connectors/sdk';
import { SETTLE_LOOK_MS, StreamKeeper } from '../../../lib/schedules/continuousStream';
import { continuousStreamNotifications, continuousStreamUp } from '../../../lib/telemetry/metrics';

/**
 * The follower's stream keeper (lib/schedules/continuousStream.ts) over a stand-in connector whose stream the test
 * drives: the keeper's own logic (wake on open, on each notification and on a drop; reopen after a drop or a
 * failed open; the gauge) is what is under test here. The directory streams themselves are tested against the
 * real servers (test/integration/ldap/changeStream.test.ts, continuousStream.test.ts).
 */

/** A connector whose streams the test ends and notifies through. */
function standIn(opens: Array<'fail' | 'none' | 'open'>) {
  const streams: Array<{ notify: () => void; end: (e: Error) => void; closed: boolean }> = [];
  let closedConnectors = 0;
  const connector = (): Connector => ({
    type: 'ldap',
    testConnection: async () => ({ ok: true }) as never,
    schema: async () => ({ objectTypes: [] }) as never,
    close: async () => void closedConnectors++,
    openChangeStream: async (onChange) => {
      const what = opens.shift() ?? 'open';
      if (what === 'fail') throw new ConnectorError('connection_failed', 'cannot reach the directory (ECONNREFUSED).', { retriable: true });
      if (what === 'none') return null;
      let end: (e: Error) => void = () => undefined;
      const s = { notify: onChange, end: (e: Error) => end(e), closed: false };
      streams.push(s);
      const stream: ChangeStream = { kind: 'test stream', ended: new Promise((r) => (end = r)), close: () => void (s.closed = true) };
      return stream;
    },
  });
  return { make: async () => connector(), streams, closed: () => closedConnectors };
}

async function until(what: string, check: () => boolean | Promise<boolean>, timeoutMs = 10_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`waited in vain for ${what}`);
    await new Promise((r) => setTimeout(r, 10));
  }
}

const gauge = async (name: string) => (await continuousStreamUp.get()).values.find((v) => v.labels.connector === name)?.value;
const notified = async (name: string) => (await continuousStreamNotifications.get()).values.find((v) => v.labels.connector === name)?.value ?? 0;

describe('the change stream keeper', () => {
  test('open: the follower is woken once, then at each notification (counted); the gauge shows 1; closed, the stream and the sample go', async () => {
    const s = standIn(['open']);
    let wakes = 0;
    const keeper = new StreamKeeper('c1', 'Dir1', () => wakes++, s.make);
    await until('the stream open', () => keeper.state === 'up');
    expect(keeper.kind).toBe('test stream');
    expect(wakes).toBe(1);
    expect(await gauge('Dir1')).toBe(1);
    expect(await notified('Dir1')).toBe(0);
    s.streams[0].notify();
    s.streams[0].notify();
    expect(wakes).toBe(3);
    expect(await notified('Dir1')).toBe(2);
    keeper.close();
    expect(s.streams[0].closed).toBe(true);
    expect(await gauge('Dir1')).toBeUndefined();
    await until('the connector closed', () => s.closed() === 1);
  });

  test('a drop wakes the follower, shows 0 and reopens after a second; a failed open is tried again later', async () => {
    const s = standIn(['open', 'fail', 'open']);
    let wakes = 0;
    const keeper = new StreamKeeper('c2', 'Dir2', () => wakes++, s.make);
    try {
      await until('the stream open', () => keeper.state === 'up');
      s.streams[0].end(new ConnectorError('connection_failed', 'the connection to the directory was lost.', { retriable: true }));
      await until('the stream down', () => keeper.state === 'down');
      expect(wakes).toBe(2);
      expect(await gauge('Dir2')).toBe(0);
      // The first reopen fails (1 s), the second (2 s later) opens and wakes the follower again.
      await until('the stream open again', () => keeper.state === 'up' && s.streams.length === 2, 10_000);
      expect(wakes).toBe(3);
      expect(await gauge('Dir2')).toBe(1);
      s.streams[0].notify();
      expect(wakes).toBe(3);
      expect(await notified('Dir2')).toBe(0);
    } finally {
      keeper.close();
    }
  });

  test('the follower looks again SETTLE_LOOK_MS after an open (a change in the instant before the server registered the stream); not after a close', async () => {
    const s = standIn(['open', 'open']);
    let wakes = 0;
    const keeper = new StreamKeeper('c4', 'Dir4', () => wakes++, s.make);
    try {
      await until('the stream open', () => keeper.state === 'up');
      expect(wakes).toBe(1);
      await new Promise((r) => setTimeout(r, SETTLE_LOOK_MS / 2));
      expect(wakes).toBe(1);
      await until('the second look', () => wakes === 2, SETTLE_LOOK_MS + 2_000);
    } finally {
      keeper.close();
    }
    let closedWakes = 0;
    const closed = new StreamKeeper('c5', 'Dir5', () => closedWakes++, s.make);
    await until('the other stream open', () => closed.state === 'up');
    closed.close();
    await new Promise((r) => setTimeout(r, SETTLE_LOOK_MS + 500));
    expect(closedWakes).toBe(1);
  });

  test('a source that offers no stream: state none, no sample, nothing reopened', async () => {
    const s = standIn(['none']);
    let wakes = 0;
    const keeper = new StreamKeeper('c3', 'Dir3', () => wakes++, s.make);
    await until('the answer', () => keeper.state === 'none');
    expect(wakes).toBe(0);
    expect(await gauge('Dir3')).toBeUndefined();
    keeper.close();
  });
});
