import { readFileSync } from 'node:fs';
import path from 'node:path';
import { CliError, EXIT } from './exitCodes';
import { fetchSameOrigin } from './fetchSameOrigin';
import { loadCredential, saveCredential, type Credential, type Profile } from './profiles';

/** Renew a cached token this long before it expires. */
const EARLY_MS = 60_000;

interface TokenAnswer {
  access_token?: string;
  expires_in?: number;
  error?: string;
  error_description?: string;
}

/** POST a client_credentials form to a token endpoint; the credential to cache. */
async function requestToken(
  tokenEndpoint: string,
  client: { id: string; secret: string },
  form: Record<string, string>,
  renew: Credential['renew'],
): Promise<Credential> {
  let res: Response;
  // client_secret_basic: the method every OAuth server must support (RFC 6749 2.3.1), form-encoded id and secret.
  const basic = Buffer.from(`${encodeURIComponent(client.id)}:${encodeURIComponent(client.secret)}`).toString('base64');
  try {
    res = await fetchSameOrigin(
      tokenEndpoint,
      {
        method: 'POST',
        headers: { 'content-type': 'application/x-www-form-urlencoded', accept: 'application/json', authorization: `Basic ${basic}` },
        body: new URLSearchParams(form).toString(),
        signal: AbortSignal.timeout(30_000),
      },
      'The token endpoint',
    );
  } catch (err) {
    if (err instanceof CliError) throw err;
    throw new CliError(`The token endpoint ${tokenEndpoint} could not be reached: ${(err as Error).message}`, EXIT.unavailable);
  }
  let body: TokenAnswer = {};
  try {
    body = (await res.json()) as TokenAnswer;
  } catch {
    // not JSON: reported below
  }
  if (!res.ok || !body.access_token) {
    const why = body.error ? `${body.error}${body.error_description ? `: ${body.error_description}` : ''}` : `HTTP ${res.status}`;
    throw new CliError(`Sign-in refused by ${tokenEndpoint} (${why}).`, EXIT.auth);
  }
  const expiresOn = typeof body.expires_in === 'number' ? new Date(Date.now() + body.expires_in * 1000).toISOString() : tokenExpiry(body.access_token);
  return { accessToken: body.access_token, expiresOn, renew };
}

/** The `exp` of a JWT as an ISO time, if it has one (the token is not verified: the service does that). */
export function tokenExpiry(token: string): string | undefined {
  const part = token.split('.')[1];
  if (!part) return undefined;
  try {
    const exp = JSON.parse(Buffer.from(part, 'base64url').toString('utf8')).exp;
    return typeof exp === 'number' ? new Date(exp * 1000).toISOString() : undefined;
  } catch {
    return undefined;
  }
}

/** The token endpoint of an OIDC authority, from its discovery document. */
export async function discoverTokenEndpoint(authority: string): Promise<string> {
  const url = `${authority.replace(/\/+$/, '')}/.well-known/openid-configuration`;
  let res: Response;
  try {
    res = await fetch(url, { signal: AbortSignal.timeout(30_000) });
  } catch (err) {
    throw new CliError(`The authority's discovery document ${url} could not be read: ${(err as Error).message}`, EXIT.unavailable);
  }
  const doc = (await res.json().catch(() => ({}))) as { token_endpoint?: string };
  if (!res.ok || !doc.token_endpoint) throw new CliError(`${url} answered ${res.status} without a token_endpoint: is --authority the OIDC issuer?`, EXIT.auth);
  return doc.token_endpoint;
}

/** Client-credentials sign-in against an OIDC authority. */
export async function loginClientCredentials(
  authority: string,
  clientId: string,
  clientSecret: string,
  scope: string | undefined,
  resource: string | undefined,
): Promise<Credential> {
  const tokenEndpoint = await discoverTokenEndpoint(authority);
  const renew = { kind: 'clientCredentials' as const, tokenEndpoint, clientId, clientSecret, scope, resource };
  return renewCredential(renew);
}

/** What the running service wrote about its development issuer (Development only). */
interface DevIssuerInfo {
  tokenEndpoint: string;
  clientId: string;
  clientSecret: string;
}

