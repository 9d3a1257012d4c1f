import { readHistoryRetentionDays, readLeaverRetentionDays } from '../core/config';
import { areaLog } from '../core/log';
import type { ServiceStep } from '../core/service';
import { purgeDoneLeavers } from '../storage/leavers';
import { purgeHistory } from './history';

/**
 * The background purge of mesh history older than `Mesh:HistoryRetentionDays`: every minute, one of the 16
 * history tables, at most 1,000 rows (so a tick's work stays bounded; a backlog drains over later ticks).
 * The same tick deletes confirmed leavers older than `Leavers:RetentionDays` (at most 1,000 rows).
 * The start step reads the settings first, so a malformed value stops the start naming it.
 */
const TICK_MS = 60_000;
const log = areaLog('mesh');
let timer: NodeJS.Timeout | null = null;
let running = false;

export const historyPurgeStep: ServiceStep = {
  name: 'meshHistoryPurge',
  async start() {
    const days = readHistoryRetentionDays();
    const leaverDays = readLeaverRetentionDays();
    timer = setInterval(() => {
      if (running) return;
      running = true;
      purgeHistory(days)
        .then(() => purgeDoneLeavers(leaverDays))
        .catch((err) => log.warn(`Background purge (history, leavers) failed: ${err instanceof Error ? err.message : String(err)}`))
        .finally(() => (running = false));
    }, TICK_MS);
    timer.unref();
  },
  async stop() {
    if (timer) clearInterval(timer);
    timer = null;
  },
};
