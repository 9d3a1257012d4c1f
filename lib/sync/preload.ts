import { preloadSharedIndex } from '../mesh/joinIndex';
import { addServiceStep } from '../service';
import { listRules } from '../storage/rules';
import { indexedAttributes } from './rules';

/**
 * At process start, before the mesh read model starts loading (its service step has `order: 100`): the
 * sync engine's join index is built from the read model's scan of the mesh, so the process's first run does
 * not scan the whole mesh again (lib/mesh/joinIndex.ts `preloadSharedIndex`). A failure here only means the
 * first run builds its index itself.
 */
addServiceStep({
  name: 'joinIndexPreload',
  async start() {
    try {
      preloadSharedIndex(indexedAttributes(await listRules()));
    } catch (err) {
      console.warn(`[sync] The join index will be built by the first run (the rules could not be listed: ${(err as Error).message}).`);
    }
  },
});
