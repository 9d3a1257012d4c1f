import { wildcardMatch } from '../../../lib/core/wildcard';
import { ConfigError } from '../../../lib/core/config';
import { AppError } from '../../../lib/core/errors';
import { compileSecretAttributes, MASK, maskedValues, secretFilterRefusal, shownValue, useSecretAttributes } from '../../../lib/core/secretAttributes';

describe('secret attributes: the one list', () => {
  afterEach(() => useSecretAttributes(undefined));

  test('built in: the password attributes of every connector type and of the engine, whatever the case', () => {
    const list = compileSecretAttributes(undefined);
    for (const name of [
      'password',
      'initialPassword',
      'userPassword',
      'USERPASSWORD',
      'userPassword;binary',
      'authPassword',
      'sambaNTPassword',
      'unicodePwd',
      'dBCSPwd',
      'ntPwdHistory',
      'lmPwdHistory',
      'supplementalCredentials',
      'msDS-ManagedPassword',
      'clientSecret',
      'vpnPassphrase',
      'unixPasswd',
    ])
      expect([name, list.test(name)]).toEqual([name, true]);
    for (const name of ['pwdLastSet', 'passwordExpiry', 'passportNumber', 'mail', 'sn', 'pin', 'title', 'compass'])
      expect([name, list.test(name)]).toEqual([name, false]);
  });

  test('Mesh:SecretAttributes adds names and patterns, case-insensitive', () => {
    const list = compileSecretAttributes(' pin , *Ssn,badge?Code ,');
    expect(list.test('PIN')).toBe(true);
    expect(list.test('pin')).toBe(true);
    expect(list.test('employeeSSN')).toBe(true);
    expect(list.test('ssn')).toBe(true);
    expect(list.test('badgeXCode')).toBe(true);
    expect(list.test('badgeCode')).toBe(false);
    expect(list.test('pinned')).toBe(false);
    expect(list.test('userPassword')).toBe(true);
    expect(list.rule('Pin')).toEqual({ pattern: 'pin', builtIn: false });
    expect(list.rule('userPassword')).toEqual({ pattern: '*password', builtIn: true });
    expect(list.rule('mail')).toBeUndefined();
  });

  test('a malformed entry stops the start naming the setting and the entry', () => {
    const bad = (text: string, message: RegExp) => {
      let err: unknown;
      try {
        compileSecretAttributes(text);
      } catch (e) {
        err = e;
      }
      expect(err).toBeInstanceOf(ConfigError);
      expect((err as ConfigError).setting).toBe('Mesh:SecretAttributes');
      expect((err as Error).message).toMatch(message);
    };
    bad('pin,(a+)+', /'\(a\+\)\+' is not an attribute name or pattern/);
    bad('*', /'\*' would match every attribute/);
    bad('x'.repeat(129), /longer than 128 characters/);
    bad(Array.from({ length: 201 }, (_, i) => `a${i}`).join(','), /at most 200/);
  });

  test('the glob walk: * and ?, anchored at both ends', () => {
    expect(wildcardMatch('*password', 'initialpassword')).toBe(true);
    expect(wildcardMatch('*password', 'passwordexpiry')).toBe(false);
    expect(wildcardMatch('a*b*c', 'axxbyyc')).toBe(true);
    expect(wildcardMatch('a*b*c', 'axxbyy')).toBe(false);
    expect(wildcardMatch('a?c', 'abc')).toBe(true);
    expect(wildcardMatch('a?c', 'ac')).toBe(false);
    expect(wildcardMatch('**', '')).toBe(true);
  });

  // A backtracking regular expression (`/^.*a.*a...b$/`) takes minutes on this input; the walk is at most
  // name x pattern steps, well inside the test's own timeout.
  test('bounded: a pattern made to backtrack answers', () => {
    const pattern = '*a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*b';
    const name = 'a'.repeat(5000);
    for (let i = 0; i < 20; i++) expect(wildcardMatch(pattern, name)).toBe(false);
    expect(compileSecretAttributes(pattern.replace(/\*b$/, '*c')).test(name)).toBe(false);
  }, 10_000);

  test('shown values: secrets as ********, the attribute still listed; null stays null', () => {
    useSecretAttributes(compileSecretAttributes('pin'));
    expect(shownValue('pin', '1234')).toBe(MASK);
    expect(shownValue('PIN', ['1', '2'])).toBe(MASK);
    expect(shownValue('pin', null)).toBeNull();
    expect(shownValue('mail', 'a@b')).toBe('a@b');
    expect(maskedValues({ pin: '1234', mail: 'a@b', initialPassword: 'x', empty: null })).toEqual({
      pin: MASK,
      mail: 'a@b',
      initialPassword: MASK,
      empty: null,
    });
  });

  test('a filter naming a secret attribute is a 400 naming the attribute and the rule', () => {
    useSecretAttributes(compileSecretAttributes('pin'));
    expect(secretFilterRefusal([{ name: 'mail', path: '/criteria/0/attributeName' }])).toBeUndefined();
    const err = secretFilterRefusal([
      { name: 'mail', path: '/criteria/0/attributeName' },
      { name: 'Pin', path: '/criteria/1/attributeName' },
      { name: 'initialPassword', path: '/criteria/2/attributeName' },
    ]);
    expect(err).toBeInstanceOf(AppError);
    expect(err!.status).toBe(400);
    expect(err!.code).toBe('validation_failed');
    expect(err!.detail).toMatch(/'Pin' \('pin' in the setting Mesh:SecretAttributes\)/);
    expect(err!.detail).toMatch(/'initialPassword' \(the built-in secret attribute rule '\*password'\)/);
    expect(err!.extra.errors!.map((e) => e.path)).toEqual(['/criteria/1/attributeName', '/criteria/2/attributeName']);
  });
});
