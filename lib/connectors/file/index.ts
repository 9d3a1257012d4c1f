import type { ConnectorContext } from '../sdk';
import { FileConnector } from './fileConnector';
import { resolveConfig } from './rows';
import { FileConnectorSettingsSchema, type FileConnectorSettings } from './schema';

export { FileConnector } from './fileConnector';
export { FileConnectorSettingsSchema, type FileConnectorSettings } from './schema';

/** The name the file connector is registered under: `config.implementation: "file"`. */
export const FILE_IMPLEMENTATION = 'file';

/**
 * Make a file connector from validated settings (`config.settings` of a `custom` connector). `objectType` is
 * the connector config's top-level objectType, used when the settings do not name one.
 */
export function createFileConnector(settings: FileConnectorSettings, context: ConnectorContext & { objectType?: string } = {}): FileConnector {
  return new FileConnector(resolveConfig(settings, context.objectType, context));
}

export const fileConnectorImplementation = {
  name: FILE_IMPLEMENTATION,
  description: 'A folder of CSV or JSON files (HR exports): full and delta import, export to one file.',
  settingsSchema: FileConnectorSettingsSchema,
  create: (settings: Record<string, unknown>, context: ConnectorContext & { objectType?: string }) => createFileConnector(settings as FileConnectorSettings, context),
};
