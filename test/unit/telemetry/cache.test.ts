import { Cached } from '../../../lib/telemetry/cache';

describe('Cached (the state gauges read storage at most once per 30 s)', () => {
  let now = 0;
  let reads = 0;
  let fail = false;
  const read = async () => {
    reads++;
    if (fail) throw new Error('storage down');
    return reads;
  };
  beforeEach(() => {
    now = 1_000;
    reads = 0;
    fail = false;
  });

  it('reads once within the maximum age, again after it', async () => {
    const c = new Cached(read, 30_000, () => now);
    expect(await c.get()).toBe(1);
    now += 29_999;
    expect(await c.get()).toBe(1);
    now += 1;
    expect(await c.get()).toBe(2);
    expect(reads).toBe(2);
  });

  it('shares a read in flight between callers', async () => {
    const c = new Cached(read, 30_000, () => now);
    const [a, b, d] = await Promise.all([c.get(), c.get(), c.get()]);
    expect([a, b, d]).toEqual([1, 1, 1]);
    expect(reads).toBe(1);
  });

  it('keeps no failure: the next caller reads again', async () => {
    const c = new Cached(read, 30_000, () => now);
    fail = true;
    await expect(c.get()).rejects.toThrow('storage down');
    fail = false;
    expect(await c.get()).toBe(2);
  });
});
