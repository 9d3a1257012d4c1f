import {
  escapeDnValue,
  escapeFilterValue,
  firstRdn,
  firstRdnValue,
  formatDn,
  InvalidDnError,
  isDn,
  normalizeDn,
  parentDn,
  parseDn,
  parsedDnKey,
  plainDnLower,
  sameDn,
  unescapeDnValue,
} from '../../../lib/core/ldapName';

/** The one LDAP name module (RFC 4514 DNs, RFC 4515 filter values): parse, compare, escape. */

describe('parseDn', () => {
  test('RDNs leaf first, types as written, values with escapes undone', () => {
    expect(parseDn('uid=E1,ou=Sales\\, EMEA,dc=example,dc=com')).toEqual([
      [{ type: 'uid', value: 'E1' }],
      [{ type: 'ou', value: 'Sales, EMEA' }],
      [{ type: 'dc', value: 'example' }],
      [{ type: 'dc', value: 'com' }],
    ]);
  });

  test.each<[string, string]>([
    ['ou=Sales\\, EMEA', 'Sales, EMEA'],
    ['ou=Sales\\2C EMEA', 'Sales, EMEA'],
    ['ou=Sales\\2c EMEA', 'Sales, EMEA'],
    ['cn=Jos\\c3\\a9 Admins', 'José Admins'],
    ['cn=Jos\\C3\\A9 Admins', 'José Admins'],
    ['cn=M\\C3\\BCller', 'Müller'],
    ['cn=\\E2\\82\\AC 100', '€ 100'],
    ['cn=\\F0\\9F\\98\\80', '😀'],
    ['cn=José', 'José'],
    ['cn=a\\+b', 'a+b'],
    ['cn=a\\2Bb', 'a+b'],
    ['cn=\\"quoted\\"', '"quoted"'],
    ['cn=back\\\\slash', 'back\\slash'],
    ['cn=back\\5Cslash', 'back\\slash'],
    ['cn=\\<tag\\>\\;', '<tag>;'],
    ['cn=a\\=b', 'a=b'],
    ['cn=a=b', 'a=b'],
    ['cn=\\ leading', ' leading'],
    ['cn=trailing\\ ', 'trailing '],
    ['cn=\\#hash', '#hash'],
    ['cn=mid#hash', 'mid#hash'],
    ['cn=nul\\00byte', 'nul\0byte'],
    ['cn="Smith, John"', 'Smith, John'],
    ['cn="a+b;c\\"d"', 'a+b;c"d'],
    ['cn="  kept  "', '  kept  '],
    ['cn= spaced  ', 'spaced'],
    ['cn=in  side', 'in  side'],
    ['cn=', ''],
    ['cn=#zz', '#zz'],
    ['cn=#1 team', '#1 team'],
  ])('%s: value %p', (dn, value) => {
    expect(parseDn(dn)).toEqual([[{ type: 'cn' === dn.slice(0, 2) ? 'cn' : 'ou', value }]]);
  });

  test('a # hex (BER) value is kept as written', () => {
    expect(parseDn('uid=#04024869,dc=x')[0]).toEqual([{ type: 'uid', value: '#04024869', hex: true }]);
    expect(parseDn('uid=#04024869 ,dc=x')[0]).toEqual([{ type: 'uid', value: '#04024869', hex: true }]);
  });

  test('multi-valued RDNs, blanks around separators, the root DN', () => {
    expect(parseDn('cn=a+uid=b,dc=x')).toEqual([
      [
        { type: 'cn', value: 'a' },
        { type: 'uid', value: 'b' },
      ],
      [{ type: 'dc', value: 'x' }],
    ]);
    expect(parseDn(' CN = Ann Lee , OU = People + L = Oslo , DC=x ')).toEqual([
      [{ type: 'CN', value: 'Ann Lee' }],
      [
        { type: 'OU', value: 'People' },
        { type: 'L', value: 'Oslo' },
      ],
      [{ type: 'DC', value: 'x' }],
    ]);
    expect(parseDn('')).toEqual([]);
    expect(parseDn('   ')).toEqual([]);
    expect(parseDn('2.5.4.3=x,OID.0.9.2342.19200300.100.1.25=y')).toEqual([
      [{ type: '2.5.4.3', value: 'x' }],
      [{ type: 'OID.0.9.2342.19200300.100.1.25', value: 'y' }],
    ]);
  });

  test.each([
    ['not a dn', "an RDN without '='"],
    ['cn=a,,dc=x', "an RDN without '='"],
    ['cn=a,', 'an empty RDN'],
    ['cn=a, ', 'an empty RDN'],
    ['=a', 'is not an attribute type'],
    ['c n=a', 'is not an attribute type'],
    ['cn=a\\', 'a backslash at the end'],
    ['cn="open', 'an unterminated quoted value'],
    ['cn="a"b', 'text after a quoted value'],
    ['cn=a+', "an RDN without '='"],
  ])('%p is not a DN (%s)', (dn, why) => {
    expect(() => parseDn(dn)).toThrow(InvalidDnError);
    expect(() => parseDn(dn)).toThrow(why);
    expect(isDn(dn)).toBe(false);
  });
});

