import { accountParts, encodeUnicodePwd, userAccountControlOf, withDisabled } from '../../../../lib/connectors/ldap/adAccount';

describe('Active Directory account values', () => {
  test('unicodePwd is the quoted password in UTF-16LE', () => {
    expect(encodeUnicodePwd('Pä55!').toString('hex')).toBe('22005000e4003500350021002200');
  });

  test('ACCOUNTDISABLE (bit 2) is set and cleared, every other flag kept', () => {
    const dontExpire = 0x10000;
    expect(withDisabled(512 | dontExpire, true)).toBe(66050);
    expect(withDisabled(66050, false)).toBe(66048);
    expect(withDisabled(514, true)).toBe(514);
    expect(withDisabled(0x80000000 | 512, true)).toBe((0x80000000 | 514) >>> 0);
    expect(userAccountControlOf(['66048'])).toBe(66048);
    expect(userAccountControlOf(undefined)).toBeUndefined();
  });

  test('the password and accountDisabled are taken out of the attributes', () => {
    expect(accountParts({ unicodePwd: 'S3cret!x', accountDisabled: 'false', title: 'x' })).toEqual({
      password: 'S3cret!x',
      disabled: false,
      rest: { title: 'x' },
    });
    expect(accountParts({ unicodepwd: null, AccountDisabled: true })).toEqual({ disabled: true, rest: {} });
    expect(() => accountParts({ unicodePwd: ['a', 'b'] })).toThrow(/one non-empty string/);
    expect(() => accountParts({ accountDisabled: 'maybe' })).toThrow(/true or false/);
  });
});
