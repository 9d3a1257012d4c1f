import type { TSchema } from '@sinclair/typebox';
import type { FieldError } from '../core/errors';
import { endpointPaths, type FieldPath } from '../secrets/fields';
import { ConnectorError, type ConnectionTestResult, type Connector, type ConnectorContext, type ConnectorDefinition } from './sdk';
import { ActiveDirectoryConfigSchema, DIRECTORY_EXPRESSIONS, LdapConfigSchema, directoryChecks, directoryDefaults, type DirectoryConfig } from './ldap/schema';
import { SQL_EXPRESSIONS, SqlConfigSchema, sqlChecks, sqlDefaults, type SqlConfig } from './sql/schema';
import { validateSqlConfig } from './sql/validate';
import { CUSTOM_EXPRESSIONS, CustomConfigSchema } from './custom/schema';
import { ScimInboundConfigSchema } from './scimInbound/schema';
import { SCIM_EXPRESSIONS, ScimConfigSchema, scimChecks, type ScimConfig } from './scim/schema';
import { fromOperations, isOperations, type CustomConnectorConfig, type CustomConnectorFactory, type CustomConnectorImplementation } from './custom';
import { BUILTIN_CONNECTORS, BUILTIN_CUSTOM_IMPLEMENTATIONS } from './builtin';
import { AppError } from '../core/errors';
import { validate } from '../core/validation/ajv';

/**
 * The one connector registry. It holds:
 * - the connector types the Admin API accepts, each with its configuration schema (fields marked `x-secret`
 *   are secrets), type-dependent defaults, cross-field checks and the config fields that hold expressions:
 *   what create/update validates `config` with (no I/O);
 * - their implementations (`{ type, configSchema, create }` from lib/connectors/sdk.ts), the built-in ones
 *   listed in lib/connectors/builtin.ts;
 * - the implementations a `custom` connector can name (`config.implementation`): the built-in file connector,
 *   and any registered with {@link registerCustomConnector}.
 */
export const CONNECTOR_TYPES = ['active_directory', 'ldap', 'sql', 'custom', 'scim_inbound', 'scim'] as const;
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
  /**
   * Create and update run {@link testConnectorOnSave} before storing anything: a configuration the source
   * refuses (wrong password, unknown table, unreachable server) is a 400, not a connector that fails at its
   * first run. Off for types whose test needs more than the configuration (or is not built yet).
   */
  testOnSave?: boolean;
  /**
   * The config fields that say where or as whom the connector connects (host, port, account, TLS trust). A
   * PUT that changes one of them must send every secret again: a stored secret is never handed to a new
   * destination (the test on save would otherwise send it there before anything is refused).
   */
  endpoints(config: Record<string, unknown>): FieldPath[];
}

/** Directory: the server, how it is reached, whom it must prove to be (caCertificate), and the account. */
const DIRECTORY_ENDPOINTS: FieldPath[] = [['host'], ['port'], ['security'], ['allowInsecure'], ['caCertificate'], ['bindDN']];
/** SQL: the server, the database and account, and the TLS settings (`ssl`, its `ca` and `rejectUnauthorized`). */
const SQL_ENDPOINTS: FieldPath[] = [['dialect'], ['host'], ['port'], ['database'], ['user'], ['ssl']];

/** SCIM: the fields its schema marks `x-endpoint` (baseUrl, allowHttp, the auth type, token URL, client id, scope). */
const SCIM_ENDPOINTS: FieldPath[] = endpointPaths(ScimConfigSchema);

/**
 * Custom: the implementation, and the settings its schema marks `x-endpoint: true`; an implementation that marks
 * none cannot say which of its settings point somewhere, so any change of `settings` counts.
 */
function customEndpoints(config: Record<string, unknown>): FieldPath[] {
  const impl = typeof config.implementation === 'string' ? customConnectorImplementation(config.implementation) : undefined;
  const marked = impl?.settingsSchema ? endpointPaths(impl.settingsSchema, ['settings']) : [];
  return [['implementation'], ...(marked.length ? marked : [['settings']])];
}

