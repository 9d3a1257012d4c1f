import { ConfigError, SettingsReader } from '../../../lib/core/config';
import { readEngineConfig } from '../../../lib/instances/config';

describe('readEngineConfig', () => {
  it('has the documented defaults', () => {
    const c = readEngineConfig(new SettingsReader({ WEBSITE_INSTANCE_ID: 'ABC-1', Engine__InstanceName: 'east' }));
    expect(c).toEqual({ instanceId: 'abc-1', instanceName: 'east', heartbeatSeconds: 15, offlineAfterSeconds: 60, heapGrowingPercent: 30, renamePauseMs: 0 });
  });

  it('reads the heap growing percent, 0 leaving V8 its own heuristic, and refuses nonsense', () => {
    expect(readEngineConfig(new SettingsReader({ Engine__HeapGrowingPercent: '0' })).heapGrowingPercent).toBe(0);
    expect(readEngineConfig(new SettingsReader({ 'Engine:HeapGrowingPercent': '120' })).heapGrowingPercent).toBe(120);
    expect(() => readEngineConfig(new SettingsReader({ Engine__HeapGrowingPercent: '-5' }))).toThrow(ConfigError);
    expect(() => readEngineConfig(new SettingsReader({ Engine__HeapGrowingPercent: 'lots' }))).toThrow(/Engine:HeapGrowingPercent/);
  });

  it('honours the rename pause test hook in Development only', () => {
    expect(readEngineConfig(new SettingsReader({ Engine__TestHooks__RenamePauseMs: '500' })).renamePauseMs).toBe(0);
    expect(readEngineConfig(new SettingsReader({ AZURE_FUNCTIONS_ENVIRONMENT: 'Development', Engine__TestHooks__RenamePauseMs: '500' })).renamePauseMs).toBe(
      500,
    );
  });
});
