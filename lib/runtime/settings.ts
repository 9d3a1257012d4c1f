import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';

/**
 * A start-up failure caused by configuration: the host prints its message (which names the setting or the
 * file at fault) without a stack trace and refuses to start.
 */
export class RuntimeConfigError extends Error {
  constructor(
    readonly setting: string,
    message: string,
  ) {
    super(message);
    this.name = 'RuntimeConfigError';
  }
}

/** True for errors whose message is the whole story (a setting at fault): printed without a stack. */
export function isConfigLikeError(err: unknown): err is Error {
  return err instanceof Error && (/Config(uration)?Error$/.test(err.name) || typeof (err as { setting?: unknown }).setting === 'string');
}

export interface LocalSettingsResult {
  /** The file read, or undefined when neither local.settings.json nor the sample exists. */
  file?: string;
  /** True when local.settings.json was missing and the sample was read instead. */
  usedSample: boolean;
  /** Settings copied into the environment (names only: values may be secrets). */
  applied: string[];
  /** Settings skipped because the environment already had them. */
  overridden: string[];
  /** Settings of the sample not applied because they must be set explicitly (AZURE_FUNCTIONS_ENVIRONMENT). */
  withheld: string[];
  /** `Host` section (LocalHttpPort...). */
  host: Record<string, unknown>;
}

function readJson(file: string): Record<string, unknown> {
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (err) {
    throw new RuntimeConfigError(path.basename(file), `Cannot read ${file}: ${(err as Error).message}`);
  }
  try {
    const parsed: unknown = JSON.parse(text.replace(/^\uFEFF/, ''));
    if (!parsed || typeof parsed !== 'object' || Array.isArray(parsed)) throw new Error('not a JSON object');
    return parsed as Record<string, unknown>;
  } catch (err) {
    throw new RuntimeConfigError(path.basename(file), `${file} is not valid JSON: ${(err as Error).message}`);
  }
}

/** Environment lookup the way the Functions host reads app settings: `A:B` is `A__B`, names case-insensitive. */
export function getSetting(name: string, env: NodeJS.ProcessEnv = process.env): string | undefined {
  const underscored = name.replace(/:/g, '__');
  for (const key of [underscored, name]) {
    if (env[key] !== undefined) return env[key];
  }
  const lower = underscored.toLowerCase();
  for (const [k, v] of Object.entries(env)) if (k.toLowerCase() === lower && v !== undefined) return v;
  return undefined;
}

/**
 * Settings the sample never supplies: the environment name decides whether the development issuer (which signs
 * anyone in who can read the data folder) and the generated secrets key are allowed, so Development must be
 * asked for, in the environment or in local.settings.json; `npm start` asks for it (scripts/start.js).
 */
const EXPLICIT_ONLY = ['AZURE_FUNCTIONS_ENVIRONMENT'];

/**
 * Copy `local.settings.json` `Values` into `env` where a variable is not already set (the environment wins,
 * as with `func start`). When local.settings.json is missing, local.settings.sample.json is read instead,
 * except its AZURE_FUNCTIONS_ENVIRONMENT (listed in `withheld`).
 */
export function loadLocalSettings(appDir: string, env: NodeJS.ProcessEnv = process.env): LocalSettingsResult {
  const main = path.join(appDir, 'local.settings.json');
  const sample = path.join(appDir, 'local.settings.sample.json');
  const file = existsSync(main) ? main : existsSync(sample) ? sample : undefined;
  const result: LocalSettingsResult = { file, usedSample: file === sample, applied: [], overridden: [], withheld: [], host: {} };
  if (!file) return result;
  const json = readJson(file);
  if (json.IsEncrypted === true) {
    throw new RuntimeConfigError('IsEncrypted', `${path.basename(file)} is encrypted; this runtime reads only plain-text settings.`);
  }
  const values = (json.Values ?? {}) as Record<string, unknown>;
  if (typeof values !== 'object' || Array.isArray(values)) throw new RuntimeConfigError('Values', `${path.basename(file)}: "Values" must be an object.`);
  for (const [name, raw] of Object.entries(values)) {
    if (raw === null || raw === undefined) continue;
    const value = typeof raw === 'string' ? raw : JSON.stringify(raw);
    if (getSetting(name, env) !== undefined) {
      result.overridden.push(name);
      continue;
    }
    if (result.usedSample && EXPLICIT_ONLY.includes(name.toUpperCase())) {
      result.withheld.push(name);
      continue;
    }
    env[name] = value;
    result.applied.push(name);
  }
  const connectionStrings = json.ConnectionStrings as Record<string, unknown> | undefined;
  if (connectionStrings && typeof connectionStrings === 'object') {
    for (const [name, value] of Object.entries(connectionStrings)) {
      const key = `ConnectionStrings__${name}`;
      if (typeof value === 'string' && getSetting(key, env) === undefined) env[key] = value;
    }
  }
  if (json.Host && typeof json.Host === 'object') result.host = json.Host as Record<string, unknown>;
  return result;
}

