import { createHash, randomUUID } from 'node:crypto';
import { compileExpression, type CompiledExpression } from '../../expression';
import {
  ConnectorError,
  throwIfAborted,
  type ChangeStream,
  type ConnectionTestResult,
  type Connector,
  type ConnectorObject,
  type ConnectorSchema,
  type DeltaImportOptions,
  type DeltaPage,
  type ExportChange,
  type ExportOptions,
  type ExportResult,
  type FullImportOptions,
  type ImportPage,
  type ObjectError,
} from '../sdk';
import { defaultLdapAnchor } from './anchor';
import { type DeltaContext, type StrategyName } from './delta';
import { deltaStrategyFor } from './strategies';
import { anchorOf, classFilter, DEFAULT_MEMBER_RANGE_SIZE, isObjectError, REFERENCE_ATTRIBUTES, toConnectorObject, type Scope } from './objects';
import { canonicalAttributeNames, referenceAttributes, schemaAttributeTypes } from './schemaReferences';
import { park, unpark } from './parked';
import { directoryDefaults, DN_ATTRIBUTES, type DirectoryConfig } from './schema';
import {
  BINARY_ATTRIBUTES,
  Control,
  isNoSuchObject,
  openSession,
  type DirectorySession,
  type LdapEntry,
  type SearchRequest,
  type SessionConfig,
} from './session';
import { streamSearchFor } from './changeStream';
import { openStream, type StreamSearch } from './streamReader';
import { EqualityFilter, OrFilter, type Filter } from 'ldapts';
import { testDirectorySession } from './test';
import { LdapExporter } from './ldapExport';
import { binaryValueBytes, escapeFilterValue, isUnder, normalizeDn } from './values';

export { unescapeDnValue } from './ldapExport';

/**
 * The directory connector (`ldap`, `active_directory`) on the connector SDK: paged full import with a
 * resumable cursor, delta import by the directory's change log (see `strategies.ts` and the `delta*.ts` strategies), export with per-object
 * results (ldapExport.ts). One bound connection per connector instance, opened on first use.
 */

/** The full import cursor: which include base, how many entries of it were returned, the last anchor. */
interface FullCursor {
  v: 1;
  /** This import's id: a parked search is only continued by the import that parked it. */
  id: string;
  b: number;
  n: number;
  l: string | null;
  /** The delta watermark captured before the first page. */
  w: string | null;
}

const encodeCursor = (c: FullCursor) => Buffer.from(JSON.stringify(c)).toString('base64url');

function decodeCursor(s: string): FullCursor {
  try {
    const c = JSON.parse(Buffer.from(s, 'base64url').toString('utf8')) as FullCursor;
    if (c.v === 1 && typeof c.id === 'string' && Number.isInteger(c.b) && Number.isInteger(c.n)) return c;
  } catch {
    // fall through
  }
  throw new ConnectorError('cursor_invalid', 'The full import cursor is not one this connector wrote; the full import restarts.');
}

/** The well-known reference attributes (objects.ts REFERENCE_ATTRIBUTES) as directories spell them. */
const WELL_KNOWN_REFERENCES = Object.keys(REFERENCE_ATTRIBUTES).map((n) => ({ uniquemember: 'uniqueMember', managedby: 'managedBy' })[n] ?? n);

export class LdapConnector implements Connector {
  readonly config: DirectoryConfig & { port: number; anchorAttribute: string; objectClasses: Record<string, string> };
  readonly scope: Scope;
  private session: DirectorySession | undefined;
  /** The export side (ldapExport.ts). */
  private readonly exporter: LdapExporter;
  /** `ldap` without anchorAttribute: decided from the server at the first connection (anchor.ts). */
  private anchorPending: boolean;
  private readonly configuredAnchor: string | null;

  /**
   * The attributes the rules use (an import's connector, see ConnectorContext.importAttributes): with no
   * configured `attributes`, a search asks for these, the anchor, objectClass and the schema's reference
   * attributes instead of every user attribute.
   */
  private readonly ruleAttributes: readonly string[] | undefined;
  /** `ldap` with ruleAttributes: the schema's reference attributes as it spells them (read with the references). */
  private referenceNames: string[] | undefined;

