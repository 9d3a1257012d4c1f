import type { FieldError } from '../../core/errors';
import { checkFileSettings } from './access';
import { FileConnector } from './fileConnector';
import { readFileRoots } from './roots';
import { resolveConfig, type FileConnectorContext } from './rows';
import { FileConnectorSettingsSchema, type FileConnectorSettings } from './schema';

export { FileConnector } from './fileConnector';
export { FileConnectorSettingsSchema, type FileConnectorSettings } from './schema';
export { FILE_ROOTS_SETTING, checkFileRootsSetting, readFileRoots } from './roots';

/** The name the file connector is registered under: `config.implementation: "file"`. */
export const FILE_IMPLEMENTATION = 'file';

/**
 * Make a file connector from validated settings (`config.settings` of a `custom` connector). `objectType` is
 * the connector config's top-level objectType, used when the settings do not name one.
 */
export function createFileConnector(settings: FileConnectorSettings, context: FileConnectorContext & { objectType?: string } = {}): FileConnector {
  return new FileConnector(resolveConfig(settings, context.objectType, context));
}

export const fileConnectorImplementation = {
  name: FILE_IMPLEMENTATION,
  description: 'A folder of CSV or JSON files (HR exports): full and delta import, export to one file.',
  settingsSchema: FileConnectorSettingsSchema,
  create: (settings: Record<string, unknown>, context: FileConnectorContext & { objectType?: string }) =>
    createFileConnector(settings as FileConnectorSettings, context),
  /** Every path inside the file roots (`Connectors:File:Roots`), links resolved. */
  checkSettings: (settings: Record<string, unknown>): FieldError[] => checkFileSettings(settings as FileConnectorSettings, readFileRoots().folders),
};
