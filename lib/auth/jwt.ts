import { createPublicKey, type KeyObject } from 'node:crypto';
import jwt, { type JwtPayload } from 'jsonwebtoken';
import { JwksClient } from 'jwks-rsa';
import { ConfigError } from '../core/config';
import { checkTransport, type JwtConfig } from './authConfig';
import type { AuthLogger } from './log';

/**
 * Why a token was refused, named after the Microsoft.IdentityModel exceptions (spec 5.2 rule 3 names
 * SecurityTokenNotYetValid), so an operator reading the log recognises them.
 */
export type TokenFailure =
  | 'SecurityTokenMalformed'
  | 'SecurityTokenInvalidAlgorithm'
  | 'SecurityTokenSignatureKeyNotFound'
  | 'SecurityTokenInvalidSignature'
  | 'SecurityTokenExpired'
  | 'SecurityTokenNotYetValid'
  | 'SecurityTokenNoExpiration'
  | 'SecurityTokenInvalidIssuer'
  | 'SecurityTokenInvalidAudience';

/** A token the validator refused: the caller gets 401 with `error="invalid_token"`. */
export class TokenRejectedError extends Error {
  constructor(
    readonly failure: TokenFailure,
    /** Safe to show: says what is wrong with the token, never anything about keys or configuration. */
    readonly description: string,
  ) {
    super(`${failure}: ${description}`);
    this.name = 'TokenRejectedError';
  }
}

/** No signing key has ever been obtained from the authority: the caller gets 503, not 401 or 500. */
export class SigningKeysUnavailableError extends Error {
  constructor() {
    super('The signing keys of the token issuer are not available yet.');
    this.name = 'SigningKeysUnavailableError';
  }
}

/** Asymmetric algorithms we accept when the metadata lists them. HS* and `none` are never accepted. */
const ASYMMETRIC = ['RS256', 'RS384', 'RS512', 'PS256', 'PS384', 'PS512', 'ES256', 'ES384', 'ES512'] as const;
type Algorithm = (typeof ASYMMETRIC)[number];

interface Metadata {
  issuer: string;
  jwksUri: string;
  algorithms: Algorithm[];
}

const SETTING = 'Authentication:Jwt:Authority';

/**
 * Validates Bearer access tokens against one OIDC authority (spec 5.2) with jsonwebtoken, keys fetched with
 * jwks-rsa. Keys are held here rather than in jwks-rsa's cache so that an unreachable JWKS endpoint never
 * evicts a key we already trust; an unknown `kid` triggers a JWKS refetch, at most `jwksRefetchPerMinute`
 * times a minute, shared with the metadata refresh.
 */
export class JwtValidator {
  private metadata: Metadata | undefined;
  /** Parsed once per fetch (a PEM given to each verify is parsed again for every token). */
  private keys = new Map<string, KeyObject | string>();
  private refetches: number[] = [];
  private inflight: Promise<void> | undefined;
  private timer: NodeJS.Timeout | undefined;

  constructor(
    private readonly config: JwtConfig & { authority: string },
    private readonly isDevelopment: boolean,
    private readonly log: AuthLogger,
  ) {}

  get authority(): string {
    return this.config.authority;
  }

  get keyIds(): string[] {
    return [...this.keys.keys()];
  }

  /**
   * Fetch the metadata and keys. A metadata document that contradicts the configuration (another issuer, a
   * jwks_uri over plain http) fails the start with a ConfigError; an unreachable authority does not: the
   * service starts, Bearer callers get 503 until the keys arrive, and the fetch is retried on demand.
   */
  async start(): Promise<void> {
    checkTransport(SETTING, new URL(this.config.authority), this.isDevelopment);
    try {
      await this.refresh();
    } catch (err) {
      if (err instanceof ConfigError) throw err;
      this.log(
        'warn',
        `Bearer: the OIDC metadata or keys of ${this.config.authority} could not be fetched (${(err as Error).message}); Bearer callers get 503 until they can be.`,
      );
    }
    this.timer = setInterval(() => void this.refreshQuietly('scheduled refresh'), this.config.metadataRefreshHours * 3_600_000);
    this.timer.unref();
  }

  stop(): void {
    if (this.timer) clearInterval(this.timer);
    this.timer = undefined;
  }

  /** Fetch metadata and JWKS now; replaces the key set only when the fetch succeeds. */
  async refresh(): Promise<void> {
    this.inflight ??= this.fetchAll().finally(() => (this.inflight = undefined));
    return this.inflight;
  }

  /** Validate a compact JWT and return its claims, or throw TokenRejectedError / SigningKeysUnavailableError. */
  async validate(token: string): Promise<JwtPayload> {
    const decoded = jwt.decode(token, { complete: true });
    if (!decoded || typeof decoded.payload === 'string' || typeof decoded.header !== 'object') {
      throw new TokenRejectedError('SecurityTokenMalformed', 'The token is not a well-formed JWT.');
    }
    const { alg, kid } = decoded.header;
    if (!this.metadata || !this.keys.size) {
      await this.refreshIfAllowed('no signing keys yet');
      if (!this.metadata || !this.keys.size) throw new SigningKeysUnavailableError();
    }
    const algorithms = this.metadata.algorithms;
    if (!(algorithms as string[]).includes(alg)) {
      throw new TokenRejectedError(
        'SecurityTokenInvalidAlgorithm',
        `The token algorithm '${String(alg).slice(0, 16)}' is not accepted (accepted: ${algorithms.join(', ')}).`,
      );
    }
    if (kid !== undefined && !this.keys.has(kid)) {
      await this.refreshIfAllowed(`unknown kid`);
      if (!this.keys.has(kid)) throw new TokenRejectedError('SecurityTokenSignatureKeyNotFound', 'The token is signed with a key the issuer does not publish.');
    }
    const candidates = kid !== undefined ? [this.keys.get(kid)!] : [...this.keys.values()];
    let last: TokenRejectedError | undefined;
    for (const key of candidates) {
      try {
        const payload = jwt.verify(token, key, {
          algorithms,
          issuer: this.metadata.issuer,
          audience: this.config.audiences as [string, ...string[]],
          clockTolerance: this.config.clockSkewSeconds,
        });
        if (typeof payload === 'string') throw new TokenRejectedError('SecurityTokenMalformed', 'The token payload is not a JSON object.');
        if (typeof payload.exp !== 'number') throw new TokenRejectedError('SecurityTokenNoExpiration', 'The token has no expiration (exp) claim.');
        return payload;
      } catch (err) {
        last = err instanceof TokenRejectedError ? err : mapVerifyError(err);
        if (last.failure !== 'SecurityTokenInvalidSignature') throw last;
      }
    }
    throw last ?? new TokenRejectedError('SecurityTokenSignatureKeyNotFound', 'No signing key matches the token.');
  }

