import { chmodSync, existsSync, mkdirSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { CliError, EXIT } from './exitCodes';

/**
 * Profiles: one per service the operator talks to, kept in `$MESHSYNC_HOME` (default `~/.config/meshsync`):
 * `profiles.json` (URLs and how to sign in; nothing secret) and `credentials.json` (mode 0600: cached access
 * tokens with their expiry, and what renews them: a client secret, or the development issuer's data folder).
 */
export interface Profile {
  /** The API base, e.g. http://127.0.0.1:7071/api. */
  url: string;
  /** How requests are signed: a Bearer token (cached, from `login`), or Windows Negotiate (Kerberos). */
  auth?: 'bearer' | 'negotiate';
  /** OIDC authority of client-credentials sign-in. */
  authority?: string;
  scope?: string;
  /** RFC 8707 resource indicator of client-credentials sign-in (ADFS, oidc-provider), e.g. api://meshsync. */
  resource?: string;
  /** Service principal name of Negotiate (default HTTP@<host of url>). */
  spn?: string;
}

export interface ProfilesFile {
  current: string;
  profiles: Record<string, Profile>;
}

export interface Credential {
  accessToken: string;
  /** ISO time the token expires (from expires_in, or the token's exp). */
  expiresOn?: string;
  /** What renews the token when it has expired. */
  renew?:
    | { kind: 'clientCredentials'; tokenEndpoint: string; clientId: string; clientSecret: string; scope?: string; resource?: string }
    | { kind: 'dev'; dataDir: string; role: string; user?: string };
}

export const DEFAULT_URL = 'http://127.0.0.1:7071/api';
export const DEFAULT_PROFILE = 'default';

export function homeDir(): string {
  return process.env.MESHSYNC_HOME || path.join(os.homedir(), '.config', 'meshsync');
}

function readJson<T>(file: string, fallback: T): T {
  if (!existsSync(file)) return fallback;
  try {
    return JSON.parse(readFileSync(file, 'utf8')) as T;
  } catch (err) {
    throw new CliError(`${file} is not valid JSON (${(err as Error).message}); fix or remove it.`, EXIT.usage);
  }
}

/** Write through a temp file and rename, so a crash never leaves half a file; `secret` files get mode 0600. */
function writeJson(file: string, value: unknown, secret: boolean): void {
  mkdirSync(path.dirname(file), { recursive: true, mode: 0o700 });
  const tmp = `${file}.${process.pid}.tmp`;
  writeFileSync(tmp, `${JSON.stringify(value, null, 2)}\n`, { mode: secret ? 0o600 : 0o644 });
  if (secret) chmodSync(tmp, 0o600);
  renameSync(tmp, file);
}

const profilesPath = () => path.join(homeDir(), 'profiles.json');
const credentialsPath = () => path.join(homeDir(), 'credentials.json');

export function loadProfiles(): ProfilesFile {
  const file = readJson<ProfilesFile>(profilesPath(), { current: DEFAULT_PROFILE, profiles: {} });
  return { current: file.current || DEFAULT_PROFILE, profiles: file.profiles ?? {} };
}

export function saveProfiles(file: ProfilesFile): void {
  writeJson(profilesPath(), file, false);
}

/** The profile a command uses: `--profile`, then MESHSYNC_PROFILE, then the current one. */
export function profileName(flag: string | undefined): string {
  return flag || process.env.MESHSYNC_PROFILE || loadProfiles().current;
}

export function getProfile(name: string): Profile {
  return loadProfiles().profiles[name] ?? { url: DEFAULT_URL };
}

export function setProfile(name: string, profile: Profile): void {
  const file = loadProfiles();
  file.profiles[name] = profile;
  saveProfiles(file);
}

export function loadCredential(profile: string): Credential | undefined {
  return readJson<Record<string, Credential>>(credentialsPath(), {})[profile];
}

export function saveCredential(profile: string, credential: Credential | undefined): void {
  const all = readJson<Record<string, Credential>>(credentialsPath(), {});
  if (credential) all[profile] = credential;
  else delete all[profile];
  writeJson(credentialsPath(), all, true);
}
