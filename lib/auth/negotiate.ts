import { existsSync } from 'node:fs';
import type { NegotiateConfig } from './authConfig';
import type { AuthLogger } from './log';
import { ReplayCache, replayKey } from './negotiateReplay';

/** The part of the optional `kerberos` package we use (server side of GSSAPI/SPNEGO). */
interface KerberosServer {
  step(challenge: string): Promise<string | undefined>;
  contextComplete: boolean;
  username: string;
  response: string | undefined;
}
interface KerberosModule {
  initializeServer(service: string): Promise<KerberosServer>;
}

export type NegotiateOutcome =
  | { complete: true; principal: string; outputToken: string | null }
  /** A multi-leg mechanism (NTLM) asked for another round; see docs/authentication.md. */
  | { complete: false; outputToken: string | null };

/**
 * The Negotiate token was refused by GSSAPI: 401 with the challenges again. The message (GSSAPI's own words,
 * which can name principals and keytab entries) goes to the log only; the caller gets a generic detail.
 */
export class NegotiateFailedError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'NegotiateFailedError';
  }
}

/**
 * Windows Negotiate (spec 5.1): SPNEGO through GSSAPI with the optional native `kerberos` package. The
 * package is required lazily, so a machine where it could not be built still runs (Negotiate then reports
 * itself unavailable in one log line and the 401 challenges name only the remaining schemes).
 */
export class NegotiateAuthenticator {
  /**
   * Authenticators accepted lately. Kerberos takes an authenticator whose time is within the clock skew of
   * ours, so one first seen at t can pass until t + 2 x skew (its time may lie up to one skew ahead of ours):
   * it is kept that long. In-process: each service process guards its own tokens.
   */
  private readonly replays: ReplayCache;

  private constructor(
    private readonly kerberos: KerberosModule,
    private readonly servicePrincipal: string,
    config: NegotiateConfig,
    private readonly log: AuthLogger,
  ) {
    this.replays = new ReplayCache(2 * config.clockSkewSeconds * 1000, config.replayCacheMaxEntries);
  }

  /** The authenticator, or the one-line reason Negotiate is unavailable on this machine. */
  static create(config: NegotiateConfig, log: AuthLogger, env: NodeJS.ProcessEnv = process.env): NegotiateAuthenticator | { unavailable: string } {
    const unavailable = (why: string) => {
      log('warn', `Negotiate: unavailable: ${why}.`);
      return { unavailable: why };
    };
    let kerberos: KerberosModule;
    try {
      kerberos = require('kerberos') as KerberosModule;
    } catch (err) {
      return unavailable(`the optional native package 'kerberos' could not be loaded (${(err as Error).message.split('\n')[0]})`);
    }
    // GSSAPI finds the service key through KRB5_KTNAME; a configured keytab is handed to it that way.
    if (config.keytab) env.KRB5_KTNAME = `FILE:${config.keytab}`;
    const ktname = env.KRB5_KTNAME ?? 'FILE:/etc/krb5.keytab';
    const file = /^(FILE|WRFILE):/i.test(ktname) ? ktname.replace(/^[A-Z]+:/i, '') : /^[A-Z]+:/i.test(ktname) ? undefined : ktname;
    if (file !== undefined && !existsSync(file)) {
      return unavailable(`no keytab at ${file} (set Authentication__Negotiate__Keytab or KRB5_KTNAME)`);
    }
    const spn = config.servicePrincipal;
    log('info', `Negotiate: available (keytab ${file ?? ktname}, service principal ${spn || 'any key in the keytab'}).`);
    return new NegotiateAuthenticator(kerberos, spn, config, log);
  }

  /**
   * Accept one `Authorization: Negotiate <token>`. A fresh server context per request: Kerberos through
   * SPNEGO completes in a single leg, and the Functions HTTP model gives no connection to keep a context on.
   * A token whose Kerberos authenticator was accepted before is refused before GSSAPI sees it (a replay),
   * whether or not GSSAPI's own replay cache is on.
   */
  async accept(token: string): Promise<NegotiateOutcome> {
    const { key, kerberos } = replayKey(Buffer.from(token, 'base64'));
    const verdict = this.replays.reserve(key);
    if (verdict === 'replay') throw new NegotiateFailedError('The Negotiate token was already used (a replay of an accepted Kerberos authenticator).');
    if (verdict === 'full') {
      this.log(
        'warn',
        `Negotiate: the replay cache holds ${this.replays.maxEntries} authenticators of the last ${this.replays.retentionMs / 1000} s; new tokens are refused until some age out (Authentication__Negotiate__ReplayCacheMaxEntries).`,
      );
      throw new NegotiateFailedError('The replay cache is full.');
    }
    let outcome: NegotiateOutcome;
    try {
      outcome = await this.step(token);
    } catch (err) {
      this.replays.release(key);
      throw err;
    }
    if (!outcome.complete) {
      this.replays.release(key);
      return outcome;
    }
    if (!kerberos) {
      // GSSAPI completed a context from a token that holds no AP-REQ we can find: its replays could not be recognised.
      this.replays.release(key);
      throw new NegotiateFailedError(
        'GSSAPI completed a context from a token without a recognisable Kerberos AP-REQ; refused, as its replays could not be detected.',
      );
    }
    return outcome;
  }

  private async step(token: string): Promise<NegotiateOutcome> {
    let server: KerberosServer;
    try {
      server = await this.kerberos.initializeServer(this.servicePrincipal);
    } catch (err) {
      throw new NegotiateFailedError(`GSSAPI could not be initialised: ${firstLine(err)}`);
    }
    let out: string | undefined;
    try {
      out = await server.step(token);
    } catch (err) {
      throw new NegotiateFailedError(`The Negotiate token was refused: ${firstLine(err)}`);
    }
    const outputToken = out || server.response || null;
    if (!server.contextComplete) return { complete: false, outputToken };
    if (!server.username) throw new NegotiateFailedError('GSSAPI completed without naming the client principal.');
    return { complete: true, principal: server.username, outputToken };
  }
}

function firstLine(err: unknown): string {
  return (err instanceof Error ? err.message : String(err)).split('\n')[0].slice(0, 200);
}
