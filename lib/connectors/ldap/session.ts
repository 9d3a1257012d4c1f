import { isIP } from 'node:net';
import type { ConnectionOptions } from 'node:tls';
import { Attribute, Ber, BerWriter, Change, Client, Control, SearchEntry, type BerReader, type Entry, type Filter } from 'ldapts';
import { ConnectorError, redactSecrets, type ConnectorErrorCode } from '../sdk';
import { isSecretAttribute } from '../../core/secretAttributes';
import { writeRefusal, type WriteOperation } from './writeErrors';

/**
 * The directory operations the connector needs, over one bound connection. An interface (not ldapts itself)
 * so the delta strategies and ranged retrieval can be unit-tested with recorded server responses.
 */
export interface SearchRequest {
  base: string;
  scope: 'base' | 'one' | 'sub';
  filter: string;
  /**
   * The filter as an ldapts filter object, sent instead of `filter` (which then is its readable form). Needed for
   * binary values (objectGUID): ldapts parses a string filter's `\xx` escapes as text, so bytes >= 0x80 would
   * reach the server UTF-8 encoded; an EqualityFilter with a Buffer value is sent as the bytes.
   */
  filterObject?: Filter;
  attributes: string[];
  /** Extra request controls (Show Deleted for Active Directory tombstones). */
  controls?: Control[];
  sizeLimit?: number;
}

export type LdapEntry = Entry;

export interface DirectorySession {
  /** One search, every entry in memory: for small answers (root DSE, one entry, a delta's log). */
  search(req: SearchRequest): Promise<LdapEntry[]>;
  /** A paged search (RFC 2696), one page of at most `pageSize` entries at a time. */
  searchPages(req: SearchRequest, pageSize: number): AsyncGenerator<LdapEntry[]>;
  /**
   * Buffer values are written as bytes (AD's unicodePwd). `readBack`: attributes of the new entry to return,
   * read by the add itself (RFC 4527 post-read control) when the directory lists that control in its root DSE;
   * undefined when it does not (or did not answer with them): the caller searches for them.
   */
  add(dn: string, attributes: Record<string, string[] | Buffer[]>, readBack?: string[]): Promise<LdapEntry | undefined>;
  modify(dn: string, changes: Change[]): Promise<void>;
  del(dn: string): Promise<void>;
  modifyDN(dn: string, newDn: string): Promise<void>;
  close(): Promise<void>;
  /** False once the connection is gone (closed by the server or the network); a session without it counts as open. */
  isOpen?(): boolean;
}

/** What a session needs from the connector configuration. */
export interface SessionConfig {
  host: string;
  port: number;
  bindDN: string;
  bindPassword: string;
  security: 'ldaps' | 'starttls' | 'none';
  allowInsecure?: boolean;
  caCertificate?: string;
  timeoutSeconds: number;
}

/** Attributes whose values are bytes: read as Buffers, turned into canonical strings by the connector. */
export const BINARY_ATTRIBUTES = [
  'objectGUID',
  'objectSid',
  'sIDHistory',
  'replPropertyMetaData',
  'nTSecurityDescriptor',
  'tokenGroups',
  'jpegPhoto',
  'thumbnailPhoto',
  'userCertificate',
  'msExchMailboxGuid',
  'mS-DS-ConsistencyGuid',
];

const TLS_CODES = new Set([
  'UNABLE_TO_VERIFY_LEAF_SIGNATURE',
  'SELF_SIGNED_CERT_IN_CHAIN',
  'DEPTH_ZERO_SELF_SIGNED_CERT',
  'UNABLE_TO_GET_ISSUER_CERT',
  'UNABLE_TO_GET_ISSUER_CERT_LOCALLY',
  'CERT_HAS_EXPIRED',
  'CERT_NOT_YET_VALID',
  'ERR_TLS_CERT_ALTNAME_INVALID',
  'CERT_SIGNATURE_FAILURE',
  'CERT_UNTRUSTED',
  'CERT_REJECTED',
]);
/**
 * Attributes whose values are secrets (never echoed in an error, should the server quote them): the list every
 * read masks (lib/core/secretAttributes.ts, with `Mesh:SecretAttributes`), and, as before, anything named like a
 * password (an error message is better over-redacted).
 */
const SECRET_NAME = /pass|pwd|secret/i;
const SECRET_ATTRIBUTE = { test: (name: string) => SECRET_NAME.test(name) || isSecretAttribute(name) };

