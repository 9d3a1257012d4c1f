import { BerWriter, FilterParser, type Filter } from 'ldapts';
import { anchorFilter, LdapConnector } from '../../../../lib/connectors/ldap/ldapConnector';
import { toConnectorError, type DirectorySession, type LdapEntry, type SearchRequest } from '../../../../lib/connectors/ldap/session';
import { binaryValueBytes, escapeFilterBytes, guidToString, sidToBytes, sidToString } from '../../../../lib/connectors/ldap/values';

/**
 * Binary anchors (objectGUID, ms-DS-ConsistencyGuid) are matched by their bytes. ldapts parses a string filter's
 * `\xx` escapes as text and sends the value UTF-8 encoded, so every byte of 0x80 and above would reach the server
 * as two bytes: these GUIDs have only such bytes. What reaches the server is computed as ldapts computes it (the
 * filter object when the request has one, else the parsed string) and BER-encoded.
 */
const HIGH = Buffer.from([0x80, 0x91, 0xa2, 0xb3, 0xc4, 0xd5, 0xe6, 0xf7, 0x88, 0x99, 0xaa, 0xbb, 0xcc, 0xdd, 0xee, 0xff]);
const HIGH2 = Buffer.from([0xff, 0xfe, 0xfd, 0xfc, 0xfb, 0xfa, 0xf9, 0xf8, 0xf7, 0xf6, 0xf5, 0xf4, 0xf3, 0xf2, 0xf1, 0xf0]);
const GUID = guidToString(HIGH);
const GUID2 = guidToString(HIGH2);
const BASE = 'DC=corp,DC=test';

function wire(req: Pick<SearchRequest, 'filter' | 'filterObject'>): Buffer {
  const f: Filter = req.filterObject ?? FilterParser.parseString(req.filter);
  const w = new BerWriter();
  f.write(w);
  return w.buffer;
}

/** A directory double: answers searches from a function, records every request and write. */
class Session implements DirectorySession {
  readonly requests: SearchRequest[] = [];
  readonly deleted: string[] = [];
  constructor(private readonly answer: (r: SearchRequest) => LdapEntry[]) {}
  async search(req: SearchRequest): Promise<LdapEntry[]> {
    this.requests.push(req);
    return this.answer(req);
  }
  async *searchPages(req: SearchRequest): AsyncGenerator<LdapEntry[]> {
    yield await this.search(req);
  }
  async add(): Promise<undefined> {
    return undefined;
  }
  async modify(): Promise<void> {}
  async del(dn: string): Promise<void> {
    this.deleted.push(dn);
  }
  async modifyDN(): Promise<void> {}
  async close(): Promise<void> {}
}

function connector(session: DirectorySession, over: Record<string, unknown> = {}): LdapConnector {
  const c = new LdapConnector('active_directory', {
    host: 'dc.corp.test',
    baseDN: BASE,
    bindDN: `CN=Sync,${BASE}`,
    bindPassword: 'x',
    containers: { include: [`OU=Staff,${BASE}`] },
    ...over,
  } as never);
  (c as unknown as { session: DirectorySession }).session = session;
  return c;
}

/** A search that names an anchor's bytes: the filter's bytes on the wire contain them. */
const asks = (r: SearchRequest, bytes: Buffer) => wire(r).includes(bytes);
const user = (dn: string, guid: Buffer): LdapEntry => ({ dn, objectClass: ['top', 'person', 'user'], objectGUID: guid, cn: 'Ann' });
const noSuchObject = () => toConnectorError({ code: 32, message: '0000208D: NameErr: DSID-03100213, problem 2001 (NO_OBJECT)' }, 'Searching', []);

