import { createHmac } from 'node:crypto';
import { ConfigError } from '../core/config';
import { isStatus, table } from '../storage/tables';

/**
 * Every engine instance on one storage account must seal and open secrets with the same `Secrets:Key`: a
 * connector saved through one instance is run by another. A process with another key could open none of the
 * stored secrets, and what it sealed the others could not open. So the storage account keeps a check value of
 * the key (an HMAC of a fixed text under the key: it tells whether two keys are equal and nothing about the key),
 * written by the first process that starts, and a process whose key gives another value refuses to start.
 *
 * Table `SecretsKeyCheck`, one row (`key`, `check`): `{ check, setOn }`.
 */
const TABLE = 'SecretsKeyCheck';
const PK = 'key';
const RK = 'check';
const LABEL = 'identity-mesh-sync/secrets-key-check/v1';

/** The check value of a key (base64url of HMAC-SHA256 of a fixed label). */
export function keyCheckValue(key: Buffer): string {
  return createHmac('sha256', key).update(LABEL).digest('base64url');
}

/**
 * Record the key's check value on first use of the storage account, else compare with the recorded one.
 * Throws ConfigError naming `Secrets:Key` when they differ.
 */
export async function checkSharedKey(key: Buffer, now = new Date()): Promise<void> {
  const client = await table(TABLE);
  const check = keyCheckValue(key);
  try {
    await client.createEntity({ partitionKey: PK, rowKey: RK, check, setOn: now.toISOString() });
    return;
  } catch (err) {
    if (!isStatus(err, 409)) throw err;
  }
  const stored = await client.getEntity<{ check: string; setOn: string }>(PK, RK);
  if (stored.check === check) return;
  throw new ConfigError(
    'Secrets:Key',
    `is not the key the other engine instances on this storage account use (its check value was recorded on ${stored.setOn}): ` +
      'every process on one storage account must have the same Secrets:Key, or none could open what another sealed. ' +
      'In Development a process without Secrets:Key generates one in its data folder (secrets.key): give every process the same Secrets__Key. ' +
      `To start over with a new key on purpose (every stored secret must then be entered again), delete the row '${PK}'/'${RK}' of the table '${TABLE}'.`,
  );
}
