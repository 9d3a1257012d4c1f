import { SettingsReader } from '../core/config';
import { readAuthConfig, type AuthConfig } from './authConfig';
import { installAuth, type AuthRuntime } from './authenticate';
import { DevIssuer } from './devIssuer';
import { DirectoryGroups } from './directory';
import { JwtValidator } from './jwt';
import { consoleLogger, type AuthLogger } from './log';
import { NegotiateAuthenticator } from './negotiate';
import { FixedWindowLimiter } from './rateLimit';

export interface StartedAuth {
  runtime: AuthRuntime;
  config: AuthConfig;
  devIssuer?: DevIssuer;
}

let started: StartedAuth | undefined;

/**
 * Read the authentication configuration, start what it needs (the development issuer, the OIDC metadata
 * fetch, the Negotiate acceptor, the directory lookup) and install it for `authorize()`. Throws ConfigError
 * (naming the setting) when the service must not start.
 */
export async function startAuth(settings = new SettingsReader(), log: AuthLogger = consoleLogger): Promise<StartedAuth> {
  await stopAuth();
  const config = readAuthConfig(settings);
  let devIssuer: DevIssuer | undefined;
  let validator: JwtValidator | undefined;
  try {
    if (config.devIssuer.enabled) {
      devIssuer = new DevIssuer({
        environment: config.environment,
        dataDir: config.dataDir,
        audience: config.devIssuer.audience,
        port: config.devIssuer.port,
        roles: config.roles,
        log,
      });
      const info = await devIssuer.start();
      config.jwt.authority = info.issuer;
    }
    if (config.jwt.enabled && config.jwt.authority) {
      validator = new JwtValidator({ ...config.jwt, authority: config.jwt.authority }, config.isDevelopment, log);
      await validator.start();
    }
  } catch (err) {
    validator?.stop();
    await devIssuer?.stop();
    throw err;
  }
  const negotiate = config.negotiate.enabled ? NegotiateAuthenticator.create(config.negotiate, log) : undefined;
  const runtime: AuthRuntime = {
    config,
    jwt: validator,
    negotiate: negotiate instanceof NegotiateAuthenticator ? negotiate : undefined,
    directory: config.negotiate.directory.url ? new DirectoryGroups(config.negotiate.directory, log) : undefined,
    sensitive: config.rateLimiting.sensitive.enabled ? new FixedWindowLimiter(config.rateLimiting.sensitive) : undefined,
    general: config.rateLimiting.general.enabled ? new FixedWindowLimiter(config.rateLimiting.general) : undefined,
    log,
  };
  const schemes = [
    runtime.negotiate && 'Negotiate',
    validator && `Bearer (authority ${validator.authority}, audience ${config.jwt.audiences.join(', ')})`,
  ].filter(Boolean);
  if (schemes.length) log('info', `Authentication schemes: ${schemes.join('; ')}.`);
  else log('error', 'No authentication scheme is available: every protected route answers 503 until Negotiate or Bearer is configured.');
  installAuth(runtime);
  started = { runtime, config, devIssuer };
  return started;
}

export async function stopAuth(): Promise<void> {
  const s = started;
  started = undefined;
  if (!s) return;
  installAuth(undefined);
  s.runtime.jwt?.stop();
  await s.devIssuer?.stop();
}
