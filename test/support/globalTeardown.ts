import type { Azurite } from '../../lib/runtime/azurite';
import { removeLeftoverInstances } from './ds389';
import { removeClusterTemplates } from './postgres';
import { killTracked } from './processes';
import { removeDcFolders } from './samba';
import { removeCertificates } from './slapd';

export default async function globalTeardown(): Promise<void> {
  killTracked();
  removeLeftoverInstances();
  removeClusterTemplates();
  removeCertificates();
  removeDcFolders();
  const azurite = (globalThis as { __AZURITE__?: Azurite }).__AZURITE__;
  await azurite?.stop();
}