const NETWORK_CODES = new Set(['ECONNREFUSED', 'ECONNRESET', 'EPIPE', 'EHOSTUNREACH', 'ENETUNREACH', 'ENOTFOUND', 'EAI_AGAIN', 'ETIMEDOUT', 'ECONNABORTED']);

/** LDAP result codes to connector error codes for one object's operation (the run goes on). */
const OBJECT_RESULT_CODES: Record<number, ConnectorErrorCode> = {
  16: 'constraint_violation', // noSuchAttribute
  17: 'constraint_violation', // undefinedAttributeType
  19: 'constraint_violation', // constraintViolation
  20: 'constraint_violation', // attributeOrValueExists
  21: 'constraint_violation', // invalidAttributeSyntax
  32: 'not_found', // noSuchObject
  34: 'object_error', // invalidDNSyntax
  50: 'object_error', // insufficientAccessRights
  53: 'constraint_violation', // unwillingToPerform
  64: 'constraint_violation', // namingViolation
  65: 'constraint_violation', // objectClassViolation
  66: 'constraint_violation', // notAllowedOnNonLeaf
  67: 'constraint_violation', // notAllowedOnRDN
  68: 'already_exists', // entryAlreadyExists
  69: 'constraint_violation', // objectClassModsProhibited
};

/**
 * Turn whatever ldapts or the socket threw into a {@link ConnectorError} with a message safe to show (the
 * password is redacted should a driver ever echo it). `what` says what was being done.
 */
export function toConnectorError(err: unknown, what: string, secrets: string[], objectLevel = false): ConnectorError {
  if (err instanceof ConnectorError) return err;
  const e = err as { code?: unknown; message?: unknown; name?: unknown };
  const raw = redactSecrets(String(e?.message ?? err), secrets).slice(0, 300);
  const code = e?.code;
  if (typeof code === 'number') {
    if (code === 49)
      return new ConnectorError('authentication_failed', `${what}: the directory refused the bind DN or password (invalid credentials).`, { retriable: false });
    if (code === 13)
      return new ConnectorError(
        'configuration_invalid',
        `${what}: the directory requires a secure connection (confidentiality required); use security ldaps or starttls.`,
      );
    if (code === 51 || code === 52)
      return new ConnectorError('connection_failed', `${what}: the directory is busy or unavailable (LDAP result ${code}).`, { retriable: true });
    if (code === 3) return new ConnectorError('timeout', `${what}: the directory's time limit was exceeded.`);
    if (objectLevel && OBJECT_RESULT_CODES[code])
      return new ConnectorError(OBJECT_RESULT_CODES[code], `${what}: ${raw} (LDAP result ${code}).`, { retriable: false });
    if (code === 32) return markNoSuchObject(new ConnectorError('configuration_invalid', `${what}: no such object (check baseDN and containers).`));
    return new ConnectorError(objectLevel ? 'object_error' : 'internal', `${what}: ${raw} (LDAP result ${code}).`, { retriable: false });
  }
  if (typeof code === 'string' && TLS_CODES.has(code)) {
    return new ConnectorError(
      'connection_failed',
      `${what}: the directory's TLS certificate is not trusted (${code}); set caCertificate to the PEM of the CA that issued it, and connect by the name the certificate carries.`,
      { retriable: false },
    );
  }
  if (typeof code === 'string' && NETWORK_CODES.has(code)) {
    return new ConnectorError('connection_failed', `${what}: cannot reach the directory (${code}).`, { retriable: true });
  }
  if (/timeout|timed out/i.test(raw)) return new ConnectorError('timeout', `${what}: the directory did not answer in time.`, { retriable: true });
  if (/closed|socket|connect|ECONN|EPIPE|not connected/i.test(raw)) {
    return new ConnectorError('connection_failed', `${what}: the connection to the directory was lost (${raw}).`, { retriable: true });
  }
  if (/certificate|self[- ]signed|TLS|SSL/i.test(raw)) {
    return new ConnectorError('connection_failed', `${what}: TLS failed (${raw}); check caCertificate and security.`, { retriable: false });
  }
  return new ConnectorError('internal', `${what}: ${raw}`, { retriable: false });
}

const noSuchObject = new WeakSet<ConnectorError>();
function markNoSuchObject(e: ConnectorError): ConnectorError {
  noSuchObject.add(e);
  return e;
}
/** True when a search failed because its base does not exist (LDAP result 32, noSuchObject). */
export function isNoSuchObject(err: unknown): boolean {
  return err instanceof ConnectorError && noSuchObject.has(err);
}

