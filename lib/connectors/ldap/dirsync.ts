import { BerWriter, Control } from 'ldapts';
import { ConnectorError, type DeltaImportOptions, type DeltaPage } from '../sdk';
import { emit, type DeltaContext, type DeltaStrategy, type PendingChange } from './delta';
import { hasClasses, referencingEntries, tombstoneDn } from './deltaUsn';
import { anchorOf, classFilter, inScope, objectTypeOf } from './objects';
import type { LdapEntry } from './session';
import { dirSyncMissesDeletes } from './adRights';
import { isUnder } from './values';

/**
 * The `dirsync` delta strategy (Active Directory): the DirSync control (LDAP_SERVER_DIRSYNC_OID
 * 1.2.840.113556.1.4.841), as MIM, midPoint and Syncope read AD. The server keeps the state in an opaque
 * cookie; each search returns the objects changed since the cookie (with the attributes that changed),
 * deleted objects included (isDeleted, with their tombstone DN), and a new cookie. It needs the "Replicating
 * Directory Changes" right on the domain, not administrator rights: the least-privilege way to see deletes.
 *
 * A changed object is read again in full by its anchor (as a full import reads it); one no longer in the
 * containers is a delete. As with `usn`, AD rewrites member, manager... when an entry is renamed or moved without
 * reporting the entries naming it: the entries naming a moved one (its `name` among the changed attributes)
 * are read again by its new DN.
 */
export const DIRSYNC_OID = '1.2.840.113556.1.4.841';

/** The DirSync request control; after the search it holds the server's answer (ldapts parses a response control into the request control of the same type). */
export class DirSyncControl extends Control {
  more = false;
  constructor(
    public cookie: Buffer,
    private readonly maxBytes = 1_048_576,
  ) {
    super(DIRSYNC_OID, { critical: true });
  }
  protected override writeControl(writer: BerWriter): void {
    const w = new BerWriter();
    w.startSequence();
    w.writeInt(0); // flags: none (object security would hide deletes)
    w.writeInt(this.maxBytes);
    w.writeBuffer(this.cookie, 0x04);
    w.endSequence();
    writer.writeBuffer(w.buffer, 0x04);
  }
  protected override parseControl(reader: Parameters<Control['parse']>[0]): void {
    if (reader.readSequence() === null) return;
    this.more = (reader.readInt() ?? 0) !== 0;
    reader.readInt();
    this.cookie = reader.readString(0x04, true) ?? Buffer.alloc(0);
  }
}

interface DirSyncWatermark {
  s: 'dirsync';
  /** The server's cookie, base64. */
  c: string;
  /** The naming context read. */
  nc: string;
}

const MAX_ROUNDS = 100_000;

/**
 * An attribute as DirSync is asked for it: without a range option. DirSync only tells which objects changed (each
 * is read again in full, ranges and all); Samba answers a ranged attribute whole under DirSync anyway.
 */
const plainName = (a: string) => a.replace(/;range=.*$/i, '');

export class DirSyncStrategy implements DeltaStrategy {
  readonly name = 'dirsync' as const;
  constructor(private readonly ctx: DeltaContext) {}

  private async namingContext(): Promise<string> {
    const [root] = await this.ctx.session.search({
      base: '',
      scope: 'base',
      filter: '(objectClass=*)',
      attributes: ['namingContexts', 'defaultNamingContext'],
    });
    const values = (name: string) => {
      const key = Object.keys(root ?? {}).find((k) => k.toLowerCase() === name.toLowerCase());
      const v = key ? root![key] : undefined;
      return (Array.isArray(v) ? v : v === undefined ? [] : [v]).map(String);
    };
    const nc = [...values('namingContexts'), ...values('defaultNamingContext')]
      .filter((x) => x && isUnder(this.ctx.baseDN, x))
      .sort((a, b) => b.length - a.length)[0];
    if (!nc)
      throw new ConnectorError('configuration_invalid', 'deltaStrategy dirsync: no naming context of the root DSE holds baseDN (is this Active Directory?).');
    return nc;
  }

  /** Every round of DirSync from `cookie` until the server has no more; `each` sees the entries of a round. */
  private async rounds(nc: string, cookie: Buffer, filter: string, attributes: string[], each: (entries: LdapEntry[]) => void): Promise<Buffer> {
    const control = new DirSyncControl(cookie);
    for (let i = 0; i < MAX_ROUNDS; i++) {
      const entries = await this.ctx.session.search({ base: nc, scope: 'sub', filter, attributes, controls: [control] }).catch((err: unknown) => {
        if (err instanceof ConnectorError && /insufficient|access|rights|50\b/i.test(err.message)) {
          throw new ConnectorError(
            'configuration_invalid',
            `deltaStrategy dirsync: the bind account lacks the "Replicating Directory Changes" right on ${nc} (${err.message}).`,
          );
        }
        throw err;
      });
      each(entries);
      if (!control.more) break;
    }
    return control.cookie;
  }

