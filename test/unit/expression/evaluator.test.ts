import {
  compileExpression,
  DEFAULT_MAX_OUTPUT_LENGTH,
  evaluate,
  ExpressionEvaluationError,
  parseExpression,
  type ExpressionScope,
} from '../../../lib/expression';

const run = (script: string, source?: unknown, extra: Record<string, unknown> = {}): unknown => evaluate(parseExpression(script), { source, ...extra });

function evaluationError(script: string, source?: unknown, limits?: { maxSteps?: number; maxOutputLength?: number }): ExpressionEvaluationError {
  const ast = parseExpression(script);
  try {
    evaluate(ast, { source }, limits);
  } catch (err) {
    expect(err).toBeInstanceOf(ExpressionEvaluationError);
    return err as ExpressionEvaluationError;
  }
  throw new Error(`expected an evaluation error for ${script}`);
}

const person = {
  givenName: 'Ada',
  sn: 'Lovelace',
  mail: 'Ada.Lovelace@Example.COM',
  employeeId: 42,
  active: true,
  title: '',
  proxyAddresses: ['SMTP:ada@example.com', 'smtp:al@example.com'],
  manager: { id: 7, name: 'Charles' },
  nothing: null,
};

describe('the contract examples', () => {
  it('source.toLowerCase()', () => {
    expect(run('source.toLowerCase()', 'Ada@Example.COM')).toBe('ada@example.com');
  });

  it('source.split("@")[0]', () => {
    expect(run('source.split("@")[0]', 'ada@example.com')).toBe('ada');
  });

  it('source.givenName + " " + source.sn', () => {
    expect(run('source.givenName + " " + source.sn', person)).toBe('Ada Lovelace');
  });

  it('ternaries and comparisons', () => {
    expect(run('source.employeeId > 40 ? "senior" : "junior"', person)).toBe('senior');
    expect(run('source.employeeId >= 43 ? "senior" : "junior"', person)).toBe('junior');
    expect(run('source.title === "" ? source.givenName : source.title', person)).toBe('Ada');
    expect(run('source.active && source.mail.endsWith(".COM")', person)).toBe(true);
  });
});

describe('identifiers and scope', () => {
  it('resolves names from the scope', () => {
    expect(run('"cn=" + source + "," + baseDN', 'ada', { baseDN: 'dc=example,dc=com' })).toBe('cn=ada,dc=example,dc=com');
  });

  it('refuses names the scope does not own', () => {
    expect(evaluationError('baseDN', 'x')).toMatchObject({ code: 'not_defined', reason: "'baseDN' is not defined", line: 1, column: 1 });
    const scope = Object.create({ inherited: 'no' }) as ExpressionScope;
    scope.source = 1;
    expect(() => evaluate(parseExpression('inherited'), scope)).toThrow("'inherited' is not defined");
    expect(() => evaluate(parseExpression('toString'), { source: 1 })).toThrow("'toString' is not defined");
  });

  it('works with a null-prototype scope and source', () => {
    const scope = Object.assign(Object.create(null) as ExpressionScope, { source: Object.assign(Object.create(null), { a: 'x' }) });
    expect(evaluate(parseExpression('source.a + "!"'), scope)).toBe('x!');
  });

  it('refuses a scope that is not an object', () => {
    expect(() => evaluate(parseExpression('1'), null as unknown as ExpressionScope)).toThrow(ExpressionEvaluationError);
  });
});

