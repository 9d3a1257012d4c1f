import { SettingsReader } from '../core/config';

/**
 * Schedule settings (section `Schedules`):
 * - `Schedules:MinIntervalSeconds`: TEST ONLY. The shortest interval a schedule's cron may fire at, in seconds
 *   (default 60: a cron that fires more than once a minute is refused). Tests lower it so that a schedule fires
 *   every few seconds; production leaves it unset. 1 to 60.
 */
export interface SchedulesConfig {
  minIntervalSeconds: number;
}

export function readSchedulesConfig(settings = new SettingsReader()): SchedulesConfig {
  return { minIntervalSeconds: settings.int('Schedules:MinIntervalSeconds', 60, { min: 1, max: 60 }) };
}
