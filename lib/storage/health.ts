import { readFileSync } from 'node:fs';
import { SettingsReader } from '../core/config';
import { tableService } from './tables';

/**
 * A cheap storage round trip for `GET /health`: list at most one table, bounded by `timeoutMs` (the SDK's
 * retries would otherwise keep an unreachable account busy for a minute). Never throws.
 */
export async function probeStorage(timeoutMs = 3000): Promise<boolean> {
  try {
    const pages = tableService()
      .listTables({ abortSignal: AbortSignal.timeout(timeoutMs) })
      .byPage({ maxPageSize: 1 });
    await pages.next();
    return true;
  } catch {
    return false;
  }
}

/**
 * Warnings of the embedded storage (the Azurite that `npm start` runs when AzureWebJobsStorage is
 * UseDevelopmentStorage=true): its table process writes them to a stats file every few seconds, and the
 * local runtime names that file in `Storage:AzuriteStatsFile`. Empty with any other storage, or when the
 * file cannot be read or is older than five minutes (left by a process gone). Never throws.
 */
export function embeddedStorageWarnings(now = Date.now()): string[] {
  const file = new SettingsReader().string('Storage:AzuriteStatsFile');
  if (!file) return [];
  try {
    const stats = JSON.parse(readFileSync(file, 'utf8')) as { updatedAt?: string; warnings?: unknown };
    if (!stats.updatedAt || now - Date.parse(stats.updatedAt) > 5 * 60_000) return [];
    return Array.isArray(stats.warnings) ? stats.warnings.filter((w): w is string => typeof w === 'string') : [];
  } catch {
    return [];
  }
}
