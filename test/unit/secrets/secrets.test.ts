import { mkdtempSync, readFileSync, rmSync, statSync } from 'node:fs';
import { randomBytes } from 'node:crypto';
import os from 'node:os';
import path from 'node:path';
import { ConfigError, SettingsReader } from '../../../lib/core/config';
import { decryptSecret, encryptSecret, loadSecretsKey, setSecretsKey } from '../../../lib/secrets';
import { keyCheckValue } from '../../../lib/secrets/keyCheck';

describe('sealing', () => {
  beforeAll(() => setSecretsKey(Buffer.alloc(32, 7)));

  it('round-trips, never contains the plaintext, and differs every time', () => {
    const a = encryptSecret('hunter2-plaintext', 'owner-1');
    const b = encryptSecret('hunter2-plaintext', 'owner-1');
    expect(a).not.toBe(b);
    expect(a).not.toContain('hunter2');
    expect(a).toMatch(/^v1\./);
    expect(decryptSecret(a, 'owner-1')).toBe('hunter2-plaintext');
  });

  it('does not open for another owner, a tampered value or another key', () => {
    const sealed = encryptSecret('value', 'owner-1');
    expect(() => decryptSecret(sealed, 'owner-2')).toThrow();
    const parts = sealed.split('.');
    parts[3] = Buffer.from('tampered').toString('base64url');
    expect(() => decryptSecret(parts.join('.'), 'owner-1')).toThrow();
    setSecretsKey(Buffer.alloc(32, 8));
    expect(() => decryptSecret(sealed, 'owner-1')).toThrow();
    setSecretsKey(Buffer.alloc(32, 7));
  });
});

describe('the key', () => {
  let dir: string;
  beforeEach(() => (dir = mkdtempSync(path.join(os.tmpdir(), 'ims-secrets-'))));
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  const settings = (env: Record<string, string>) => new SettingsReader({ AzureWebJobsStorage: 'UseDevelopmentStorage=true', Service__DataDir: dir, ...env });

  it('uses Secrets:Key when set (base64 of 32 bytes)', () => {
    const key = Buffer.alloc(32, 3);
    expect(loadSecretsKey(settings({ Secrets__Key: key.toString('base64'), AZURE_FUNCTIONS_ENVIRONMENT: 'Production' }))).toEqual(key);
  });

  it('refuses a key of the wrong size, naming the setting', () => {
    expect(() => loadSecretsKey(settings({ Secrets__Key: Buffer.alloc(16).toString('base64') }))).toThrow(ConfigError);
    expect(() => loadSecretsKey(settings({ Secrets__Key: 'not base64!' }))).toThrow(/Secrets:Key/);
  });

  it('outside Development a missing key stops the start', () => {
    expect(() => loadSecretsKey(settings({ AZURE_FUNCTIONS_ENVIRONMENT: 'Production' }))).toThrow(ConfigError);
    expect(() => loadSecretsKey(settings({}))).toThrow(/Secrets:Key/);
  });

  it('in Development generates one key into the data dir (0600) and reuses it', () => {
    const s = settings({ AZURE_FUNCTIONS_ENVIRONMENT: 'Development' });
    const first = loadSecretsKey(s);
    const file = path.join(dir, 'secrets.key');
    expect(Buffer.from(readFileSync(file, 'utf8').trim(), 'base64')).toEqual(first);
    expect(statSync(file).mode & 0o777).toBe(0o600);
    expect(loadSecretsKey(s)).toEqual(first);
  });
});

describe('keyCheckValue', () => {
  test('equal keys give one value, another key another; the value is not the key', () => {
    const k1 = randomBytes(32);
    const k2 = randomBytes(32);
    expect(keyCheckValue(k1)).toBe(keyCheckValue(Buffer.from(k1)));
    expect(keyCheckValue(k1)).not.toBe(keyCheckValue(k2));
    expect(keyCheckValue(k1)).not.toContain(k1.toString('base64url').slice(0, 8));
  });
});
