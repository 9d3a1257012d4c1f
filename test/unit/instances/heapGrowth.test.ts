import { getHeapStatistics, setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { MAX_FLOOR_PERCENT, growingPercentFor, heapGrowingPercentNow, startHeapGrowth, stopHeapGrowth } from '../../../lib/instances/heapGrowth';

const MB = 1024 * 1024;

describe('growingPercentFor', () => {
  it('raises the percent while the live heap is small, so the next limit reaches the floor', () => {
    // 128 MB live, floor 256 MB: 100 % (the limit is 256 MB).
    expect(growingPercentFor(128 * MB, 30, 256 * MB)).toBe(100);
    // 200 MB live: 28 % would do, the percent (30) is more.
    expect(growingPercentFor(200 * MB, 30, 256 * MB)).toBe(30);
    // Above the floor the percent applies as set.
    expect(growingPercentFor(1024 * MB, 30, 256 * MB)).toBe(30);
    expect(growingPercentFor(1024 * MB, 120, 256 * MB)).toBe(120);
  });

  it('never asks for more than V8 grows of its own (4x)', () => {
    expect(growingPercentFor(10 * MB, 30, 256 * MB)).toBe(MAX_FLOOR_PERCENT);
    expect(MAX_FLOOR_PERCENT).toBe(300);
  });

  it('leaves 0 (V8 heuristic) and a floor of 0 alone', () => {
    expect(growingPercentFor(10 * MB, 0, 256 * MB)).toBe(0);
    expect(growingPercentFor(10 * MB, 30, 0)).toBe(30);
    expect(growingPercentFor(0, 30, 256 * MB)).toBe(30);
  });
});

describe('startHeapGrowth', () => {
  // The jest worker's own heuristic back after these tests (0: V8's own).
  afterAll(() => setFlagsFromString('--heap-growing-percent=0'));
  afterEach(() => stopHeapGrowth());

  it('sets the percent the live heap calls for, and follows it after each full collection', async () => {
    setFlagsFromString('--expose-gc');
    const gc = runInNewContext('gc') as () => void;
    gc();
    const live = getHeapStatistics().used_heap_size;
    // A floor twice this process's heap: about 100 %.
    const floorMB = Math.ceil((2 * live) / MB);
    startHeapGrowth(30, floorMB);
    const first = heapGrowingPercentNow();
    expect(first).toBeGreaterThan(80);
    expect(first).toBeLessThanOrEqual(MAX_FLOOR_PERCENT);
    // Keep more than the floor alive: after the next full collection the percent applies as set.
    const kept = Array.from({ length: 40 }, () => new Array(Math.ceil((floorMB * MB) / 8 / 40)).fill(1.5));
    gc();
    await new Promise((r) => setTimeout(r, 50));
    expect(kept.length).toBe(40);
    expect(heapGrowingPercentNow()).toBe(30);
  });

  it('sets nothing for 0, V8 keeping its own heuristic', () => {
    const before = heapGrowingPercentNow();
    startHeapGrowth(0, 256);
    expect(heapGrowingPercentNow()).toBe(before);
  });
});
