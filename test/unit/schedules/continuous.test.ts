import { SettingsReader } from '../../../lib/core/config';
import { continuousSettings, reconcileMinuteMs, watchedFolder } from '../../../lib/schedules/continuous';

describe('continuous mode settings (pure)', () => {
  test('off unless enabled is true', () => {
    expect(continuousSettings({})).toBeNull();
    expect(continuousSettings({ continuous: { enabled: false, intervalSeconds: 2 } })).toBeNull();
    expect(continuousSettings({ continuous: 'yes' })).toBeNull();
  });
  test('defaults: a look every 5 s, a reconciling delta every 15 min; given values kept', () => {
    expect(continuousSettings({ continuous: { enabled: true } })).toEqual({ intervalSeconds: 5, reconcileMinutes: 15, stream: 'auto' });
    expect(continuousSettings({ continuous: { enabled: true, intervalSeconds: 1, reconcileMinutes: 60, stream: 'off' } })).toEqual({
      intervalSeconds: 1,
      reconcileMinutes: 60,
      stream: 'off',
    });
  });
  test('a stored value out of range falls back to the default', () => {
    expect(continuousSettings({ continuous: { enabled: true, intervalSeconds: 0, reconcileMinutes: 1.5, stream: 'sometimes' } })).toEqual({
      intervalSeconds: 5,
      reconcileMinutes: 15,
      stream: 'auto',
    });
  });
  test('only a file connector has a folder to watch', () => {
    expect(watchedFolder({ type: 'custom', config: { implementation: 'file', settings: { path: '/srv/hr' } } })).toBe('/srv/hr');
    expect(watchedFolder({ type: 'custom', config: { implementation: 'other', settings: { path: '/srv/hr' } } })).toBeNull();
    expect(watchedFolder({ type: 'ldap', config: { host: 'x' } })).toBeNull();
  });
  test('a reconcile minute lasts 60 s; the test hook shortens it in Development only, and a value out of range names the setting', () => {
    const hook = 'Continuous__TestHooks__ReconcileMinuteSeconds';
    expect(reconcileMinuteMs(new SettingsReader({}))).toBe(60_000);
    expect(reconcileMinuteMs(new SettingsReader({ AZURE_FUNCTIONS_ENVIRONMENT: 'Development', [hook]: '10' }))).toBe(10_000);
    expect(reconcileMinuteMs(new SettingsReader({ AZURE_FUNCTIONS_ENVIRONMENT: 'Production', [hook]: '10' }))).toBe(60_000);
    expect(reconcileMinuteMs(new SettingsReader({ [hook]: '10' }))).toBe(60_000);
    expect(() => reconcileMinuteMs(new SettingsReader({ AZURE_FUNCTIONS_ENVIRONMENT: 'Development', [hook]: '0' }))).toThrow(/ReconcileMinuteSeconds/);
  });
});
