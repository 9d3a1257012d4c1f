import { fork, type ChildProcess } from 'node:child_process';
import path from 'node:path';
import { trackPid } from './processes';

/**
 * Real OIDC issuers for the tests, each in a child process on a free loopback port (oidc-provider and jose
 * are ESM-only, which the CommonJS jest runtime cannot load; the children run under plain Node).
 *
 * - `startOidcProvider()`: oidc-provider, client_credentials, RFC 9068 JWT access tokens with roles,
 *   preferred_username, upn and oid per client.
 * - `startMintingIssuer()`: discovery + JWKS served by a tiny server that mints any token with jose,
 *   including the hostile ones (expired, alg none, HS256 with the public key...), and can rotate its key,
 *   take its JWKS down or lie in its metadata.
 */
const ISSUERS = path.resolve(__dirname, '../fixtures/auth-app/issuers');

export interface ClientClaims {
  roles?: string[];
  groups?: string[];
  preferred_username?: string;
  upn?: string;
  oid?: string;
}

export interface OidcProviderIssuer {
  issuer: string;
  /** Client credentials grant: the access token (a JWT) for `clientId`, for `resource` (default the audience). */
  token(clientId: string, resource?: string): Promise<string>;
  stop(): Promise<void>;
}

export interface MintOptions {
  aud?: string;
  iss?: string;
  /** Seconds from now; null: no exp claim at all. Default 300. */
  exp?: number | null;
  /** Seconds from now. */
  nbf?: number;
  alg?: 'none' | 'HS256-public-key';
  /** Sign with a key the issuer never publishes. */
  key?: 'foreign';
  kid?: string;
}

export interface MintingIssuer {
  issuer: string;
  mint(claims?: Record<string, unknown>, options?: MintOptions): Promise<string>;
  /** Make a new current key (published alone, or beside the old one with keepOld); returns its kid. */
  rotate(keepOld?: boolean, alg?: 'RS256' | 'PS256' | 'ES256'): Promise<string>;
  /** jwksDown: the JWKS answers 503. metadataIssuer / jwksUri: what the discovery document claims. */
  set(patch: { jwksDown?: boolean; metadataIssuer?: string; jwksUri?: string; algs?: string[] }): Promise<void>;
  stop(): Promise<void>;
}

async function spawnIssuer(script: string, env: Record<string, string> = {}): Promise<{ child: ChildProcess; issuer: string }> {
  const child = fork(path.join(ISSUERS, script), [], {
    cwd: path.resolve(__dirname, '../..'),
    env: { ...process.env, ...env },
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
  });
  trackPid(child.pid);
  const issuer = await new Promise<string>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`${script} did not start within 20 s`)), 20_000);
    child.once('exit', (code) => reject(new Error(`${script} exited with ${code} during start`)));
    child.on('message', (m: { type?: string; issuer?: string }) => {
      if (m.type === 'ready' && m.issuer) {
        clearTimeout(timer);
        resolve(m.issuer);
      }
    });
  });
  child.removeAllListeners('exit');
  return { child, issuer };
}

function stopChild(child: ChildProcess): Promise<void> {
  return new Promise((resolve) => {
    if (child.exitCode !== null || child.signalCode !== null) return resolve();
    const timer = setTimeout(() => child.kill('SIGKILL'), 5_000);
    child.once('exit', () => {
      clearTimeout(timer);
      resolve();
    });
    child.kill('SIGTERM');
  });
}

export async function startOidcProvider(options: {
  audience: string;
  otherAudiences?: string[];
  clients: Record<string, ClientClaims>;
}): Promise<OidcProviderIssuer> {
  const config = { audience: options.audience, audiences: [options.audience, ...(options.otherAudiences ?? [])], clients: options.clients };
  const { child, issuer } = await spawnIssuer('oidcProviderIssuer.mjs', { OIDC_ISSUER_CONFIG: JSON.stringify(config) });
  return {
    issuer,
    async token(clientId, resource) {
      const form = new URLSearchParams({ grant_type: 'client_credentials' });
      if (resource) form.set('resource', resource);
      const res = await fetch(`${issuer}/token`, {
        method: 'POST',
        headers: {
          'content-type': 'application/x-www-form-urlencoded',
          authorization: `Basic ${Buffer.from(`${clientId}:${clientId}-secret`).toString('base64')}`,
        },
        body: form.toString(),
      });
      const body = (await res.json()) as { access_token?: string; error?: string; error_description?: string };
      if (!res.ok || !body.access_token) throw new Error(`token request failed: ${res.status} ${body.error} ${body.error_description ?? ''}`);
      return body.access_token;
    },
    stop: () => stopChild(child),
  };
}

export async function startMintingIssuer(): Promise<MintingIssuer> {
  const { child, issuer } = await spawnIssuer('joseIssuer.mjs');
  let next = 0;
  const call = <T>(op: string, ...args: unknown[]): Promise<T> =>
    new Promise((resolve, reject) => {
      const id = ++next;
      const onMessage = (m: { id?: number; result?: T; error?: string }) => {
        if (m.id !== id) return;
        child.off('message', onMessage);
        if (m.error) reject(new Error(m.error));
        else resolve(m.result as T);
      };
      child.on('message', onMessage);
      child.send({ id, op, args });
    });
  return {
    issuer,
    mint: (claims = {}, options = {}) => call<string>('mint', claims, options),
    rotate: (keepOld = false, alg = 'RS256') => call<string>('rotate', keepOld, alg),
    set: async (patch) => {
      await call('set', patch);
    },
    stop: () => stopChild(child),
  };
}
