/**
 * What the embedded Azurite table process reports about itself (a small JSON file in the data folder,
 * rewritten every few seconds), and the warnings drawn from it. The service's `GET /health` reads the
 * `warnings` of this file; the host logs them.
 */

export const STATS_FILE = 'azurite-table-stats.json';

export interface TableStats {
  pid: number;
  updatedAt: string;
  heapUsedBytes: number;
  heapLimitBytes: number;
  rssBytes: number;
  /** Bytes of the table database on disk. */
  dataBytes: number;
  lastSave?: { at: string; ms: number; collectionsWritten: number; bytesWritten: number };
  lastSaveError?: { at: string; message: string };
  /** Large tables still loading in the background after the start (absent: none). */
  loading?: { tables: number; bytes: number };
  /** Interval between saves, stretched while saves are slow. */
  saveIntervalMs: number;
  warnings: string[];
}

export interface WarnThresholds {
  /** Warn when the heap used passes this share of the heap limit (percent). */
  heapPercent: number;
  /** Warn when the table data on disk passes this many bytes. */
  dataBytes: number;
}

const MB = 1024 * 1024;

/**
 * The heap limit of the Azurite table process when `Storage:AzuriteMaxHeapMB` is not set: half the
 * machine's memory (the table service holds every entity in memory), at least 1 GB.
 */
export function defaultHeapMB(totalMemBytes: number): number {
  return Math.max(1024, Math.floor(totalMemBytes / MB / 2));
}

/**
 * The on-disk size at which to warn when `Storage:AzuriteDataWarnMB` is not set: a third of the heap
 * limit. Entities take about 1.2 to 1.7 times their on-disk size in Azurite's heap (BENCHMARKS.md,
 * "Embedded storage"), so by then the heap is about half full: time to plan the move.
 */
export function defaultDataWarnMB(heapMB: number): number {
  return Math.floor(heapMB / 3);
}

export function storageWarnings(
  s: Pick<TableStats, 'heapUsedBytes' | 'heapLimitBytes' | 'dataBytes' | 'lastSaveError' | 'loading'>,
  t: WarnThresholds,
): string[] {
  const warnings: string[] = [];
  const heapPct = s.heapLimitBytes > 0 ? (100 * s.heapUsedBytes) / s.heapLimitBytes : 0;
  const size = (b: number) => (b >= MB ? `${Math.round(b / MB)} MB` : `${Math.ceil(b / 1024)} KB`);
  if (heapPct >= t.heapPercent) {
    warnings.push(
      `Embedded table storage (Azurite) uses ${Math.round(heapPct)}% of its heap limit (${size(s.heapUsedBytes)} of ${size(s.heapLimitBytes)}; warning at ${t.heapPercent}%): raise Storage:AzuriteMaxHeapMB or move AzureWebJobsStorage to a separate Azurite or an Azure Storage account (docs/scaling.md).`,
    );
  }
  if (s.dataBytes >= t.dataBytes) {
    warnings.push(
      `Embedded table storage (Azurite) holds ${size(s.dataBytes)} on disk (warning at ${size(t.dataBytes)}): move AzureWebJobsStorage to a separate Azurite or an Azure Storage account (docs/scaling.md).`,
    );
  }
  if (s.loading?.tables) {
    warnings.push(
      `Embedded table storage (Azurite) is still loading ${s.loading.tables} large table(s) (${size(s.loading.bytes)}) in the background: requests for them wait until each is loaded.`,
    );
  }
  if (s.lastSaveError) {
    warnings.push(`Embedded table storage (Azurite) could not save its data at ${s.lastSaveError.at}: ${s.lastSaveError.message}`);
  }
  return warnings;
}