  private async refreshIfAllowed(reason: string): Promise<void> {
    const now = Date.now();
    this.refetches = this.refetches.filter((t) => now - t < 60_000);
    if (this.inflight) return this.refreshQuietly(reason);
    if (this.refetches.length >= this.config.jwksRefetchPerMinute) return;
    this.refetches.push(now);
    return this.refreshQuietly(reason);
  }

  private async refreshQuietly(reason: string): Promise<void> {
    try {
      await this.refresh();
    } catch (err) {
      this.log(
        err instanceof ConfigError ? 'error' : 'warn',
        `Bearer: refreshing the OIDC metadata and keys (${reason}) failed: ${(err as Error).message}; keeping ${this.keys.size} cached key(s).`,
      );
    }
  }

  private async fetchAll(): Promise<void> {
    const metadata = await this.fetchMetadata();
    const client = new JwksClient({ jwksUri: metadata.jwksUri, cache: false, rateLimit: false, timeout: this.config.httpTimeoutSeconds * 1000 });
    const signingKeys = await client.getSigningKeys();
    const keys = new Map<string, KeyObject | string>();
    for (const k of signingKeys) keys.set(k.kid, publicKeyOf(k.getPublicKey()));
    if (!keys.size) throw new Error('the JWKS holds no signing keys');
    const added = [...keys.keys()].filter((k) => !this.keys.has(k));
    this.metadata = metadata;
    this.keys = keys;
    if (added.length) this.log('info', `Bearer: ${keys.size} signing key(s) from ${metadata.jwksUri} (new: ${added.join(', ')}).`);
  }

  private async fetchMetadata(): Promise<Metadata> {
    const authority = this.config.authority;
    const url = `${authority.replace(/\/+$/, '')}/.well-known/openid-configuration`;
    const res = await fetch(url, { signal: AbortSignal.timeout(this.config.httpTimeoutSeconds * 1000), redirect: 'error' });
    if (!res.ok) throw new Error(`GET ${url} answered ${res.status}`);
    const doc = (await res.json()) as Record<string, unknown>;
    const issuer = typeof doc.issuer === 'string' ? doc.issuer : '';
    if (issuer.replace(/\/+$/, '') !== authority.replace(/\/+$/, '')) {
      throw new ConfigError(
        SETTING,
        `the issuer in the OIDC metadata ('${issuer}') is not the configured Authority ('${authority}'); one authority only is accepted.`,
      );
    }
    if (typeof doc.jwks_uri !== 'string') throw new Error(`the OIDC metadata at ${url} has no jwks_uri`);
    let jwksUri: URL;
    try {
      jwksUri = new URL(doc.jwks_uri);
    } catch {
      throw new Error(`the OIDC metadata at ${url} has an invalid jwks_uri`);
    }
    checkTransport(SETTING, jwksUri, this.isDevelopment, 'the jwks_uri named by its metadata');
    const listed = Array.isArray(doc.id_token_signing_alg_values_supported) ? (doc.id_token_signing_alg_values_supported as unknown[]) : [];
    const algorithms = ASYMMETRIC.filter((a) => a === 'RS256' || listed.includes(a));
    return { issuer, jwksUri: jwksUri.toString(), algorithms };
  }
}

function mapVerifyError(err: unknown): TokenRejectedError {
  if (err instanceof jwt.TokenExpiredError) return new TokenRejectedError('SecurityTokenExpired', `The token expired at ${err.expiredAt.toISOString()}.`);
  if (err instanceof jwt.NotBeforeError) return new TokenRejectedError('SecurityTokenNotYetValid', `The token is not valid before ${err.date.toISOString()}.`);
  const msg = err instanceof Error ? err.message : '';
  if (/audience invalid/.test(msg)) return new TokenRejectedError('SecurityTokenInvalidAudience', 'The token is not issued for this API (aud).');
  if (/issuer invalid/.test(msg)) return new TokenRejectedError('SecurityTokenInvalidIssuer', 'The token is not issued by the configured authority (iss).');
  if (/invalid signature/.test(msg)) return new TokenRejectedError('SecurityTokenInvalidSignature', 'The token signature is invalid.');
  if (/algorithm/.test(msg)) return new TokenRejectedError('SecurityTokenInvalidAlgorithm', 'The token algorithm does not match the signing key.');
  return new TokenRejectedError('SecurityTokenMalformed', 'The token could not be validated.');
}

/** The key as a KeyObject; a PEM Node cannot parse stays a PEM (verify then rejects the tokens it signs, as before). */
function publicKeyOf(pem: string): KeyObject | string {
  try {
    return createPublicKey(pem);
  } catch {
    return pem;
  }
}
