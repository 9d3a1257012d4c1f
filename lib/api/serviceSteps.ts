import { checkFileRootsSetting } from '../connectors/file';
import { addServiceStep } from '../service';
import { startSecrets } from '../secrets';
import { listPendingOperations } from '../storage/operations';
import { resumeConnectorDeletes } from './connectors';
import { readLicense } from './license';

/**
 * The Admin API's start steps (imported once by functions/startup.ts):
 * - `secrets`: load the secrets key; outside Development a missing `Secrets:Key` stops the start.
 * - `license`: read the `License:*` settings, so a malformed one stops the start naming it.
 * - `fileRoots`: read `Connectors:File:Roots` (a malformed value or a missing folder stops the start naming
 *   the setting); unset, the default root under the data folder is created.
 * - `pendingOperations`: finish what a crash left half-done (connector deletes). A storage failure here is
 *   logged and does not stop the start: the next start tries again, and readers already see the outcome.
 */
addServiceStep({ name: 'secrets', start: startSecrets });

addServiceStep({
  name: 'license',
  async start() {
    readLicense();
  },
});

addServiceStep({
  name: 'fileRoots',
  async start() {
    checkFileRootsSetting();
  },
});

addServiceStep({
  name: 'pendingOperations',
  async start() {
    try {
      const finished = await resumeConnectorDeletes(await listPendingOperations());
      if (finished) console.log(`[api] Finished ${finished} connector delete(s) left pending by an earlier run.`);
    } catch (err) {
      console.error(`[api] Pending operations could not be resumed (${(err as Error).name}: ${(err as Error).message}); the next start retries.`);
    }
  },
});
