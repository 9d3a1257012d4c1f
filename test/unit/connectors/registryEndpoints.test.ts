import { Type } from '@sinclair/typebox';
import { registerCustomConnector } from '../../../lib/connectors/registry';
import { connectorTypeConfig, testConnectorOnSave } from '../../../lib/connectors/registry';

/**
 * Per type, the config fields that say where or as whom a connector connects (a PUT changing one must send the
 * secrets again; tested over HTTP in test/integration/security/secretDestination.test.ts), and the on-demand
 * test of a custom connector.
 */
describe('endpoints per connector type', () => {
  it('directory and sql: the server, the account and the TLS trust', () => {
    expect(connectorTypeConfig('ldap').endpoints({})).toEqual([['host'], ['port'], ['security'], ['allowInsecure'], ['caCertificate'], ['bindDN']]);
    expect(connectorTypeConfig('active_directory').endpoints({})).toEqual(connectorTypeConfig('ldap').endpoints({}));
    expect(connectorTypeConfig('sql').endpoints({})).toEqual([['dialect'], ['host'], ['port'], ['database'], ['user'], ['ssl']]);
  });

  it('custom: the implementation and the settings it marks x-endpoint; all settings when it marks none or is unknown', () => {
    registerCustomConnector('unit-marked', () => ({ FullImport: async function* () {} }), {
      settingsSchema: Type.Object({ url: Type.String({ 'x-endpoint': true }), label: Type.Optional(Type.String()) }, { $id: 'UnitMarkedSettings' }),
    });
    registerCustomConnector('unit-unmarked', () => ({ FullImport: async function* () {} }));
    const custom = connectorTypeConfig('custom');
    expect(custom.endpoints({ implementation: 'unit-marked' })).toEqual([['implementation'], ['settings', 'url']]);
    expect(custom.endpoints({ implementation: 'unit-unmarked' })).toEqual([['implementation'], ['settings']]);
    expect(custom.endpoints({ implementation: 'no-such-implementation' })).toEqual([['implementation'], ['settings']]);
  });
});

describe('testConnectorOnSave for custom connectors', () => {
  it("runs the implementation's test, or answers that there is nothing to test", async () => {
    registerCustomConnector('unit-tested', () => ({ FullImport: async function* () {}, TestConnection: async () => ({ message: 'reached the API' }) }));
    registerCustomConnector('unit-untested', () => ({ FullImport: async function* () {} }));
    await expect(testConnectorOnSave('custom', { implementation: 'unit-tested' })).resolves.toEqual({ message: 'reached the API' });
    await expect(testConnectorOnSave('custom', { implementation: 'unit-untested' })).resolves.toEqual({
      message: 'The implementation has no connection test.',
    });
    await expect(testConnectorOnSave('custom', { implementation: 'not-registered' })).rejects.toMatchObject({ code: 'configuration_invalid' });
  });
});
