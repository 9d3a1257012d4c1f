import path from 'node:path';
import { connectorConfigWithSecrets } from '../secrets/connectorSecrets';
import { SettingsReader } from '../core/config';
import type { CustomConnectorConfig } from './custom';
import { connectorImplementation, createCustomConnector } from './registry';
import { ConnectorError, type Connector } from './sdk';

/**
 * From a stored connector record to a live {@link Connector}: the configuration is read with its secrets
 * unsealed (never logged, never returned), and the implementation is the one registered for the type
 * (`custom` is built in: `config.implementation` picks the registered custom implementation).
 *
 * Every connector gets a private state directory under `<Service:DataDir>/connectors/<id>` (the file
 * connector keeps its row-hash snapshots there), so state survives restarts of the process.
 * `importAttributes`: for an import's connector, the attributes its rules use (given the stored type and
 * config; undefined: read as configured), handed over as `ConnectorContext.importAttributes`.
 */
export async function createConnectorFor(
  connectorId: string,
  options: { importAttributes?: (type: string, config: Record<string, unknown>) => readonly string[] | undefined } = {},
): Promise<{ type: string; config: Record<string, unknown>; connector: Connector }> {
  const { type, config } = await connectorConfigWithSecrets(connectorId);
  const dataDir = new SettingsReader().string('Service:DataDir', '.data');
  const importAttributes = options.importAttributes?.(type, config);
  const context = { connectorId, stateDirectory: path.resolve(dataDir, 'connectors'), ...(importAttributes ? { importAttributes } : {}) };
  if (type === 'custom') {
    return { type, config, connector: createCustomConnector(config as CustomConnectorConfig, context) };
  }
  const def = connectorImplementation(type);
  if (!def) throw new ConnectorError('unsupported', `No implementation of connector type '${type}' is installed in this engine.`);
  return { type, config, connector: def.create(config, context) };
}
