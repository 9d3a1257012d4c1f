import { createHash, randomUUID } from 'node:crypto';
import { compileExpression, type CompiledExpression } from '../../expression';
import {
  ConnectorError,
  throwIfAborted,
  valuesOf,
  type ConnectionTestResult,
  type Connector,
  type ConnectorObject,
  type ConnectorSchema,
  type DeltaImportOptions,
  type DeltaPage,
  type ExportChange,
  type ExportResult,
  type FullImportOptions,
  type ImportPage,
  type ObjectError,
  type ScalarValue,
  type AttributeValue,
} from '../sdk';
import {
  accountParts,
  DISABLED_ATTRIBUTE,
  encodeUnicodePwd,
  NORMAL_ACCOUNT,
  PASSWORD_ATTRIBUTE,
  userAccountControlOf,
  withDisabled,
  type AccountParts,
} from './adAccount';
import { defaultLdapAnchor } from './anchor';
import { type DeltaContext, type StrategyName } from './delta';
import { deltaStrategyFor } from './strategies';
import {
  anchorOf,
  classFilter,
  completeRanges,
  DEFAULT_MEMBER_RANGE_SIZE,
  isObjectError,
  REFERENCE_ATTRIBUTES,
  toConnectorObject,
  type Scope,
} from './objects';
import { canonicalAttributeNames, referenceAttributes, schemaAttributeTypes } from './schemaReferences';
import { park, unpark } from './parked';
import { directoryDefaults, DN_ATTRIBUTES, type DirectoryConfig } from './schema';
import {
  Attribute,
  BINARY_ATTRIBUTES,
  Change,
  Control,
  isNoSuchObject,
  openSession,
  type DirectorySession,
  type LdapEntry,
  type SearchRequest,
} from './session';
import { EqualityFilter, OrFilter, type Filter } from 'ldapts';
import { testDirectorySession } from './test';
import { binaryValueBytes, escapeFilterValue, isUnder, normalizeDn, parentDn } from './values';

