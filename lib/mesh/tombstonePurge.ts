import { engineNow } from '../core/clock';
import { readTombstonePurgeSeconds, readTombstoneRetentionDays } from '../core/config';
import { areaLog } from '../core/log';
import type { ServiceStep } from '../core/service';
import { noteTombstones } from './tombstoneIndex';
import { purgeTombstones } from './tombstones';
import { listRules } from '../storage/rules';
import { poolOf, releaseUniqueValues, sweepUniqueValues } from '../storage/uniqueValues';

/**
 * The background purge of tombstones past their `purgeOn` (set from `Mesh:TombstoneRetentionDays` when the
 * object was deleted), as of the engine's clock (lib/core/clock.ts: the host's, unless a test moved it): every
 * minute (`Mesh:TombstonePurgeSeconds`, test only), one of the 16 partitions, at
 * most 500 tombstones, so a tick's work stays bounded and a backlog drains over later ticks. A purged
 * tombstone is gone: it can no longer be restored, and an object that comes back is a new one. The start step
 * reads the settings first, so a malformed value stops the start naming it. A purged object's unique values
 * (docs/unique-values.md) are released into their quarantine, and values whose quarantine is over are deleted.
 */
const log = areaLog('mesh');
let timer: NodeJS.Timeout | null = null;
let running = false;

export const tombstonePurgeStep: ServiceStep = {
  name: 'meshTombstonePurge',
  async start() {
    readTombstoneRetentionDays();
    const seconds = readTombstonePurgeSeconds();
    timer = setInterval(() => {
      if (running) return;
      running = true;
      purgeTombstones(engineNow())
        .then(async (ids) => {
          noteTombstones([], ids);
          if (ids.length) {
            const pools = new Map<string, number>();
            for (const r of await listRules()) if (r.unique) pools.set(poolOf(r, r.unique), r.unique.quarantineDays);
            await releaseUniqueValues(ids, [...pools.keys()], new Date(), (pool) => pools.get(pool) ?? 90);
          }
          await sweepUniqueValues();
        })
        .catch((err) => log.warn(`Tombstone purge failed: ${err instanceof Error ? err.message : String(err)}`))
        .finally(() => (running = false));
    }, seconds * 1000);
    timer.unref();
  },
  async stop() {
    if (timer) clearInterval(timer);
    timer = null;
  },
};