describe('member access', () => {
  it('reads own properties, indexes and lengths', () => {
    expect(run('source.manager.name', person)).toBe('Charles');
    expect(run('source["givenName"]', person)).toBe('Ada');
    expect(run('source["given" + "Name"]', person)).toBe('Ada');
    expect(run('source.proxyAddresses[1]', person)).toBe('smtp:al@example.com');
    expect(run('source.proxyAddresses["0"]', person)).toBe('SMTP:ada@example.com');
    expect(run('source.proxyAddresses.length', person)).toBe(2);
    expect(run('source.proxyAddresses[5]', person)).toBeUndefined();
    expect(run('source.proxyAddresses[-1]', person)).toBeUndefined();
    expect(run('source.proxyAddresses[0.5]', person)).toBeUndefined();
    expect(run('source.sn.length', person)).toBe(8);
    expect(run('source.sn[0]', person)).toBe('L');
    expect(run('source.sn[99]', person)).toBeUndefined();
    expect(run('source[1]', { 1: 'one' })).toBe('one');
  });

  it('gives undefined for missing attributes, and errors when reading through them', () => {
    expect(run('source.missing', person)).toBeUndefined();
    expect(run('source.givenName.missing', person)).toBeUndefined();
    expect(run('source.employeeId.x', person)).toBeUndefined();
    expect(evaluationError('source.missing.toLowerCase()', person)).toMatchObject({
      code: 'type_error',
      message: "Cannot call 'toLowerCase' on undefined at line 1, column 15",
      position: 14,
    });
    expect(evaluationError('source.missing.x', person)).toMatchObject({ code: 'type_error', reason: "Cannot read 'x' of undefined", column: 15 });
    expect(evaluationError('source.nothing[0]', person)).toMatchObject({ code: 'type_error', reason: 'Cannot read a property of null' });
  });

  it('refuses non-string, non-number keys', () => {
    expect(evaluationError('source[source.proxyAddresses]', person)).toMatchObject({ code: 'type_error' });
    expect(evaluationError('source[true]', person)).toMatchObject({ code: 'type_error' });
  });

  it('refuses to read a method as a value', () => {
    expect(evaluationError('source.toLowerCase', 'x')).toMatchObject({ code: 'type_error', reason: "'toLowerCase' is a method: call it as toLowerCase()" });
    expect(evaluationError('source.join', ['x'])).toMatchObject({ code: 'type_error' });
    expect(evaluationError('source.toFixed', 1)).toMatchObject({ code: 'type_error' });
  });

  it('optional chaining short-circuits the whole chain', () => {
    expect(run('source.missing?.toLowerCase()', person)).toBeUndefined();
    expect(run('source.missing?.a.b.c', person)).toBeUndefined();
    expect(run('source.missing?.[0]', person)).toBeUndefined();
    expect(run('source.manager?.name', person)).toBe('Charles');
    expect(run('source.mail?.toLowerCase()', person)).toBe('ada.lovelace@example.com');
    expect(run('source.missing?.x ?? "none"', person)).toBe('none');
    expect(evaluationError('(source.missing?.a).b', person)).toMatchObject({ code: 'type_error' });
  });
});

