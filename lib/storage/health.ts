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
