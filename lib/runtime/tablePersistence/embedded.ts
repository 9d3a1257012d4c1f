import { readFileSync } from 'node:fs';
import os from 'node:os';
import type { AzuriteOptions } from '../azurite';
import { getSetting, RuntimeConfigError } from '../settings';
import { defaultDataWarnMB, defaultHeapMB, type TableStats } from './stats';

/** The setting through which the app's `GET /health` finds the embedded table process's stats file. */
export const STATS_FILE_SETTING = 'Storage__AzuriteStatsFile';

function positive(env: NodeJS.ProcessEnv, name: string, max: number): number | undefined {
  const raw = getSetting(name, env);
  if (raw === undefined || raw.trim() === '') return undefined;
  const n = Number(raw);
  if (!Number.isFinite(n) || n <= 0 || n > max) throw new RuntimeConfigError(name, `${name} must be a number above 0 and at most ${max}, not '${raw}'.`);
  return n;
}

/** `Storage:AzuriteBackgroundLoadMB` when not set: tables above 64 MB on disk load in the background at start. */
export const DEFAULT_BACKGROUND_LOAD_MB = 64;

/**
 * The embedded Azurite's limits from the settings: `Storage:AzuriteMaxHeapMB` (heap limit of the table
 * process; default half the machine's memory), `Storage:AzuriteHeapWarnPercent` (default 70),
 * `Storage:AzuriteDataWarnMB` (table data on disk; default a third of the heap limit),
 * `Storage:AzuriteSaveIntervalMs` (default 5000) and `Storage:AzuriteBackgroundLoadMB` (default 64; 0: every
 * table loads before the storage answers).
 */
export function embeddedAzuriteLimits(
  env: NodeJS.ProcessEnv,
  totalMem = os.totalmem(),
): Required<Pick<AzuriteOptions, 'maxHeapMB' | 'heapWarnPercent' | 'dataWarnMB' | 'tableSaveMs' | 'backgroundLoadMB'>> {
  const maxHeapMB = positive(env, 'Storage:AzuriteMaxHeapMB', 1024 * 1024) ?? defaultHeapMB(totalMem);
  const background = getSetting('Storage:AzuriteBackgroundLoadMB', env);
  return {
    maxHeapMB,
    heapWarnPercent: positive(env, 'Storage:AzuriteHeapWarnPercent', 100) ?? 70,
    dataWarnMB: positive(env, 'Storage:AzuriteDataWarnMB', 1024 * 1024 * 1024) ?? defaultDataWarnMB(maxHeapMB),
    tableSaveMs: positive(env, 'Storage:AzuriteSaveIntervalMs', 3_600_000) ?? 5000,
    backgroundLoadMB:
      background !== undefined && background.trim() === '0' ? 0 : (positive(env, 'Storage:AzuriteBackgroundLoadMB', 1024 * 1024) ?? DEFAULT_BACKGROUND_LOAD_MB),
  };
}

export function readTableStats(file: string): TableStats | undefined {
  try {
    return JSON.parse(readFileSync(file, 'utf8')) as TableStats;
  } catch {
    return undefined;
  }
}

/**
 * Log the stats file's warnings now (after Azurite loaded its data) and each new one later (checked every
 * minute). Returns the function that stops watching.
 */
export function watchTableStats(file: string, warn: (message: string) => void, everyMs = 60_000): () => void {
  let shown = new Set<string>();
  const check = () => {
    const warnings = readTableStats(file)?.warnings ?? [];
    // A warning's figures change from one check to the next: compare on its words before the first figure.
    const kind = (w: string) => w.replace(/\d[\s\S]*$/, '');
    const keys = new Set(warnings.map(kind));
    for (const w of warnings) if (!shown.has(kind(w))) warn(w);
    shown = keys;
  };
  check();
  const timer = setInterval(check, everyMs);
  timer.unref();
  return () => clearInterval(timer);
}
