import {
  ExpressionSyntaxError,
  HELPER_NAMES,
  MAX_NESTING_DEPTH,
  MAX_SOURCE_LENGTH,
  METHOD_NAMES,
  parseExpression,
  type Expression,
} from '../../../lib/expression';
import { HELPER_ARITY, METHOD_ARITY } from '../../../lib/expression/names';

function syntaxError(source: string): ExpressionSyntaxError {
  try {
    parseExpression(source);
  } catch (err) {
    expect(err).toBeInstanceOf(ExpressionSyntaxError);
    return err as ExpressionSyntaxError;
  }
  throw new Error(`expected a syntax error for ${JSON.stringify(source)}`);
}

describe('parseExpression: tree', () => {
  it('parses a method call on source', () => {
    const ast = parseExpression('source.toLowerCase()');
    expect(ast).toMatchObject({
      type: 'MethodCall',
      method: 'toLowerCase',
      arguments: [],
      optional: false,
      object: { type: 'Identifier', name: 'source', start: 0, end: 6 },
      start: 0,
      end: 20,
      line: 1,
      column: 1,
    });
  });

  it('parses member access, computed index and a helper call', () => {
    expect(parseExpression('source.split("@")[0]')).toMatchObject({
      type: 'MemberExpression',
      computed: true,
      property: { type: 'Literal', value: 0 },
      object: { type: 'MethodCall', method: 'split', arguments: [{ type: 'Literal', value: '@' }] },
    });
    expect(parseExpression('lower(source)')).toMatchObject({ type: 'HelperCall', name: 'lower', arguments: [{ type: 'Identifier', name: 'source' }] });
  });

  it('reads literals: strings with escapes, numbers, keywords', () => {
    const literal = (s: string) => (parseExpression(s) as Expression & { value: unknown }).value;
    expect(literal(String.raw`'it\'s'`)).toBe("it's");
    expect(literal(String.raw`"a\"b\\c\n\t\x41\u0042\u{1F600}"`)).toBe('a"b\\c\n\tAB\u{1F600}');
    expect(literal('"line\\\ncontinued"')).toBe('linecontinued');
    expect(literal('42')).toBe(42);
    expect(literal('3.25')).toBe(3.25);
    expect(literal('.5')).toBe(0.5);
    expect(literal('1e3')).toBe(1000);
    expect(literal('0x1F')).toBe(31);
    expect(literal('0b101')).toBe(5);
    expect(literal('0o17')).toBe(15);
    expect(literal('true')).toBe(true);
    expect(literal('false')).toBe(false);
    expect(literal('null')).toBeNull();
    expect(literal('undefined')).toBeUndefined();
  });

  it('reads templates with nested expressions and templates', () => {
    expect(parseExpression('`a${source.x}b${`c${1}`}d`')).toMatchObject({
      type: 'TemplateLiteral',
      quasis: ['a', 'b', 'd'],
      expressions: [
        { type: 'MemberExpression', name: 'x' },
        { type: 'TemplateLiteral', quasis: ['c', ''] },
      ],
    });
  });

  it('wraps an optional chain once, around the whole chain', () => {
    expect(parseExpression('source?.a.b')).toMatchObject({
      type: 'ChainExpression',
      expression: { type: 'MemberExpression', name: 'b', optional: false, object: { type: 'MemberExpression', name: 'a', optional: true } },
    });
    expect(parseExpression('a ?.5 : 1')).toMatchObject({ type: 'ConditionalExpression', consequent: { value: 0.5 } });
  });

  it('accepts keywords as property names after a dot, comments and whitespace', () => {
    expect(parseExpression('source.class /* objectClass */ + // rest\n source.default')).toMatchObject({
      type: 'BinaryExpression',
      left: { name: 'class' },
      right: { name: 'default' },
    });
  });

  it('builds precedence and associativity like JavaScript', () => {
    expect(parseExpression('a + b * c')).toMatchObject({ operator: '+', right: { operator: '*' } });
    expect(parseExpression('a - b - c')).toMatchObject({ operator: '-', left: { operator: '-' } });
    expect(parseExpression('a || b && c')).toMatchObject({ operator: '||', right: { operator: '&&' } });
    expect(parseExpression('a == b < c')).toMatchObject({ operator: '==', right: { operator: '<' } });
    expect(parseExpression('a ? b : c ? d : e')).toMatchObject({ type: 'ConditionalExpression', alternate: { type: 'ConditionalExpression' } });
    expect(parseExpression('!a.b')).toMatchObject({ type: 'UnaryExpression', argument: { type: 'MemberExpression' } });
    expect(parseExpression('typeof a + "x"')).toMatchObject({ operator: '+', left: { type: 'UnaryExpression', operator: 'typeof' } });
  });

  it('tracks lines and columns of nodes', () => {
    expect(parseExpression('1 +\n  source')).toMatchObject({ right: { type: 'Identifier', start: 6, line: 2, column: 3 } });
    expect(parseExpression('1 +\r\n  source')).toMatchObject({ right: { line: 2, column: 3 } });
  });

  it('has an arity for every helper and method name', () => {
    for (const name of HELPER_NAMES) expect(HELPER_ARITY.has(name)).toBe(true);
    for (const name of METHOD_NAMES) expect(METHOD_ARITY.has(name)).toBe(true);
  });
});