describe('operators', () => {
  it.each<[string, unknown, unknown?]>([
    ['1 + 2', 3],
    ['"a" + "b"', 'ab'],
    ['"a" + 1', 'a1'],
    ['1 + "a"', '1a'],
    ['1 + 2 + "3"', '33'],
    ['"1" + 2 + 3', '123'],
    ['true + 1', 2],
    ['null + 1', 1],
    ['"x" + undefined', 'xundefined'],
    ['"x" + null', 'xnull'],
    ['[1, 2] + "|"', '1,2|'],
    ['[1, [2, 3], null] + ""', '1,2,3,'],
    ['7 - 2', 5],
    ['"7" - 2', 5],
    ['3 * 4', 12],
    ['"3" * "4"', 12],
    ['7 / 2', 3.5],
    ['1 / 0', Infinity],
    ['7 % 3', 1],
    ['-7 % 3', -1],
    ['-"3"', -3],
    ['+"3"', 3],
    ['+""', 0],
    ['-source', -5, 5],
    ['!0', true],
    ['!"x"', false],
    ['!!source', true, []],
    ['typeof 1', 'number'],
    ['typeof "s"', 'string'],
    ['typeof true', 'boolean'],
    ['typeof undefined', 'undefined'],
    ['typeof null', 'object'],
    ['typeof source', 'object', [1]],
    ['typeof source.missing', 'undefined', {}],
    ['typeof nothing', 'undefined'],
    ['1 == "1"', true],
    ['1 === "1"', false],
    ['1 != "1"', false],
    ['1 !== "1"', true],
    ['null == undefined', true],
    ['null === undefined', false],
    ['null == 0', false],
    ['"" == 0', true],
    ['true == "1"', true],
    ['[1,2] == "1,2"', true],
    ['source == source', true, { a: 1 }],
    ['source == "[object Object]"', false, { a: 1 }],
    ['"b" > "a"', true],
    ['"B" < "a"', true],
    ['"10" < "9"', true],
    ['10 < 9', false],
    ['"10" < 9', false],
    ['2 <= 2', true],
    ['3 >= 4', false],
    ['undefined < 1', false],
    ['null < 1', true],
    ['1 && "x"', 'x'],
    ['0 && "x"', 0],
    ['0 || "x"', 'x'],
    ['"a" || "x"', 'a'],
    ['0 ?? "x"', 0],
    ['null ?? "x"', 'x'],
    ['undefined ?? null ?? "x"', 'x'],
    ['true ? 1 : 2', 1],
    ['"" ? 1 : 2', 2],
    ['1 ? 2 ? 3 : 4 : 5', 3],
    ['0 ? 1 : 0 ? 2 : 3', 3],
    ['[1, "a", [true]]', [1, 'a', [true]]],
    ['[]', []],
    ['`a${1 + 1}b${source}c`', 'a2bxc', 'x'],
    ['`${[1,2]}`', '1,2'],
    ['`${undefined}`', 'undefined'],
    ['`line\nbreak`', 'line\nbreak'],
  ])('%s', (script, expected, source: unknown = undefined) => {
    // (`source` has a default so that the callback's length stays 2: jest reads a third parameter as `done`.)
    expect(run(script, source)).toEqual(expected);
  });

  it('follows JavaScript precedence', () => {
    expect(run('1 + 2 * 3')).toBe(7);
    expect(run('(1 + 2) * 3')).toBe(9);
    expect(run('1 - 2 - 3')).toBe(-4);
    expect(run('2 * 3 % 4')).toBe(2);
    expect(run('12 / 2 / 3')).toBe(2);
    expect(run('-2 * 3')).toBe(-6);
    expect(run('1 < 2 == true')).toBe(true);
    expect(run('true || false && false')).toBe(true);
    expect(run('(true || false) && false')).toBe(false);
    expect(run('!1 == 0')).toBe(true);
    expect(run('1 + 1 == 2 ? "y" : "n"')).toBe('y');
    expect(run('typeof 1 + "x"')).toBe('numberx');
    expect(run('null ?? 1 + 1')).toBe(2);
  });

  it('short-circuits: the right side of && || ?? and the untaken ternary branch are not evaluated', () => {
    expect(run('false && source.missing.x')).toBe(false);
    expect(run('true || source.missing.x')).toBe(true);
    expect(run('"v" ?? source.missing.x')).toBe('v');
    expect(run('true ? 1 : source.missing.x')).toBe(1);
  });

  it('refuses objects where a primitive is needed', () => {
    expect(evaluationError('source + ""', { a: 1 })).toMatchObject({ code: 'type_error' });
    expect(evaluationError('source * 2', { a: 1 })).toMatchObject({ code: 'type_error' });
    expect(evaluationError('source < 2', { a: 1 })).toMatchObject({ code: 'type_error' });
    expect(evaluationError('`${source}`', { a: 1 })).toMatchObject({ code: 'type_error' });
    expect(evaluationError('-source', { a: 1 })).toMatchObject({ code: 'type_error' });
  });
});