/** The two directory types share everything but their schema and type-dependent defaults. */
function directoryType(type: 'ldap' | 'active_directory', configSchema: TSchema): ConnectorTypeConfig {
  return {
    type,
    configSchema,
    defaults: (c) => directoryDefaults(type, c as DirectoryConfig),
    checks: (c) => directoryChecks(c as DirectoryConfig),
    expressions: DIRECTORY_EXPRESSIONS,
    testOnSave: true,
    endpoints: () => DIRECTORY_ENDPOINTS,
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
    testOnSave: true,
    endpoints: () => SQL_ENDPOINTS,
  },
  custom: {
    type: 'custom',
    configSchema: CustomConfigSchema,
    defaults: (c) => c,
    checks: customChecks,
    expressions: CUSTOM_EXPRESSIONS,
    endpoints: customEndpoints,
  },
  // What SCIM clients push to the service (docs/scim.md): no address, no secret, nothing to test on save.
  scim_inbound: {
    type: 'scim_inbound',
    configSchema: ScimInboundConfigSchema,
    defaults: (c) => c,
    checks: () => [],
    expressions: [],
    endpoints: () => [],
  },
  // A SCIM 2.0 server the service reads and provisions (docs/scim.md, "SCIM client connector").
  scim: {
    type: 'scim',
    configSchema: ScimConfigSchema,
    defaults: (c) => c,
    checks: (c) => scimChecks(c as ScimConfig),
    expressions: SCIM_EXPRESSIONS,
    testOnSave: true,
    endpoints: () => SCIM_ENDPOINTS,
  },
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

const implementations = new Map<string, ConnectorDefinition>(BUILTIN_CONNECTORS.map((d) => [d.type, d]));

/** Make `create(config)` available to the engine for a type (the built-in ones are there from the start). */
export function registerConnectorImplementation(definition: ConnectorDefinition): void {
  implementations.set(definition.type, definition);
}

/** The implementation registered for `type` (built-in connectors included), or undefined. */
export function connectorImplementation(type: string): ConnectorDefinition | undefined {
  return implementations.get(type);
}

const customImplementations = new Map<string, CustomConnectorImplementation>(BUILTIN_CUSTOM_IMPLEMENTATIONS.map((i) => [i.name, i]));

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
  if (customImplementations.has(name)) throw new Error(`registerCustomConnector: '${name}' is already registered.`);
  customImplementations.set(name, { name, create: factory, ...options });
}

export function customConnectorImplementation(name: string): CustomConnectorImplementation | undefined {
  return customImplementations.get(name);
}

export function customConnectorNames(): string[] {
  return [...customImplementations.keys()].sort();
}

/**
 * Check `config.settings` against the implementation's schema (applying defaults to a copy). Throws a 400
 * AppError whose paths are under `/config/settings`, for the Admin API's create/update.
 */
export function validateCustomSettings(config: CustomConnectorConfig): Record<string, unknown> {
  const impl = customImplementations.get(config.implementation);
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
  const impl = customImplementations.get(config.implementation)!;
  const made = impl.create(settings, { ...context, objectType: config.objectType, secrets: config.secrets });
  return isOperations(made) ? fromOperations(made) : made;
}

/** The longest a test on save (or on demand) may take: an Admin API request must not hang on an unreachable server. */
export const SAVE_TEST_MAX_SECONDS = 10;

/**
 * The live test create and update run for a type with `testOnSave`, and `POST /connectors/{id}/test` runs for
 * any type: the implementation is made from the full configuration (secrets included; nothing is kept), its
 * `testConnection()` must succeed, and it is closed. `custom` is made by the implementation `config.implementation`
 * names (one without a test of its own answers that there is nothing to test). The test is bounded by
 * `timeoutSeconds` from the configuration, at most {@link SAVE_TEST_MAX_SECONDS}; a configuration with
 * `timeoutSeconds` is handed to the implementation with it lowered to that bound, so its drivers give up in time
 * too. Throws a ConnectorError whose message is safe to show (`timeout` when the bound is reached).
 */
export async function testConnectorOnSave(type: string, config: Record<string, unknown>, context: ConnectorContext = {}): Promise<ConnectionTestResult> {
  const configured = typeof config.timeoutSeconds === 'number' ? config.timeoutSeconds : SAVE_TEST_MAX_SECONDS;
  const seconds = Math.min(configured, SAVE_TEST_MAX_SECONDS);
  const connector = makeConnector(type, 'timeoutSeconds' in config ? { ...config, timeoutSeconds: seconds } : config, context);
  const test = connector.testConnection();
  // After the bound the attempt still runs until its drivers time out: its outcome is no longer anyone's.
  test.catch(() => undefined);
  let timer: NodeJS.Timeout | undefined;
  const deadline = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new ConnectorError('timeout', `The test connection did not finish within ${seconds} s.`)), seconds * 1000);
  });
  try {
    return await Promise.race([test, deadline]);
  } finally {
    clearTimeout(timer);
    await connector.close().catch(() => undefined);
  }
}

function makeConnector(type: string, config: Record<string, unknown>, context: ConnectorContext): Connector {
  if (type === 'custom') return createCustomConnector(config as CustomConnectorConfig, context);
  const def = connectorImplementation(type);
  if (!def) throw new ConnectorError('unsupported', `No implementation of connector type '${type}' is installed in this engine.`);
  return def.create(config, context);
}
