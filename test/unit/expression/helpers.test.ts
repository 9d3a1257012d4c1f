import { evaluate, ExpressionEvaluationError, parseExpression } from '../../../lib/expression';

const run = (script: string, source?: unknown, extra: Record<string, unknown> = {}): unknown => evaluate(parseExpression(script), { source, ...extra });

function evaluationError(script: string, source?: unknown): ExpressionEvaluationError {
  try {
    run(script, source);
  } catch (err) {
    expect(err).toBeInstanceOf(ExpressionEvaluationError);
    return err as ExpressionEvaluationError;
  }
  throw new Error(`expected an evaluation error for ${script}`);
}

describe('text helpers', () => {
  it('lower, upper, trim', () => {
    expect(run('lower(source)', 'AbC')).toBe('abc');
    expect(run('upper(source)', 'AbC')).toBe('ABC');
    expect(run('trim(source)', '  a b  ')).toBe('a b');
    expect(run('lower(source)', 12)).toBe('12');
    expect(run('upper(source)', true)).toBe('TRUE');
  });

  it('are null-tolerant and apply to each value of a multi-valued attribute', () => {
    expect(run('lower(source.missing)', {})).toBeUndefined();
    expect(run('lower(source)', null)).toBeNull();
    expect(run('upper(source)', ['a', null, 'b'])).toEqual(['A', null, 'B']);
    expect(run('trim(source)', [' x ', ' y'])).toEqual(['x', 'y']);
  });

  it('refuse objects', () => {
    expect(evaluationError('lower(source)', { a: 1 })).toMatchObject({ code: 'type_error', reason: 'lower() expects a string, not an object', column: 1 });
    expect(evaluationError('lower(source)', [{ a: 1 }])).toMatchObject({ code: 'type_error' });
  });

  it('split and join', () => {
    expect(run('split(source, "@")', 'ada@example.com')).toEqual(['ada', 'example.com']);
    expect(run('split(source, ",")[1]', 'a,b,c')).toBe('b');
    expect(run('split(source.missing, ",")', {})).toBeUndefined();
    expect(run('join(source, "; ")', ['a', 'b', null])).toBe('a; b; ');
    expect(run('join(source)', ['a', 'b'])).toBe('a,b');
    expect(run('join(source, "-")', 'single')).toBe('single');
    expect(run('join(source.missing, "-")', {})).toBeUndefined();
    expect(run('join(split(source, "."), "_")', 'a.b.c')).toBe('a_b_c');
    expect(evaluationError('split(source, [","])', 'a,b')).toMatchObject({ code: 'type_error' });
  });

  it('replace replaces every occurrence, literally', () => {
    expect(run('replace(source, ".", "")', 'a.b.c')).toBe('abc');
    expect(run('replace(source, "a", "$&$&")', 'banana')).toBe('b$&$&n$&$&n$&$&');
    expect(run('replace(source, "(", "[")', 'f(x)')).toBe('f[x)');
    expect(run('replace(source, "x", "y")', ['x1', 'x2'])).toEqual(['y1', 'y2']);
    expect(run('replace(source.missing, "x", "y")', {})).toBeUndefined();
  });

  it('substring, left, right, padStart', () => {
    expect(run('substring(source, 1, 3)', 'abcdef')).toBe('bc');
    expect(run('substring(source, 2)', 'abcdef')).toBe('cdef');
    expect(run('left(source, 3)', 'abcdef')).toBe('abc');
    expect(run('left(source, 10)', 'abc')).toBe('abc');
    expect(run('left(source, -1)', 'abc')).toBe('');
    expect(run('right(source, 2)', 'abcdef')).toBe('ef');
    expect(run('right(source, 0)', 'abcdef')).toBe('');
    expect(run('right(source, 10)', 'abc')).toBe('abc');
    expect(run('padStart(source, 6, "0")', 42)).toBe('000042');
    expect(run('padStart(source, 4)', 'ab')).toBe('  ab');
    expect(run('padStart(source, 1, "0")', 'abc')).toBe('abc');
    expect(run('padStart(source.missing, 4, "0")', {})).toBeUndefined();
  });
});

