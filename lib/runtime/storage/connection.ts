import type { TokenCredential } from '@azure/core-auth';
import { connectionStringFor, DEFAULT_ENDPOINTS, isDevelopmentStorage } from '../azurite';
import { getSetting, RuntimeConfigError } from '../settings';

export type StorageService = 'queue' | 'blob' | 'table';

/** Where a binding's `connection` leads: a connection string, or a service URI reached with a token credential. */
export type StorageConnection =
  { kind: 'connectionString'; setting: string; connectionString: string } | { kind: 'identity'; setting: string; serviceUri: string; clientId?: string };

/** The default connection of the storage bindings, as on the host. */
export const DEFAULT_CONNECTION = 'AzureWebJobsStorage';

function settingSection(name: string, env: NodeJS.ProcessEnv): Record<string, string> {
  const prefix = `${name.replace(/:/g, '__')}__`.toLowerCase();
  const out: Record<string, string> = {};
  for (const [k, v] of Object.entries(env)) {
    if (v !== undefined && k.toLowerCase().startsWith(prefix)) out[k.slice(prefix.length).toLowerCase()] = v;
  }
  return out;
}

function fromName(name: string, service: StorageService, env: NodeJS.ProcessEnv): StorageConnection | undefined {
  const value = getSetting(name, env) ?? getSetting(`ConnectionStrings:${name}`, env);
  if (value !== undefined && value.trim() !== '') {
    const connectionString = isDevelopmentStorage(value) ? connectionStringFor(DEFAULT_ENDPOINTS) : value;
    return { kind: 'connectionString', setting: name, connectionString };
  }
  const section = settingSection(name, env);
  const serviceUri = section[`${service}serviceuri`] ?? section.serviceuri;
  if (serviceUri) return { kind: 'identity', setting: name, serviceUri, clientId: section.clientid };
  if (section.accountname)
    return { kind: 'identity', setting: name, serviceUri: `https://${section.accountname}.${service}.core.windows.net`, clientId: section.clientid };
  return undefined;
}

/**
 * Resolve a binding's `connection` the way the host's storage extensions do: an empty name means
 * `AzureWebJobsStorage`; a name N is looked up as `AzureWebJobsN` first, then `N`, then `ConnectionStrings:N`.
 * A value is a connection string (`UseDevelopmentStorage=true` is Azurite on its default ports); without a
 * value, the section `N__serviceUri` / `N__<service>ServiceUri` (or `N__accountName`) names the account for an
 * identity-based connection (`N__clientId` picks a user-assigned identity). Returns undefined when none is set.
 */
export function resolveConnection(name: string | undefined, service: StorageService, env: NodeJS.ProcessEnv = process.env): StorageConnection | undefined {
  const n = (name ?? '').trim();
  if (n === '') return fromName(DEFAULT_CONNECTION, service, env);
  return fromName(`AzureWebJobs${n}`, service, env) ?? fromName(n, service, env);
}

/** resolveConnection, or the start-up error naming the function, the binding and the setting. */
export function requireConnection(
  fnName: string,
  bindingName: string,
  type: string,
  name: string | undefined,
  service: StorageService,
  env: NodeJS.ProcessEnv = process.env,
): StorageConnection {
  const hit = resolveConnection(name, service, env);
  if (hit) return hit;
  const setting = name && name.trim() ? name.trim() : DEFAULT_CONNECTION;
  const tried =
    name && name.trim() ? `'${setting}' (nor 'AzureWebJobs${setting}', '${setting}__serviceUri', '${setting}__${service}ServiceUri')` : `'${setting}'`;
  throw new RuntimeConfigError(
    setting,
    `Function '${fnName}': the ${type} binding '${bindingName}' uses the storage connection '${setting}', but the app setting ${tried} is not set.`,
  );
}

let credential: TokenCredential | undefined;

/** The token credential of identity-based connections (DefaultAzureCredential, loaded only when one is used). */
export function identityCredential(clientId?: string): TokenCredential {
  const { DefaultAzureCredential } = require('@azure/identity') as typeof import('@azure/identity');
  if (clientId) return new DefaultAzureCredential({ managedIdentityClientId: clientId });
  credential ??= new DefaultAzureCredential();
  return credential;
}
