import { createHash, createPrivateKey, createPublicKey, generateKeyPairSync, randomBytes, timingSafeEqual, type KeyObject } from 'node:crypto';
import { chmodSync, existsSync, readFileSync, writeFileSync } from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import jwt from 'jsonwebtoken';
import { ConfigError } from '../core/config';
import { ensurePrivateDir, readOrCreateSecretFile, writePrivateFile } from '../core/privateFiles';
import {
  AuthorizationCodes,
  CONSOLE_CLIENT_ID,
  codeRedirect,
  formActionSources,
  OAuthError,
  parseAuthorizeRequest,
  type AuthorizeRequest,
  parseRole,
  parseUsername,
  signInPage,
} from './devAuthorize';
import { isLoopbackHost } from './authConfig';
import type { AuthLogger } from './log';
import { ROLES, type Role } from './permissions';

export interface DevIssuerOptions {
  environment: string;
  dataDir: string;
  audience: string;
  /** 0: reuse the port recorded in dev-issuer.json when free (so tokens keep their issuer), else any. */
  port: number;
  /** Configured role values (Service:Roles): a token for role X carries X's first value in `roles`. */
  roles: Record<Role, readonly string[]>;
  log: AuthLogger;
  /** Lifetime of issued tokens. */
  tokenLifetimeSeconds?: number;
}

/** What dev-issuer.json holds: enough for `npm run token` (scripts/token.js) to get a token. */
export interface DevIssuerInfo {
  issuer: string;
  tokenEndpoint: string;
  audience: string;
  clientId: string;
  /** The sign-in secret (the content of dev-issuer.secret): the `dev-cli` client's secret. */
  clientSecret: string;
  port: number;
  /** The file holding the sign-in secret (mode 0600, in the 0700 data folder). */
  secretFile: string;
}

export const DEV_CLIENT_ID = 'dev-cli';
const INFO_FILE = 'dev-issuer.json';
const KEY_FILE = 'dev-issuer-key.pem';
/** The sign-in secret: who can read it can read the data folder, which is what the issuer asks of a caller. */
export const SECRET_FILE = 'dev-issuer.secret';

/**
 * The embedded development OIDC issuer: discovery, JWKS and a client_credentials token endpoint on loopback,
 * so a new user can call the API with a Bearer token within a minute (`npm run token -- --role Admin`).
 *
 * It refuses to run outside `AZURE_FUNCTIONS_ENVIRONMENT=Development` (set explicitly: the runtime does not take
 * it from local.settings.sample.json). Its RSA signing key and its sign-in secret are kept under the data dir
 * (files 0600 in a 0700 folder), and it listens on the port it used last time when that port is free, so
 * tokens survive a restart. It signs in only callers that prove they can read the data folder: the
 * client_credentials grant needs the sign-in secret (`dev-issuer.secret`) as the `dev-cli` client's secret,
 * and the console's sign-in form needs it pasted. The token endpoint accepts the extra form fields `role`
 * (Admin|Operator|Viewer) and `username` (preferred_username/upn, default `developer@localhost`).
 *
 * For the web console it also does the authorization code flow with PKCE (S256) for the public client
 * `meshsync-console`: GET /authorize shows a small form (user name, role, sign-in secret), POST /authorize
 * checks the secret and issues a one-time code bound to the challenge and the loopback redirect URI, and the
 * token endpoint's `authorization_code` grant checks the `code_verifier` (lib/auth/devAuthorize.ts). Browsers
 * call it from the service's origin, so its JSON answers allow loopback origins (CORS).
 */
export class DevIssuer {
  private server: http.Server | undefined;
  private readonly key: KeyObject;
  private readonly kid: string;
  private readonly jwk: Record<string, unknown>;
  private info!: DevIssuerInfo;
  private readonly codes = new AuthorizationCodes();

