import type { TSchema } from '@sinclair/typebox';
import type { FieldError } from '../core/errors';
import {
  type Connector,
  type ConnectorContext,
  type DeltaImportOptions,
  type DeltaPage,
  type ExportChange,
  type ExportResult,
  type FullImportOptions,
  type ImportPage,
} from './sdk';

/**
 * Custom connectors: implementations registered in code by name (in lib/connectors/registry.ts, beside the
 * built-in types); a connector of type `custom` picks one with
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

export function isOperations(x: Connector | CustomConnectorOperations): x is CustomConnectorOperations {
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