describe('string methods', () => {
  it.each<[string, unknown]>([
    ['source.toLowerCase()', ' hello, world '],
    ['source.toUpperCase()', ' HELLO, WORLD '],
    ['source.trim()', 'Hello, World'],
    ['source.trimStart()', 'Hello, World '],
    ['source.trimEnd()', ' Hello, World'],
    ['source.split(",")', [' Hello', ' World ']],
    ['source.split(",", 1)', [' Hello']],
    ['source.split()', [' Hello, World ']],
    ['source.split("")[1]', 'H'],
    ['source.substring(1, 6)', 'Hello'],
    ['source.substring(6)', ', World '],
    ['source.slice(-6, -1)', 'World'],
    ['source.slice()', ' Hello, World '],
    ['source.indexOf("o")', 5],
    ['source.indexOf("o", 6)', 9],
    ['source.includes("World")', true],
    ['source.includes("world")', false],
    ['source.startsWith(" He")', true],
    ['source.endsWith("d ")', true],
    ['source.endsWith("d", 13)', true],
    ['source.replace("o", "0")', ' Hell0, World '],
    ['source.replace("$&", "x")', ' Hello, World '],
    ['source.replace("o", "$&$&")', ' Hell$&$&, World '],
    ['source.replaceAll("o", "0")', ' Hell0, W0rld '],
    ['source.replaceAll("l", "")', ' Heo, Word '],
    ['source.trim().padStart(14, "*")', '**Hello, World'],
    ['source.trim().padEnd(14, "-")', 'Hello, World--'],
    ['source.trim().padStart(3)', 'Hello, World'],
    ['source.charAt(1)', 'H'],
    ['source.charAt()', ' '],
    ['source.trim().concat("!", 1, true)', 'Hello, World!1true'],
    ['source.trim().repeat(2)', 'Hello, WorldHello, World'],
    ['source.trim().repeat(0)', ''],
    ['source.toString()', ' Hello, World '],
  ])('%s', (script, expected) => {
    expect(run(script, ' Hello, World ')).toEqual(expected);
  });

  it('replaceAll with an empty search inserts between characters, as JavaScript does', () => {
    expect(run('source.replaceAll("", "-")', 'ab')).toBe('ab'.replaceAll('', '-'));
    expect(run('source.replaceAll("", "-")', '')).toBe(''.replaceAll('', '-'));
  });

  it('refuses bad repeat counts', () => {
    expect(evaluationError('"a".repeat(-1)')).toMatchObject({ code: 'invalid_argument' });
    expect(evaluationError('"a".repeat(1.5)')).toMatchObject({ code: 'invalid_argument' });
    expect(evaluationError('"a".repeat(1 / 0)')).toMatchObject({ code: 'invalid_argument' });
  });

  it('refuses a method of another type', () => {
    expect(evaluationError('source.join(",")', 'abc')).toMatchObject({ code: 'type_error', reason: "'join' is not a method of a string" });
    expect(evaluationError('source.toLowerCase()', ['a'])).toMatchObject({ code: 'type_error', reason: "'toLowerCase' is not a method of an array" });
    expect(evaluationError('source.toString()', { toString: 'x' })).toMatchObject({ code: 'type_error', reason: "'toString' is not a method of an object" });
    expect(evaluationError('source.trim()', 5)).toMatchObject({ code: 'type_error' });
  });
});

describe('array, number and boolean methods', () => {
  const list = ['b', 'a', null, 'c'];
  it.each<[string, unknown]>([
    ['source.join("; ")', 'b; a; ; c'],
    ['source.join()', 'b,a,,c'],
    ['source.includes("a")', true],
    ['source.includes(null)', true],
    ['source.includes("z")', false],
    ['source.indexOf("c")', 3],
    ['source.indexOf("a", 2)', -1],
    ['source.slice(1, 2)', ['a']],
    ['source.slice(-1)', ['c']],
    ['source.concat(["d"], "e", [["f"]])', ['b', 'a', null, 'c', 'd', 'e', ['f']]],
    ['source.toString()', 'b,a,,c'],
    ['source.length', 4],
  ])('%s', (script, expected) => {
    expect(run(script, list)).toEqual(expected);
  });

  it('does not mutate the source array', () => {
    const source = ['x'];
    run('source.concat("y")', source);
    expect(source).toEqual(['x']);
  });

  it('number and boolean methods', () => {
    expect(run('source.toFixed(2)', 3.14159)).toBe('3.14');
    expect(run('source.toFixed()', 2.5)).toBe('3');
    expect(run('source.toString()', 255)).toBe('255');
    expect(run('source.toString(16)', 255)).toBe('ff');
    expect(run('(12).toString(2)')).toBe('1100');
    expect(run('true.toString()')).toBe('true');
    expect(evaluationError('source.toFixed(101)', 1)).toMatchObject({ code: 'invalid_argument' });
    expect(evaluationError('source.toString(1)', 1)).toMatchObject({ code: 'invalid_argument' });
  });
});