export function tlsOptions(c: SessionConfig): ConnectionOptions {
  const o: ConnectionOptions = { minVersion: 'TLSv1.2', rejectUnauthorized: true };
  if (c.caCertificate) o.ca = [c.caCertificate];
  if (!isIP(c.host)) o.servername = c.host;
  return o;
}

/** Connect and bind. Throws a {@link ConnectorError} (authentication_failed, connection_failed, ...). */
export async function openSession(c: SessionConfig): Promise<DirectorySession> {
  if (c.security === 'none' && c.allowInsecure !== true) {
    throw new ConnectorError('configuration_invalid', "security 'none' needs allowInsecure: true (the bind password would travel in clear text).");
  }
  const secrets = [c.bindPassword];
  const timeout = c.timeoutSeconds * 1000;
  const url = `${c.security === 'ldaps' ? 'ldaps' : 'ldap'}://${isIP(c.host) === 6 ? `[${c.host}]` : c.host}:${c.port}`;
  // tlsOptions go to the constructor for ldaps only: ldapts opens a TLS socket whenever the constructor gets any
  // TLS option, even for an ldap:// URL, so a StartTLS client would send its ClientHello to the plain LDAP port
  // and the server would reset the connection (ECONNRESET) before StartTLS was ever asked for.
  const client = new Client({ url, timeout, connectTimeout: timeout, strictDN: false, ...(c.security === 'ldaps' ? { tlsOptions: tlsOptions(c) } : {}) });
  try {
    if (c.security === 'starttls') await client.startTLS(tlsOptions(c));
    await client.bind(c.bindDN, c.bindPassword);
  } catch (err) {
    await client.unbind().catch(() => undefined);
    throw toConnectorError(err, `Connecting to ${c.host}:${c.port} (${c.security})`, secrets);
  }
  return new LdaptsSession(client, secrets, c.bindDN);
}

/** The LDAP Post-Read control (RFC 4527): the add's response carries the new entry's requested attributes. */
export const POST_READ_OID = '1.3.6.1.1.13.2';

/**
 * A post-read request control that keeps the entry of its response: ldapts hands a response control of the
 * request control's type to that request control's `parseControl`. A value it cannot parse leaves `entry`
 * undefined (the caller reads the entry instead) and never fails the add, which the directory did.
 */
export class PostReadControl extends Control {
  entry?: LdapEntry;
  constructor(private readonly attributes: string[]) {
    super(POST_READ_OID, { critical: false });
  }
  protected override writeControl(writer: BerWriter): void {
    const value = new BerWriter();
    value.startSequence();
    for (const a of this.attributes) value.writeString(a);
    value.endSequence();
    writer.writeBuffer(value.buffer, Ber.OctetString);
  }
  protected override parseControl(reader: BerReader): void {
    try {
      // SearchResultEntry ::= [APPLICATION 4] SEQUENCE { objectName, attributes }
      if (reader.readSequence(0x64) === null) return;
      const e = new SearchEntry({ messageId: 0 });
      e.parseMessage(reader);
      this.entry = e.toObject(this.attributes, BINARY_ATTRIBUTES);
    } catch {
      this.entry = undefined;
    }
  }
}

class LdaptsSession implements DirectorySession {
  private closed = false;
  /** Whether the root DSE lists the post-read control (read once, at the first add that asks to read back). */
  private postRead: Promise<boolean> | undefined;
  constructor(
    private readonly client: Client,
    private readonly secrets: string[],
    private readonly bindDN?: string,
  ) {}

  /**
   * ldapts reconnects by itself when the socket was closed, but unbound (and, after StartTLS, without TLS): an
   * anonymous search sees nothing, which a delta would read as deletes. A session that lost its bind fails.
   */
  isOpen(): boolean {
    return !this.closed && this.client.isBound;
  }

  private ensureBound(what: string): void {
    if (!this.client.isBound) throw new ConnectorError('connection_failed', `${what}: the connection to the directory was lost.`, { retriable: true });
  }

  async search(req: SearchRequest): Promise<LdapEntry[]> {
    this.ensureBound(`Searching ${req.base}`);
    try {
      const r = await this.client.search(
        req.base,
        {
          scope: req.scope,
          filter: req.filterObject ?? req.filter,
          attributes: req.attributes,
          explicitBufferAttributes: BINARY_ATTRIBUTES,
          sizeLimit: req.sizeLimit,
        },
        req.controls,
      );
      return r.searchEntries;
    } catch (err) {
      throw toConnectorError(err, `Searching ${req.base}`, this.secrets);
    }
  }

