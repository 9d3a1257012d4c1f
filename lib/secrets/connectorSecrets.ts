import { getConnectorRecord, type StoredConnector } from '../storage/connectors';
import type { FieldPath } from './fields';
import { decryptSecret, encryptSecret, setPath } from './index';

/** One secret of a connector's configuration: where it goes in the config, and its value. */
export type SecretEntry = [FieldPath, string];

/** A connector's secrets sealed for its row (null when it has none). The connector's id is the AAD. */
export function sealSecrets(id: string, secrets: SecretEntry[]): string | null {
  return secrets.length ? encryptSecret(JSON.stringify(secrets), id) : null;
}

/** The secrets sealed in a stored connector's row. */
export function unsealSecrets(c: StoredConnector): SecretEntry[] {
  return c.sealedSecrets ? (JSON.parse(decryptSecret(c.sealedSecrets, c.id)) as SecretEntry[]) : [];
}

/**
 * A stored connector's configuration with its secrets put back in place: what a connector is created with.
 * Never logged, never returned by the API.
 */
export async function connectorConfigWithSecrets(id: string): Promise<{ type: string; config: Record<string, unknown> }> {
  const c = await getConnectorRecord(id);
  let config = c.config;
  for (const [path, value] of unsealSecrets(c)) config = setPath(config, path, value);
  return { type: c.type, config };
}