describe('limits', () => {
  it('stops after maxSteps', () => {
    const err = evaluationError('1 + 1 + 1 + 1 + 1', undefined, { maxSteps: 5 });
    expect(err).toMatchObject({ code: 'step_limit', reason: 'Expression exceeded 5 steps' });
    expect(run('1 + 1 + 1 + 1 + 1')).toBe(5);
  });

  it('charges work on long strings to the step budget', () => {
    const long = 'x'.repeat(60_000);
    // 30 method calls on a 60 KB string: cheap in nodes, but about 60 steps of work each.
    const script = Array.from({ length: 30 }, () => 'source.toUpperCase().length').join(' + ');
    expect(run(script, long)).toBe(30 * 60_000);
    expect(evaluationError(script, long, { maxSteps: 1000 })).toMatchObject({ code: 'step_limit' });
  });

  it('refuses strings longer than maxOutputLength', () => {
    expect(run('source + source', 'x'.repeat(DEFAULT_MAX_OUTPUT_LENGTH / 2))).toHaveLength(DEFAULT_MAX_OUTPUT_LENGTH);
    expect(evaluationError('source + source + "!"', 'x'.repeat(DEFAULT_MAX_OUTPUT_LENGTH / 2))).toMatchObject({ code: 'output_limit' });
    expect(evaluationError('source + "abc"', 'x', { maxOutputLength: 3 })).toMatchObject({ code: 'output_limit' });
    expect(evaluationError('`${source}${source}`', 'xx', { maxOutputLength: 3 })).toMatchObject({ code: 'output_limit' });
  });

  it('passes a long value read from source through unchanged', () => {
    const big = 'y'.repeat(DEFAULT_MAX_OUTPUT_LENGTH * 2);
    expect(run('source', big)).toBe(big);
  });

  it('validates the limits themselves', () => {
    expect(() => evaluate(parseExpression('1'), { source: 1 }, { maxSteps: 0 })).toThrow(ExpressionEvaluationError);
    expect(() => evaluate(parseExpression('1'), { source: 1 }, { maxOutputLength: 1.5 })).toThrow(ExpressionEvaluationError);
  });
});

describe('compileExpression', () => {
  it('parses once and evaluates many scopes', () => {
    const compiled = compileExpression('source.givenName + " " + source.sn');
    expect(compiled.source).toBe('source.givenName + " " + source.sn');
    expect(compiled.ast.type).toBe('BinaryExpression');
    expect(compiled.evaluate({ source: { givenName: 'A', sn: 'B' } })).toBe('A B');
    expect(compiled.evaluate({ source: { givenName: 'C', sn: 'D' } })).toBe('C D');
  });

  it('resets the step budget between evaluations, also after a failure', () => {
    const compiled = compileExpression('source.a.b + 1 + 1', { maxSteps: 7 });
    expect(() => compiled.evaluate({ source: {} })).toThrow(ExpressionEvaluationError);
    for (let i = 0; i < 10; i++) expect(compiled.evaluate({ source: { a: { b: 1 } } })).toBe(3);
  });

  it('throws syntax errors at compile time', () => {
    expect(() => compileExpression('source.')).toThrow('Unexpected end of input at line 1, column 8');
  });
});

describe('the examples of docs/expressions.md', () => {
  const user = {
    givenName: 'Ada',
    sn: 'Lovelace',
    employeeType: 'employee',
    employeeId: '42',
    proxyAddresses: ['SMTP:ada@example.com'],
    mail: 'ada@example.com',
    enabled: false,
    hireDate: '2024-01-31T12:00:00Z',
    cn: 'Lovelace, Ada',
    manager: 'cn=Babbage\\, Charles,ou=people,dc=example,dc=com',
    dn: 'cn=Ada,ou=Engineering,dc=example,dc=com',
  };

  it.each<[string, unknown]>([
    ['trim(`${source.givenName ?? ""} ${source.sn}`)', 'Ada Lovelace'],
    ['source.employeeType === "employee" && !isEmpty(source.employeeId)', true],
    ['lower(left(source.givenName, 1) + source.sn)', 'alovelace'],
    ['padStart(source.employeeId, 8, "0")', '00000042'],
    ['coalesce(first(source.proxyAddresses), source.mail)', 'SMTP:ada@example.com'],
    ['source.enabled ? "active" : "disabled"', 'disabled'],
    ['formatDate(source.hireDate, "yyyy-MM-dd")', '2024-01-31'],
    ['"cn=" + dnEscape(source.cn) + ",ou=people," + baseDN', 'cn=Lovelace\\, Ada,ou=people,dc=example,dc=com'],
    ['dnRdnValue(source.manager)', 'Babbage, Charles'],
    ['dnRdnValue(dnParent(source.dn))', 'Engineering'],
    ['dnParent("cn=a,ou=people,dc=x")', 'ou=people,dc=x'],
    ['dnRdnValue("cn=Smith\\\\, John,ou=people")', 'Smith, John'],
  ])('%s', (script, expected) => {
    expect(run(script, user, { baseDN: 'dc=example,dc=com' })).toEqual(expected);
  });

  it('a missing given name does not break the tolerant display name', () => {
    expect(run('trim(`${source.givenName ?? ""} ${source.sn}`)', { sn: 'Lovelace' })).toBe('Lovelace');
  });
});