describe('value helpers', () => {
  it('coalesce returns the first value that is not null, undefined, empty string or empty array', () => {
    expect(run('coalesce(source.a, source.b, source.c)', { b: '', c: 'C' })).toBe('C');
    expect(run('coalesce(source.a, source.b, "default")', { a: null, b: [] })).toBe('default');
    expect(run('coalesce(source.a, "x")', { a: 0 })).toBe(0);
    expect(run('coalesce(source.a, "x")', { a: false })).toBe(false);
    expect(run('coalesce(source.a)', {})).toBeUndefined();
  });

  it('isEmpty', () => {
    for (const empty of [undefined, null, '', [], {}]) expect(run('isEmpty(source)', empty)).toBe(true);
    for (const full of [' ', 0, false, ['x'], { a: 1 }, 'x']) expect(run('isEmpty(source)', full)).toBe(false);
  });

  it('first and last of multi-valued attributes; a single value is its own first and last', () => {
    expect(run('first(source)', ['a', 'b'])).toBe('a');
    expect(run('last(source)', ['a', 'b'])).toBe('b');
    expect(run('first(source)', [])).toBeUndefined();
    expect(run('first(source)', 'only')).toBe('only');
    expect(run('last(source.missing)', {})).toBeUndefined();
  });

  it('toNumber', () => {
    expect(run('toNumber(source)', ' 42 ')).toBe(42);
    expect(run('toNumber(source)', '3.5')).toBe(3.5);
    expect(run('toNumber(source)', 7)).toBe(7);
    expect(run('toNumber(source)', true)).toBe(1);
    expect(run('toNumber(source)', '')).toBeUndefined();
    expect(run('toNumber(source)', 'abc')).toBeUndefined();
    expect(run('toNumber(source.missing)', {})).toBeUndefined();
    expect(run('toNumber(source) + 1', '41')).toBe(42);
    expect(evaluationError('toNumber(source)', ['1'])).toMatchObject({ code: 'type_error' });
  });

  it('toString', () => {
    expect(run('toString(source)', 42)).toBe('42');
    expect(run('toString(source)', ['a', 'b'])).toBe('a,b');
    expect(run('toString(source.missing)', {})).toBe('');
    expect(run('toString(null)')).toBe('');
    expect(evaluationError('toString(source)', { a: 1 })).toMatchObject({ code: 'type_error' });
  });
});

describe('formatDate', () => {
  it.each<[unknown, string, string]>([
    ['2024-01-31T12:30:05Z', 'yyyy-MM-dd HH:mm:ss', '2024-01-31 12:30:05'],
    ['2024-01-31T12:30:05.123Z', 'yyyyMMdd', '20240131'],
    ['2024-01-31', 'dd/MM/yyyy', '31/01/2024'],
    ['2024-01-31T23:30:00-02:00', 'yyyy-MM-dd HH:mm', '2024-02-01 01:30'],
    ['2024-01-31T01:30:00+0130', 'yyyy-MM-dd HH:mm', '2024-01-31 00:00'],
    ['2024-01-31 08:00', 'HH:mm:ss', '08:00:00'],
    ['20240131123005Z', 'yyyy-MM-ddTHH:mm:ssZ', '2024-01-31T12:30:05Z'],
    ['20240131123005.0Z', 'yyyy-MM-dd', '2024-01-31'],
    ['20240131123005+0100', 'HH:mm', '11:30'],
    ['0050-06-01', 'yyyy', '0050'],
    [0, 'yyyy-MM-dd HH:mm:ss', '1970-01-01 00:00:00'],
    [Date.UTC(2023, 11, 25, 6, 7, 8), 'dd.MM.yyyy HH:mm:ss', '25.12.2023 06:07:08'],
    [new Date(Date.UTC(2000, 1, 29)), 'yyyy-MM-dd', '2000-02-29'],
  ])('formatDate(%p, %p)', (value, pattern, expected) => {
    expect(run('formatDate(source, pattern)', value, { pattern })).toBe(expected);
  });

  it('is undefined for a missing value and an error for a value that is not a date', () => {
    expect(run('formatDate(source.missing, "yyyy")', {})).toBeUndefined();
    for (const bad of ['yesterday', '2024-02-30', '2023-02-29', '2024-13-01', '20240131', '12345', 'x'.repeat(100), true, [1], {}, NaN]) {
      expect(evaluationError('formatDate(source, "yyyy")', bad)).toMatchObject({
        code: 'invalid_argument',
        reason: 'formatDate() could not read the value as a date',
      });
    }
  });
});

