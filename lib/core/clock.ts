import { readFileSync, statSync } from 'node:fs';
import { ConfigError, SettingsReader, readCoreConfig } from './config';

/**
 * The engine's clock: the instant rules see as `now()`, export runs plan with, and the due timer compares due
 * instants with (docs/dated-changes.md). It is the host's clock, unless the test-only setting
 * `Testing:ClockOffsetFile` names a file holding an offset in milliseconds to add to it (`864000000`: ten days
 * ahead). The file is read again when it changes, so a test moves the clock of a running service by writing
 * it. The setting is refused at start outside Development: a production clock is never moved.
 */
export const CLOCK_OFFSET_SETTING = 'Testing:ClockOffsetFile';

let offsetFile: string | undefined;
let cached = { mtimeMs: -1, size: -1, offset: 0 };

/** Reads `Testing:ClockOffsetFile` (at start): set outside Development, the start stops naming the setting. */
export function configureClock(settings = new SettingsReader()): void {
  const file = settings.string(CLOCK_OFFSET_SETTING);
  if (file !== undefined && !readCoreConfig(settings).isDevelopment)
    throw new ConfigError(CLOCK_OFFSET_SETTING, 'moves the engine clock for tests and is only accepted when AZURE_FUNCTIONS_ENVIRONMENT is Development.');
  offsetFile = file;
  cached = { mtimeMs: -1, size: -1, offset: 0 };
}

/** The offset the test clock adds (0 without the setting, or while the file is missing or holds no whole number). */
function clockOffset(): number {
  if (offsetFile === undefined) return 0;
  try {
    const st = statSync(offsetFile);
    if (st.mtimeMs !== cached.mtimeMs || st.size !== cached.size) {
      const text = readFileSync(offsetFile, 'utf8').trim();
      cached = { mtimeMs: st.mtimeMs, size: st.size, offset: /^-?\d{1,15}$/.test(text) ? Number(text) : 0 };
    }
    return cached.offset;
  } catch {
    return 0;
  }
}

/** The engine's current instant (see above). */
export function engineNow(): Date {
  return new Date(Date.now() + clockOffset());
}
