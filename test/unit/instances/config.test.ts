import { ConfigError, SettingsReader } from '../../../lib/core/config';
import { readEngineConfig, readInstanceId } from '../../../lib/instances/config';

describe('readEngineConfig', () => {
  it('has the documented defaults', () => {
    const c = readEngineConfig(new SettingsReader({ WEBSITE_INSTANCE_ID: 'ABC-1', Engine__InstanceName: 'east' }));
    expect(c).toEqual({
      instanceId: 'abc-1',
      instanceName: 'east',
      heartbeatSeconds: 15,
      offlineAfterSeconds: 60,
      heapGrowingPercent: 30,
      heapFloorMB: 128,
      renamePauseMs: 0,
    });
  });

  it('reads the heap growing percent, 0 leaving V8 its own heuristic, and refuses nonsense', () => {
    expect(readEngineConfig(new SettingsReader({ Engine__HeapGrowingPercent: '0' })).heapGrowingPercent).toBe(0);
    expect(readEngineConfig(new SettingsReader({ 'Engine:HeapGrowingPercent': '120' })).heapGrowingPercent).toBe(120);
    expect(() => readEngineConfig(new SettingsReader({ Engine__HeapGrowingPercent: '-5' }))).toThrow(ConfigError);
    expect(() => readEngineConfig(new SettingsReader({ Engine__HeapGrowingPercent: 'lots' }))).toThrow(/Engine:HeapGrowingPercent/);
  });

  it('reads the heap floor, 0 leaving the percent alone, and refuses nonsense', () => {
    expect(readEngineConfig(new SettingsReader({ Engine__HeapFloorMB: '0' })).heapFloorMB).toBe(0);
    expect(readEngineConfig(new SettingsReader({ 'Engine:HeapFloorMB': '1024' })).heapFloorMB).toBe(1024);
    expect(() => readEngineConfig(new SettingsReader({ Engine__HeapFloorMB: '-1' }))).toThrow(/Engine:HeapFloorMB/);
    expect(() => readEngineConfig(new SettingsReader({ Engine__HeapFloorMB: 'big' }))).toThrow(ConfigError);
  });

  it('reads the instance id alone as the whole config does', () => {
    const env = { WEBSITE_INSTANCE_ID: 'ABC-1' };
    expect(readInstanceId(new SettingsReader(env))).toBe('abc-1');
    expect(readInstanceId(new SettingsReader(env))).toBe(readEngineConfig(new SettingsReader(env)).instanceId);
    // Without one, a random id for the process's lifetime, the same every time.
    expect(readInstanceId(new SettingsReader({}))).toBe(readEngineConfig(new SettingsReader({})).instanceId);
  });

  it('honours the rename pause test hook in Development only', () => {
    expect(readEngineConfig(new SettingsReader({ Engine__TestHooks__RenamePauseMs: '500' })).renamePauseMs).toBe(0);
    expect(readEngineConfig(new SettingsReader({ AZURE_FUNCTIONS_ENVIRONMENT: 'Development', Engine__TestHooks__RenamePauseMs: '500' })).renamePauseMs).toBe(
      500,
    );
  });
});
