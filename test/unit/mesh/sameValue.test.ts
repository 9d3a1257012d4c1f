import { dnKey, sameValue } from '../../../lib/mesh/model';

/** Equality of attribute values, and of DN values (`{ dn: true }`: a directory's DN-valued attributes). */

const WRITTEN = 'uid=E1,ou=Sales\\, EMEA,ou=people,dc=example,dc=com';
const SHOWN = 'uid=E1,ou=Sales\\2C EMEA,ou=people,dc=example,dc=com';

describe('sameValue', () => {
  test('strings as strings; multi-valued as sets; absent, null and [] alike', () => {
    expect(sameValue('a', 'a')).toBe(true);
    expect(sameValue('a', 'A')).toBe(false);
    expect(sameValue(['a', 'b'], ['b', 'a'])).toBe(true);
    expect(sameValue(['a'], 'a')).toBe(true);
    expect(sameValue(undefined, null)).toBe(true);
    expect(sameValue([], null)).toBe(true);
    expect(sameValue(1, '1')).toBe(false);
    expect(sameValue(WRITTEN, SHOWN)).toBe(false);
  });

  test('with { dn: true }: two DNs naming the same entry are equal, however spelled', () => {
    const dn = { dn: true };
    expect(sameValue(WRITTEN, SHOWN, dn)).toBe(true);
    expect(sameValue(WRITTEN, SHOWN.toUpperCase(), dn)).toBe(true);
    expect(sameValue('cn=Jos\\c3\\a9 Admins,dc=x', 'CN=José Admins, DC=x', dn)).toBe(true);
    expect(sameValue(WRITTEN, WRITTEN.replace('E1', 'E2'), dn)).toBe(false);
    // Multi-valued: order-insensitive, each value by its DN.
    expect(sameValue([WRITTEN, 'cn=b,dc=x'], ['CN=B,DC=X', SHOWN], dn)).toBe(true);
    expect(sameValue([WRITTEN, 'cn=b,dc=x'], [SHOWN, SHOWN], dn)).toBe(false);
    expect(sameValue([WRITTEN], SHOWN, dn)).toBe(true);
    expect(sameValue([WRITTEN], [], dn)).toBe(false);
    expect(sameValue(null, undefined, dn)).toBe(true);
    // Not DNs: compared by the looser key (no crash); other types as without the option.
    expect(sameValue('Not a DN', 'not a dn', dn)).toBe(true);
    expect(sameValue(1, '1', dn)).toBe(false);
    expect(sameValue(true, true, dn)).toBe(true);
  });

  test('dnKey: the mesh key of a DN is the one LDAP name module key', () => {
    expect(dnKey(WRITTEN)).toBe(dnKey(SHOWN));
    expect(dnKey(WRITTEN)).toBe('uid=e1,ou=sales\\2c emea,ou=people,dc=example,dc=com');
    expect(dnKey('uid=u000123,ou=people,dc=example,dc=com')).toBe('uid=u000123,ou=people,dc=example,dc=com');
  });
});
