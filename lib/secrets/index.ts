import { createCipheriv, createDecipheriv, randomBytes } from 'node:crypto';
import { chmodSync, existsSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { ConfigError, SettingsReader, readCoreConfig } from '../core/config';
import { areaLog } from '../core/log';
import { ensurePrivateDir } from '../core/privateFiles';
import { checkSharedKey } from './keyCheck';

/**
 * Secrets at rest (connector passwords and every config field a connector schema marks `x-secret`):
 * AES-256-GCM with a random 96-bit IV per value and the owner's id as additional authenticated data, so a
 * ciphertext copied to another connector does not decrypt. Stored form: `v1.<iv>.<tag>.<ciphertext>`
 * (base64url parts).
 *
 * The key is `Secrets:Key` (base64 of 32 bytes). In Development, when it is not set, a key is generated once
 * into `<Service:DataDir>/secrets.key` and reused; in any other environment a missing key stops the start.
 */
const ALGORITHM = 'aes-256-gcm';
const VERSION = 'v1';
/**
 * GCM checks only as many tag bytes as it is handed unless the length is fixed: a tag cut to 4 bytes would
 * still verify. Every sealed value carries the full 16 bytes, and decryption accepts nothing else.
 */
const TAG_BYTES = 16;

let key: Buffer | undefined;

/** Read (or in Development create) the key. Throws ConfigError naming `Secrets:Key` when it is unusable. */
export function loadSecretsKey(settings = new SettingsReader()): Buffer {
  const configured = settings.raw('Secrets:Key');
  if (configured !== undefined) return decodeKey(configured, 'Secrets:Key');
  const core = readCoreConfig(settings);
  if (!core.isDevelopment) {
    throw new ConfigError('Secrets:Key', 'is required outside Development: set it to the base64 of 32 random bytes (for example `openssl rand -base64 32`).');
  }
  const file = path.resolve(core.dataDir, 'secrets.key');
  ensurePrivateDir(path.dirname(file), (line) => areaLog('secrets').warn(line));
  if (existsSync(file)) {
    chmodSync(file, 0o600);
    return decodeKey(readFileSync(file, 'utf8').trim(), file);
  }
  const fresh = randomBytes(32);
  try {
    // 'wx': two processes starting at once must not overwrite each other's key.
    writeFileSync(file, fresh.toString('base64') + '\n', { flag: 'wx', mode: 0o600 });
    chmodSync(file, 0o600);
    return fresh;
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'EEXIST') return decodeKey(readFileSync(file, 'utf8').trim(), file);
    throw err;
  }
}

function decodeKey(text: string, where: string): Buffer {
  const buf = /^[A-Za-z0-9+/]+={0,2}$/.test(text.trim()) ? Buffer.from(text.trim(), 'base64') : Buffer.alloc(0);
  if (buf.length !== 32) throw new ConfigError(where, 'must be the base64 encoding of exactly 32 bytes (an AES-256 key).');
  return buf;
}

/** Use this key from now on (the start step calls it; tests may call it with a fixed key). */
export function setSecretsKey(value: Buffer): void {
  if (value.length !== 32) throw new Error('The secrets key must be 32 bytes.');
  key = value;
}

function currentKey(): Buffer {
  key ??= loadSecretsKey();
  return key;
}

/** Encrypt `plaintext`, bound to `owner` (the connector id). */
export function encryptSecret(plaintext: string, owner: string): string {
  const iv = randomBytes(12);
  const cipher = createCipheriv(ALGORITHM, currentKey(), iv, { authTagLength: TAG_BYTES });
  cipher.setAAD(Buffer.from(owner, 'utf8'));
  const ct = Buffer.concat([cipher.update(plaintext, 'utf8'), cipher.final()]);
  return [VERSION, iv.toString('base64url'), cipher.getAuthTag().toString('base64url'), ct.toString('base64url')].join('.');
}

/** Decrypt what `encryptSecret` made for the same owner. Throws when the key, owner or data do not match. */
export function decryptSecret(sealed: string, owner: string): string {
  const [version, iv, tag, ct] = sealed.split('.');
  if (version !== VERSION || iv === undefined || tag === undefined || ct === undefined) throw new Error('Not a sealed secret.');
  const decipher = createDecipheriv(ALGORITHM, currentKey(), Buffer.from(iv, 'base64url'), { authTagLength: TAG_BYTES });
  decipher.setAAD(Buffer.from(owner, 'utf8'));
  decipher.setAuthTag(Buffer.from(tag, 'base64url'));
  return Buffer.concat([decipher.update(Buffer.from(ct, 'base64url')), decipher.final()]).toString('utf8');
}

/**
 * The start step: load the key once, so a missing or bad key stops the start instead of the first write, and
 * check that it is the key the other instances on the storage account use (keyCheck.ts).
 */
export async function startSecrets(): Promise<void> {
  const loaded = loadSecretsKey();
  await checkSharedKey(loaded);
  setSecretsKey(loaded);
}

export { SECRET_PLACEHOLDER, secretPaths, endpointPaths, changedPaths, getPath, setPath, deletePath, pointer, type FieldPath } from './fields';