  async *searchPages(req: SearchRequest, pageSize: number): AsyncGenerator<LdapEntry[]> {
    const it = this.client.searchPaginated(
      req.base,
      {
        scope: req.scope,
        filter: req.filterObject ?? req.filter,
        attributes: req.attributes,
        explicitBufferAttributes: BINARY_ATTRIBUTES,
        paged: { pageSize },
      },
      req.controls,
    );
    for (;;) {
      let next: IteratorResult<{ searchEntries: LdapEntry[] }>;
      this.ensureBound(`Searching ${req.base}`);
      try {
        next = await it.next();
      } catch (err) {
        throw toConnectorError(err, `Searching ${req.base}`, this.secrets);
      }
      if (next.done) return;
      yield next.value.searchEntries;
    }
  }

  async add(dn: string, attributes: Record<string, string[] | Buffer[]>, readBack?: string[]): Promise<LdapEntry | undefined> {
    const written = Object.entries(attributes).flatMap(([name, values]) => (SECRET_ATTRIBUTE.test(name) ? secretTexts(values) : []));
    const binary = Object.values(attributes).some((values) => values.some((v) => Buffer.isBuffer(v)));
    const entry = binary ? Object.entries(attributes).map(([type, values]) => new Attribute({ type, values })) : (attributes as Record<string, string[]>);
    const control = readBack?.length && (await this.offersPostRead()) ? new PostReadControl(readBack) : undefined;
    await this.op(() => this.client.add(dn, entry, control), `Adding ${dn}`, { kind: 'add', dn }, written);
    return control?.entry;
  }

  /** Whether the directory lists the post-read control in its root DSE's supportedControl (asked once per session). */
  private offersPostRead(): Promise<boolean> {
    this.postRead ??= this.search({ base: '', scope: 'base', filter: '(objectClass=*)', attributes: ['supportedControl'] }).then(
      ([root]) => {
        const key = Object.keys(root ?? {}).find((k) => k.toLowerCase() === 'supportedcontrol');
        const v = key ? root?.[key] : undefined;
        return (Array.isArray(v) ? v : v === undefined ? [] : [v]).some((x) => String(x) === POST_READ_OID);
      },
      () => false,
    );
    return this.postRead;
  }
  async modify(dn: string, changes: Change[]): Promise<void> {
    const written = changes.flatMap((c) => (SECRET_ATTRIBUTE.test(c.modification.type) ? secretTexts(c.modification.values) : []));
    await this.op(() => this.client.modify(dn, changes), `Modifying ${dn}`, { kind: 'modify', dn }, written);
  }
  async del(dn: string): Promise<void> {
    await this.op(() => this.client.del(dn), `Deleting ${dn}`, { kind: 'delete', dn });
  }
  async modifyDN(dn: string, newDn: string): Promise<void> {
    await this.op(() => this.client.modifyDN(dn, newDn), `Moving ${dn} to ${newDn}`, { kind: 'move', dn, newDn });
  }

  /**
   * Write operations: LDAP results that concern the object are per-object errors with a readable message
   * (writeErrors.ts); transport errors and run-level results stay run-level. `written` are values being written
   * that must never show (passwords), redacted like the bind password should a server echo them.
   */
  private async op(fn: () => Promise<void>, what: string, operation: WriteOperation, written: string[] = []): Promise<void> {
    this.ensureBound(what);
    try {
      await fn();
    } catch (err) {
      const e = err as { code?: unknown; message?: unknown };
      const refusal =
        typeof e?.code === 'number' && !(err instanceof ConnectorError)
          ? writeRefusal(e.code, String(e.message ?? ''), { ...operation, bindDN: this.bindDN }, [...this.secrets, ...written])
          : undefined;
      throw refusal ?? toConnectorError(err, what, this.secrets, typeof e?.code === 'number');
    }
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    await this.client.unbind().catch(() => undefined);
  }
}

/** The texts of secret values being written, for redaction: a unicodePwd value is the quoted password in UTF-16LE. */
function secretTexts(values: ReadonlyArray<string | Buffer>): string[] {
  return values.flatMap((v) => {
    if (!Buffer.isBuffer(v)) return [v];
    const text = v.toString('utf16le');
    return [text, text.replace(/^"|"$/g, ''), v.toString('utf8')].filter((x) => x.length > 0);
  });
}

export { Attribute, Change, Control };
