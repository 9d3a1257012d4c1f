import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import {
  getSetting,
  isConfigLikeError,
  loadLocalSettings,
  readAppMain,
  readHostJson,
  resolveSettingReferences,
  RuntimeConfigError,
} from '../../../lib/runtime/settings';

describe('settings', () => {
  let dir: string;
  beforeEach(() => {
    dir = mkdtempSync(path.join(os.tmpdir(), 'settings-'));
  });
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  const write = (name: string, json: unknown) => writeFileSync(path.join(dir, name), typeof json === 'string' ? json : JSON.stringify(json));

  it('copies Values into the environment, the environment wins', () => {
    write('local.settings.json', { IsEncrypted: false, Values: { A: 'from-file', B: 'from-file', N: 5 }, Host: { LocalHttpPort: 7080 } });
    const env: NodeJS.ProcessEnv = { A: 'from-env' };
    const r = loadLocalSettings(dir, env);
    expect(env).toEqual({ A: 'from-env', B: 'from-file', N: '5' });
    expect(r).toMatchObject({ usedSample: false, applied: ['B', 'N'], overridden: ['A'], host: { LocalHttpPort: 7080 } });
  });

  it('treats names case-insensitively and A:B as A__B, as the host does', () => {
    write('local.settings.json', { Values: { 'Auth:Jwt:Enabled': 'true', azurewebjobsstorage: 'file' } });
    const env: NodeJS.ProcessEnv = { Auth__Jwt__Enabled: 'false', AzureWebJobsStorage: 'env' };
    loadLocalSettings(dir, env);
    expect(env).toEqual({ Auth__Jwt__Enabled: 'false', AzureWebJobsStorage: 'env' });
    expect(getSetting('auth:jwt:enabled', env)).toBe('false');
  });

  it('falls back to local.settings.sample.json and says so', () => {
    write('local.settings.sample.json', { Values: { S: 'sample' } });
    const env: NodeJS.ProcessEnv = {};
    expect(loadLocalSettings(dir, env).usedSample).toBe(true);
    expect(env.S).toBe('sample');
  });

  it('never takes AZURE_FUNCTIONS_ENVIRONMENT from the sample: Development must be asked for', () => {
    write('local.settings.sample.json', { Values: { AZURE_FUNCTIONS_ENVIRONMENT: 'Development', S: 'sample' } });
    const env: NodeJS.ProcessEnv = {};
    const result = loadLocalSettings(dir, env);
    expect(result.withheld).toEqual(['AZURE_FUNCTIONS_ENVIRONMENT']);
    expect(env).toEqual({ S: 'sample' });
    // Set in the environment: it stands; written in local.settings.json: it is applied.
    const asked: NodeJS.ProcessEnv = { AZURE_FUNCTIONS_ENVIRONMENT: 'Development' };
    expect(loadLocalSettings(dir, asked).withheld).toEqual([]);
    expect(asked.AZURE_FUNCTIONS_ENVIRONMENT).toBe('Development');
    write('local.settings.json', { Values: { AZURE_FUNCTIONS_ENVIRONMENT: 'Development' } });
    const fromFile: NodeJS.ProcessEnv = {};
    expect(loadLocalSettings(dir, fromFile).withheld).toEqual([]);
    expect(fromFile.AZURE_FUNCTIONS_ENVIRONMENT).toBe('Development');
  });

  it('works without any settings file and fails clearly on bad JSON', () => {
    expect(loadLocalSettings(dir, {})).toMatchObject({ file: undefined, applied: [] });
    write('local.settings.json', '{ "Values": ');
    expect(() => loadLocalSettings(dir, {})).toThrow(/local.settings.json is not valid JSON/);
  });

  it('resolves %Setting% references in host.json, %% stays literal', () => {
    write('host.json', { version: '2.0', extensions: { http: { routePrefix: '%PREFIX%' } }, other: ['100%% sure', '%Deep:Name%'] });
    const hostJson = readHostJson(dir, { PREFIX: 'v1', Deep__Name: 'deep' });
    expect(hostJson).toEqual({ version: '2.0', extensions: { http: { routePrefix: 'v1' } }, other: ['100% sure', 'deep'] });
  });

  it('names the missing setting of a %reference%', () => {
    let caught: unknown;
    try {
      resolveSettingReferences({ a: '%NOPE%' }, {});
    } catch (err) {
      caught = err;
    }
    expect(caught).toBeInstanceOf(RuntimeConfigError);
    expect((caught as RuntimeConfigError).setting).toBe('NOPE');
    expect(isConfigLikeError(caught)).toBe(true);
  });

  it('requires host.json version 2.0 and a package.json main', () => {
    expect(() => readHostJson(dir, {})).toThrow(/No host.json/);
    write('host.json', { version: '1.0' });
    expect(() => readHostJson(dir, {})).toThrow(/"version" must be "2.0"/);
    write('package.json', { name: 'x' });
    expect(() => readAppMain(dir)).toThrow(/has no "main"/);
    write('package.json', { main: 'dist/*.js' });
    expect(readAppMain(dir)).toBe('dist/*.js');
  });
});

describe('host.json overrides from app settings', () => {
  it('applies AzureFunctionsJobHost__ paths case-insensitively, creating missing sections', () => {
    const dir = mkdtempSync(path.join(os.tmpdir(), 'settings-'));
    try {
      writeFileSync(path.join(dir, 'host.json'), JSON.stringify({ version: '2.0', logging: { logLevel: { default: 'Information' } } }));
      const hostJson = readHostJson(dir, {
        AzureFunctionsJobHost__logging__logLevel__Default: 'Warning',
        AzureFunctionsJobHost__extensions__http__routePrefix: 'v2',
      });
      expect(hostJson).toEqual({ version: '2.0', logging: { logLevel: { default: 'Warning' } }, extensions: { http: { routePrefix: 'v2' } } });
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
