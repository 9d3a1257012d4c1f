/**
 * Hostile scripts: every one must fail cleanly, with ExpressionSyntaxError at parse time (so the rule is
 * refused at create time) or ExpressionEvaluationError at run time, and none may reach or change anything of
 * the host: prototypes, globals, process.
 */
import {
  compileExpression,
  evaluate,
  ExpressionEvaluationError,
  ExpressionSyntaxError,
  MAX_SOURCE_LENGTH,
  parseExpression,
  type ExpressionEvaluationErrorCode,
} from '../../../lib/expression';

function snapshotHost(): Record<string, string[]> {
  const names = (o: object): string[] => Object.getOwnPropertyNames(o).sort();
  return {
    objectPrototype: names(Object.prototype),
    arrayPrototype: names(Array.prototype),
    stringPrototype: names(String.prototype),
    numberPrototype: names(Number.prototype),
    functionPrototype: names(Function.prototype),
    globals: names(globalThis),
  };
}

let before: Record<string, string[]>;
let exitSpy: jest.SpyInstance;

beforeAll(() => {
  before = snapshotHost();
  exitSpy = jest.spyOn(process, 'exit').mockImplementation((() => {
    throw new Error('process.exit was reached');
  }) as never);
});

afterAll(() => {
  // The sandbox held for the whole suite: nothing of the host was reached or changed.
  expect(exitSpy).not.toHaveBeenCalled();
  exitSpy.mockRestore();
  expect(snapshotHost()).toEqual(before);
  expect(({} as Record<string, unknown>).polluted).toBeUndefined();
  expect((globalThis as Record<string, unknown>).polluted).toBeUndefined();
});

function syntaxError(script: string): ExpressionSyntaxError {
  try {
    parseExpression(script);
  } catch (err) {
    expect(err).toBeInstanceOf(ExpressionSyntaxError);
    const e = err as ExpressionSyntaxError;
    expect(Number.isInteger(e.position) && e.line >= 1 && e.column >= 1).toBe(true);
    return e;
  }
  throw new Error(`parsed, but should not: ${script}`);
}

function evaluationError(script: string, scope: Record<string, unknown>, limits?: { maxSteps?: number; maxOutputLength?: number }): ExpressionEvaluationError {
  const ast = parseExpression(script);
  try {
    evaluate(ast, { source: undefined, ...scope }, limits);
  } catch (err) {
    expect(err).toBeInstanceOf(ExpressionEvaluationError);
    return err as ExpressionEvaluationError;
  }
  throw new Error(`evaluated, but should not: ${script}`);
}