  constructor(
    readonly type: 'ldap' | 'active_directory',
    config: DirectoryConfig,
    importAttributes?: readonly string[],
  ) {
    this.ruleAttributes = config.attributes?.length ? undefined : importAttributes;
    this.configuredAnchor = config.anchorAttribute ?? null;
    this.anchorPending = type === 'ldap' && config.anchorAttribute === undefined;
    this.config = {
      ...directoryDefaults(type, config),
      anchorAttribute: config.anchorAttribute ?? (type === 'ldap' ? 'entryUUID' : 'objectGUID'),
    } as LdapConnector['config'];
    const c = this.config;
    if (c.security === 'none' && c.allowInsecure !== true) {
      throw new ConnectorError('configuration_invalid', "security 'none' needs allowInsecure: true (the bind password would travel in clear text).");
    }
    if (DN_ATTRIBUTES.has(c.anchorAttribute.toLowerCase())) {
      throw new ConnectorError('configuration_invalid', 'anchorAttribute must not be the DN (a rename or move changes it).');
    }
    const classes = new Map(Object.entries(c.objectClasses).map(([k, v]) => [k.toLowerCase(), v]));
    if (classes.size === 0) throw new ConnectorError('configuration_invalid', 'objectClasses maps no LDAP object class to a mesh object type.');
    const include = c.containers?.include?.length ? c.containers.include : [c.baseDN];
    for (const dn of include) {
      if (!isUnder(dn, c.baseDN)) throw new ConnectorError('configuration_invalid', `containers.include '${dn}' is not under baseDN.`);
    }
    // A base inside another base would be read twice.
    const bases = include.filter((dn) => !include.some((other) => other !== dn && normalizeDn(other) !== normalizeDn(dn) && isUnder(dn, other)));
    this.scope = {
      classes,
      anchorAttribute: c.anchorAttribute,
      include: bases,
      exclude: c.containers?.exclude ?? [],
      isAd: type === 'active_directory',
      ...(type === 'active_directory' ? { rangeSize: c.memberRangeSize ?? DEFAULT_MEMBER_RANGE_SIZE } : {}),
    };
    let dnTemplate: CompiledExpression | undefined;
    if (c.exportDnTemplate) {
      try {
        dnTemplate = compileExpression(c.exportDnTemplate);
      } catch (err) {
        throw new ConnectorError('configuration_invalid', `exportDnTemplate does not parse: ${(err as Error).message}`);
      }
    }
    this.exporter = new LdapExporter(this, dnTemplate);
  }

  /** Identifies the configuration (the password by hash only) for parked searches. */
  private get fingerprint(): string {
    const c = this.config;
    return createHash('sha256')
      .update(
        JSON.stringify([
          this.type,
          c.host,
          c.port,
          c.security,
          c.bindDN,
          c.bindPassword,
          c.baseDN,
          c.containers,
          c.objectClasses,
          c.attributes,
          this.ruleAttributes ?? null,
          this.configuredAnchor,
          this.scope.rangeSize ?? null,
        ]),
      )
      .digest('base64url');
  }

  private async open(): Promise<DirectorySession> {
    if (!this.session) {
      this.session = await this.loadReferences(await this.openPrivate());
    }
    return this.session;
  }

  /** The directory's reference attributes into the scope (read once per directory, see schemaReferences.ts). */
  private async loadReferences(session: DirectorySession): Promise<DirectorySession> {
    if (this.anchorPending) {
      this.config.anchorAttribute = this.scope.anchorAttribute = await defaultLdapAnchor(session);
      this.anchorPending = false;
    }
    const key = `${this.config.host}:${this.config.port}`;
    if (!this.scope.references) this.scope.references = await referenceAttributes(session, key);
    if (this.ruleAttributes && !this.scope.isAd && !this.referenceNames) {
      // Asked for as the schema spells them (the directory answers with the names asked for).
      const types = await schemaAttributeTypes(session, key);
      const canonical = types ? canonicalAttributeNames(types) : new Map<string, string>();
      this.referenceNames = [...this.scope.references].map((n) => canonical.get(n) ?? n);
    }
    return session;
  }