/**
 * The directory connector (`ldap`, `active_directory`) on the connector SDK: paged full import with a
 * resumable cursor, delta import by the directory's change log (see `strategies.ts` and the `delta*.ts` strategies), export with per-object
 * results. One bound connection per connector instance, opened on first use.
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

const SKIP_ON_WRITE = new Set([
  'dn',
  'container',
  'objectclass',
  'entryuuid',
  'objectguid',
  'objectsid',
  'entrycsn',
  'modifytimestamp',
  'createtimestamp',
  'usnchanged',
  'usncreated',
]);

export class LdapConnector implements Connector {
  readonly config: DirectoryConfig & { port: number; anchorAttribute: string; objectClasses: Record<string, string> };
  readonly scope: Scope;
  private session: DirectorySession | undefined;
  private dnTemplate: CompiledExpression | undefined;
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
    if (c.exportDnTemplate) {
      try {
        this.dnTemplate = compileExpression(c.exportDnTemplate);
      } catch (err) {
        throw new ConnectorError('configuration_invalid', `exportDnTemplate does not parse: ${(err as Error).message}`);
      }
    }
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
    try {
      let objects: ConnectorObject[] = [];
      let errors: ObjectError[] = [];
      for (;;) {
        throwIfAborted(options.signal);
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
    } finally {
      if (parkedAs !== null && !finished && pages) {
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
    const c = this.config;
    return openSession({
      host: c.host,
      port: c.port,
      bindDN: c.bindDN,
      bindPassword: c.bindPassword,
      security: c.security ?? 'ldaps',
      allowInsecure: c.allowInsecure,
      caCertificate: c.caCertificate,
      timeoutSeconds: c.timeoutSeconds ?? 30,
    });
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
    const strategy = await deltaStrategyFor(this.deltaContext(session));
    yield* strategy.delta(watermark, options);
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
  // Export

  /**
   * Apply one change. Per-object failures (entryAlreadyExists, noSuchObject, constraint violations) resolve to
   * an error result; a lost connection throws `connection_failed` so the run fails and nothing after it is
   * reported as done. No `exportBatch`: the engine applies a batch one change at a time through the SDK's
   * `exportChanges`, which hands the results applied before a lost connection to the engine (`applied`).
   */
  async export(change: ExportChange): Promise<ExportResult> {
    const session = await this.open();
    try {
      switch (change.kind) {
        case 'add':
          return await this.exportAdd(session, change);
        case 'delete':
          return await this.exportDelete(session, change);
        default:
          return await this.exportUpdate(session, change);
      }
    } catch (err) {
      if (err instanceof ConnectorError && ['object_error', 'not_found', 'already_exists', 'constraint_violation'].includes(err.code)) {
        return { status: 'error', ...(change.anchor ? { anchor: change.anchor } : {}), error: err.toObjectError(change.objectType) };
      }
      throw err;
    }
  }

  plannedDn(change: ExportChange): string | undefined {
    try {
      return this.addDn(change);
    } catch {
      return undefined;
    }
  }

  private addDn(change: ExportChange): string {
    const explicit = change.dn ?? stringAttribute(change.attributes, 'dn');
    if (explicit) {
      if (!isUnder(explicit, this.config.baseDN)) throw new ConnectorError('object_error', `The DN ${explicit} is not under baseDN.`);
      return explicit;
    }
    if (!this.dnTemplate)
      throw new ConnectorError('object_error', 'Adding an object needs exportDnTemplate in the connector configuration (or a DN from the engine).');
    let dn: string | undefined;
    try {
      dn = this.templateDn(change.attributes, change.objectType, change.container ?? stringAttribute(change.attributes, 'container') ?? null);
    } catch (err) {
      throw new ConnectorError('object_error', `exportDnTemplate failed for this object: ${(err as Error).message}`);
    }
    if (dn === undefined) throw new ConnectorError('object_error', 'exportDnTemplate did not give a DN for this object.');
    if (!isUnder(dn, this.config.baseDN)) throw new ConnectorError('object_error', `The DN ${dn} is not under baseDN.`);
    return dn;
  }

  /** The DN `exportDnTemplate` gives for these attributes (undefined: no template, or not a DN). Throws when it fails. */
  private templateDn(source: Record<string, AttributeValue>, objectType: string, container: string | null): string | undefined {
    if (!this.dnTemplate) return undefined;
    const dn = this.dnTemplate.evaluate({ source, baseDN: this.config.baseDN, objectType, container });
    return typeof dn === 'string' && dn.includes('=') ? dn : undefined;
  }

  /**
   * Where an update moves the entry (undefined: it stays). In order: a DN the change names (`change.dn` or the
   * attribute `dn`); a container it names (`change.container` or the attribute `container`, from an outbound
   * flow rule), keeping the RDN; else `exportDnTemplate` evaluated over the entry's values before and after the
   * change: when the computed DN changes (a new department, a new uid), the entry goes there. An entry the
   * template never placed is only moved when an attribute the template reads changes.
   */
  private async moveTarget(session: DirectorySession, entry: LdapEntry, change: ExportChange): Promise<string | undefined> {
    const dn = entry.dn;
    const rdn = dn.slice(0, dn.length - parentDn(dn).length).replace(/,\s*$/, '');
    const explicitDn = change.dn ?? stringAttribute(change.attributes, 'dn');
    if (explicitDn) return explicitDn;
    const container = change.container ?? stringAttribute(change.attributes, 'container');
    if (container) return `${rdn},${container}`;
    if (!this.dnTemplate) return undefined;
    const current = await toConnectorObject(session, entry, this.scope);
    if (!current || isObjectError(current)) return undefined;
    const after: Record<string, AttributeValue> = { ...current.attributes };
    for (const [name, v] of Object.entries(change.attributes)) {
      for (const k of Object.keys(after)) if (k.toLowerCase() === name.toLowerCase()) delete after[k];
      after[name] = v;
    }
    const attempt = (source: Record<string, AttributeValue>) => {
      try {
        return this.templateDn(source, current.objectType, null);
      } catch {
        return undefined;
      }
    };
    const next = attempt(after);
    if (next === undefined) return undefined;
    const before = attempt(current.attributes);
    if (before !== undefined && normalizeDn(before) === normalizeDn(next)) return undefined;
    return next;
  }

  private async exportAdd(session: DirectorySession, change: ExportChange): Promise<ExportResult> {
    const dn = this.addDn(change);
    const account = this.accountOf(change);
    const attrs: Record<string, string[]> = {};
    for (const [name, v] of Object.entries(account.rest)) {
      if (SKIP_ON_WRITE.has(name.toLowerCase()) && name.toLowerCase() !== 'objectclass') continue;
      const vals = valuesOf(v).map(ldapString);
      if (vals.length) attrs[name] = vals;
    }
    if (!Object.keys(attrs).some((k) => k.toLowerCase() === 'objectclass')) {
      const cls = [...this.scope.classes.entries()].find(([, t]) => t === change.objectType)?.[0];
      if (!cls) throw new ConnectorError('object_error', `No LDAP object class is mapped to ${change.objectType}.`);
      attrs.objectClass = [cls];
    }
    const write = this.accountAdd(attrs, account);
    const created = await this.withParents(session, dn, () => session.add(dn, write));
    const [entry] = await session.search({ base: dn, scope: 'base', filter: '(objectClass=*)', attributes: [this.scope.anchorAttribute] });
    const anchor = entry && anchorOf(entry, this.scope.anchorAttribute);
    if (!anchor) throw new ConnectorError('object_error', `Added ${dn} but could not read its ${this.scope.anchorAttribute}.`);
    return { status: 'success', anchor, dn, ...containerNotes(created, dn) };
  }

  /**
   * Active Directory accounts: the password (unicodePwd) and the accountDisabled pseudo-attribute taken out of
   * the change (adAccount.ts). A password needs an encrypted connection: over plain LDAP it is refused before
   * anything is written. Other directories: accountDisabled is refused, unicodePwd is an attribute like any other.
   */
  private accountOf(change: ExportChange): AccountParts {
    if (this.type !== 'active_directory') {
      if (Object.keys(change.attributes).some((k) => k.toLowerCase() === DISABLED_ATTRIBUTE.toLowerCase())) {
        throw new ConnectorError(
          'object_error',
          `${DISABLED_ATTRIBUTE} is an Active Directory pseudo-attribute (userAccountControl); this connector is of type ldap.`,
        );
      }
      return { rest: change.attributes };
    }
    const account = accountParts(change.attributes);
    const writesPassword = account.password !== undefined && (change.kind === 'add' || this.config.passwordOnUpdate === true);
    if (writesPassword && (this.config.security ?? 'ldaps') === 'none') {
      throw new ConnectorError(
        'object_error',
        `Active Directory accepts a password (${PASSWORD_ATTRIBUTE}) only over an encrypted connection; this connector uses security 'none'. Set security to ldaps or starttls. Nothing was written for this object.`,
      );
    }
    if (!writesPassword) delete account.password;
    return account;
  }

  /**
   * The values of an AD account's add: the password encoded as AD wants it, in the same add as the
   * userAccountControl that enables the account; pwdLastSet 0 (must change at first logon) unless
   * mustChangePassword is false or a flow writes pwdLastSet; accountDisabled applied to the flow's
   * userAccountControl (or NORMAL_ACCOUNT, 512).
   */
  private accountAdd(attrs: Record<string, string[]>, account: AccountParts): Record<string, string[] | Buffer[]> {
    const out: Record<string, string[] | Buffer[]> = { ...attrs };
    const key = (name: string) => Object.keys(out).find((k) => k.toLowerCase() === name.toLowerCase());
    if (account.disabled !== undefined) {
      const k = key('userAccountControl');
      const uac = userAccountControlOf(k ? out[k] : undefined) ?? NORMAL_ACCOUNT;
      if (k) delete out[k];
      out.userAccountControl = [String(withDisabled(uac, account.disabled))];
    }
    if (account.password !== undefined) {
      out[PASSWORD_ATTRIBUTE] = [encodeUnicodePwd(account.password)];
      if (this.config.mustChangePassword !== false && !key('pwdLastSet')) out.pwdLastSet = ['0'];
    }
    return out;
  }

  /** The modifications of an AD account's update for the password (passwordOnUpdate) and accountDisabled. */
  private accountUpdate(entry: LdapEntry, account: AccountParts, flowUac: string[] | undefined): Change[] {
    const changes: Change[] = [];
    if (account.disabled !== undefined) {
      const key = Object.keys(entry).find((k) => k.toLowerCase() === 'useraccountcontrol');
      const current = userAccountControlOf(flowUac ?? (key ? entry[key] : undefined));
      if (current === undefined) throw new ConnectorError('object_error', `${DISABLED_ATTRIBUTE}: the account's userAccountControl could not be read.`);
      const next = withDisabled(current, account.disabled);
      const now = userAccountControlOf(key ? entry[key] : undefined);
      if (next !== now) changes.push(new Change({ operation: 'replace', modification: new Attribute({ type: 'userAccountControl', values: [String(next)] }) }));
    }
    if (account.password !== undefined) {
      changes.push(
        new Change({ operation: 'replace', modification: new Attribute({ type: PASSWORD_ATTRIBUTE, values: [encodeUnicodePwd(account.password)] }) }),
      );
      if (this.config.mustChangePassword !== false)
        changes.push(new Change({ operation: 'replace', modification: new Attribute({ type: 'pwdLastSet', values: ['0'] }) }));
    }
    return changes;
  }

  private async find(session: DirectorySession, anchor: string | undefined): Promise<LdapEntry | undefined> {
    if (!anchor) return undefined;
    return (await this.lookup(session, [anchor])).get(anchor);
  }

  /**
   * Delete the object. "Already gone" (a replayed run) is a success only when the directory confirms it
   * ({@link locateOutside}); an object found outside the connector's containers, or one that cannot be found for
   * any other reason, is a per-object error: an account is never reported deleted while it exists.
   */
  private async exportDelete(session: DirectorySession, change: ExportChange): Promise<ExportResult> {
    const anchor = change.anchor;
    if (!anchor) throw new ConnectorError('object_error', 'A delete needs the anchor of the object to delete.');
    const attr = this.scope.anchorAttribute;
    for (let attempt = 0; attempt < 2; attempt++) {
      const entry = await this.find(session, anchor).catch((err: unknown) => {
        throw objectLevel(err, `Looking up the object with ${attr} ${anchor} to delete it`, anchor);
      });
      if (!entry) {
        const where = await this.locateOutside(session, anchor).catch((err: unknown) => {
          throw objectLevel(err, `Confirming that the object with ${attr} ${anchor} is gone`, anchor);
        });
        if (where.state === 'gone') return { status: 'success', anchor, notes: [`The object with ${attr} ${anchor} was already gone (${where.how}).`] };
        throw new ConnectorError('object_error', `The object with ${attr} ${anchor} is at ${where.dn}, outside the connector's containers: not deleted.`, {
          anchor,
          location: where.dn,
        });
      }
      try {
        await session.del(entry.dn);
        return { status: 'success', anchor, dn: entry.dn };
      } catch (err) {
        // Gone or moved between the lookup and the delete: look again.
        if (!(err instanceof ConnectorError && err.code === 'not_found')) throw err;
      }
    }
    throw new ConnectorError('object_error', `The object with ${attr} ${anchor} moved while it was being deleted; not deleted.`, { anchor });
  }

  private async exportUpdate(session: DirectorySession, change: ExportChange): Promise<ExportResult> {
    const found = await this.find(session, change.anchor);
    // Every value of a ranged attribute (a large group's member): the difference is written against all of them.
    const entry = found && (await completeRanges(session, found, this.scope.rangeSize));
    if (!entry) {
      const attr = this.scope.anchorAttribute;
      if (!change.anchor) throw new ConnectorError('not_found', `An update needs the anchor (${attr}) of the object.`);
      const where = await this.locateOutside(session, change.anchor).catch(() => undefined);
      const why = !where ? '' : where.state === 'gone' ? ` (${where.how})` : ` (it is at ${where.dn}, outside the connector's containers)`;
      throw new ConnectorError('not_found', `No directory object in the connector's containers has ${attr} ${change.anchor}${why}.`, { anchor: change.anchor });
    }
    const account = this.accountOf(change);
    let dn = entry.dn;
    let created: string[] = [];
    // A new place: modifyDN (a move keeps the anchor, group memberships follow through refint/AD links).
    const target = await this.moveTarget(session, entry, change);
    if (target && normalizeDn(target) !== normalizeDn(dn)) {
      if (!isUnder(target, this.config.baseDN)) throw new ConnectorError('object_error', `The DN ${target} is not under baseDN.`);
      const from = dn;
      created = await this.withParents(session, target, () => session.modifyDN(from, target));
      dn = target;
      // The rename set the naming attribute to the new RDN's value: it is not written again (Active Directory
      // refuses any modify of the RDN attribute, even to the value it has: "must use 'rename' operation").
      const rdn = /^\s*([^=+,\s]+)\s*=\s*((?:\\.|[^,+])+?)\s*,/.exec(target);
      if (rdn) {
        for (const k of Object.keys(entry)) if (k.toLowerCase() === rdn[1].toLowerCase()) delete entry[k];
        entry[rdn[1]] = unescapeDnValue(rdn[2]);
      }
    }
    const changes: Change[] = [];
    const raw = (name: string): unknown[] => {
      const key = Object.keys(entry).find((k) => k.toLowerCase() === name.toLowerCase());
      if (!key) return [];
      const v = entry[key];
      return Array.isArray(v) ? v : [v];
    };
    const current = (name: string): string[] => raw(name).map((x) => (Buffer.isBuffer(x) ? x.toString('base64') : String(x)));
    const isBinary = (name: string): boolean => raw(name).some((x) => Buffer.isBuffer(x));
    // accountDisabled on the account's current userAccountControl: with a flow's userAccountControl, on that value.
    const flowUacKey = account.disabled === undefined ? undefined : Object.keys(account.rest).find((k) => k.toLowerCase() === 'useraccountcontrol');
    const flowUac = flowUacKey ? valuesOf(account.rest[flowUacKey]).map(ldapString) : undefined;
    for (const [name, v] of Object.entries(account.rest)) {
      if (SKIP_ON_WRITE.has(name.toLowerCase())) continue;
      if (name === flowUacKey) continue;
      const next = valuesOf(v).map(ldapString);
      const now = current(name);
      // Only what changed is written.
      if (sameSet(now, next)) continue;
      if (next.length === 0 && now.length === 0) continue;
      if (now.length && next.length && (now.length > 1 || next.length > 1) && !isBinary(name)) {
        // A multi-valued attribute (group membership): the values that went and came, not the whole list again.
        // Deletes first: a value whose case changed is deleted, then added.
        const nowSet = new Set(now);
        const nextSet = new Set(next);
        const del = now.filter((x) => !nextSet.has(x));
        const add = next.filter((x) => !nowSet.has(x));
        if (del.length) changes.push(new Change({ operation: 'delete', modification: new Attribute({ type: name, values: del }) }));
        if (add.length) changes.push(new Change({ operation: 'add', modification: new Attribute({ type: name, values: add }) }));
        continue;
      }
      changes.push(new Change({ operation: 'replace', modification: new Attribute({ type: name, values: next }) }));
    }
    for (const [name, vals] of Object.entries(change.multiValueAdds ?? {})) {
      const now = new Set(current(name).map((x) => x.toLowerCase()));
      const add = vals
        .filter((x) => x !== null)
        .map(ldapString)
        .filter((x) => !now.has(x.toLowerCase()));
      if (add.length) changes.push(new Change({ operation: 'add', modification: new Attribute({ type: name, values: add }) }));
    }
    for (const [name, vals] of Object.entries(change.multiValueRemoves ?? {})) {
      const now = new Set(current(name).map((x) => x.toLowerCase()));
      const del = vals
        .filter((x) => x !== null)
        .map(ldapString)
        .filter((x) => now.has(x.toLowerCase()));
      if (del.length) changes.push(new Change({ operation: 'delete', modification: new Attribute({ type: name, values: del }) }));
    }
    if (account.disabled !== undefined && !Object.keys(entry).some((k) => k.toLowerCase() === 'useraccountcontrol')) {
      // Not among the configured attributes: read it.
      const [e] = await session.search({ base: dn, scope: 'base', filter: '(objectClass=*)', attributes: ['userAccountControl'] });
      if (e?.userAccountControl !== undefined) entry.userAccountControl = e.userAccountControl;
    }
    changes.push(...this.accountUpdate(entry, account, flowUac));
    if (changes.length) await session.modify(dn, changes);
    return { status: 'success', anchor: change.anchor!, dn, ...containerNotes(created, dn) };
  }

  /**
   * Place an entry at `dn` (`write`: the add or the move). When the directory answers that something is missing
   * (noSuchObject), the missing parents of `dn` between it and baseDN are looked for: with `createContainers`
   * they are created from the top down (only `OU=` parents: organizational units) and the write is tried
   * again; without it, or when a missing parent is not an OU, the change fails naming the topmost missing
   * parent. Returns the DNs created. The parents are only looked for after a refusal, so a write whose
   * parents exist costs nothing more.
   */
  private async withParents(session: DirectorySession, dn: string, write: () => Promise<void>): Promise<string[]> {
    try {
      await write();
      return [];
    } catch (err) {
      if (!(err instanceof ConnectorError && err.code === 'not_found')) throw err;
      const created = await this.ensureParents(session, dn);
      if (!created.length) throw err;
      await write();
      return created;
    }
  }

  /** The missing parents of `dn` created (see {@link withParents}); [] when none is missing. */
  private async ensureParents(session: DirectorySession, dn: string): Promise<string[]> {
    const missing: string[] = [];
    for (let p = parentDn(dn); p && isUnder(p, this.config.baseDN) && normalizeDn(p) !== normalizeDn(this.config.baseDN); p = parentDn(p)) {
      const [found] = await session.search({ base: p, scope: 'base', filter: '(objectClass=*)', attributes: ['1.1'] }).catch((err: unknown) => {
        if (err instanceof ConnectorError && err.code === 'configuration_invalid' && /no such object/i.test(err.message)) return [];
        throw err;
      });
      if (found) break;
      missing.unshift(p);
    }
    if (!missing.length) return [];
    if (!this.config.createContainers) {
      throw new ConnectorError(
        'not_found',
        `Placing '${dn}': its parent '${missing[0]}' does not exist (set createContainers to create missing OU= containers).`,
      );
    }
    const created: string[] = [];
    for (const p of missing) {
      const m = /^\s*ou\s*=\s*((?:\\.|[^,])+?)\s*,/i.exec(p);
      if (!m) throw new ConnectorError('not_found', `Placing '${dn}': its parent '${p}' does not exist, and createContainers creates only OU= containers.`);
      try {
        await session.add(p, { objectClass: ['organizationalUnit'], ou: [unescapeDnValue(m[1])] });
        created.push(p);
      } catch (err) {
        if (!(err instanceof ConnectorError && err.code === 'already_exists')) throw err;
      }
    }
    return created;
  }

  async close(): Promise<void> {
    const s = this.session;
    this.session = undefined;
    await s?.close();
  }
}