describe('refused at parse time', () => {
  it.each<[string, string]>([
    // constructors and prototypes
    ['constructor.constructor("return process")()', "'constructor' is not available"],
    ['source.constructor', "Access to 'constructor' is not allowed"],
    ['source.constructor.constructor("return process")()', "Access to 'constructor' is not allowed"],
    ['source["constructor"]["constructor"]("return process")()', "Access to 'constructor' is not allowed"],
    ['source["__proto__"]', "Access to '__proto__' is not allowed"],
    ['source.__proto__', "Access to '__proto__' is not allowed"],
    ['source.__proto__.polluted', "Access to '__proto__' is not allowed"],
    ['source?.__proto__', "Access to '__proto__' is not allowed"],
    ['source.prototype', "Access to 'prototype' is not allowed"],
    ['source.__defineGetter__', "Access to '__defineGetter__' is not allowed"],
    ['source.__lookupGetter__("x")', "Access to '__lookupGetter__' is not allowed"],
    ['`${source.constructor}`', "Access to 'constructor' is not allowed"],
    ['typeof source.constructor', "Access to 'constructor' is not allowed"],
    ['source.constructor?.name', "Access to 'constructor' is not allowed"],
    // escapes in string keys are decoded before the check
    ['source["\\u0063onstructor"]', "Access to 'constructor' is not allowed"],
    ['source["\\x5f_proto__"]', "Access to '__proto__' is not allowed"],
    ['source["\\u{5f}_proto__"]', "Access to '__proto__' is not allowed"],
    // host globals
    ['this', "'this' is not available"],
    ['this.constructor', "'this' is not available"],
    ['globalThis', "'globalThis' is not available"],
    ['globalThis.process', "'globalThis' is not available"],
    ['global.process.exit()', "'global' is not available"],
    ['process', "'process' is not available"],
    ['process.exit()', "'process' is not available"],
    ['process.env.SECRET', "'process' is not available"],
    ['require("fs")', "'require' is not available"],
    ['module.exports', "'module' is not available"],
    ['eval("1")', "'eval' is not available"],
    ['Function("return process")()', "'Function' is not available"],
    ['Reflect.ownKeys(source)', "'Reflect' is not available"],
    ['Object.keys(source)', "'Object' is not available"],
    ['Symbol.iterator', "'Symbol' is not available"],
    ['arguments', "'arguments' is not available"],
    ['Buffer.from("x")', "'Buffer' is not available"],
    ['import("fs")', "'import' is not allowed"],
    ['with (source) x', "'with' is not allowed"],
    // functions, arrows, new
    ['(function(){})', 'Function literals are not allowed'],
    ['function f() { return 1 }', 'Function literals are not allowed'],
    ['() => 1', "Unexpected token ')'"],
    ['x => x', 'Arrow functions are not allowed'],
    ['(x) => x', 'Arrow functions are not allowed'],
    ['async () => 1', "'async' is not allowed"],
    ['new Date()', "'new' is not allowed"],
    ['class A {}', 'Classes are not allowed'],
    // mutation
    ['x = 1', 'Assignment is not allowed'],
    ['source.a = 1', 'Assignment is not allowed'],
    ['source["__pro" + "to__"]["polluted"] = 1', 'Assignment is not allowed'],
    ['source.a += 1', 'Assignment is not allowed'],
    ['source.a ??= 1', 'Assignment is not allowed'],
    ['source.a++', 'Increment and decrement are not allowed'],
    ['--source.a', 'Increment and decrement are not allowed'],
    ['delete source.a', "'delete' is not allowed"],
    ['void 0', "'void' is not allowed"],
    ['let a = 1', 'Declarations are not allowed'],
    ['1; process.exit()', 'Only one expression is allowed'],
    ['1, 2', "Unexpected token ','"],
    // calling what is not a whitelisted helper or method
    ['source.toString.call()', "Unknown method 'call'"],
    ['source.toString.apply(null)', "Unknown method 'apply'"],
    ['source.toString.bind(null)()', "Unknown method 'bind'"],
    ['source.valueOf()', "Unknown method 'valueOf'"],
    ['source.hasOwnProperty("a")', "Unknown method 'hasOwnProperty'"],
    ['source.map(lower)', "Unknown method 'map'"],
    ['source.filter(x)', "Unknown method 'filter'"],
    ['source.match("a")', "Unknown method 'match'"],
    ['source.localeCompare("a")', "Unknown method 'localeCompare'"],
    ['source["to" + "String"]()', 'Only helper functions and methods can be called'],
    ['source[k]()', 'Only helper functions and methods can be called'],
    ['lower("x")("y")', 'Only helper functions and methods can be called'],
    ['today()', "Unknown function 'today'"],
    ['setTimeout("x")', "'setTimeout' is not available"],
    ['lower`x`', 'Tagged templates are not allowed'],
    ['source?.()', 'Optional calls are not supported'],
    // other syntax
    ['/a/.test(source)', "Unexpected token '/'"],
    ['{}', 'Object literals and blocks are not allowed'],
    ['({}).constructor', 'Object literals and blocks are not allowed'],
    ['[...source]', 'Spread is not allowed'],
    ['lower(...source)', 'Spread is not allowed'],
    ['source in x', "'in' is not allowed"],
    ['source instanceof Object', "'instanceof' is not allowed"],
    ['a ** 2', "Unexpected token '**'"],
    ['#x', "Unexpected token '#'"],
    ['@x', "Unexpected token '@'"],
  ])('%s', (script, reason) => {
    expect(syntaxError(script).reason).toBe(reason);
  });
});