  /**
   * The attributes a search asks for: the configured ones (or those the rules use, or all user attributes) plus
   * what the connector needs: objectClass, the anchor and, with the rules' attributes, the reference attributes
   * (references become relationships without a rule): on `ldap` every one of the schema, on Active Directory
   * the well-known ones (other DN-valued attributes when a rule names them).
   * Active Directory: `member` is asked for as its first range, `member;range=0-<memberRangeSize - 1>` (in place
   * of `member`, or beside `*`), and the rest is read by {@link completeRanges}.
   */
  get readAttributes(): string[] {
    const base = this.config.attributes?.length ? [...this.config.attributes] : this.ruleAttributes ? [...this.ruleAttributes] : ['*'];
    const extra = ['objectClass', this.config.anchorAttribute];
    // Active Directory: the well-known ones, not every reference attribute of its schema (about 130): asking
    // Samba's DC for that many names made reading 2.5 times as costly for the same values returned.
    if (this.ruleAttributes && !base.includes('*')) extra.push(...(this.scope.isAd ? WELL_KNOWN_REFERENCES : (this.referenceNames ?? WELL_KNOWN_REFERENCES)));
    const have = new Set(base.map((x) => x.toLowerCase()));
    for (const a of extra)
      if (!have.has(a.toLowerCase())) {
        have.add(a.toLowerCase());
        base.push(a);
      }
    const size = this.scope.rangeSize;
    if (size === undefined) return base;
    const first = `member;range=0-${size - 1}`;
    const at = base.findIndex((x) => x.toLowerCase() === 'member');
    if (at >= 0) base[at] = first;
    else if (base.includes('*')) base.push(first);
    return base;
  }

  /** Bind, then read baseDN and the included containers (`testDirectorySession` in test.ts). */
  async testConnection(): Promise<ConnectionTestResult> {
    const result = await testDirectorySession(await this.open(), this.config);
    // A default that depends on the server: stored with the connector by the Admin API, so it never changes.
    return this.configuredAnchor === null ? { ...result, settings: { anchorAttribute: this.config.anchorAttribute } } : result;
  }

  async schema(): Promise<ConnectorSchema> {
    const multi = new Set([
      'objectclass',
      'mail',
      'proxyaddresses',
      'telephonenumber',
      'member',
      'uniquemember',
      'memberof',
      'ou',
      'cn',
      'othermailbox',
      'description',
    ]);
    const names =
      this.config.attributes?.length && !this.config.attributes.includes('*')
        ? this.config.attributes
        : [
            'cn',
            'sn',
            'givenName',
            'displayName',
            'mail',
            'uid',
            'employeeNumber',
            'title',
            'departmentNumber',
            'telephoneNumber',
            'manager',
            'member',
            'objectClass',
            'proxyAddresses',
          ];
    const types = [...new Set(this.scope.classes.values())];
    return {
      objectTypes: types.map((name) => ({
        name,
        anchorAttribute: this.config.anchorAttribute,
        attributes: [
          { name: this.config.anchorAttribute, type: 'string' as const, multiValued: false, required: true },
          { name: 'container', type: 'string' as const, multiValued: false },
          { name: 'dn', type: 'string' as const, multiValued: false },
          ...names.map((n) => {
            const lower = n.toLowerCase();
            const ref = REFERENCE_ATTRIBUTES[lower];
            return {
              name: n,
              type: 'string' as const,
              multiValued: multi.has(lower) || Boolean(ref && lower !== 'manager' && lower !== 'secretary'),
              ...(ref ? { reference: { objectType: ref, resolveBy: 'dn' as const } } : {}),
            };
          }),
        ],
      })),
    };
  }

  // -------------------------------------------------------------------------------------------------------
  // Full import

