import type { Azurite } from '../../lib/runtime/azurite';
import { removeLeftoverInstances } from './ds389';
import { killTracked } from './processes';

export default async function globalTeardown(): Promise<void> {
  killTracked();
  removeLeftoverInstances();
  const azurite = (globalThis as { __AZURITE__?: Azurite }).__AZURITE__;
  await azurite?.stop();
}
