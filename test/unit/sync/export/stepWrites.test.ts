import { StepWrites } from '../../../../lib/sync/export/exportPage';
import type { RunInfo } from '../../../../lib/sync/run/runTypes';

/**
 * The records a step's pages leave behind them (StepWrites.behind): written while the next pages run, waited for
 * by the step's end, and a failure among them fails the step. No rows or links are queued here, so the flush
 * reaches no storage.
 */
const info = { runId: 'run-1', connectorId: 'c-1' } as RunInfo;

describe('StepWrites: records written behind the pages', () => {
  it('the flush waits for every record under way, in any order of completion', async () => {
    const writes = new StepWrites(info);
    const done: string[] = [];
    let release!: () => void;
    const slow = new Promise<void>((res) => (release = res)).then(() => done.push('slow'));
    writes.behind(slow);
    writes.behind(Promise.resolve().then(() => done.push('fast')));
    expect(writes.pending).toBe(true);
    let flushed = false;
    const flush = writes.flush().then(() => (flushed = true));
    await new Promise((res) => setImmediate(res));
    expect(flushed).toBe(false);
    expect(done).toEqual(['fast']);
    release();
    await flush;
    expect(done).toEqual(['fast', 'slow']);
    expect(writes.pending).toBe(false);
  });

  it('a failed record fails the flush once, with its own error, and is no unhandled rejection', async () => {
    const unhandled: unknown[] = [];
    const onUnhandled = (reason: unknown) => unhandled.push(reason);
    process.on('unhandledRejection', onUnhandled);
    try {
      const writes = new StepWrites(info);
      const refused = Object.assign(new Error('The table refused the write.'), { statusCode: 500 });
      writes.behind(Promise.reject(refused));
      writes.behind(Promise.reject(new Error('a second failure')));
      // Let the rejections settle before anybody waits for them.
      await new Promise((res) => setImmediate(res));
      await expect(writes.flush()).rejects.toBe(refused);
      expect(writes.pending).toBe(false);
      await expect(writes.flush()).resolves.toBeUndefined();
      await new Promise((res) => setImmediate(res));
      expect(unhandled).toEqual([]);
    } finally {
      process.off('unhandledRejection', onUnhandled);
    }
  });
});
