import { ConfigError, SettingsReader } from '../core/config';

/**
 * The license, from configuration (`License:LicensedTo`, `License:Edition`, `License:ExpiresOn`,
 * `License:MaxConnectors`, `License:MaxMeshObjects`). Unset values are null; a null limit means unlimited.
 * Read (and validated) at start, so a bad value stops the start naming the setting.
 */
export interface License {
  licensedTo: string | null;
  edition: string | null;
  expiresOn: string | null;
  limits: { connectors: number | null; meshObjects: number | null };
}

export function readLicense(settings = new SettingsReader()): License {
  const expires = settings.string('License:ExpiresOn');
  let expiresOn: string | null = null;
  if (expires !== undefined) {
    const ms = Date.parse(expires);
    if (!/^\d{4}-\d{2}-\d{2}/.test(expires) || Number.isNaN(ms)) throw new ConfigError('License:ExpiresOn', `must be an ISO 8601 date, not '${expires}'.`);
    expiresOn = new Date(ms).toISOString();
  }
  const limit = (name: string) => (settings.raw(name) === undefined ? null : settings.int(name, 0, { min: 0 }));
  return {
    licensedTo: settings.string('License:LicensedTo') ?? null,
    edition: settings.string('License:Edition') ?? null,
    expiresOn,
    limits: { connectors: limit('License:MaxConnectors'), meshObjects: limit('License:MaxMeshObjects') },
  };
}