describe('unicode tricks', () => {
  it.each<[string, string]>([
    ['source.\\u0063onstructor', 'Escapes are only allowed inside strings'],
    ['\\u0073ource', 'Escapes are only allowed inside strings'],
    ['\u0455ource.constructor', 'Unexpected character U+0455'],
    ['source\uFF0Econstructor', 'Unexpected character U+FF0E'],
    ['source.\u200Bconstructor', 'Unexpected character U+200B'],
    ['source\u202E.a', 'Unexpected character U+202E'],
    ['source\u2028.a', 'Unexpected character U+2028'],
    ['source\u00A0+ 1', 'Unexpected character U+00A0'],
    ['lower\uFF08source)', 'Unexpected character U+FF08'],
    ['source.c\u043Enstructor', 'Unexpected character U+043E'],
    ['\uD83D\uDE00', 'Unexpected character U+1F600'],
    ['\uFEFFsource', 'Unexpected character U+FEFF'],
  ])('%j', (script, reason) => {
    expect(syntaxError(script).reason).toBe(reason);
  });

  it('look-alike keys in strings are only data: they read nothing but own properties', () => {
    const scope = { source: { a: 1 } };
    for (const key of ['constructor\u200B', '\uFF43onstructor', 'c\u043Enstructor', '__proto__\u0000', 'CONSTRUCTOR']) {
      expect(evaluate(parseExpression('source[key]'), { ...scope, key })).toBeUndefined();
    }
  });
});

