import type { ConnectorDefinition } from '../sdk';
import { LdapConnector } from './ldapConnector';
import { ActiveDirectoryConfigSchema, LdapConfigSchema, type DirectoryConfig } from './schema';

export { LdapConnector } from './ldapConnector';
export { closeParkedSearches } from './parked';
export { directoryAttributeNames } from './attributeNames';

/**
 * The directory connector's definitions for the registry: `ldap` (OpenLDAP and other LDAPv3 servers) and
 * `active_directory`. Creating a connector does no I/O; the first operation connects and binds.
 */
export const ldapConnectorDefinition: ConnectorDefinition<DirectoryConfig> = {
  type: 'ldap',
  configSchema: LdapConfigSchema,
  create: (config, context) => new LdapConnector('ldap', config, context?.importAttributes),
};

export const activeDirectoryConnectorDefinition: ConnectorDefinition<DirectoryConfig> = {
  type: 'active_directory',
  configSchema: ActiveDirectoryConfigSchema,
  create: (config, context) => new LdapConnector('active_directory', config, context?.importAttributes),
};
