import type { Azurite } from '../../lib/runtime/azurite';
import { killTracked } from './processes';

export default async function globalTeardown(): Promise<void> {
  killTracked();
  const azurite = (globalThis as { __AZURITE__?: Azurite }).__AZURITE__;
  await azurite?.stop();
}
