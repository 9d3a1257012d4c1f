import { createHash } from 'node:crypto';
import {
  ConnectorError,
  canonicalJson,
  canonicalObject,
  contentHash,
  exportChanges,
  hasDeltaImport,
  hasExport,
  hasFullImport,
  redactSecrets,
  type Connector,
  type ConnectorObject,
  type ExportChange,
} from '../../../lib/connectors/sdk';

describe('connector SDK helpers', () => {
  const obj = {
    objectType: 'User',
    dn: 'uid=a,ou=People,dc=x',
    attributes: { sn: 'Ørsted', givenName: 'Ängel 😀', proxy: ['b', 'a', null], empty: [], gone: null, n: 1, t: true },
    references: { manager: ['uid=m,dc=x'] },
  };

  test('contentHash is the sha256 of the canonical JSON', () => {
    const expected = createHash('sha256')
      .update(canonicalJson(canonicalObject(obj)))
      .digest('base64url');
    expect(contentHash(obj)).toBe(expected);
  });

  test('contentHash is the sha256 of the canonical JSON when the references are the attribute values themselves', () => {
    const member = ['uid=b,dc=x', 'uid=a,dc=x', 'UID=c,dc=x', 'uid=a,dc=x'];
    const objects: Pick<ConnectorObject, 'objectType' | 'attributes' | 'references'>[] = [
      { objectType: 'Group', attributes: { member, n: [2, '10', 1] }, references: { member } },
      { objectType: 'Group', attributes: { member: ['uid=b,dc=x', null, 'uid=a,dc=x'] }, references: { member: ['uid=b,dc=x', 'uid=a,dc=x'] } },
      { objectType: 'Group', attributes: { member: ['x'] }, references: { member: [], other: member } },
    ];
    for (const o of objects) {
      expect(contentHash(o)).toBe(
        createHash('sha256')
          .update(canonicalJson(canonicalObject(o)))
          .digest('base64url'),
      );
    }
  });

  test('attribute order, multi-value order, null and absent attributes do not change the hash', () => {
    const same = {
      objectType: 'User',
      dn: 'uid=a,ou=People,dc=x',
      attributes: { t: true, n: 1, proxy: ['a', 'b'], givenName: 'Ängel 😀', sn: 'Ørsted' },
      references: { manager: ['uid=m,dc=x'], other: [] },
    };
    expect(contentHash(same)).toBe(contentHash(obj));
  });

  test('a changed value, type, DN, container or reference changes the hash', () => {
    const base = contentHash(obj);
    expect(contentHash({ ...obj, attributes: { ...obj.attributes, n: '1' } })).not.toBe(base);
    expect(contentHash({ ...obj, attributes: { ...obj.attributes, sn: 'Orsted' } })).not.toBe(base);
    expect(contentHash({ ...obj, dn: 'uid=a,ou=Other,dc=x' })).not.toBe(base);
    expect(contentHash({ ...obj, container: 'ou=Other' })).not.toBe(base);
    expect(contentHash({ ...obj, references: { manager: ['uid=n,dc=x'] } })).not.toBe(base);
    expect(contentHash({ ...obj, objectType: 'Contact' })).not.toBe(base);
  });

  test('canonicalJson sorts keys at every level', () => {
    expect(canonicalJson({ b: 1, a: { d: [2, { f: 1, e: 0 }], c: null } })).toBe('{"a":{"c":null,"d":[2,{"e":0,"f":1}]},"b":1}');
  });

  test('ConnectorError: code, retriable defaults, per-object form; secrets are redacted', () => {
    expect(new ConnectorError('timeout', 'slow').retriable).toBe(true);
    expect(new ConnectorError('authentication_failed', 'no').retriable).toBe(false);
    const e = new ConnectorError('not_found', 'gone', { anchor: 'a1', location: 'f.csv:3' });
    expect(e.toObjectError('User')).toEqual({ code: 'not_found', message: 'gone', retriable: false, anchor: 'a1', objectType: 'User', location: 'f.csv:3' });
    expect(redactSecrets('bind failed for cn=admin with p4ss!', ['p4ss!', undefined])).toBe('bind failed for cn=admin with ********');
  });

  test('capability guards and exportChanges without a batch variant', async () => {
    const seen: ExportChange[] = [];
    const c: Connector = {
      type: 't',
      testConnection: async () => ({ message: 'ok' }),
      schema: async () => ({ objectTypes: [] }),
      close: async () => undefined,
      export: async (ch) => {
        seen.push(ch);
        return { status: 'success', anchor: ch.anchor ?? 'new' };
      },
    };
    expect(hasFullImport(c)).toBe(false);
    expect(hasDeltaImport(c)).toBe(false);
    expect(hasExport(c)).toBe(true);
    if (!hasExport(c)) throw new Error('unreachable');
    const results = await exportChanges(c, [
      { kind: 'add', objectType: 'User', attributes: {} },
      { kind: 'delete', objectType: 'User', anchor: 'x', attributes: {} },
    ]);
    expect(results).toEqual([
      { status: 'success', anchor: 'new' },
      { status: 'success', anchor: 'x' },
    ]);
    expect(seen).toHaveLength(2);
  });
});