describe('refused at evaluation time', () => {
  it.each<[string, Record<string, unknown>, ExpressionEvaluationErrorCode]>([
    // computed keys that reach prototypes or constructors
    ['source["constr" + "uctor"]', { source: {} }, 'forbidden'],
    ['source["constr" + "uctor"]', { source: 'text' }, 'forbidden'],
    ['source["__pro" + "to__"]', { source: {} }, 'forbidden'],
    ['source["__pro" + "to__"]["polluted"]', { source: {} }, 'forbidden'],
    ['source["proto" + "type"]', { source: [] }, 'forbidden'],
    ['source[lower("CONSTRUCTOR")]', { source: {} }, 'forbidden'],
    ['source[`__${"proto"}__`]', { source: {} }, 'forbidden'],
    ['source[source.key]', { source: { key: '__proto__' } }, 'forbidden'],
    ['source[source.key]', { source: JSON.parse('{"__proto__":{"polluted":1},"key":"__proto__"}') }, 'forbidden'],
    ['source["__define" + "Getter__"]', { source: {} }, 'forbidden'],
    ['source.list[source.key]', { source: { list: [1], key: 'constructor' } }, 'forbidden'],
    // JavaScript would coerce ["__proto__"] to "__proto__": keys must be strings or numbers here
    ['source[["__proto__"]]', { source: {} }, 'type_error'],
    ['source[["constructor"]]', { source: {} }, 'type_error'],
    // methods are not values
    ['source.toString', { source: 'text' }, 'type_error'],
    ['source.toString.call', { source: 'text' }, 'type_error'],
    ['source.toString.call', { source: {} }, 'type_error'],
    ['source.concat', { source: [] }, 'type_error'],
    // host objects in the scope are opaque
    ['source.when.x', { source: { when: new Date(0) } }, 'forbidden'],
    ['source.map.size', { source: { map: new Map([['a', 1]]) } }, 'forbidden'],
    ['source.buffer[0]', { source: { buffer: Buffer.from('secret') } }, 'forbidden'],
    [
      'source.user.secret',
      {
        source: {
          user: new (class User {
            secret = 's';
          })(),
        },
      },
      'forbidden',
    ],
    ['source.fn', { source: { fn: () => 'called' } }, 'type_error'],
    ['fn', { fn: () => 'called' }, 'type_error'],
    ['source.list[0]', { source: { list: [() => 'called'] } }, 'type_error'],
    ['source.sym', { source: { sym: Symbol('x') } }, 'type_error'],
    ['source.big', { source: { big: BigInt(1) } }, 'type_error'],
    // names that are not in the scope
    ['nothing', { source: 1 }, 'not_defined'],
    ['toString', { source: 1 }, 'not_defined'],
    ['hasOwnProperty', { source: 1 }, 'not_defined'],
    ['source.missing.toLowerCase()', { source: {} }, 'type_error'],
  ])('%s', (script, scope, code) => {
    expect(evaluationError(script, scope).code).toBe(code);
  });

  it('never calls a function found in the scope', () => {
    const fn = jest.fn(() => 'called');
    const scope = { source: { fn, list: [fn], nested: { fn } } };
    for (const script of [
      'source.fn',
      'source.list[0]',
      'source.nested.fn',
      'source.list.join(",")',
      'source.list + ""',
      '`${source.list}`',
      'lower(source.list)',
      'source.list == "x"',
    ]) {
      expect(() => evaluate(parseExpression(script), scope)).toThrow(ExpressionEvaluationError);
    }
    expect(fn).not.toHaveBeenCalled();
  });

  it('never calls toString or valueOf of a scope value', () => {
    const toString = jest.fn(() => 'x');
    const valueOf = jest.fn(() => 1);
    const sneaky = { toString, valueOf };
    for (const script of [
      'source + ""',
      'source * 1',
      'source < 1',
      '`${source}`',
      'lower(source)',
      '"a".concat(source)',
      'toNumber(source)',
      'join([source], ",")',
    ]) {
      expect(() => evaluate(parseExpression(script), { source: sneaky })).toThrow(ExpressionEvaluationError);
    }
    // Loose equality compares an object with a primitive as unequal instead of converting it.
    expect(evaluate(parseExpression('source == "x"'), { source: sneaky })).toBe(false);
    expect(evaluate(parseExpression('source != 1'), { source: sneaky })).toBe(true);
    expect(toString).not.toHaveBeenCalled();
    expect(valueOf).not.toHaveBeenCalled();
  });

  it('never runs a Symbol.split or Symbol.isConcatSpreadable of a scope value', () => {
    const split = jest.fn(() => ['hijacked']);
    const sep = { [Symbol.split]: split };
    expect(() => evaluate(parseExpression('"a,b".split(source)'), { source: sep })).toThrow(ExpressionEvaluationError);
    expect(split).not.toHaveBeenCalled();
    const spreadable = { [Symbol.isConcatSpreadable]: true, length: 1e9 };
    expect(evaluate(parseExpression('[].concat(source).length'), { source: spreadable })).toBe(1);
  });

  it('turns a host error into a generic message that reveals nothing', () => {
    const trap = new Proxy(
      {},
      {
        getPrototypeOf: () => {
          throw new Error('secret-password-123');
        },
      },
    );
    const err = evaluationError('source.x', { source: trap });
    expect(err.code).toBe('internal');
    expect(err.message).not.toContain('secret');
  });

  it('survives cyclic arrays', () => {
    const cyclic: unknown[] = ['a'];
    cyclic.push(cyclic);
    for (const script of ['source + ""', 'source.join(",")', '`${source}`', 'join(source, ",")', 'source == "a"']) {
      expect(evaluationError(script, { source: cyclic }).code).toBe('type_error');
    }
  });
});

