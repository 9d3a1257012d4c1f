import { preloadSharedIndex } from '../../mesh/joinIndex';
import type { ServiceStep } from '../../core/service';
import { listRules } from '../../storage/rules';
import { indexedAttributes } from '../rules';
import { areaLog } from '../../core/log';

const log = areaLog('sync');

/**
 * At process start, before the mesh read model starts loading (SERVICE_STEPS in lib/api/serviceSteps.ts lists this step first): the
 * sync engine's join index is built from the read model's scan of the mesh, so the process's first run does
 * not scan the whole mesh again (lib/mesh/joinIndex.ts `preloadSharedIndex`). A failure here only means the
 * first run builds its index itself.
 */
export const joinIndexPreloadStep: ServiceStep = {
  name: 'joinIndexPreload',
  async start() {
    try {
      preloadSharedIndex(indexedAttributes(await listRules()));
    } catch (err) {
      log.warn(`The join index will be built by the first run (the rules could not be listed: ${(err as Error).message}).`);
    }
  },
};