  constructor(private readonly options: DevIssuerOptions) {
    if (options.environment.toLowerCase() !== 'development') {
      throw new ConfigError(
        'AZURE_FUNCTIONS_ENVIRONMENT',
        `the embedded development OIDC issuer runs only in Development, not in '${options.environment}'; configure Authentication__Jwt__Authority instead.`,
      );
    }
    ensurePrivateDir(options.dataDir, (line) => options.log('warn', line));
    this.key = loadOrCreateKey(path.join(options.dataDir, KEY_FILE));
    const pub = createPublicKey(this.key);
    this.kid = createHash('sha256')
      .update(pub.export({ format: 'der', type: 'spki' }))
      .digest('base64url')
      .slice(0, 16);
    this.jwk = { ...pub.export({ format: 'jwk' }), kid: this.kid, alg: 'RS256', use: 'sig' };
  }

  get issuer(): string {
    return this.info.issuer;
  }

  get infoFile(): string {
    return path.join(this.options.dataDir, INFO_FILE);
  }

  async start(): Promise<DevIssuerInfo> {
    const previous = readInfo(this.infoFile);
    const wanted = this.options.port || previous?.port || 0;
    const server = http.createServer((req, res) => void this.handle(req, res));
    const port = await listen(server, wanted).catch(async (err: NodeJS.ErrnoException) => {
      if (err.code !== 'EADDRINUSE' || this.options.port) throw err;
      this.options.log('warn', `Development issuer: port ${wanted} is taken; using another one (tokens issued before no longer validate).`);
      return listen(server, 0);
    });
    this.server = server;
    const issuer = `http://127.0.0.1:${port}`;
    const secretFile = path.join(this.options.dataDir, SECRET_FILE);
    // A data folder from before the secret file: its client secret becomes the sign-in secret.
    const clientSecret = readOrCreateSecretFile(secretFile, () => previous?.clientSecret ?? randomBytes(24).toString('base64url'));
    this.info = {
      issuer,
      tokenEndpoint: `${issuer}/token`,
      audience: this.options.audience,
      clientId: DEV_CLIENT_ID,
      clientSecret,
      port,
      secretFile,
    };
    writePrivateFile(this.infoFile, JSON.stringify(this.info, null, 2) + '\n');
    this.options.log(
      'info',
      `Development issuer: ${issuer} (audience ${this.options.audience}); it signs in only callers holding the secret in ${secretFile}. Get a token with: npm run token -- --role Admin`,
    );
    return this.info;
  }

  async stop(): Promise<void> {
    const server = this.server;
    this.server = undefined;
    if (!server) return;
    server.closeAllConnections();
    await new Promise<void>((resolve) => server.close(() => resolve()));
  }

  /** Sign an access token as the token endpoint does. */
  mint(role: Role, username = 'developer@localhost'): string {
    const lifetime = this.options.tokenLifetimeSeconds ?? 8 * 3600;
    const oidHex = createHash('sha256').update(`dev-oid:${username.toLowerCase()}`).digest('hex');
    const oid = `${oidHex.slice(0, 8)}-${oidHex.slice(8, 12)}-4${oidHex.slice(13, 16)}-8${oidHex.slice(17, 20)}-${oidHex.slice(20, 32)}`;
    const claims = {
      roles: [this.options.roles[role][0]],
      preferred_username: username,
      upn: username,
      oid,
      azp: DEV_CLIENT_ID,
      scp: 'access_as_user',
    };
    return jwt.sign(claims, this.key, {
      algorithm: 'RS256',
      keyid: this.kid,
      issuer: this.info.issuer,
      audience: this.options.audience,
      subject: oid,
      expiresIn: lifetime,
      notBefore: 0,
      header: { alg: 'RS256', typ: 'at+jwt', kid: this.kid },
    });
  }

