import type { TSchema } from '@sinclair/typebox';
import { AppError, type FieldError } from '../errors';
import { validate } from '../schemas/ajv';
import {
  ConnectorError,
  type Connector,
  type ConnectorContext,
  type ConnectorDefinition,
  type DeltaImportOptions,
  type DeltaPage,
  type ExportChange,
  type ExportResult,
  type FullImportOptions,
  type ImportPage,
} from './sdk';
import { fileConnectorImplementation } from './file';

/**
 * Custom connectors: implementations registered in code by name; a connector of type `custom` picks one with
 * `config.implementation` and hands it `config.settings` (validated against the implementation's settings
 * schema, defaults applied) and `config.secrets`.
 *
 * An implementation's factory returns an SDK {@link Connector}, or, in the spec's words, an object with the
 * three operations FullImport(), DeltaImport() and Export() ({@link CustomConnectorOperations}), which
 * {@link fromOperations} adapts.
 */

/** The connector config a custom implementation receives (the `custom` type's config). */
export interface CustomConnectorConfig {
  implementation: string;
  settings?: Record<string, unknown>;
  secrets?: Record<string, string>;
  objectType?: string;
  [key: string]: unknown;
}

/** What the factory gets besides its settings. */
export interface CustomConnectorContext extends ConnectorContext {
  /** The connector's top-level objectType (default User). */
  objectType?: string;
  secrets?: Record<string, string>;
}

/**
 * The spec's custom connector interface, as plain operations. FullImport is required; without DeltaImport a
 * delta import answers `fullImportRequired`; without Export the connector is import-only.
 */
export interface CustomConnectorOperations {
  FullImport(options: FullImportOptions): AsyncIterable<ImportPage>;
  DeltaImport?(watermark: string | null, options: DeltaImportOptions): AsyncIterable<DeltaPage>;
  Export?(change: ExportChange): Promise<ExportResult>;
  TestConnection?(): Promise<{ message: string }>;
  Schema?(): ReturnType<Connector['schema']>;
  Close?(): Promise<void>;
}

export type CustomConnectorFactory = (settings: Record<string, unknown>, context: CustomConnectorContext) => Connector | CustomConnectorOperations;

export interface CustomConnectorImplementation {
  name: string;
  description?: string;
  /** JSON schema (TypeBox, with an `$id`) of `config.settings`. Without one, settings are passed unchecked. */
  settingsSchema?: TSchema;
  /**
   * Checks a schema cannot express, on the validated settings (paths relative to `config.settings`): run at
   * create and update, and again whenever the engine makes the connector. Synchronous, and cheap.
   */
  checkSettings?: (settings: Record<string, unknown>) => FieldError[];
  create: CustomConnectorFactory;
}

const implementations = new Map<string, CustomConnectorImplementation>();

/**
 * Register a custom implementation under `name` (what `config.implementation` says). Registering a name twice
 * is a programming error.
 */
export function registerCustomConnector(
  name: string,
  factory: CustomConnectorFactory,
  options: { settingsSchema?: TSchema; description?: string; checkSettings?: CustomConnectorImplementation['checkSettings'] } = {},
): void {
  if (!/^[A-Za-z0-9_.:-]{1,256}$/.test(name)) throw new Error(`registerCustomConnector: '${name}' is not a valid implementation name.`);
  if (implementations.has(name)) throw new Error(`registerCustomConnector: '${name}' is already registered.`);
  implementations.set(name, { name, create: factory, ...options });
}

export function customConnectorImplementation(name: string): CustomConnectorImplementation | undefined {
  return implementations.get(name);
}

export function customConnectorNames(): string[] {
  return [...implementations.keys()].sort();
}

/**
 * Check `config.settings` against the implementation's schema (applying defaults to a copy). Throws a 400
 * AppError whose paths are under `/config/settings`, for the Admin API's create/update.
 */
export function validateCustomSettings(config: CustomConnectorConfig): Record<string, unknown> {
  const impl = implementations.get(config.implementation);
  if (!impl) {
    throw new AppError('validation_failed', `No custom connector implementation is named '${config.implementation}'.`, {
      errors: [{ path: '/config/implementation', message: `must be one of: ${customConnectorNames().join(', ')}` }],
    });
  }
  const raw = structuredClone(config.settings ?? {});
  const settings = impl.settingsSchema ? (validate(impl.settingsSchema, raw, { pathPrefix: '/config/settings' }) as Record<string, unknown>) : raw;
  const errors = impl.checkSettings?.(settings) ?? [];
  if (errors.length) {
    throw new AppError('validation_failed', `The settings are not valid for the '${impl.name}' implementation. See errors for each field.`, {
      errors: errors.map((e) => ({ ...e, path: '/config/settings' + e.path })),
    });
  }
  return settings;
}

/** Make the connector a `custom` config names. Bad settings: `configuration_invalid` naming the fields. */
export function createCustomConnector(config: CustomConnectorConfig, context: ConnectorContext = {}): Connector {
  let settings: Record<string, unknown>;
  try {
    settings = validateCustomSettings(config);
  } catch (err) {
    if (err instanceof AppError) {
      const fields = (err.extra.errors ?? []).map((e) => `${e.path} ${e.message}`).join('; ');
      throw new ConnectorError('configuration_invalid', fields ? `${err.detail} ${fields}` : err.detail);
    }
    throw err;
  }
  const impl = implementations.get(config.implementation)!;
  const made = impl.create(settings, { ...context, objectType: config.objectType, secrets: config.secrets });
  return isOperations(made) ? fromOperations(made) : made;
}

/** The `custom` connector type's definition, with the type's config schema (owned by the registry). */
export function customConnectorDefinition(configSchema: object): ConnectorDefinition<CustomConnectorConfig> {
  return { type: 'custom', configSchema, create: createCustomConnector };
}

function isOperations(x: Connector | CustomConnectorOperations): x is CustomConnectorOperations {
  return typeof (x as CustomConnectorOperations).FullImport === 'function';
}

/** Adapt the spec's FullImport/DeltaImport/Export operations to the SDK's capability interfaces. */
export function fromOperations(ops: CustomConnectorOperations): Connector {
  const c: Connector = {
    type: 'custom',
    testConnection: () => (ops.TestConnection ? ops.TestConnection() : Promise.resolve({ message: 'The implementation has no connection test.' })),
    schema: () => (ops.Schema ? ops.Schema() : Promise.resolve({ objectTypes: [] })),
    close: () => (ops.Close ? ops.Close() : Promise.resolve()),
    fullImport: (o) => ops.FullImport(o),
    deltaImport: ops.DeltaImport
      ? (w, o) => ops.DeltaImport!(w, o)
      : async function* () {
          yield { changes: [], errors: [], fullImportRequired: { reason: 'This connector has no delta import.' } };
        },
  };
  if (ops.Export) c.export = (ch) => ops.Export!(ch);
  return c;
}

registerCustomConnector(fileConnectorImplementation.name, fileConnectorImplementation.create, {
  settingsSchema: fileConnectorImplementation.settingsSchema,
  description: fileConnectorImplementation.description,
  checkSettings: fileConnectorImplementation.checkSettings,
});
