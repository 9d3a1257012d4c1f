import type { TSchema } from '@sinclair/typebox';
import type { FieldError } from '../errors';
import type { ConnectorDefinition } from './sdk';
import { ActiveDirectoryConfigSchema, DIRECTORY_EXPRESSIONS, LdapConfigSchema, directoryChecks, directoryDefaults, type DirectoryConfig } from './ldap/schema';
import { SQL_EXPRESSIONS, SqlConfigSchema, sqlChecks, sqlDefaults, type SqlConfig } from './sql/schema';
import { validateSqlConfig } from './sql/validate';
import { CUSTOM_EXPRESSIONS, CustomConfigSchema } from './custom/schema';
import { validateCustomSettings, type CustomConnectorConfig } from './custom';
import { AppError } from '../errors';

/**
 * The connector types the Admin API accepts, each with its configuration schema (fields marked `x-secret`
 * are secrets), type-dependent defaults, cross-field checks and the config fields that hold expressions.
 * This is what create/update validates `config` with; it does no I/O.
 *
 * Implementations (`{ type, configSchema, create }` from lib/connectors/sdk.ts) register themselves with
 * `registerConnectorImplementation`, so this module does not depend on any connector's code.
 */
export const CONNECTOR_TYPES = ['active_directory', 'ldap', 'sql', 'custom'] as const;
export type ConnectorType = (typeof CONNECTOR_TYPES)[number];

export interface ConnectorTypeConfig {
  type: ConnectorType;
  configSchema: TSchema;
  /** Defaults that depend on the type or on another field (simple defaults are in the schema). */
  defaults(config: Record<string, unknown>): Record<string, unknown>;
  /** Checks a schema does not express well; paths are relative to `config`. */
  checks(config: Record<string, unknown>): FieldError[];
  /** Config fields whose value is a transformScript-language expression. */
  expressions: readonly string[];
}

/** The two directory types share everything but their schema and type-dependent defaults. */
function directoryType(type: 'ldap' | 'active_directory', configSchema: TSchema): ConnectorTypeConfig {
  return {
    type,
    configSchema,
    defaults: (c) => directoryDefaults(type, c as DirectoryConfig),
    checks: (c) => directoryChecks(c as DirectoryConfig),
    expressions: DIRECTORY_EXPRESSIONS,
  };
}

const TYPES: Record<ConnectorType, ConnectorTypeConfig> = {
  ldap: directoryType('ldap', LdapConfigSchema),
  active_directory: directoryType('active_directory', ActiveDirectoryConfigSchema),
  sql: {
    type: 'sql',
    configSchema: SqlConfigSchema,
    defaults: (c) => sqlDefaults(c as SqlConfig),
    checks: (c) => [...sqlChecks(c as SqlConfig), ...validateSqlConfig(c as SqlConfig)],
    expressions: SQL_EXPRESSIONS,
  },
  custom: { type: 'custom', configSchema: CustomConfigSchema, defaults: (c) => c, checks: customChecks, expressions: CUSTOM_EXPRESSIONS },
};

/** A custom connector must name a registered implementation, and its settings must pass that implementation's schema. */
function customChecks(config: Record<string, unknown>): FieldError[] {
  try {
    validateCustomSettings(config as unknown as CustomConnectorConfig);
    return [];
  } catch (err) {
    if (!(err instanceof AppError)) throw err;
    return (err.extra.errors ?? [{ path: '/implementation', message: err.detail }]).map((e) => ({ path: e.path.replace(/^\/config/, ''), message: e.message }));
  }
}

export function isConnectorType(value: string): value is ConnectorType {
  return (CONNECTOR_TYPES as readonly string[]).includes(value);
}

export function connectorTypeConfig(type: ConnectorType): ConnectorTypeConfig {
  return TYPES[type];
}

const implementations = new Map<string, ConnectorDefinition>();

/** Called by a connector module at load: makes `create(config)` available to the engine for its type. */
export function registerConnectorImplementation(definition: ConnectorDefinition): void {
  implementations.set(definition.type, definition);
}

let builtinsLoaded = false;

/** The implementation registered for `type` (built-in connectors included), or undefined. */
export function connectorImplementation(type: string): ConnectorDefinition | undefined {
  if (!builtinsLoaded) {
    builtinsLoaded = true;
    // Loaded on first use, not at the top: the built-in modules import this one to register themselves.
    require('./builtin');
  }
  return implementations.get(type);
}
