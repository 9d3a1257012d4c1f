import os from 'node:os';
import { SettingsReader } from '../core/config';
import { embeddedStorageWarnings, probeStorage } from '../storage/health';

/**
 * `GET /health`: healthy while the storage answers (503 and `unreachable` when it does not). `warnings`
 * appears only when there is one: the embedded storage nearing its limits (docs/scaling.md); a warning does
 * not make the service unhealthy.
 */
export async function healthReport(): Promise<{
  status: 200 | 503;
  body: { status: 'healthy' | 'unhealthy'; instance: string; storage: 'ok' | 'unreachable'; warnings?: string[] };
}> {
  const storageOk = await probeStorage();
  const instance = new SettingsReader().string('Engine:InstanceName') ?? os.hostname();
  const warnings = embeddedStorageWarnings();
  return {
    status: storageOk ? 200 : 503,
    body: {
      status: storageOk ? 'healthy' : 'unhealthy',
      instance,
      storage: storageOk ? 'ok' : 'unreachable',
      ...(warnings.length > 0 ? { warnings } : {}),
    },
  };
}