describe('parseExpression: errors name the position', () => {
  it('reports an unexpected token with line and column', () => {
    const err = syntaxError('lower(source))');
    expect(err.message).toBe("Unexpected token ')' at line 1, column 14");
    expect(err.reason).toBe("Unexpected token ')'");
    expect(err).toMatchObject({ position: 13, line: 1, column: 14, name: 'ExpressionSyntaxError' });
    expect(err).toBeInstanceOf(Error);
  });

  it('reports positions on later lines', () => {
    expect(syntaxError('source.a +\n  * 2')).toMatchObject({ position: 13, line: 2, column: 3, reason: "Unexpected token '*'" });
  });

  it.each([
    ['', 'Empty expression', 0],
    ['   ', 'Empty expression', 3],
    ['source.', 'Unexpected end of input', 7],
    ['(1', 'Unexpected end of input', 2],
    ['"abc', 'Unterminated string', 0],
    ["'a\nb'", 'Unterminated string', 0],
    ['`abc', 'Unterminated template', 0],
    ['`a${1', 'Unexpected end of input', 5],
    ['`a${1`', 'Tagged templates are not allowed', 5],
    ['1 /* x', 'Unterminated comment', 2],
    ['"\\x4"', 'Invalid hexadecimal escape', 1],
    ['"\\u12"', 'Invalid unicode escape', 1],
    ['"\\u{110000}"', 'Invalid unicode escape', 1],
    ['"\\07"', 'Octal escapes are not allowed', 1],
    ['1e', 'Invalid number', 0],
    ['0x', 'Invalid number', 0],
    ['0b2', 'Invalid number', 0],
    ['3in', 'Invalid number', 0],
    ['1 2', 'Unexpected number', 2],
    ['a "b"', 'Unexpected string', 2],
    ['a b', "Unexpected token 'b'", 2],
    ['[1,,2]', 'Array holes are not allowed', 3],
    ['lower()', 'lower() takes 1 argument, not 0', 0],
    ['replace(a, b)', 'replace() takes 3 arguments, not 2', 0],
    ['coalesce()', 'coalesce() takes at least 1 argument, not 0', 0],
    ['source.trim(1)', 'trim() takes 0 arguments, not 1', 0],
    ['source.split(1, 2, 3)', 'split() takes 0 to 2 arguments, not 3', 0],
    ['foo(1)', "Unknown function 'foo'", 0],
    ['now(1)', 'now() takes 0 arguments, not 1', 0],
    ['source.map(x)', "Unknown method 'map'", 7],
    ['source["filter"](x)', "Unknown method 'filter'", 7],
    ['source[k]()', 'Only helper functions and methods can be called', 9],
    ['lower(a)(b)', 'Only helper functions and methods can be called', 8],
    ['source?.()', 'Optional calls are not supported', 8],
    ['a ?? b || c', "'??' cannot be mixed with '&&' or '||' without parentheses", 7],
    ['a && b ?? c', "'??' cannot be mixed with '&&' or '||' without parentheses", 7],
    ['a ? b', 'Unexpected end of input', 5],
    ['a ~ b', "Unexpected token '~'", 2],
    ['a ** b', "Unexpected token '**'", 2],
    ['a # b', "Unexpected token '#'", 2],
  ])('%j: %s', (source, reason, position) => {
    expect(syntaxError(source)).toMatchObject({ reason, position });
  });

  it('accepts mixed ?? and || with parentheses', () => {
    expect(() => parseExpression('(a ?? b) || c')).not.toThrow();
    expect(() => parseExpression('a ?? (b || c)')).not.toThrow();
  });

  it(`refuses scripts longer than ${MAX_SOURCE_LENGTH} characters`, () => {
    expect(() => parseExpression('1'.padEnd(MAX_SOURCE_LENGTH, ' '))).not.toThrow();
    expect(syntaxError('1'.padEnd(MAX_SOURCE_LENGTH + 1, ' ')).reason).toBe(`Expression is longer than ${MAX_SOURCE_LENGTH} characters`);
  });

  it(`refuses nesting deeper than ${MAX_NESTING_DEPTH}`, () => {
    const ok = '('.repeat(MAX_NESTING_DEPTH) + '1' + ')'.repeat(MAX_NESTING_DEPTH);
    expect(() => parseExpression(ok)).not.toThrow();
    const deep = '('.repeat(MAX_NESTING_DEPTH + 1) + '1' + ')'.repeat(MAX_NESTING_DEPTH + 1);
    expect(syntaxError(deep)).toMatchObject({ reason: `Expression is nested too deeply (more than ${MAX_NESTING_DEPTH} levels)`, position: MAX_NESTING_DEPTH });
  });

  it('refuses a non-string script', () => {
    expect(syntaxError(42 as unknown as string).reason).toBe('Expression must be a string');
  });
});
