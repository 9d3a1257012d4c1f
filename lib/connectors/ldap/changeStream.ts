import { BerWriter, Control, PersistentSearchControl } from 'ldapts';
import { all, first, namingContextOf, rootDse, SHOW_DELETED_OID } from './delta';
import type { DirectorySession } from './session';
import type { StreamSearch } from './streamReader';

/**
 * The directory connector's change stream (docs/continuous.md): the push notification the server offers, read by
 * streamReader.ts. The root DSE's supportedControl says which:
 *
 * - persistent search (2.16.840.1.113730.3.4.3: 389 Directory Server, OpenDJ): every change type, changes only,
 *   with entry change notifications;
 * - syncrepl refreshAndPersist (RFC 4533, 1.3.6.1.4.1.4203.1.9.1.1: OpenLDAP with the syncprov overlay), from a
 *   cookie naming the database's contextCSN, so the refresh phase sends only what changed since (normally
 *   nothing) instead of the whole content;
 * - change notification (LDAP_SERVER_NOTIFICATION_OID 1.2.840.113556.1.4.528: Active Directory, Samba AD) on
 *   the naming context (the only subtree it accepts), with Show Deleted so deletes are notified too.
 *
 * The stream searches the connector's baseDN (or its naming context) for every entry: an entry outside the
 * connector's containers wakes the engine for nothing, which costs one look.
 */

const PERSISTENT_SEARCH_OID = PersistentSearchControl.type;
const SYNC_REQUEST_OID = '1.3.6.1.4.1.4203.1.9.1.1';
const NOTIFICATION_OID = '1.2.840.113556.1.4.528';

/** The Sync Request control (RFC 4533): mode refreshAndPersist (3), with a cookie. */
class SyncRequestControl extends Control {
  constructor(private readonly cookie: string | null) {
    super(SYNC_REQUEST_OID, { critical: true });
  }
  protected override writeControl(writer: BerWriter): void {
    const value = new BerWriter();
    value.startSequence();
    value.writeEnumeration(3);
    if (this.cookie) value.writeString(this.cookie);
    value.endSequence();
    writer.writeBuffer(value.buffer, 0x04);
  }
}

/**
 * The search to stream on this server, or null when it offers no stream. `session` is a bound session of the
 * connector (for the root DSE and, on OpenLDAP, the contextCSN).
 */
export async function streamSearchFor(session: DirectorySession, baseDN: string): Promise<StreamSearch | null> {
  const root = await rootDse(session, ['supportedControl', 'namingContexts', 'defaultNamingContext']);
  const controls = new Set(all(root, 'supportedControl'));
  const contexts = [...all(root, 'namingContexts'), ...all(root, 'defaultNamingContext')];
  if (controls.has(PERSISTENT_SEARCH_OID)) {
    return {
      kind: 'persistent search',
      base: baseDN,
      scope: 'sub',
      filter: '(objectClass=*)',
      controls: [new PersistentSearchControl({ critical: true, value: { changeTypes: 15, changesOnly: true, returnECs: true } })],
    };
  }
  if (controls.has(SYNC_REQUEST_OID)) {
    const nc = namingContextOf(baseDN, contexts);
    const [ncEntry] = nc ? await session.search({ base: nc, scope: 'base', filter: '(objectClass=*)', attributes: ['contextCSN'] }) : [];
    const csns = ncEntry ? all(ncEntry, 'contextCSN') : [];
    return {
      kind: 'syncrepl',
      base: baseDN,
      scope: 'sub',
      filter: '(objectClass=*)',
      controls: [new SyncRequestControl(csns.length ? `rid=000,csn=${csns.join(';')}` : null)],
      refreshFirst: true,
    };
  }
  if (controls.has(NOTIFICATION_OID)) {
    const nc = namingContextOf(baseDN, contexts) ?? first(root, 'defaultNamingContext') ?? baseDN;
    return {
      kind: 'change notification',
      base: nc,
      scope: 'sub',
      filter: '(objectClass=*)',
      controls: [
        new Control(NOTIFICATION_OID, { critical: true }),
        ...(controls.has(SHOW_DELETED_OID) ? [new Control(SHOW_DELETED_OID, { critical: false })] : []),
      ],
    };
  }
  return null;
}
