/** Effective status of an engine instance, as the API shows it. */
export type InstanceStatus = 'active' | 'paused' | 'offline';

/**
 * `offline` when the last heartbeat is `offlineAfterSeconds` old or older (whatever the pause setting: an
 * instance that is not running cannot be working), else `paused` when paused, else `active`.
 */
export function effectiveStatus(lastHeartbeat: string, paused: boolean, now: Date, offlineAfterSeconds: number): InstanceStatus {
  const beat = Date.parse(lastHeartbeat);
  if (!Number.isFinite(beat) || now.getTime() - beat >= offlineAfterSeconds * 1000) return 'offline';
  return paused ? 'paused' : 'active';
}