  /**
   * Pages of at most `pageSize` objects. Between pages the paged search stays open (parked under the cursor
   * handed out, see parked.ts). Resuming from a cursor with nothing parked (after a crash) starts the paged
   * search of that base again and skips entries up to the cursor's last anchor: one extra read of the part
   * already imported, bounded memory, nothing lost or returned twice. When that anchor is gone (deleted since),
   * the cursor no longer fits: `cursor_invalid`, and the engine restarts the full import.
   */
  async *fullImport(options: FullImportOptions): AsyncGenerator<ImportPage> {
    const pageSize = Math.max(1, options.pageSize);
    let cur: FullCursor;
    let session: DirectorySession;
    let pages: AsyncGenerator<LdapEntry[]> | undefined;
    let buffer: LdapEntry[] = [];
    let skipTo: string | null = null;
    if (options.cursor) {
      cur = decodeCursor(options.cursor);
      if (cur.b >= this.scope.include.length) throw new ConnectorError('cursor_invalid', 'The full import cursor names a container no longer configured.');
      const p = unpark(options.cursor, this.fingerprint);
      if (p) {
        session = p.session;
        pages = p.pages;
        buffer = p.buffer;
      } else {
        session = await this.loadReferences(await this.openPrivate());
        skipTo = cur.l;
      }
    } else {
      session = await this.loadReferences(await this.openPrivate());
      const strategy = await deltaStrategyFor(this.deltaContext(session)).catch(() => undefined);
      const w = strategy ? await strategy.capture() : null;
      cur = { v: 1, id: randomUUID(), b: 0, n: 0, l: null, w };
    }
    let parkedAs: string | null = null;
    let finished = false;
    let unwatch = closeOnAbort(options.signal, session);
    try {
      let objects: ConnectorObject[] = [];
      let errors: ObjectError[] = [];
      for (;;) {
        throwIfAborted(options.signal);
        if (buffer.length === 0 && session.isOpen?.() === false) {
          // The server closed the connection between two of its pages (389 DS does after its ioblocktimeout,
          // 10 s, while the engine plans and writes a page): search again on a new one and skip to the last
          // entry read, as a resumed cursor does.
          await pages?.return(undefined).catch(() => undefined);
          await session.close().catch(() => undefined);
          unwatch();
          session = await this.loadReferences(await this.openPrivate());
          unwatch = closeOnAbort(options.signal, session);
          pages = undefined;
          skipTo = cur.l;
        }
        // The directory's page (config pageSize, RFC 2696) is independent of the engine's page: several of
        // one fill one of the other, and a server's own limit (AD's MaxPageSize) is respected.
        if (!pages) pages = session.searchPages(this.fullSearch(this.scope.include[cur.b]), this.config.pageSize ?? 1000);
        if (buffer.length === 0) {
          const next = await pages.next();
          if (next.done) {
            if (skipTo !== null)
              throw new ConnectorError('cursor_invalid', 'The object the full import cursor points after is gone; the full import restarts.');
            pages = undefined;
            if (cur.b + 1 < this.scope.include.length) {
              cur = { ...cur, b: cur.b + 1, n: 0, l: null };
              continue;
            }
            finished = true;
            yield { objects, errors, cursor: null, watermark: cur.w };
            return;
          }
          buffer = next.value;
          continue;
        }
        const entry = buffer.shift()!;
        if (skipTo !== null) {
          if (anchorOf(entry, this.scope.anchorAttribute) === skipTo) skipTo = null;
          continue;
        }
        const o = await toConnectorObject(session, entry, this.scope);
        if (!o) continue;
        if (isObjectError(o)) errors.push(o);
        else objects.push(o);
        cur = { ...cur, n: cur.n + 1, l: isObjectError(o) ? cur.l : o.anchor };
        if (objects.length + errors.length >= pageSize && cur.l !== null) {
          const cursor = encodeCursor(cur);
          parkedAs = cursor;
          yield { objects, errors, cursor };
          parkedAs = null;
          objects = [];
          errors = [];
        }
      }
    } catch (err) {
      throw abortedOr(err, options.signal);
    } finally {
      unwatch();
      if (parkedAs !== null && !finished && pages && !options.signal?.aborted) {
        // The consumer stopped after this page (the engine's one page per activity): keep the search open.
        park(parkedAs, { session, pages, buffer, fingerprint: this.fingerprint });
      } else {
        await pages?.return(undefined).catch(() => undefined);
        await session.close();
      }
    }
  }

  /** A session of the import's own (it may be parked and outlive this connector instance). */
  private openPrivate(): Promise<DirectorySession> {
    return openSession(this.sessionConfig());
  }