/** A single string value of an attribute named case-insensitively (undefined when absent, empty or multi-valued). */
function stringAttribute(attributes: Record<string, AttributeValue>, name: string): string | undefined {
  const key = Object.keys(attributes).find((k) => k.toLowerCase() === name);
  const v = key === undefined ? undefined : attributes[key];
  const x = Array.isArray(v) ? (v.length === 1 ? v[0] : undefined) : v;
  return typeof x === 'string' && x.trim() ? x : undefined;
}

/** The run's note for the containers created before placing `dn`. */
function containerNotes(created: string[], dn: string): { notes?: string[] } {
  return created.length ? { notes: created.map((c) => `Created the container ${c} for ${dn} (createContainers).`) } : {};
}

/** An RDN value as written in a DN (RFC 4514 escapes: a backslash before a character, or before two hex digits) to the attribute value. */
export function unescapeDnValue(v: string): string {
  const parts: Buffer[] = [];
  for (let i = 0; i < v.length; i++) {
    if (v[i] === '\\' && /^[0-9a-fA-F]{2}$/.test(v.slice(i + 1, i + 3))) {
      parts.push(Buffer.from([parseInt(v.slice(i + 1, i + 3), 16)]));
      i += 2;
    } else if (v[i] === '\\' && i + 1 < v.length) {
      parts.push(Buffer.from(v[++i], 'utf8'));
    } else {
      parts.push(Buffer.from(v[i], 'utf8'));
    }
  }
  return Buffer.concat(parts).toString('utf8');
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

/** A failure while looking an object up for an export: the object's error (the run goes on), never a success. */
function objectLevel(err: unknown, what: string, anchor: string): ConnectorError {
  if (err instanceof ConnectorError && (err.code === 'connection_failed' || err.code === 'timeout' || err.code === 'authentication_failed')) return err;
  const message = err instanceof Error ? err.message : String(err);
  return new ConnectorError('object_error', `${what}: ${message}`, { anchor });
}

function ldapString(v: ScalarValue): string {
  if (typeof v === 'boolean') return v ? 'TRUE' : 'FALSE';
  return String(v);
}

function sameSet(a: string[], b: string[]): boolean {
  if (a.length !== b.length) return false;
  const s = new Set(a);
  return b.every((x) => s.has(x));
}
