import { PerformanceObserver, constants, type PerformanceEntry } from 'node:perf_hooks';
import { getHeapStatistics, setFlagsFromString } from 'node:v8';

/**
 * How far V8 lets the heap grow past its live data before the next full collection: `Engine:HeapGrowingPercent`
 * (default 30) with a floor, `Engine:HeapFloorMB` (default 128).
 *
 * The percent keeps a process that allocates fast and keeps little (a bulk import) near its live data: with V8's
 * own heuristic a 100,000-object import held three to four times its live heap. But on a small heap the same
 * percent leaves a few megabytes of room: a service whose live heap is 50-75 MB ran a full collection every
 * 15-20 MB it kept, three during a 4-second export of 5,000 people to PostgreSQL, and the concurrent marking of
 * each took a helper thread's CPU from the storage and the target on a 2-core server (about 0.8 s of CPU per such
 * export, BENCHMARKS.md). So while the live heap is small, the percent is raised until the next limit reaches the
 * floor (at most V8's own largest factor, 4x); above `floor / (1 + percent)` of live data the percent applies as set.
 *
 * V8 reads the percent when a full collection ends, to set the next limit; the percent for the live data each
 * full collection leaves is set just after it (a process's live data moves slowly, so the next limit is the one
 * it calls for).
 */

/** V8's largest heap growing factor of its own (4x): the floor never asks for more. */
export const MAX_FLOOR_PERCENT = 300;

/**
 * The growing percent for `liveBytes` of live heap: `percent`, or more (up to {@link MAX_FLOOR_PERCENT}) so that
 * the next limit, live x (1 + percent/100), reaches `floorBytes`. 0 (V8's own heuristic) stays 0.
 */
export function growingPercentFor(liveBytes: number, percent: number, floorBytes: number): number {
  if (percent <= 0 || floorBytes <= 0 || !(liveBytes > 0)) return percent;
  const wanted = Math.ceil((floorBytes / liveBytes - 1) * 100);
  return Math.max(percent, Math.min(MAX_FLOOR_PERCENT, wanted));
}

let observer: PerformanceObserver | undefined;
let current = 0;

function set(percent: number): void {
  if (percent === current) return;
  current = percent;
  setFlagsFromString(`--heap-growing-percent=${percent}`);
}

/**
 * Apply the percent and its floor for the life of the process (until {@link stopHeapGrowth}). Percent 0: V8's
 * own heuristic, nothing is set (as before this process set anything).
 */
export function startHeapGrowth(percent: number, floorMB: number): void {
  stopHeapGrowth();
  if (percent <= 0) return;
  const floor = floorMB * 1024 * 1024;
  set(growingPercentFor(getHeapStatistics().used_heap_size, percent, floor));
  if (floor <= 0) return;
  observer = new PerformanceObserver((list) => {
    if (list.getEntries().some(isFull)) set(growingPercentFor(getHeapStatistics().used_heap_size, percent, floor));
  });
  observer.observe({ entryTypes: ['gc'] });
}

function isFull(e: PerformanceEntry): boolean {
  return (e as PerformanceEntry & { detail?: { kind?: number } }).detail?.kind === constants.NODE_PERFORMANCE_GC_MAJOR;
}

/** Stop following the collections; the percent last set stays. */
export function stopHeapGrowth(): void {
  observer?.disconnect();
  observer = undefined;
}

/** The percent this process set last (0: none; V8's own heuristic). */
export function heapGrowingPercentNow(): number {
  return current;
}
