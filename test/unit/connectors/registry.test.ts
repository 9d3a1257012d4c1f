import { Type } from '@sinclair/typebox';
import { registerConnectorImplementation, SAVE_TEST_MAX_SECONDS, testConnectorOnSave } from '../../../lib/connectors/registry';
import { ConnectorError, type Connector } from '../../../lib/connectors/sdk';

/**
 * The test on save is bounded however the implementation behaves: registered implementations that hang or
 * answer, to check the bound, the timeout handed to the implementation, and that it is always closed.
 */
describe('testConnectorOnSave', () => {
  const seen: { config: Record<string, unknown>; closed: boolean }[] = [];
  const implementation = (type: string, test: () => Promise<{ message: string }>) =>
    registerConnectorImplementation({
      type,
      configSchema: Type.Object({}),
      create: (config) => {
        const entry = { config: config as Record<string, unknown>, closed: false };
        seen.push(entry);
        return {
          type,
          testConnection: test,
          schema: async () => ({ objectTypes: [] }),
          close: async () => void (entry.closed = true),
        } as Connector;
      },
    });

  beforeEach(() => {
    seen.length = 0;
  });

  test('a source that never answers ends in a timeout ConnectorError at the configured bound; the connector is closed', async () => {
    implementation('test-hang', () => new Promise(() => undefined));
    const err = await testConnectorOnSave('test-hang', { timeoutSeconds: 1 }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ConnectorError);
    expect(err).toMatchObject({ code: 'timeout', message: 'The test connection did not finish within 1 s.' });
    expect(seen).toEqual([{ config: { timeoutSeconds: 1 }, closed: true }]);
  });

  test('timeoutSeconds above the bound is lowered to it for the test; a configuration without one is left alone', async () => {
    implementation('test-ok', async () => ({ message: 'reached' }));
    await expect(testConnectorOnSave('test-ok', { host: 'x', timeoutSeconds: 300 })).resolves.toEqual({ message: 'reached' });
    await expect(testConnectorOnSave('test-ok', { host: 'y' })).resolves.toEqual({ message: 'reached' });
    expect(seen).toEqual([
      { config: { host: 'x', timeoutSeconds: SAVE_TEST_MAX_SECONDS }, closed: true },
      { config: { host: 'y' }, closed: true },
    ]);
  });

  test("the implementation's own failure is passed on, and an unknown type is unsupported", async () => {
    implementation('test-refused', async () => {
      throw new ConnectorError('authentication_failed', 'refused');
    });
    await expect(testConnectorOnSave('test-refused', {})).rejects.toMatchObject({ code: 'authentication_failed', message: 'refused' });
    expect(seen[0].closed).toBe(true);
    await expect(testConnectorOnSave('no-such-type', {})).rejects.toMatchObject({ code: 'unsupported' });
  });
});