  private async handle(req: http.IncomingMessage, res: http.ServerResponse): Promise<void> {
    // Browsers (the console) call discovery, JWKS and the token endpoint from the service's loopback origin.
    const origin = req.headers.origin;
    const cors: Record<string, string> = {};
    if (origin && loopbackOrigin(origin)) Object.assign(cors, { 'access-control-allow-origin': origin, vary: 'Origin' });
    const send = (status: number, body: unknown, contentType = 'application/json') => {
      // No keep-alive: a client's pooled socket must not outlive a restart of this issuer.
      res.writeHead(status, { 'content-type': contentType, 'cache-control': 'no-store', connection: 'close', ...cors }).end(JSON.stringify(body));
    };
    /** A refused client: problem+json that OAuth clients read too (`error`, `error_description`). */
    const refuseClient = (detail: string) => {
      this.options.log('warn', `Development issuer: refused a token request from ${req.socket.remoteAddress ?? 'unknown'}: ${detail}`);
      send(
        401,
        { type: 'about:blank', title: 'Unauthorized', status: 401, detail, error: 'invalid_client', error_description: detail },
        'application/problem+json',
      );
    };
    const url = new URL(req.url ?? '/', this.info.issuer);
    if (!isLoopbackHost(req.socket.remoteAddress?.replace(/^::ffff:/, '') ?? ''))
      return send(403, { error: 'access_denied', error_description: 'loopback callers only' });
    if (req.method === 'OPTIONS') {
      res.writeHead(204, { ...cors, 'access-control-allow-methods': 'GET, POST', 'access-control-allow-headers': 'content-type', connection: 'close' }).end();
      return;
    }
    if (req.method === 'GET' && url.pathname === '/.well-known/openid-configuration') {
      return send(200, {
        issuer: this.info.issuer,
        jwks_uri: `${this.info.issuer}/jwks`,
        authorization_endpoint: `${this.info.issuer}/authorize`,
        token_endpoint: this.info.tokenEndpoint,
        grant_types_supported: ['client_credentials', 'authorization_code'],
        token_endpoint_auth_methods_supported: ['client_secret_basic', 'client_secret_post', 'none'],
        code_challenge_methods_supported: ['S256'],
        id_token_signing_alg_values_supported: ['RS256'],
        response_types_supported: ['code', 'token'],
        subject_types_supported: ['public'],
        authorization_response_iss_parameter_supported: true,
      });
    }
    if (req.method === 'GET' && url.pathname === '/jwks') return send(200, { keys: [this.jwk] });
    if (url.pathname === '/authorize') return this.authorize(req, res, url);
    if (url.pathname !== '/token') return send(404, { error: 'not_found' });
    if (req.method !== 'POST') return send(405, { error: 'invalid_request', error_description: 'use POST' });
    const body = await readForm(req);
    if (body === undefined) return send(413, { error: 'invalid_request' });
    const form = new URLSearchParams(body);
    const lifetime = this.options.tokenLifetimeSeconds ?? 8 * 3600;
    if (form.get('grant_type') === 'authorization_code') {
      // The console is a public client: PKCE stands in for the secret.
      if (form.get('client_id') !== CONSOLE_CLIENT_ID) return refuseClient(`the authorization_code grant is for the client '${CONSOLE_CLIENT_ID}' only.`);
      try {
        const { role, username } = this.codes.redeem(form);
        return send(200, { access_token: this.mint(role, username), token_type: 'Bearer', expires_in: lifetime });
      } catch (err) {
        if (err instanceof OAuthError) return send(400, { error: err.error, error_description: err.description });
        throw err;
      }
    }
    let clientId = form.get('client_id');
    let clientSecret = form.get('client_secret');
    const basic = /^Basic\s+(\S+)$/i.exec(req.headers.authorization ?? '');
    if (basic) {
      const [id, secret] = Buffer.from(basic[1], 'base64').toString('utf8').split(':');
      clientId = decodeURIComponent(id ?? '');
      clientSecret = decodeURIComponent(secret ?? '');
    }
    if (clientId !== DEV_CLIENT_ID) return refuseClient(`unknown client '${String(clientId ?? '').slice(0, 64)}': use client_id '${DEV_CLIENT_ID}'.`);
    if (!clientSecret)
      return refuseClient(`no client secret: send the sign-in secret of ${SECRET_FILE} in the data folder as the '${DEV_CLIENT_ID}' client secret.`);
    if (!safeEqual(clientSecret, this.info.clientSecret))
      return refuseClient(`the client secret is not the sign-in secret of ${SECRET_FILE} in the data folder.`);
    if (form.get('grant_type') !== 'client_credentials') return send(400, { error: 'unsupported_grant_type' });
    const role = (ROLES as readonly string[]).find((r) => r.toLowerCase() === (form.get('role') ?? 'Viewer').toLowerCase()) as Role | undefined;
    if (!role) return send(400, { error: 'invalid_scope', error_description: `role must be one of ${ROLES.join(', ')}` });
    const username = form.get('username') || 'developer@localhost';
    if (username.length > 256) return send(400, { error: 'invalid_request', error_description: 'username is too long' });
    return send(200, { access_token: this.mint(role, username), token_type: 'Bearer', expires_in: lifetime });
  }