describe('binary anchors are sent as bytes', () => {
  test('the escaped string form of a high-byte GUID does not survive ldapts (why filter objects are needed)', () => {
    expect(wire({ filter: `(objectGUID=${escapeFilterBytes(HIGH)})` }).includes(HIGH)).toBe(false);
  });

  test('objectGUID, ms-DS-ConsistencyGuid and objectSid anchors: the filter carries the exact bytes', () => {
    const one = anchorFilter('objectGUID', [GUID])!;
    expect(wire(one).includes(HIGH)).toBe(true);
    const two = anchorFilter('objectGUID', [GUID, GUID2])!;
    expect(wire(two).includes(HIGH) && wire(two).includes(HIGH2)).toBe(true);
    expect(wire(anchorFilter('mS-DS-ConsistencyGuid', [GUID])!).includes(HIGH)).toBe(true);
    // A 20-byte consistency value is shown base64, and matched by its bytes too.
    const raw = Buffer.concat([HIGH, Buffer.from([0x90, 0xa0, 0xb0, 0xc0])]);
    expect(wire(anchorFilter('ms-DS-ConsistencyGuid', [raw.toString('base64')])!).includes(raw)).toBe(true);
    const sid = 'S-1-5-21-4294967295-2147483648-2863311530-1105';
    expect(sidToString(sidToBytes(sid))).toBe(sid);
    expect(wire(anchorFilter('objectSid', [sid])!).includes(sidToBytes(sid))).toBe(true);
    // Text anchors stay string filters (escaped).
    expect(anchorFilter('entryUUID', ['a(b)'])).toEqual({ filter: '(entryUUID=a\\28b\\29)' });
    // A value the attribute cannot hold matches nothing: no search at all.
    expect(anchorFilter('objectGUID', ['not-a-guid'])).toBeUndefined();
    expect(() => binaryValueBytes('objectGUID', '***')).toThrow();
  });

  test('an update finds the entry by its high-byte objectGUID (it used to answer "No directory object has objectGUID")', async () => {
    const s = new Session((r) => (asks(r, HIGH) && r.base === `OU=Staff,${BASE}` ? [user(`CN=Ann,OU=Staff,${BASE}`, HIGH)] : []));
    const result = await connector(s).export({ kind: 'update', objectType: 'User', anchor: GUID, attributes: { title: 'Engineer' } });
    expect(result).toEqual({ status: 'success', anchor: GUID, dn: `CN=Ann,OU=Staff,${BASE}` });
  });

  test('a delete deletes the entry found by its high-byte objectGUID', async () => {
    const s = new Session((r) => (asks(r, HIGH) && r.base === `OU=Staff,${BASE}` ? [user(`CN=Ann,OU=Staff,${BASE}`, HIGH)] : []));
    const result = await connector(s).export({ kind: 'delete', objectType: 'User', anchor: GUID, attributes: {} });
    expect(result).toMatchObject({ status: 'success', dn: `CN=Ann,OU=Staff,${BASE}` });
    expect(s.deleted).toEqual([`CN=Ann,OU=Staff,${BASE}`]);
  });
});

describe('a delete is "already gone" only when the directory confirms it', () => {
  test('the <GUID=...> base search answers noSuchObject: success, and nothing deleted', async () => {
    const s = new Session((r) => {
      if (r.base.startsWith('<GUID=')) throw noSuchObject();
      return [];
    });
    const result = await connector(s).export({ kind: 'delete', objectType: 'User', anchor: GUID, attributes: {} });
    expect(result).toMatchObject({ status: 'success', anchor: GUID });
    const probe = s.requests.find((r) => r.base === `<GUID=${GUID}>`)!;
    expect(probe.scope).toBe('base');
    expect(probe.controls?.map((c) => c.type)).toEqual(['1.2.840.113556.1.4.417']);
  });

  test('the tombstone is found with Show Deleted: success', async () => {
    const s = new Session((r) => (r.base.startsWith('<GUID=') ? [{ dn: `CN=Ann\\0ADEL:${GUID},CN=Deleted Objects,${BASE}`, isDeleted: 'TRUE' }] : []));
    expect(await connector(s).export({ kind: 'delete', objectType: 'User', anchor: GUID, attributes: {} })).toMatchObject({ status: 'success' });
  });

  test('the object exists outside the connector containers: an error naming where, nothing deleted', async () => {
    const s = new Session((r) => (r.base.startsWith('<GUID=') ? [{ dn: `CN=Ann,OU=Leavers,${BASE}` }] : []));
    const result = await connector(s).export({ kind: 'delete', objectType: 'User', anchor: GUID, attributes: {} });
    expect(result).toMatchObject({ status: 'error', anchor: GUID, error: { code: 'object_error' } });
    expect((result as { error: { message: string } }).error.message).toContain(`CN=Ann,OU=Leavers,${BASE}`);
    expect(s.deleted).toEqual([]);
  });

  test('any other failure to find the object is a per-object error, not a success', async () => {
    const s = new Session((r) => {
      if (r.base.startsWith('<GUID=')) throw toConnectorError({ code: 1, message: 'operationsError' }, 'Searching', []);
      return [];
    });
    const result = await connector(s).export({ kind: 'delete', objectType: 'User', anchor: GUID, attributes: {} });
    expect(result).toMatchObject({ status: 'error', anchor: GUID });
    const lookupFails = new Session(() => {
      throw toConnectorError({ code: 50, message: 'insufficientAccessRights' }, 'Searching', []);
    });
    expect(await connector(lookupFails).export({ kind: 'delete', objectType: 'User', anchor: GUID, attributes: {} })).toMatchObject({
      status: 'error',
      anchor: GUID,
    });
  });

  test('a ms-DS-ConsistencyGuid anchor: the whole base DN is searched by its bytes with Show Deleted', async () => {
    const live = new Session((r) => (r.base === BASE && asks(r, HIGH) ? [{ dn: `CN=Ann,OU=Elsewhere,${BASE}` }] : []));
    const c = connector(live, { anchorAttribute: 'mS-DS-ConsistencyGuid' });
    expect(await c.export({ kind: 'delete', objectType: 'User', anchor: GUID, attributes: {} })).toMatchObject({ status: 'error' });
    const gone = new Session(() => []);
    expect(
      await connector(gone, { anchorAttribute: 'mS-DS-ConsistencyGuid' }).export({ kind: 'delete', objectType: 'User', anchor: GUID, attributes: {} }),
    ).toMatchObject({ status: 'success' });
    const probe = gone.requests.find((r) => r.base === BASE)!;
    expect(wire(probe).includes(HIGH)).toBe(true);
  });
});