describe('DN helpers', () => {
  it.each<[string, string]>([
    ['Smith, John', 'Smith\\, John'],
    ['a+b', 'a\\+b'],
    ['say "hi"', 'say \\"hi\\"'],
    ['back\\slash', 'back\\\\slash'],
    ['<tag>;', '\\<tag\\>\\;'],
    ['a=b', 'a\\=b'],
    [' leading', '\\ leading'],
    ['trailing ', 'trailing\\ '],
    ['#hash', '\\#hash'],
    ['mid#hash', 'mid#hash'],
    [' ', '\\ '],
    ['nul\0byte', 'nul\\00byte'],
    ['Müller', 'Müller'],
    ['', ''],
  ])('dnEscape(%p)', (value, expected) => {
    expect(run('dnEscape(source)', value)).toBe(expected);
  });

  it('builds a DN template', () => {
    expect(run('"cn=" + dnEscape(source.cn) + ",ou=people," + baseDN', { cn: 'Smith, John' }, { baseDN: 'dc=example,dc=com' })).toBe(
      'cn=Smith\\, John,ou=people,dc=example,dc=com',
    );
    expect(run('dnEscape(source)', 42)).toBe('42');
  });

  it('refuses to escape a missing value (no "cn=undefined" entries)', () => {
    expect(evaluationError('"cn=" + dnEscape(source.cn)', {})).toMatchObject({ code: 'invalid_argument', column: 9 });
    expect(evaluationError('dnEscape(source)', ['a'])).toMatchObject({ code: 'type_error' });
  });

  it.each<[string, string]>([
    ['cn=John,ou=people,dc=example,dc=com', 'ou=people,dc=example,dc=com'],
    ['cn=Smith\\, John,ou=people,dc=x', 'ou=people,dc=x'],
    ['cn="Smith, John",ou=people', 'ou=people'],
    ['cn=a\\2Cb,dc=x', 'dc=x'],
    ['cn=John, ou=people', 'ou=people'],
    ['dc=com', ''],
    ['', ''],
  ])('dnParent(%p)', (dn, expected) => {
    expect(run('dnParent(source)', dn)).toBe(expected);
  });

  it.each<[string, string | undefined]>([
    ['cn=John,ou=people', 'John'],
    ['cn=Smith\\, John,ou=people', 'Smith, John'],
    ['CN = Spaced  ,ou=x', 'Spaced'],
    ['cn=trailing\\ ,ou=x', 'trailing '],
    ['cn=a\\2Cb,dc=x', 'a,b'],
    ['cn=M\\C3\\BCller,dc=x', 'Müller'],
    ['cn="Smith, John",ou=people', 'Smith, John'],
    ['cn=a+uid=b,dc=x', 'a'],
    ['cn=a\\+b,dc=x', 'a+b'],
    ['uid=#04024869,dc=x', '#04024869'],
    ['dc=com', 'com'],
    ['not a dn', undefined],
  ])('dnRdnValue(%p)', (dn, expected) => {
    expect(run('dnRdnValue(source)', dn)).toBe(expected);
  });

  it('DN helpers are null-tolerant and map over multi-valued attributes', () => {
    expect(run('dnParent(source.missing)', {})).toBeUndefined();
    expect(run('dnRdnValue(source)', ['cn=a,dc=x', 'cn=b,dc=x'])).toEqual(['a', 'b']);
  });

  it('round-trips: dnRdnValue of an escaped RDN gives the value back', () => {
    for (const value of ['Smith, John', ' lead', 'trail ', '#x', 'a+b=c;d<e>f"g\\h', 'Ünïcødé']) {
      expect(run('dnRdnValue("cn=" + dnEscape(source) + ",dc=x")', value)).toBe(value);
    }
  });
});
