import { activeDirectoryConnectorDefinition, ldapConnectorDefinition } from './ldap';
import { fileConnectorImplementation } from './file';
import type { CustomConnectorImplementation } from './custom';
import type { ConnectorDefinition } from './sdk';
import { scimConnectorDefinition } from './scim';
import { scimInboundConnectorDefinition } from './scimInbound';
import { sqlConnectorDefinition } from './sql';

/**
 * The connectors that ship with the service, as one list the registry (lib/connectors/registry.ts) starts
 * from. The connector modules register nothing themselves: this list is the only place a built-in connector is
 * named, and the arrows run one way (registry -> this list -> each connector).
 */
export const BUILTIN_CONNECTORS: readonly ConnectorDefinition[] = [
  ldapConnectorDefinition as unknown as ConnectorDefinition,
  activeDirectoryConnectorDefinition as unknown as ConnectorDefinition,
  sqlConnectorDefinition as unknown as ConnectorDefinition,
  scimInboundConnectorDefinition as unknown as ConnectorDefinition,
  scimConnectorDefinition as unknown as ConnectorDefinition,
];

/** The implementations a `custom` connector can name without registering anything: `file` (CSV or JSON files). */
export const BUILTIN_CUSTOM_IMPLEMENTATIONS: readonly CustomConnectorImplementation[] = [fileConnectorImplementation];
