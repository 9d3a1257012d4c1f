import { ConnectorError } from '../../../../lib/connectors/sdk';
import { resolveSqlConfig } from '../../../../lib/connectors/sql/config';
import type { QueryResult, SqlSession } from '../../../../lib/connectors/sql/drivers';
import { ExportConnection } from '../../../../lib/connectors/sql/export';

/** An in-memory session: what ExportConnection asks of a connection, and a record of what it was asked. */
class FakeSession implements SqlSession {
  readonly dialect = 'postgres' as const;
  closed = false;
  dropped = false;
  failBegin = false;
  watching: AbortSignal | undefined;
  readonly calls: string[] = [];
  constructor(readonly id: number) {}
  async query(): Promise<QueryResult> {
    return { rows: [], fields: [], rowCount: 1 };
  }
  async *stream(): AsyncGenerator<never> {
    throw new Error('not used');
  }
  abortOn(signal?: AbortSignal): void {
    this.watching = signal;
  }
  usable(): boolean {
    return !this.closed && !this.dropped;
  }
  async begin(): Promise<void> {
    this.calls.push('BEGIN');
    if (this.failBegin) throw new ConnectorError('connection_failed', 'Connection terminated');
  }
  async commit(): Promise<void> {
    this.calls.push('COMMIT');
  }
  async rollback(): Promise<void> {
    this.calls.push('ROLLBACK');
  }
  async close(): Promise<void> {
    this.closed = true;
  }
}

describe('SQL export connection shared by a connector’s batches', () => {
  const config = resolveSqlConfig(
    {
      dialect: 'postgres',
      host: '127.0.0.1',
      database: 'd',
      user: 'u',
      password: 'p',
      objectType: 'User',
      anchorColumn: 'id',
      fullImportQuery: 'SELECT id FROM t',
    },
    {},
  );
  let opened: FakeSession[];
  const connection = (idleMs = 30_000) =>
    new ExportConnection(config, idleMs, async (signal) => {
      // As the drivers do: a connection opened for a batch watches its signal.
      const s = new FakeSession(opened.length + 1);
      s.abortOn(signal);
      opened.push(s);
      return s;
    });
  const batch = (s: SqlSession) => s.commit().then(() => (s as FakeSession).id);
  beforeEach(() => {
    opened = [];
  });

  it('gives every batch the same connection, a transaction begun; close() closes it', async () => {
    const c = connection();
    expect([await c.run(undefined, batch), await c.run(undefined, batch), await c.run(undefined, batch)]).toEqual([1, 1, 1]);
    expect(opened[0].calls).toEqual(['BEGIN', 'COMMIT', 'BEGIN', 'COMMIT', 'BEGIN', 'COMMIT']);
    expect(opened[0].closed).toBe(false);
    await c.close();
    expect(opened[0].closed).toBe(true);
    // A batch after close() has a connection of its own, closed when it ends.
    expect(await c.run(undefined, batch)).toBe(2);
    expect(opened[1].closed).toBe(true);
  });

  it('does not use a kept connection the server closed; a BEGIN that fails on a kept one goes on a new one', async () => {
    const c = connection();
    await c.run(undefined, batch);
    opened[0].dropped = true;
    expect(await c.run(undefined, batch)).toBe(2);
    expect(opened[0].closed).toBe(true);
    opened[1].failBegin = true;
    expect(await c.run(undefined, batch)).toBe(3);
    expect(opened[1].closed).toBe(true);
    // A BEGIN that fails on a new connection is the batch's failure.
    const fresh = new ExportConnection(config, 30_000, async () => Object.assign(new FakeSession(9), { failBegin: true }));
    await expect(fresh.run(undefined, batch)).rejects.toThrow('Connection terminated');
    await c.close();
  });

  it('drops the connection after a batch that threw, and after one whose cancel came as it ended', async () => {
    const c = connection();
    await expect(
      c.run(undefined, async () => {
        throw new ConnectorError('connection_failed', 'lost');
      }),
    ).rejects.toThrow('lost');
    expect(opened[0].closed).toBe(true);
    const cancel = new AbortController();
    expect(
      await c.run(cancel.signal, async (s) => {
        expect((s as FakeSession).watching).toBe(cancel.signal);
        await s.commit();
        cancel.abort();
        return 'committed';
      }),
    ).toBe('committed');
    expect(opened[1].closed).toBe(true);
    expect(opened[1].watching).toBeUndefined();
    // A signal aborted before the batch: nothing is opened.
    await expect(c.run(cancel.signal, batch)).rejects.toMatchObject({ code: 'aborted' });
    expect(opened).toHaveLength(2);
    // The next batch opens a new connection and keeps it, watching no signal once it ended.
    const later = new AbortController();
    expect(await c.run(later.signal, batch)).toBe(3);
    expect(opened[2]).toMatchObject({ closed: false, watching: undefined });
    await c.close();
  });

  it('closes a connection kept idle for idleMs', async () => {
    const c = connection(50);
    await c.run(undefined, batch);
    expect(opened[0].closed).toBe(false);
    await new Promise((r) => setTimeout(r, 200));
    expect(opened[0].closed).toBe(true);
    expect(await c.run(undefined, batch)).toBe(2);
    await c.close();
  });
});
