import { firstRdn, unescapeDnValue } from '../../core/ldapName';
import { type CompiledExpression } from '../../expression';
import {
  ConnectorError,
  throwIfAborted,
  valuesOf,
  withApplied,
  type AttributeValue,
  type ExistingObject,
  type ExportChange,
  type ExportResult,
  type ScalarValue,
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
import { anchorOf, completeRanges, isObjectError, toConnectorObject, type Scope } from './objects';
import { type DirectoryConfig } from './schema';
import { Attribute, Change, type DirectorySession, type LdapEntry } from './session';
import { isUnder, normalizeDn, parentDn } from './values';

/**
 * The directory connector's export side (see ldapConnector.ts for the reading side): add, update (with a move
 * by modifyDN), delete, the DN of an add (`exportDnTemplate`), Active Directory accounts (unicodePwd,
 * userAccountControl, pwdLastSet, adAccount.ts) and the creation of missing OU= parents (createContainers).
 * The connector hands it its configuration, scope, lookups and a bound session per change.
 */

/** What the export needs of its connector (read live: the anchor attribute may be decided at the first connection). */
export interface ExportHost {
  readonly type: 'ldap' | 'active_directory';
  readonly config: DirectoryConfig;
  readonly scope: Scope;
  lookup(session: DirectorySession, anchors: string[]): Promise<Map<string, LdapEntry>>;
  locateOutside(session: DirectorySession, anchor: string): Promise<{ state: 'gone'; how: string } | { state: 'outside'; dn: string }>;
}

/** Adds outstanding at once on the connection ({@link LdapExporter.exportAll}). */
export const ADDS_IN_FLIGHT = 8;

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

export class LdapExporter {
  constructor(
    private readonly host: ExportHost,
    private readonly dnTemplate: CompiledExpression | undefined,
  ) {}

  private get type(): ExportHost['type'] {
    return this.host.type;
  }

  private get config(): DirectoryConfig {
    return this.host.config;
  }

  private get scope(): Scope {
    return this.host.scope;
  }

  /**
   * Apply changes in order, as {@link export} one at a time, except that a run of consecutive adds is sent with
   * up to {@link ADDS_IN_FLIGHT} outstanding on the one connection (LDAP answers each operation by its message
   * id): a page's adds do not depend on each other (the engine adds a referenced object in an earlier page), and
   * a round trip per add one after the other is most of an add's time. Updates, moves and deletes stay one at a
   * time, and an add never starts before the change ahead of it in a run of another kind has ended.
   *
   * A run-level failure (a lost connection) or a cancel stops any new change from starting; the changes in
   * flight are waited for, and the failure is thrown with `applied` set to the results of the changes up to the
   * first that did not end (as {@link export} one at a time would). An add in flight behind it that the directory
   * did make is not among them: the export sends it again and finds its own entry there (`already_exists` with
   * `existing`), which the engine takes over.
   */
  async exportAll(session: DirectorySession, changes: ExportChange[], signal?: AbortSignal): Promise<ExportResult[]> {
    const out: ExportResult[] = [];
    try {
      for (let i = 0; i < changes.length;) {
        throwIfAborted(signal);
        if (changes[i].kind !== 'add') {
          out.push(await this.export(session, changes[i++]));
          continue;
        }
        let end = i;
        while (end < changes.length && changes[end].kind === 'add') end++;
        const done = await this.addsInFlight(session, changes.slice(i, end), signal);
        out.push(...done.results);
        if (done.failure !== undefined) throw done.failure;
        i = end;
      }
      return out;
    } catch (err) {
      throw withApplied(err, out);
    }
  }

  /** Adds with up to ADDS_IN_FLIGHT outstanding: the results up to the first failure, and that failure. */
  private async addsInFlight(session: DirectorySession, adds: ExportChange[], signal?: AbortSignal): Promise<{ results: ExportResult[]; failure?: unknown }> {
    const results: (ExportResult | undefined)[] = new Array(adds.length);
    let next = 0;
    let failedAt = adds.length;
    let failure: unknown;
    const worker = async () => {
      while (next < adds.length && next < failedAt) {
        const i = next++;
        try {
          throwIfAborted(signal);
          results[i] = await this.export(session, adds[i]);
        } catch (err) {
          if (i < failedAt) {
            failedAt = i;
            failure = err;
          }
        }
      }
    };
    await Promise.all(Array.from({ length: Math.min(ADDS_IN_FLIGHT, adds.length) }, worker));
    return { results: results.slice(0, failedAt) as ExportResult[], ...(failedAt < adds.length ? { failure } : {}) };
  }

  /**
   * Apply one change. Per-object failures (entryAlreadyExists, noSuchObject, constraint violations) resolve to
   * an error result; a lost connection throws `connection_failed` so the run fails and nothing after it is
   * reported as done. A batch goes through `exportBatch` (consecutive adds several at a time), which hands the
   * results applied before a lost connection to the engine (`applied`).
   */
  async export(session: DirectorySession, change: ExportChange): Promise<ExportResult> {
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
        return {
          status: 'error',
          ...(change.anchor ? { anchor: change.anchor } : {}),
          error: err.toObjectError(change.objectType),
          ...(err.existing ? { existing: err.existing } : {}),
        };
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
    const anchorAttribute = this.scope.anchorAttribute;
    let created: string[];
    // The new entry's anchor, read by the add itself where the directory offers the post-read control.
    let entry: LdapEntry | undefined;
    try {
      created = await this.withParents(session, dn, async () => {
        entry = await session.add(dn, write, [anchorAttribute]);
      });
    } catch (err) {
      if (err instanceof ConnectorError && err.code === 'already_exists') {
        const existing = await this.existingAt(session, dn, change);
        if (existing) err.existing = existing;
      }
      throw err;
    }
    let anchor = entry && anchorOf(entry, anchorAttribute);
    if (!anchor) {
      [entry] = await session.search({ base: dn, scope: 'base', filter: '(objectClass=*)', attributes: [anchorAttribute] });
      anchor = entry && anchorOf(entry, anchorAttribute);
    }
    if (!anchor) throw new ConnectorError('object_error', `Added ${dn} but could not read its ${anchorAttribute}.`);
    return { status: 'success', anchor, dn, ...containerNotes(created, dn) };
  }

  /**
   * The entry at the DN an add was refused for (entryAlreadyExists), for the engine to decide whether to take it
   * over: its anchor (the connector's anchor attribute), its DN and its values of the attributes the add named
   * (never the password, which cannot be read), shaped as an import reads them. Undefined when the entry is not
   * one of the connector's objects (outside its containers, an unmapped class, no anchor: an update by anchor
   * could not reach it) or cannot be read for this object only; a lost connection throws.
   */
  private async existingAt(session: DirectorySession, dn: string, change: ExportChange): Promise<ExistingObject | undefined> {
    const skip = new Set([...SKIP_ON_WRITE, PASSWORD_ATTRIBUTE.toLowerCase(), DISABLED_ATTRIBUTE.toLowerCase()]);
    const named = Object.keys(change.attributes).filter((k) => !skip.has(k.toLowerCase()));
    try {
      const [entry] = await session.search({
        base: dn,
        scope: 'base',
        filter: '(objectClass=*)',
        attributes: [...new Set([this.scope.anchorAttribute, 'objectClass', ...named])],
      });
      if (!entry) return undefined;
      const o = await toConnectorObject(session, entry, this.scope);
      if (!o || isObjectError(o)) return undefined;
      const wanted = new Set(named.map((k) => k.toLowerCase()));
      const attributes: Record<string, AttributeValue> = {};
      for (const [k, v] of Object.entries(o.attributes)) if (wanted.has(k.toLowerCase())) attributes[k] = v;
      return { anchor: o.anchor, dn: entry.dn, attributes };
    } catch (err) {
      if (err instanceof ConnectorError && (err.code === 'connection_failed' || err.code === 'timeout' || err.code === 'authentication_failed')) throw err;
      return undefined;
    }
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
    return (await this.host.lookup(session, [anchor])).get(anchor);
  }

  /**
   * Delete the object. "Already gone" (a replayed run) is a success only when the directory confirms it
   * ({@link ExportHost.locateOutside}); an object found outside the connector's containers, or one that cannot be found for
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
        const where = await this.host.locateOutside(session, anchor).catch((err: unknown) => {
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
      const where = await this.host.locateOutside(session, change.anchor).catch(() => undefined);
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
      const rdn = firstRdn(target);
      if (rdn?.length === 1 && !rdn[0].hex) {
        for (const k of Object.keys(entry)) if (k.toLowerCase() === rdn[0].type.toLowerCase()) delete entry[k];
        entry[rdn[0].type] = rdn[0].value;
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
   * parent. Returns the DNs created (none when the parents are there: made meanwhile by another add in flight,
   * the write is tried again all the same). The parents are only looked for after a refusal, so a write whose
   * parents exist costs nothing more.
   */
  private async withParents(session: DirectorySession, dn: string, write: () => Promise<void>): Promise<string[]> {
    try {
      await write();
      return [];
    } catch (err) {
      if (!(err instanceof ConnectorError && err.code === 'not_found')) throw err;
      const created = await this.ensureParents(session, dn);
      // Nothing created: every parent is there, perhaps made meanwhile by an add in flight beside this one
      // (exportAll); the write is tried once more, and a refusal for another reason stays that refusal.
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
      const rdn = firstRdn(p);
      const ou = rdn?.length === 1 && rdn[0].type.toLowerCase() === 'ou' && !rdn[0].hex ? rdn[0].value : undefined;
      if (ou === undefined)
        throw new ConnectorError('not_found', `Placing '${dn}': its parent '${p}' does not exist, and createContainers creates only OU= containers.`);
      try {
        await session.add(p, { objectClass: ['organizationalUnit'], ou: [ou] });
        created.push(p);
      } catch (err) {
        if (!(err instanceof ConnectorError && err.code === 'already_exists')) throw err;
      }
    }
    return created;
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

/** An RDN value as written in a DN to the attribute value (lib/core/ldapName.ts). */
export { unescapeDnValue };

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