describe('resource exhaustion', () => {
  const long = 'x'.repeat(1000);

  it.each<[string, unknown]>([
    ['"a".repeat(1e9)', undefined],
    ['"a".repeat(70000)', undefined],
    ['"a".padStart(1e9)', undefined],
    ['"a".padEnd(1e9, "xy")', undefined],
    ['padStart("a", 1e9, "0")', undefined],
    ['source.replaceAll("x", source)', long],
    ['source.replaceAll("", source)', long],
    ['replace(source, "x", source)', long],
    [
      'source.concat(source, source, source, source, source, source, source, source, source, source, source, source, source, source, source, source, source, source, source, source, source, source, source, source, source, source, source, source, source, source, source, source, source, source, source, source, source, source, source, source, source, source, source, source, source, source, source, source, source, source, source, source, source, source, source, source, source, source, source, source, source, source, source, source, source, source)',
      long,
    ],
    ['join(split(source, ""), source)', long],
    ['source.split("").join(source)', long],
    [
      'source.split("").concat(source.split(""), source.split(""), source.split(""), source.split(""), source.split(""), source.split(""), source.split(""), source.split(""), source.split(""), source.split(""), source.split(""), source.split(""), source.split(""), source.split(""), source.split(""), source.split(""), source.split(""), source.split(""), source.split(""), source.split(""), source.split(""), source.split(""), source.split(""), source.split(""), source.split(""), source.split(""), source.split(""), source.split(""), source.split(""), source.split(""), source.split(""), source.split(""), source.split(""), source.split(""), source.split(""), source.split(""), source.split(""), source.split(""), source.split(""), source.split(""), source.split(""), source.split(""), source.split(""), source.split(""), source.split(""), source.split(""), source.split(""), source.split(""), source.split(""), source.split(""), source.split(""), source.split(""), source.split(""), source.split(""), source.split(""), source.split(""), source.split(""), source.split(""), source.split(""), source.split(""), source.split(""), source.split(""), source.split(""), source.split(""), source.split(""))',
      long,
    ],
    [`${Array.from({ length: 70 }, () => 'source').join(' + ')}`, long],
    ['`${source.repeat(30)}${source.repeat(30)}${source.repeat(30)}`', long],
    ['source.repeat(60) + source.repeat(60)', long],
  ])('%s', (script, source) => {
    expect(evaluationError(script, { source }).code).toBe('output_limit');
  });

  it('bounds steps: a tight budget stops a long but legal script', () => {
    const script = Array.from({ length: 100 }, (_, i) => `source.a${i}`).join(' ?? ');
    expect(evaluationError(script, { source: {} }, { maxSteps: 50 }).code).toBe('step_limit');
  });

  it('bounds work on long strings through the step budget', () => {
    // About 124 steps of work per call on a 64 KB string: 100 calls exceed the default budget of 10,000.
    const script = Array.from({ length: 100 }, () => 'source.toUpperCase().length').join(' + ');
    expect(evaluationError(script, { source: 'x'.repeat(64_000) }).code).toBe('step_limit');
  });

  it.each<[string, string]>([
    ['deep parentheses', '('.repeat(1000) + '1' + ')'.repeat(1000)],
    ['deep unary', '!'.repeat(1000) + '1'],
    ['deep arrays', '['.repeat(1000) + ']'.repeat(1000)],
    ['deep ternaries', 'a ? b : '.repeat(200) + 'c'],
    ['deep calls', 'lower('.repeat(200) + 'source' + ')'.repeat(200)],
    ['deep templates', '`${'.repeat(200) + '1' + '}`'.repeat(200)],
    ['deep computed keys', 'source['.repeat(200) + '0' + ']'.repeat(200)],
  ])('%s', (_label, script) => {
    expect(syntaxError(script.slice(0, MAX_SOURCE_LENGTH)).reason).toMatch(/nested too deeply/);
  });

  it('bounds the tree depth of long operator chains', () => {
    expect(syntaxError(Array.from({ length: 1000 }, () => '1').join('+')).reason).toMatch(/too complex/);
    expect(syntaxError('source' + '.a'.repeat(1000)).reason).toMatch(/too complex/);
    expect(syntaxError('source' + '.trim()'.repeat(500)).reason).toMatch(/too complex/);
  });

  it('refuses very long input before reading it', () => {
    expect(syntaxError('a'.repeat(100_000)).reason).toBe(`Expression is longer than ${MAX_SOURCE_LENGTH} characters`);
    expect(syntaxError(`"${'x'.repeat(10_000)}"`).reason).toBe(`Expression is longer than ${MAX_SOURCE_LENGTH} characters`);
    expect(syntaxError('1 + '.repeat(2000) + '1').reason).toBe(`Expression is longer than ${MAX_SOURCE_LENGTH} characters`);
  });

  it('compiled expressions stay bounded across many evaluations', () => {
    const compiled = compileExpression('source.repeat(n)');
    for (let i = 0; i < 5; i++) expect(() => compiled.evaluate({ source: 'ab', n: 1e9 })).toThrow(ExpressionEvaluationError);
    expect(compiled.evaluate({ source: 'ab', n: 2 })).toBe('abab');
  });
});