/**
 * Replace `%Name%` references in every string of a JSON value with the setting's value, as the host does
 * for host.json and binding properties. `%%` stays literal. A reference to a missing setting fails naming it.
 */
export function resolveSettingReferences<T>(value: T, env: NodeJS.ProcessEnv = process.env, where = 'host.json'): T {
  const visit = (v: unknown): unknown => {
    if (typeof v === 'string') return resolveString(v, env, where);
    if (Array.isArray(v)) return v.map(visit);
    if (v && typeof v === 'object') {
      const out: Record<string, unknown> = {};
      for (const [k, x] of Object.entries(v)) out[k] = visit(x);
      return out;
    }
    return v;
  };
  return visit(value) as T;
}

export function resolveString(text: string, env: NodeJS.ProcessEnv = process.env, where = 'host.json'): string {
  return text.replace(/%([^%\s]*)%/g, (whole, name: string) => {
    if (name === '') return '%';
    const v = getSetting(name, env);
    if (v === undefined) throw new RuntimeConfigError(name, `${where} refers to the app setting '%${name}%', which is not set.`);
    return v;
  });
}

/** Read and resolve host.json. A missing host.json is an error: it is what makes a folder a Functions app. */
export function readHostJson(appDir: string, env: NodeJS.ProcessEnv = process.env): Record<string, unknown> {
  const file = path.join(appDir, 'host.json');
  if (!existsSync(file)) throw new RuntimeConfigError('host.json', `No host.json in ${appDir}: not a Functions app folder.`);
  const json = readJson(file);
  if (json.version !== '2.0') throw new RuntimeConfigError('host.json', `host.json "version" must be "2.0" (found ${JSON.stringify(json.version)}).`);
  applyHostJsonOverrides(json, env);
  return resolveSettingReferences(json, env);
}

/**
 * App settings named `AzureFunctionsJobHost__<path>` override host.json values, as in the Functions host
 * (`AzureFunctionsJobHost__logging__logLevel__default=Warning`). Existing keys are matched case-insensitively.
 */
export function applyHostJsonOverrides(json: Record<string, unknown>, env: NodeJS.ProcessEnv = process.env): void {
  const prefix = 'azurefunctionsjobhost__';
  for (const [name, value] of Object.entries(env)) {
    if (value === undefined || !name.toLowerCase().startsWith(prefix)) continue;
    const path = name
      .slice(prefix.length)
      .split('__')
      .filter((p) => p !== '');
    if (path.length === 0) continue;
    let node = json;
    for (let i = 0; i < path.length; i++) {
      const key = Object.keys(node).find((k) => k.toLowerCase() === path[i].toLowerCase()) ?? path[i];
      if (i === path.length - 1) {
        node[key] = value;
      } else {
        const next = node[key];
        if (!next || typeof next !== 'object' || Array.isArray(next)) node[key] = {};
        node = node[key] as Record<string, unknown>;
      }
    }
  }
}

/** package.json `main` of the app: the files (a glob) that register its functions. */
export function readAppMain(appDir: string): string {
  const file = path.join(appDir, 'package.json');
  if (!existsSync(file)) throw new RuntimeConfigError('package.json', `No package.json in ${appDir}: its "main" names the function files.`);
  const main = readJson(file).main;
  if (typeof main !== 'string' || main.trim() === '') {
    throw new RuntimeConfigError('package.json', `package.json in ${appDir} has no "main" (a path or glob of the files that register functions).`);
  }
  return main;
}
