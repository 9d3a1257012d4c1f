import { createConnectorFor } from '../../connectors/factory';
import type { Connector } from '../../connectors/sdk';
import { deprovisioningSettings, type DeprovisioningSettings } from '../deprovisioning';

/** The connector a run works with: the part of its configuration the steps read, and the connector opened for a step. */

/** What the export steps read from the connector's configuration (see {@link runConfig}). */
export type ExportConfig = {
  objectType?: unknown;
  provisioningCondition?: unknown;
  passwordOnUpdate?: unknown;
  deletionThreshold?: unknown;
  thresholds?: unknown;
  deprovisioning?: unknown;
  connectorType?: unknown;
};
export const settingsOf = (config: ExportConfig): DeprovisioningSettings =>
  deprovisioningSettings(config as Record<string, unknown>, typeof config.connectorType === 'string' ? config.connectorType : '');

/** Run `fn` with the connector (made from its id, or one already made), closed afterwards. */
export async function withConnector<T>(connectorId: string | { connector: Connector }, fn: (c: Connector) => Promise<T>): Promise<T> {
  const { connector } = typeof connectorId === 'string' ? await createConnectorFor(connectorId) : connectorId;
  try {
    return await fn(connector);
  } finally {
    await connector.close().catch(() => undefined);
  }
}

/** The connector's stored config (for the threshold and export settings), without secrets. */
export async function runConfig(connectorId: string): Promise<Record<string, unknown>> {
  const { type, config } = await createConnectorFor(connectorId);
  return configOfRun(type, config);
}

export function configOfRun(type: string, config: Record<string, unknown>): Record<string, unknown> {
  return {
    deletionThreshold: config.deletionThreshold,
    thresholds: config.thresholds,
    deprovisioning: config.deprovisioning,
    connectorType: type,
    fullSyncOnRuleChange: config.fullSyncOnRuleChange,
    objectType: config.objectType,
    provisioningCondition: config.provisioningCondition,
    passwordOnUpdate: config.passwordOnUpdate,
  };
}