/**
 * The issuer's address (dev-issuer.json) and its sign-in secret (dev-issuer.secret, readable only by the owner
 * of the data folder): the issuer signs in only callers that can read the data folder.
 */
function readDevIssuer(dataDir: string): DevIssuerInfo {
  const file = path.resolve(dataDir, 'dev-issuer.json');
  let info: DevIssuerInfo;
  try {
    info = JSON.parse(readFileSync(file, 'utf8')) as DevIssuerInfo;
  } catch {
    throw new CliError(
      `${file} not found: --dev signs in with the development issuer of a service started in Development (npm start) whose data folder is --data-dir (default .data).`,
      EXIT.auth,
    );
  }
  const secretFile = path.resolve(dataDir, 'dev-issuer.secret');
  try {
    info.clientSecret = readFileSync(secretFile, 'utf8').trim();
  } catch (err) {
    const denied = (err as NodeJS.ErrnoException).code === 'EACCES';
    throw new CliError(
      denied
        ? `${secretFile} cannot be read: only the user that owns the service's data folder signs in with --dev.`
        : `${secretFile} not found: the service of this data folder has not started its development issuer.`,
      EXIT.auth,
    );
  }
  return info;
}

/** Sign-in with the embedded development issuer of a local service. */
export async function loginDev(dataDir: string, role: string, user: string | undefined): Promise<Credential> {
  return renewCredential({ kind: 'dev', dataDir: path.resolve(dataDir), role, user });
}

async function renewCredential(renew: NonNullable<Credential['renew']>): Promise<Credential> {
  if (renew.kind === 'clientCredentials') {
    const form: Record<string, string> = { grant_type: 'client_credentials' };
    if (renew.scope) form.scope = renew.scope;
    if (renew.resource) form.resource = renew.resource;
    return requestToken(renew.tokenEndpoint, { id: renew.clientId, secret: renew.clientSecret }, form, renew);
  }
  const info = readDevIssuer(renew.dataDir);
  const form: Record<string, string> = { grant_type: 'client_credentials', role: renew.role };
  if (renew.user) form.username = renew.user;
  return requestToken(info.tokenEndpoint, { id: info.clientId, secret: info.clientSecret }, form, renew);
}

/**
 * The Authorization header of a request: `--token` or MESHSYNC_TOKEN as given; else a Negotiate token when the
 * profile says so; else the profile's cached Bearer token, renewed when it has (nearly) expired and the cache
 * holds what renews it. Undefined when the operator has not signed in (the service answers 401).
 */
export async function authorization(profileName: string, profile: Profile, tokenFlag: string | undefined): Promise<string | undefined> {
  const given = tokenFlag ?? process.env.MESHSYNC_TOKEN;
  if (given) return `Bearer ${given}`;
  if (profile.auth === 'negotiate') return `Negotiate ${await negotiateToken(profile)}`;
  let credential = loadCredential(profileName);
  if (!credential) return undefined;
  const expired = credential.expiresOn !== undefined && Date.parse(credential.expiresOn) - EARLY_MS <= Date.now();
  if (expired) {
    if (!credential.renew)
      throw new CliError(`The token of profile '${profileName}' expired on ${credential.expiresOn}: sign in again (meshsync login).`, EXIT.auth);
    credential = await renewCredential(credential.renew);
    saveCredential(profileName, credential);
  }
  return `Bearer ${credential.accessToken}`;
}

/** A SPNEGO token for the service's SPN from the caller's Kerberos tickets (kinit, or the Windows logon). */
async function negotiateToken(profile: Profile): Promise<string> {
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  let kerberos: any;
  try {
    kerberos = require('kerberos');
  } catch {
    throw new CliError('Negotiate needs the optional "kerberos" package, which is not installed on this machine (it needs libkrb5-dev to build).', EXIT.auth);
  }
  const spn = profile.spn || `HTTP@${new URL(profile.url).hostname}`;
  try {
    const client = await kerberos.initializeClient(spn);
    const token: string = await client.step('');
    return token;
  } catch (err) {
    throw new CliError(`No Kerberos ticket for ${spn} (${(err as Error).message}): run kinit first.`, EXIT.auth);
  }
}
