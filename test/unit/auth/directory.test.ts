import { escapeFilter, firstRdnValue, sidToString } from '../../../lib/auth/directory';

describe('directory helpers', () => {
  it('escapes filter metacharacters (RFC 4515)', () => {
    expect(escapeFilter('a*b(c)d\\e\0')).toBe('a\\2ab\\28c\\29d\\5ce\\00');
  });

  it('reads the first RDN value of a DN, undoing RFC 4514 escapes', () => {
    expect(firstRdnValue('cn=Sync Admins,ou=Groups,dc=example,dc=com')).toBe('Sync Admins');
    expect(firstRdnValue('CN=Smith\\, John,OU=Users,DC=corp')).toBe('Smith, John');
    expect(firstRdnValue('cn=Comma\\2C Group,ou=groups')).toBe('Comma, Group');
    expect(firstRdnValue('cn=a+uid=b,dc=x')).toBe('a');
    expect(firstRdnValue('no-equals')).toBeNull();
    // Hex pairs are the UTF-8 bytes of one character (not one character each: "JosÃ© Admins").
    expect(firstRdnValue('cn=Jos\\c3\\a9 Admins,ou=Groups,dc=example,dc=com')).toBe('José Admins');
    expect(firstRdnValue('CN=M\\C3\\BCller\\2C Team,OU=Groups')).toBe('Müller, Team');
    expect(firstRdnValue('cn="Smith, John",ou=Groups')).toBe('Smith, John');
  });

  it('renders a binary objectSid as S-1-5-21-...', () => {
    // S-1-5-21-1004336348-1177238915-682003330-512 (a well-known "Domain Admins" shape)
    const sid = Buffer.alloc(8 + 5 * 4);
    sid[0] = 1;
    sid[1] = 5;
    sid.writeUIntBE(5, 2, 6);
    [21, 1004336348, 1177238915, 682003330, 512].forEach((v, i) => sid.writeUInt32LE(v, 8 + i * 4));
    expect(sidToString(sid)).toBe('S-1-5-21-1004336348-1177238915-682003330-512');
    expect(sidToString(Buffer.from([1, 2, 0]))).toBeNull();
  });
});