  /** A cookie for "now": DirSync to the end with a filter that matches nothing. */
  async capture(): Promise<string> {
    const nc = await this.namingContext();
    const cookie = await this.rounds(nc, Buffer.alloc(0), '(&(objectClass=top)(!(objectClass=top)))', ['objectGUID'], () => undefined);
    return JSON.stringify({ s: 'dirsync', c: cookie.toString('base64'), nc } satisfies DirSyncWatermark);
  }

  async *delta(watermark: string, options: DeltaImportOptions): AsyncGenerator<DeltaPage> {
    let w: DirSyncWatermark;
    try {
      w = JSON.parse(watermark) as DirSyncWatermark;
    } catch {
      yield { changes: [], errors: [], fullImportRequired: { reason: 'The stored watermark is not one this connector wrote.' } };
      return;
    }
    if (!w || w.s !== 'dirsync' || typeof w.c !== 'string') {
      yield {
        changes: [],
        errors: [],
        fullImportRequired: { reason: `The stored watermark is for the '${w?.s ?? 'unknown'}' strategy; the directory is now read with 'dirsync'.` },
      };
      return;
    }
    const nc = await this.namingContext();
    // Samba returns deletes through DirSync to administrators only: a delta as anyone else would miss them silently.
    const missesDeletes = this.ctx.bindDN ? await dirSyncMissesDeletes(this.ctx.session, this.ctx.bindDN, nc) : undefined;
    if (missesDeletes) throw new ConnectorError('configuration_invalid', missesDeletes);
    if (w.nc && w.nc.toLowerCase() !== nc.toLowerCase()) {
      yield { changes: [], errors: [], fullImportRequired: { reason: `The watermark was taken on another naming context (${w.nc}).` } };
      return;
    }
    const anchorAttribute = this.ctx.scope.anchorAttribute;
    const pending = new Map<string, PendingChange>();
    const moved: string[] = [];
    let cookie: Buffer;
    try {
      cookie = await this.rounds(
        nc,
        Buffer.from(w.c, 'base64'),
        `(|${classFilter(this.ctx.scope)}(isDeleted=TRUE))`,
        [
          ...new Set([
            ...this.ctx.readAttributes.map(plainName),
            'objectGUID',
            anchorAttribute,
            'objectClass',
            'isDeleted',
            'name',
            'lastKnownParent',
            'msDS-LastKnownRDN',
          ]),
        ],
        (entries) => {
          for (const e of entries) {
            const a = anchorOf(e, anchorAttribute);
            if (!a) continue;
            const deleted = Object.keys(e).some(
              (k) => k.toLowerCase() === 'isdeleted' && String(Array.isArray(e[k]) ? e[k][0] : e[k]).toUpperCase() === 'TRUE',
            );
            if (hasClasses(e) && objectTypeOf(e, this.ctx.scope) === undefined) continue;
            if (deleted) {
              const dn = tombstoneDn(e);
              if (dn && !inScope(dn, this.ctx.scope)) continue;
              pending.set(a, { added: false, deleted: true, ...(dn ? { dn } : {}), objectType: objectTypeOf(e, this.ctx.scope), referencesDropped: true });
              continue;
            }
            // Read again in full below (DirSync returns the changed attributes only); gone from the containers: a delete.
            pending.set(a, { added: false, deleted: false, objectType: objectTypeOf(e, this.ctx.scope) });
            // Renamed or moved (in the containers, or out of them: AD shows its new DN in the entries naming it).
            if (Object.keys(e).some((k) => k.toLowerCase() === 'name')) moved.push(e.dn);
          }
        },
      );
    } catch (err) {
      // The server no longer accepts the cookie (another DC, a restored one, a cookie too old).
      if (err instanceof ConnectorError && /cookie|unwilling|protocol/i.test(err.message)) {
        yield { changes: [], errors: [], fullImportRequired: { reason: `The domain controller does not accept the stored DirSync cookie (${err.message}).` } };
        return;
      }
      throw err;
    }
    for (const e of await referencingEntries(this.ctx, moved)) {
      const a = anchorOf(e, anchorAttribute);
      if (a && !pending.has(a)) pending.set(a, { added: false, deleted: false, entry: e });
    }
    yield* emit(this.ctx, pending, options, JSON.stringify({ s: 'dirsync', c: cookie.toString('base64'), nc } satisfies DirSyncWatermark));
  }
}