describe('normalizeDn and sameDn', () => {
  test('the escapes a directory gives back name the same entry as the ones written', () => {
    expect(normalizeDn('uid=E1,ou=Sales\\, EMEA,ou=people,dc=example,dc=com')).toBe('uid=e1,ou=sales\\2c emea,ou=people,dc=example,dc=com');
    expect(sameDn('uid=E1,ou=Sales\\, EMEA,ou=people,dc=example,dc=com', 'uid=E1,ou=Sales\\2C EMEA,ou=people,dc=example,dc=com')).toBe(true);
    expect(sameDn('ou=Sales\\, EMEA,dc=x', 'OU="sales, emea", DC=X')).toBe(true);
    expect(sameDn('cn=Jos\\c3\\a9 Admins,dc=x', 'cn=José Admins,dc=x')).toBe(true);
    expect(sameDn('cn=JOS\\C3\\89 ADMINS,dc=x', 'cn=josé admins,dc=x')).toBe(true);
  });

  test.each<[string, string]>([
    ['CN=Ann Lee, OU=People', 'cn=ann lee,ou=people'],
    [' cn = a , ou = b ', 'cn=a,ou=b'],
    ['cn=a+uid=b,dc=x', 'uid=B+CN=A,dc=x'],
    ['cn=a + uid=b,dc=x', 'uid=b+cn=a,dc=x'],
    ['cn=a  b,dc=x', 'cn=a b,dc=x'],
    ['cn=a\u00a0b,dc=x', 'cn=a b,dc=x'],
    ['cn=trailing\\ ,dc=x', 'cn=trailing,dc=x'],
    ['cn=\\ leading,dc=x', 'cn=leading,dc=x'],
    ['cn=a\\=b,dc=x', 'cn=a=b,dc=x'],
    ['cn=\\4a\\6f,dc=x', 'cn=jo,dc=x'],
    ['uid=#04024869,dc=x', 'UID=#04024869,dc=x'],
    ['cn=a\\,b,dc=x', 'cn="a,b",dc=x'],
  ])('%p is %p', (a, b) => {
    expect(sameDn(a, b)).toBe(true);
    expect(normalizeDn(a)).toBe(normalizeDn(b));
  });

  test.each<[string, string]>([
    ['cn=a,dc=x', 'cn=b,dc=x'],
    ['cn=a\\,b,dc=x', 'cn=a,b=,dc=x'],
    ['cn=a\\2Cb,dc=x', 'cn=a,cn=b,dc=x'],
    ['cn=a\\+b,dc=x', 'cn=a+b=,dc=x'],
    ['cn=a b,dc=x', 'cn=ab,dc=x'],
    ['cn=\\#ab,dc=x', 'cn=#ab,dc=x'],
    ['cn=a,dc=x', 'cn=a,dc=x,dc=y'],
    ['cn=a,dc=x', 'sn=a,dc=x'],
  ])('%p is not %p', (a, b) => {
    expect(sameDn(a, b)).toBe(false);
  });

  test('the key is a DN again, with , + \\ " and a leading # in values as lower-case hex escapes', () => {
    expect(normalizeDn('CN=Smith\\, John+UID=a\\+b,DC=x')).toBe('cn=smith\\2c john+uid=a\\2bb,dc=x');
    expect(normalizeDn('cn=back\\\\slash \\"q\\",dc=x')).toBe('cn=back\\5cslash \\22q\\22,dc=x');
    expect(normalizeDn('cn=\\#1,dc=x')).toBe('cn=\\231,dc=x');
    expect(normalizeDn('cn=a\\00b,dc=x')).toBe('cn=a\\00b,dc=x');
    for (const dn of ['CN=Smith\\, John+UID=a\\+b,DC=x', 'ou=Sales\\2C EMEA,dc=x', 'cn=\\#1,dc=x', 'uid=#0402,dc=x', 'cn=Jos\\c3\\a9,dc=x']) {
      const key = normalizeDn(dn);
      expect(isDn(key)).toBe(true);
      // A key is its own key (a key stored by an earlier run is looked up as it is).
      expect(normalizeDn(key)).toBe(key);
    }
  });

  test('a plain DN takes the fast path, with the key the parser gives', () => {
    for (const dn of [
      'CN=Ann Lee,OU=People,DC=Corp',
      'uid=u000001,ou=people,dc=example,dc=com',
      'cn=a=b,ou=c',
      'cn=ΟΔΟΣ,ou=x',
      'cn=José,dc=x',
      'cn=a;b,dc=x',
    ]) {
      expect(plainDnLower(dn)).toBe(dn.toLowerCase());
      expect(parsedDnKey(dn)).toBe(dn.toLowerCase());
    }
    for (const dn of [
      'cn=a+sn=b',
      'cn=a\\,b',
      'cn="a"',
      'cn=a  b',
      'cn=a\u00a0b',
      'cn=a\tb',
      'cn=#04',
      ' cn=a',
      'cn=a ',
      'cn=a, ou=b',
      'cn =a',
      'cn=a\u0001',
    ]) {
      expect(plainDnLower(dn)).toBeUndefined();
    }
  });

  test('a string that is not a DN still has a key (trimmed, lower-cased, no blanks around separators)', () => {
    expect(normalizeDn('Not A DN')).toBe('not a dn');
    expect(normalizeDn(' cn=a, ,ou=b ')).toBe('cn=a,,ou=b');
    expect(normalizeDn('cn=a,,ou=b')).toBe('cn=a,,ou=b');
    expect(sameDn('cn=a\\', 'CN=A\\')).toBe(true);
  });
});

