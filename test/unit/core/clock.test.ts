import { mkdtempSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { ConfigError, SettingsReader } from '../../../lib/core/config';
import { configureClock, engineNow } from '../../../lib/core/clock';

/** The engine clock: the host's, moved only by the test-only Testing:ClockOffsetFile, which only Development accepts. */
const settings = (env: Record<string, string>) => new SettingsReader({ AzureWebJobsStorage: 'UseDevelopmentStorage=true', ...env });

afterEach(() => configureClock(settings({})));

test('outside Development the setting stops the start, naming it', () => {
  expect(() => configureClock(settings({ Testing__ClockOffsetFile: '/tmp/x' }))).toThrow(ConfigError);
  expect(() => configureClock(settings({ Testing__ClockOffsetFile: '/tmp/x', AZURE_FUNCTIONS_ENVIRONMENT: 'Production' }))).toThrow(
    "Configuration error in setting 'Testing:ClockOffsetFile': moves the engine clock for tests and is only accepted when AZURE_FUNCTIONS_ENVIRONMENT is Development.",
  );
});

test('in Development the file moves the clock, read again when it changes', () => {
  const file = path.join(mkdtempSync(path.join(os.tmpdir(), 'ims-clock-')), 'offset');
  configureClock(settings({ Testing__ClockOffsetFile: file, AZURE_FUNCTIONS_ENVIRONMENT: 'Development' }));
  // No file yet: the host's clock.
  expect(Math.abs(engineNow().getTime() - Date.now())).toBeLessThan(60_000);
  writeFileSync(file, String(10 * 86_400_000));
  expect(engineNow().getTime() - Date.now()).toBeGreaterThan(9 * 86_400_000);
  writeFileSync(file, '-3600000000\n');
  expect(engineNow().getTime() - Date.now()).toBeLessThan(-3_500_000_000);
  // Text that is not a whole number of milliseconds: no offset.
  writeFileSync(file, 'tomorrow');
  expect(Math.abs(engineNow().getTime() - Date.now())).toBeLessThan(60_000);
});