  /** GET: the sign-in form; POST (the form): a code, redirected to the client. Errors are a plain page (400). */
  private async authorize(req: http.IncomingMessage, res: http.ServerResponse, url: URL): Promise<void> {
    let request: AuthorizeRequest | undefined;
    const page = (status: number, html: string): void => {
      res
        .writeHead(status, {
          'content-type': 'text/html; charset=utf-8',
          'cache-control': 'no-store',
          'x-frame-options': 'DENY',
          'content-security-policy': `default-src 'none'; style-src 'unsafe-inline'; form-action ${formActionSources(request)}; frame-ancestors 'none'`,
          connection: 'close',
        })
        .end(html);
    };
    const fail = (err: unknown) => {
      if (!(err instanceof OAuthError)) throw err;
      return page(400, `<!doctype html><title>Sign-in refused</title><h1>Sign-in refused</h1><p>${err.error}: ${err.description.replace(/[<>&]/g, '')}</p>`);
    };
    try {
      if (req.method === 'GET') {
        request = parseAuthorizeRequest(url.searchParams);
        return page(200, signInPage(request, this.info.issuer, this.info.secretFile));
      }
      if (req.method !== 'POST') return page(405, '<!doctype html><title>Method not allowed</title><p>Use GET or POST.</p>');
      const body = await readForm(req);
      if (body === undefined) return page(413, '<!doctype html><title>Too large</title><p>The form is too large.</p>');
      const form = new URLSearchParams(body);
      request = parseAuthorizeRequest(form);
      const role = parseRole(form.get('role'));
      const username = parseUsername(form.get('username'));
      const secret = (form.get('secret') ?? '').trim();
      if (!secret || !safeEqual(secret, this.info.clientSecret)) {
        const why = secret ? 'the sign-in secret is wrong' : 'no sign-in secret was given';
        this.options.log('warn', `Development issuer: refused the console sign-in of ${username} as ${role}: ${why}.`);
        return page(401, signInPage(request, this.info.issuer, this.info.secretFile, `Sign-in refused: ${why}. Paste the content of ${this.info.secretFile}.`));
      }
      const code = this.codes.issue(request, role, username);
      this.options.log('info', `Development issuer: signed in ${username} as ${role} for the console.`);
      res.writeHead(302, { location: codeRedirect(request, code, this.info.issuer), 'cache-control': 'no-store', connection: 'close' }).end();
    } catch (err) {
      fail(err);
    }
  }
}

/** The request body, at most 8 KiB (undefined when larger). */
async function readForm(req: http.IncomingMessage): Promise<string | undefined> {
  let body = '';
  for await (const chunk of req) {
    body += chunk;
    if (body.length > 8192) return undefined;
  }
  return body;
}

function loopbackOrigin(origin: string): boolean {
  try {
    const u = new URL(origin);
    return /^https?:$/.test(u.protocol) && isLoopbackHost(u.hostname);
  } catch {
    return false;
  }
}

function safeEqual(a: string, b: string): boolean {
  const x = Buffer.from(a);
  const y = Buffer.from(b);
  return x.length === y.length && timingSafeEqual(x, y);
}

function loadOrCreateKey(file: string): KeyObject {
  if (existsSync(file)) {
    chmodSync(file, 0o600);
    return createPrivateKey(readFileSync(file, 'utf8'));
  }
  const { privateKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
  writeFileSync(file, privateKey.export({ format: 'pem', type: 'pkcs8' }), { mode: 0o600 });
  chmodSync(file, 0o600);
  return privateKey;
}

function readInfo(file: string): DevIssuerInfo | undefined {
  try {
    return JSON.parse(readFileSync(file, 'utf8')) as DevIssuerInfo;
  } catch {
    return undefined;
  }
}

function listen(server: http.Server, port: number): Promise<number> {
  return new Promise((resolve, reject) => {
    const onError = (err: Error) => reject(err);
    server.once('error', onError);
    server.listen(port, '127.0.0.1', () => {
      server.off('error', onError);
      resolve((server.address() as AddressInfo).port);
    });
  });
}