describe('first RDN and parent', () => {
  test.each<[string, string | undefined]>([
    ['cn=Sync Admins,ou=Groups,dc=example,dc=com', 'Sync Admins'],
    ['cn=Jos\\c3\\a9 Admins,ou=Groups,dc=example,dc=com', 'José Admins'],
    ['CN=Smith\\, John,OU=Users,DC=corp', 'Smith, John'],
    ['cn=Comma\\2C Group,ou=groups', 'Comma, Group'],
    ['cn="Smith, John",ou=people', 'Smith, John'],
    ['CN = Spaced  ,ou=x', 'Spaced'],
    ['cn=a+uid=b,dc=x', 'a'],
    ['uid=#04024869,dc=x', '#04024869'],
    ['dc=com', 'com'],
    ['cn=a,,broken', 'a'],
    ['not a dn', undefined],
    ['', undefined],
  ])('firstRdnValue(%p) is %p', (dn, value) => {
    expect(firstRdnValue(dn)).toBe(value);
  });

  test('firstRdn gives the type too', () => {
    expect(firstRdn('OU=Sales\\2C EMEA,dc=x')).toEqual([{ type: 'OU', value: 'Sales, EMEA' }]);
  });

  test.each<[string, string]>([
    ['cn=John,ou=people,dc=example,dc=com', 'ou=people,dc=example,dc=com'],
    ['cn=Smith\\, John,ou=people,dc=x', 'ou=people,dc=x'],
    ['cn="Smith, John",ou=people', 'ou=people'],
    ['cn=a\\2Cb,dc=x', 'dc=x'],
    ['uid=E1,ou=Sales\\2C EMEA,dc=x', 'ou=Sales\\2C EMEA,dc=x'],
    ['cn=John, ou=people', 'ou=people'],
    ['dc=com', ''],
    ['', ''],
  ])('parentDn(%p) is %p (as written)', (dn, parent) => {
    expect(parentDn(dn)).toBe(parent);
  });
});

describe('escaping', () => {
  test.each<[string, string]>([
    ['Sales, EMEA', 'Sales\\, EMEA'],
    ['a+b', 'a\\+b'],
    ['say "hi"', 'say \\"hi\\"'],
    ['back\\slash', 'back\\\\slash'],
    ['<tag>;', '\\<tag\\>\\;'],
    ['a=b', 'a\\=b'],
    [' leading', '\\ leading'],
    ['trailing ', 'trailing\\ '],
    ['#hash', '\\#hash'],
    ['mid#hash', 'mid#hash'],
    ['nul\0byte', 'nul\\00byte'],
    ['José', 'José'],
    ['', ''],
  ])('escapeDnValue(%p) is %p, and it parses back', (value, escaped) => {
    expect(escapeDnValue(value)).toBe(escaped);
    expect(firstRdnValue(`cn=${escaped},dc=x`)).toBe(value);
    expect(unescapeDnValue(escaped)).toBe(value);
  });

  test('unescapeDnValue: a value as written in a DN', () => {
    expect(unescapeDnValue('Sales\\2C EMEA')).toBe('Sales, EMEA');
    expect(unescapeDnValue('Jos\\c3\\a9')).toBe('José');
    expect(unescapeDnValue('"Smith, John"')).toBe('Smith, John');
    expect(unescapeDnValue('plain')).toBe('plain');
  });

  test('formatDn writes parsed RDNs back (an equal DN)', () => {
    for (const dn of ['uid=E1,ou=Sales\\2C EMEA,dc=x', 'cn="a+b",dc=x', 'cn=a+uid=b,dc=x', 'uid=#0402,dc=x', 'cn=\\ x\\ ,dc=x']) {
      expect(sameDn(formatDn(parseDn(dn)), dn)).toBe(true);
    }
    expect(formatDn(parseDn('ou=Sales\\2C EMEA,dc=x'))).toBe('ou=Sales\\, EMEA,dc=x');
  });

  test('escapeFilterValue (RFC 4515, ldapts escapeFilter)', () => {
    expect(escapeFilterValue('a*b(c)d\\e\0')).toBe('a\\2ab\\28c\\29d\\5ce\\00');
    expect(escapeFilterValue('uid=E1,ou=Sales\\2C EMEA')).toBe('uid=E1,ou=Sales\\5c2C EMEA');
    expect(escapeFilterValue('José')).toBe('José');
    expect(escapeFilterValue('')).toBe('');
  });
});