  private sessionConfig(): SessionConfig {
    const c = this.config;
    return {
      host: c.host,
      port: c.port,
      bindDN: c.bindDN,
      bindPassword: c.bindPassword,
      security: c.security ?? 'ldaps',
      allowInsecure: c.allowInsecure,
      caCertificate: c.caCertificate,
      timeoutSeconds: c.timeoutSeconds ?? 30,
    };
  }

  /** The server's push stream of changes, on a connection of its own (changeStream.ts); null when it offers none. */
  async openChangeStream(onChange: () => void): Promise<ChangeStream | null> {
    const session = await this.openPrivate();
    let search: StreamSearch | null;
    try {
      search = await streamSearchFor(session, this.config.baseDN);
    } finally {
      await session.close();
    }
    return search ? openStream(this.sessionConfig(), search, onChange) : null;
  }

  fullSearch(base: string): SearchRequest {
    return { base, scope: 'sub', filter: classFilter(this.scope), attributes: this.readAttributes };
  }

  // -------------------------------------------------------------------------------------------------------
  // Delta import

  deltaContext(session: DirectorySession): DeltaContext {
    return {
      session,
      scope: this.scope,
      baseDN: this.config.baseDN,
      configured: (this.config.deltaStrategy ?? 'auto') as StrategyName | 'auto',
      readAttributes: this.readAttributes,
      toObject: (e) => toConnectorObject(session, e, this.scope),
      lookup: (anchors) => this.lookup(session, anchors),
      bindDN: this.config.bindDN,
    };
  }

  async *deltaImport(watermark: string | null, options: DeltaImportOptions): AsyncGenerator<DeltaPage> {
    if (!watermark) {
      yield { changes: [], errors: [], fullImportRequired: { reason: 'No delta watermark yet: a full import sets the baseline.' } };
      return;
    }
    const session = await this.open();
    const unwatch = closeOnAbort(options.signal, session);
    try {
      const strategy = await deltaStrategyFor(this.deltaContext(session));
      yield* strategy.delta(watermark, options);
    } catch (err) {
      throw abortedOr(err, options.signal);
    } finally {
      unwatch();
    }
  }

  /** The current entries of these anchors (by the anchor attribute, in the include bases), by anchor. */
  async lookup(session: DirectorySession, anchors: string[]): Promise<Map<string, LdapEntry>> {
    const out = new Map<string, LdapEntry>();
    const attr = this.scope.anchorAttribute;
    for (let i = 0; i < anchors.length; i += 100) {
      const filter = anchorFilter(attr, anchors.slice(i, i + 100));
      if (!filter) continue;
      for (const base of this.scope.include) {
        for (const e of await session.search({ base, scope: 'sub', ...filter, attributes: this.readAttributes })) {
          const a = anchorOf(e, attr);
          if (a) out.set(a, e);
        }
      }
    }
    return out;
  }

  /**
   * Where the object with this anchor is, when it is not in the connector's containers: `gone` only when the
   * directory confirms it (Active Directory with objectGUID: a `<GUID=...>` base search with the Show Deleted
   * control answers noSuchObject or a tombstone; other anchors: a search of the whole baseDN, on AD with Show
   * Deleted, finds nothing or only a tombstone), `outside` with the DN where it is now. A failing search throws:
   * the caller makes it a per-object error, never a success.
   */
  async locateOutside(session: DirectorySession, anchor: string): Promise<{ state: 'gone'; how: string } | { state: 'outside'; dn: string }> {
    const attr = this.scope.anchorAttribute;
    const showDeleted = this.scope.isAd ? [new Control(SHOW_DELETED_OID, { critical: true })] : undefined;
    const judge = (entries: LdapEntry[], how: string): { state: 'gone'; how: string } | { state: 'outside'; dn: string } => {
      const live = entries.find((e) => !/^true$/i.test(String(e.isDeleted ?? '')));
      if (live) return { state: 'outside', dn: live.dn };
      return { state: 'gone', how: entries.length ? 'its tombstone is in the directory' : how };
    };
    if (this.scope.isAd && attr.toLowerCase() === 'objectguid') {
      if (!anchorFilter(attr, [anchor])) return { state: 'gone', how: 'no object can have that objectGUID' };
      try {
        const found = await session.search({
          base: `<GUID=${anchor}>`,
          scope: 'base',
          filter: '(objectClass=*)',
          attributes: ['isDeleted'],
          controls: showDeleted,
        });
        return judge(found, 'the directory answers noSuchObject for it');
      } catch (err) {
        if (isNoSuchObject(err)) return { state: 'gone', how: 'the directory answers noSuchObject for it' };
        throw err;
      }
    }
    const filter = anchorFilter(attr, [anchor]);
    if (!filter) return { state: 'gone', how: `no object can have that ${attr}` };
    const found = await session.search({ base: this.config.baseDN, scope: 'sub', ...filter, attributes: ['isDeleted'], controls: showDeleted });
    return judge(found, `no object under ${this.config.baseDN} has it`);
  }

