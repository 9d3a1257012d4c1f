import { SettingsReader } from '../../../lib/core/config';
import { dueTimerSchedule } from '../../../lib/runs/dueChanges';

describe('the due timer schedule', () => {
  test('every 10 s; the test hook shortens it in Development only, and a value out of range names the setting', () => {
    const hook = 'DueChanges__TestHooks__IntervalSeconds';
    expect(dueTimerSchedule(new SettingsReader({}))).toBe('*/10 * * * * *');
    expect(dueTimerSchedule(new SettingsReader({ AZURE_FUNCTIONS_ENVIRONMENT: 'Development', [hook]: '2' }))).toBe('*/2 * * * * *');
    expect(dueTimerSchedule(new SettingsReader({ AZURE_FUNCTIONS_ENVIRONMENT: 'Production', [hook]: '2' }))).toBe('*/10 * * * * *');
    expect(dueTimerSchedule(new SettingsReader({ [hook]: '2' }))).toBe('*/10 * * * * *');
    expect(() => dueTimerSchedule(new SettingsReader({ AZURE_FUNCTIONS_ENVIRONMENT: 'Development', [hook]: '0' }))).toThrow(/IntervalSeconds/);
    expect(() => dueTimerSchedule(new SettingsReader({ AZURE_FUNCTIONS_ENVIRONMENT: 'Development', [hook]: '11' }))).toThrow(/IntervalSeconds/);
  });
});
