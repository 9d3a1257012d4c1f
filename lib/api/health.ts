import os from 'node:os';
import { SettingsReader } from '../core/config';
import { probeStorage } from '../storage/health';

/** `GET /health`: healthy while the storage answers (503 and `unreachable` when it does not). */
export async function healthReport(): Promise<{
  status: 200 | 503;
  body: { status: 'healthy' | 'unhealthy'; instance: string; storage: 'ok' | 'unreachable' };
}> {
  const storageOk = await probeStorage();
  const instance = new SettingsReader().string('Engine:InstanceName') ?? os.hostname();
  return { status: storageOk ? 200 : 503, body: { status: storageOk ? 'healthy' : 'unhealthy', instance, storage: storageOk ? 'ok' : 'unreachable' } };
}