  // -------------------------------------------------------------------------------------------------------
  // Export (ldapExport.ts)

  /**
   * Apply one change. Per-object failures (entryAlreadyExists, noSuchObject, constraint violations) resolve to
   * an error result; a lost connection throws `connection_failed` so the run fails and nothing after it is
   * reported as done. A batch goes through `exportBatch` (consecutive adds several at a time), which hands the
   * results applied before a lost connection to the engine (`applied`).
   */
  async export(change: ExportChange): Promise<ExportResult> {
    return this.exporter.export(await this.open(), change);
  }

  /** Apply changes in order, consecutive adds several at a time on the one connection ({@link LdapExporter.exportAll}). */
  async exportBatch(changes: ExportChange[], options: ExportOptions = {}): Promise<ExportResult[]> {
    return this.exporter.exportAll(await this.open(), changes, options.signal);
  }

  /** The DN an add of this change would get (undefined: none, see {@link LdapExporter.plannedDn}). */
  plannedDn(change: ExportChange): string | undefined {
    return this.exporter.plannedDn(change);
  }

  async close(): Promise<void> {
    const s = this.session;
    this.session = undefined;
    await s?.close();
  }
}

const SHOW_DELETED_OID = '1.2.840.113556.1.4.417';
const BINARY = new Set(BINARY_ATTRIBUTES.map((a) => a.toLowerCase()));

/**
 * The filter matching any of these anchors. A binary anchor (objectGUID, ms-DS-ConsistencyGuid, any attribute
 * the connector reads as bytes) is matched with filter objects whose values are the bytes: a string filter of
 * `\xx` escapes does not survive ldapts's filter parser for bytes of 0x80 and above. Anchors that cannot be a
 * value of the attribute are left out; undefined when none is left.
 */
export function anchorFilter(attribute: string, anchors: string[]): Pick<SearchRequest, 'filter' | 'filterObject'> | undefined {
  if (!BINARY.has(attribute.toLowerCase())) {
    if (!anchors.length) return undefined;
    const parts = anchors.map((a) => `(${attribute}=${escapeFilterValue(a)})`);
    return { filter: parts.length === 1 ? parts[0] : `(|${parts.join('')})` };
  }
  const filters: Filter[] = [];
  for (const a of anchors) {
    try {
      filters.push(new EqualityFilter({ attribute, value: binaryValueBytes(attribute, a) }));
    } catch {
      // not a value this attribute can hold: matches nothing
    }
  }
  if (!filters.length) return undefined;
  const filterObject = filters.length === 1 ? filters[0] : new OrFilter({ filters });
  return { filter: filterObject.toString(), filterObject };
}

/**
 * An abort of `signal` closes the session (unbind, then the socket destroyed): the search or read in flight
 * fails at once instead of waiting for a slow server, and the server abandons it. Returns the removal of the
 * listener.
 */
function closeOnAbort(signal: AbortSignal | undefined, session: DirectorySession): () => void {
  if (!signal) return () => undefined;
  const stop = () => void session.close();
  if (signal.aborted) stop();
  else signal.addEventListener('abort', stop, { once: true });
  return () => signal.removeEventListener('abort', stop);
}

/** What an import throws once its signal aborted: `aborted`, whatever the closed session made the call fail with. */
function abortedOr(err: unknown, signal: AbortSignal | undefined): unknown {
  return signal?.aborted ? new ConnectorError('aborted', 'The operation was cancelled.') : err;
}
