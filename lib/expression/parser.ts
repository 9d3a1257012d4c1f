import type { SourcePosition, BinaryOperator, Expression, LogicalOperator, MemberExpression, UnaryOperator } from './ast';
import { ExpressionSyntaxError } from './errors';
import { FORBIDDEN_PROPERTIES, HELPER_ARITY, HELPER_NAMES, METHOD_ARITY, METHOD_NAMES, RESERVED_IDENTIFIERS, UNSUPPORTED_KEYWORDS } from './names';

/** Longest script `parseExpression` accepts, in UTF-16 code units. */
export const MAX_SOURCE_LENGTH = 4096;

/** Deepest syntactic nesting (parentheses, brackets, calls, unary operators, ternary branches, `${}`). */
export const MAX_NESTING_DEPTH = 64;

/**
 * Deepest tree the parser returns. Long operator chains (`a + b + c ...`) nest the tree without nesting the
 * syntax; the evaluator recurses on the tree, so its depth is bounded too.
 */
export const MAX_TREE_DEPTH = 256;

type TokenType = 'eof' | 'num' | 'str' | 'name' | 'punct';

interface Token {
  type: TokenType;
  /** Punctuator or identifier text; for 'str' the cooked string; for 'num' the raw text. */
  value: string;
  num: number;
  start: number;
  end: number;
}

// Longest first, so that `===` is not read as `==` then `=`. Operators the language refuses are still read
// whole so that the error names them (`+=` is an assignment, not `+` followed by a stray `=`).
const PUNCTUATORS = [
  '>>>=',
  '===',
  '!==',
  '**=',
  '...',
  '??=',
  '||=',
  '&&=',
  '<<=',
  '>>=',
  '>>>',
  '=>',
  '==',
  '!=',
  '<=',
  '>=',
  '&&',
  '||',
  '??',
  '?.',
  '++',
  '--',
  '+=',
  '-=',
  '*=',
  '/=',
  '%=',
  '&=',
  '|=',
  '^=',
  '**',
  '<<',
  '>>',
  '(',
  ')',
  '[',
  ']',
  '{',
  '}',
  ',',
  '.',
  '?',
  ':',
  '!',
  '+',
  '-',
  '*',
  '/',
  '%',
  '<',
  '>',
  '=',
  '`',
  ';',
  '&',
  '|',
  '^',
  '~',
  '@',
  '#',
];

/** Punctuators by first character, longest first, so the scanner tries only those that can match. */
const PUNCTUATORS_BY_FIRST_CHAR: ReadonlyMap<string, string[]> = PUNCTUATORS.reduce((map, p) => {
  map.set(p[0], [...(map.get(p[0]) ?? []), p]);
  return map;
}, new Map<string, string[]>());

const ASSIGNMENTS = new Set(['=', '+=', '-=', '*=', '/=', '%=', '**=', '??=', '||=', '&&=', '<<=', '>>=', '>>>=', '&=', '|=', '^=']);

const TOKEN_MESSAGES: ReadonlyMap<string, string> = new Map([
  ['=>', 'Arrow functions are not allowed'],
  ['++', 'Increment and decrement are not allowed'],
  ['--', 'Increment and decrement are not allowed'],
  ['...', 'Spread is not allowed'],
  [';', 'Only one expression is allowed'],
  ['{', 'Object literals and blocks are not allowed'],
]);

const BINARY_PRECEDENCE: ReadonlyMap<string, number> = new Map([
  ['??', 1],
  ['||', 1],
  ['&&', 2],
  ['==', 3],
  ['!=', 3],
  ['===', 3],
  ['!==', 3],
  ['<', 4],
  ['<=', 4],
  ['>', 4],
  ['>=', 4],
  ['+', 5],
  ['-', 5],
  ['*', 6],
  ['/', 6],
  ['%', 6],
]);

const LITERAL_NAMES: ReadonlyMap<string, boolean | null | undefined> = new Map<string, boolean | null | undefined>([
  ['true', true],
  ['false', false],
  ['null', null],
  ['undefined', undefined],
]);

const isDigit = (c: number): boolean => c >= 48 && c <= 57;
const isHexDigit = (c: number): boolean => isDigit(c) || (c >= 65 && c <= 70) || (c >= 97 && c <= 102);
// ASCII only on purpose: no unicode escapes or look-alike letters in names, so what an admin reads is what runs.
const isIdentStart = (c: number): boolean => (c >= 65 && c <= 90) || (c >= 97 && c <= 122) || c === 36 || c === 95;
const isIdentPart = (c: number): boolean => isIdentStart(c) || isDigit(c);

/** How a character is shown in an error: printable ASCII as is, anything else as a code point. */
function describeChar(ch: string): string {
  const code = ch.codePointAt(0) ?? 0;
  return code >= 0x20 && code < 0x7f ? `'${ch}'` : `U+${code.toString(16).toUpperCase().padStart(4, '0')}`;
}

class Parser {
  private pos = 0;
  private tok: Token;
  private depth = 0;
  private readonly lineStarts: number[] = [0];
  /** Nodes written in parentheses, for the rule that `??` and `&&`/`||` cannot be mixed without them. */
  private readonly parenthesized = new WeakSet<Expression>();

  constructor(private readonly src: string) {
    for (let i = 0; i < src.length; i++) {
      const c = src.charCodeAt(i);
      if (c === 10 || (c === 13 && src.charCodeAt(i + 1) !== 10)) this.lineStarts.push(i + 1);
    }
    this.tok = this.scan();
  }

  parse(): Expression {
    const first = this.tok;
    if (first.type === 'eof') this.fail('Empty expression', first.start);
    const expr = this.parseExpression();
    if (this.tok.type !== 'eof') this.unexpected();
    this.checkTreeDepth(expr);
    return expr;
  }

  // ---- positions and errors ----

  private lineCol(pos: number): { line: number; column: number } {
    let lo = 0;
    let hi = this.lineStarts.length - 1;
    while (lo < hi) {
      const mid = (lo + hi + 1) >> 1;
      if (this.lineStarts[mid] <= pos) lo = mid;
      else hi = mid - 1;
    }
    return { line: lo + 1, column: pos - this.lineStarts[lo] + 1 };
  }

  private fail(reason: string, pos: number): never {
    const { line, column } = this.lineCol(pos);
    throw new ExpressionSyntaxError(reason, pos, line, column);
  }

  private unexpected(tok: Token = this.tok): never {
    if (tok.type === 'eof') this.fail('Unexpected end of input', tok.start);
    if (tok.type === 'punct') {
      if (ASSIGNMENTS.has(tok.value)) this.fail('Assignment is not allowed', tok.start);
      const message = TOKEN_MESSAGES.get(tok.value);
      if (message) this.fail(message, tok.start);
    }
    if (tok.type === 'name') {
      const message = UNSUPPORTED_KEYWORDS.get(tok.value);
      if (message) this.fail(message, tok.start);
    }
    const text = tok.type === 'str' ? 'string' : tok.type === 'num' ? 'number' : `token '${this.src.slice(tok.start, tok.end)}'`;
    this.fail(`Unexpected ${text}`, tok.start);
  }

  private node<T extends Expression['type']>(type: T, start: number, end: number) {
    const { line, column } = this.lineCol(start);
    return { type, start, end, line, column };
  }

  private at(start: number): SourcePosition {
    return { start, ...this.lineCol(start) };
  }

  private enter(pos: number): void {
    if (++this.depth > MAX_NESTING_DEPTH) this.fail(`Expression is nested too deeply (more than ${MAX_NESTING_DEPTH} levels)`, pos);
  }

  private leave(): void {
    this.depth--;
  }

  /** Iterative, so that checking a deep tree cannot itself overflow the stack. */
  private checkTreeDepth(root: Expression): void {
    const stack: Array<[Expression, number]> = [[root, 1]];
    while (stack.length > 0) {
      const [node, depth] = stack.pop() as [Expression, number];
      if (depth > MAX_TREE_DEPTH) this.fail(`Expression is too complex (more than ${MAX_TREE_DEPTH} nested operations)`, node.start);
      for (const child of children(node)) stack.push([child, depth + 1]);
    }
  }

  // ---- scanner ----

  private skipTrivia(): void {
    const src = this.src;
    while (this.pos < src.length) {
      const c = src.charCodeAt(this.pos);
      if (c === 32 || c === 9 || c === 10 || c === 13) {
        this.pos++;
      } else if (c === 47 && src.charCodeAt(this.pos + 1) === 47) {
        while (this.pos < src.length && src.charCodeAt(this.pos) !== 10 && src.charCodeAt(this.pos) !== 13) this.pos++;
      } else if (c === 47 && src.charCodeAt(this.pos + 1) === 42) {
        const close = src.indexOf('*/', this.pos + 2);
        if (close < 0) this.fail('Unterminated comment', this.pos);
        this.pos = close + 2;
      } else {
        return;
      }
    }
  }

  private scan(): Token {
    this.skipTrivia();
    const src = this.src;
    const start = this.pos;
    if (start >= src.length) return { type: 'eof', value: '', num: 0, start, end: start };
    const c = src.charCodeAt(start);
    if (isIdentStart(c)) {
      let end = start + 1;
      while (end < src.length && isIdentPart(src.charCodeAt(end))) end++;
      this.pos = end;
      return { type: 'name', value: src.slice(start, end), num: 0, start, end };
    }
    if (isDigit(c) || (c === 46 && isDigit(src.charCodeAt(start + 1)))) return this.scanNumber(start);
    if (c === 34 || c === 39) {
      const value = this.readString(start + 1, c);
      return { type: 'str', value, num: 0, start, end: this.pos };
    }
    for (const p of PUNCTUATORS_BY_FIRST_CHAR.get(src[start]) ?? []) {
      if (src.startsWith(p, start)) {
        // `a?.5:b` is a ternary with `.5`, as in JavaScript.
        if (p === '?.' && isDigit(src.charCodeAt(start + 2))) continue;
        this.pos = start + p.length;
        return { type: 'punct', value: p, num: 0, start, end: this.pos };
      }
    }
    if (c === 92) this.fail('Escapes are only allowed inside strings', start);
    this.fail(`Unexpected character ${describeChar(String.fromCodePoint(src.codePointAt(start) ?? c))}`, start);
  }

  private scanNumber(start: number): Token {
    const src = this.src;
    let end = start;
    let num: number;
    const next = src.charCodeAt(start + 1) | 32;
    if (src.charCodeAt(start) === 48 && (next === 120 || next === 98 || next === 111)) {
      const radix = next === 120 ? 16 : next === 98 ? 2 : 8;
      end = start + 2;
      while (end < src.length && isHexDigit(src.charCodeAt(end))) end++;
      const digits = src.slice(start + 2, end);
      if (digits.length === 0 || !new RegExp(`^[0-${radix === 16 ? '9a-f' : radix - 1}]+$`, 'i').test(digits)) {
        this.fail('Invalid number', start);
      }
      num = parseInt(digits, radix);
    } else {
      while (end < src.length && isDigit(src.charCodeAt(end))) end++;
      if (src.charCodeAt(end) === 46) {
        end++;
        while (end < src.length && isDigit(src.charCodeAt(end))) end++;
      }
      if ((src.charCodeAt(end) | 32) === 101) {
        let e = end + 1;
        if (src.charCodeAt(e) === 43 || src.charCodeAt(e) === 45) e++;
        if (!isDigit(src.charCodeAt(e))) this.fail('Invalid number', start);
        while (e < src.length && isDigit(src.charCodeAt(e))) e++;
        end = e;
      }
      num = Number(src.slice(start, end));
    }
    if (end < src.length && (isIdentPart(src.charCodeAt(end)) || src.charCodeAt(end) === 92)) this.fail('Invalid number', start);
    this.pos = end;
    return { type: 'num', value: src.slice(start, end), num, start, end };
  }

  /** Reads a quoted string whose body starts at `from`; leaves `pos` after the closing quote. */
  private readString(from: number, quote: number): string {
    const src = this.src;
    let out = '';
    let i = from;
    let chunk = i;
    for (;;) {
      if (i >= src.length) this.fail('Unterminated string', from - 1);
      const c = src.charCodeAt(i);
      if (c === quote) break;
      if (c === 10 || c === 13) this.fail('Unterminated string', from - 1);
      if (c === 92) {
        out += src.slice(chunk, i);
        const [text, next] = this.readEscape(i);
        out += text;
        i = next;
        chunk = i;
      } else {
        i++;
      }
    }
    out += src.slice(chunk, i);
    this.pos = i + 1;
    return out;
  }

  /** Reads the escape starting at the backslash at `at`; returns its text and the offset after it. */
  private readEscape(at: number): [string, number] {
    const src = this.src;
    const ch = src[at + 1];
    if (ch === undefined) this.fail('Unterminated string', at);
    switch (ch) {
      case 'n':
        return ['\n', at + 2];
      case 't':
        return ['\t', at + 2];
      case 'r':
        return ['\r', at + 2];
      case 'b':
        return ['\b', at + 2];
      case 'f':
        return ['\f', at + 2];
      case 'v':
        return ['\v', at + 2];
      case '0':
        if (isDigit(src.charCodeAt(at + 2))) this.fail('Octal escapes are not allowed', at);
        return ['\0', at + 2];
      case '\r':
        return ['', src[at + 2] === '\n' ? at + 3 : at + 2];
      case '\n':
        return ['', at + 2];
      case 'x': {
        const hex = src.slice(at + 2, at + 4);
        if (!/^[0-9a-fA-F]{2}$/.test(hex)) this.fail('Invalid hexadecimal escape', at);
        return [String.fromCharCode(parseInt(hex, 16)), at + 4];
      }
      case 'u': {
        if (src[at + 2] === '{') {
          const close = src.indexOf('}', at + 3);
          const hex = close < 0 ? '' : src.slice(at + 3, close);
          if (!/^[0-9a-fA-F]{1,6}$/.test(hex) || parseInt(hex, 16) > 0x10ffff) this.fail('Invalid unicode escape', at);
          return [String.fromCodePoint(parseInt(hex, 16)), close + 1];
        }
        const hex = src.slice(at + 2, at + 6);
        if (!/^[0-9a-fA-F]{4}$/.test(hex)) this.fail('Invalid unicode escape', at);
        return [String.fromCharCode(parseInt(hex, 16)), at + 6];
      }
      default:
        if (isDigit(ch.charCodeAt(0))) this.fail('Octal escapes are not allowed', at);
        return [ch, at + 2];
    }
  }

  private next(): Token {
    const tok = this.tok;
    this.tok = this.scan();
    return tok;
  }

  private isPunct(value: string): boolean {
    return this.tok.type === 'punct' && this.tok.value === value;
  }

  private expect(value: string): Token {
    if (!this.isPunct(value)) this.unexpected();
    return this.next();
  }

  // ---- grammar ----

  private parseExpression(): Expression {
    const test = this.parseBinary(1);
    if (!this.isPunct('?')) return test;
    this.next();
    this.enter(test.start);
    const consequent = this.parseExpression();
    this.expect(':');
    const alternate = this.parseExpression();
    this.leave();
    return { ...this.node('ConditionalExpression', test.start, alternate.end), test, consequent, alternate };
  }

  /** Precedence climbing: loops over a chain of one level, recurses only to a higher level (at most 6 deep). */
  private parseBinary(minPrecedence: number): Expression {
    let left = this.parseUnary();
    for (;;) {
      const tok = this.tok;
      if (tok.type !== 'punct') return left;
      const precedence = BINARY_PRECEDENCE.get(tok.value);
      if (precedence === undefined || precedence < minPrecedence) return left;
      this.next();
      const right = this.parseBinary(precedence + 1);
      const op = tok.value;
      if (op === '&&' || op === '||' || op === '??') {
        this.checkNullishMix(op, left, tok);
        this.checkNullishMix(op, right, tok);
        left = { ...this.node('LogicalExpression', left.start, right.end), operator: op as LogicalOperator, left, right };
      } else {
        left = { ...this.node('BinaryExpression', left.start, right.end), operator: op as BinaryOperator, left, right };
      }
    }
  }

  private checkNullishMix(op: string, operand: Expression, tok: Token): void {
    if (operand.type !== 'LogicalExpression' || this.parenthesized.has(operand)) return;
    if ((op === '??') !== (operand.operator === '??')) this.fail("'??' cannot be mixed with '&&' or '||' without parentheses", tok.start);
  }

  private parseUnary(): Expression {
    const tok = this.tok;
    let operator: UnaryOperator | undefined;
    if (tok.type === 'punct' && (tok.value === '!' || tok.value === '-' || tok.value === '+')) operator = tok.value;
    else if (tok.type === 'name' && tok.value === 'typeof') operator = 'typeof';
    if (operator === undefined) return this.parsePostfix();
    this.next();
    this.enter(tok.start);
    const argument = this.parseUnary();
    this.leave();
    return { ...this.node('UnaryExpression', tok.start, argument.end), operator, argument };
  }

  private parsePostfix(): Expression {
    let expr = this.parsePrimary();
    let chained = false;
    for (;;) {
      const tok = this.tok;
      if (tok.type !== 'punct') break;
      if (tok.value === '.' || tok.value === '?.') {
        this.next();
        const optional = tok.value === '?.';
        chained ||= optional;
        if (optional && this.isPunct('(')) this.fail('Optional calls are not supported', this.tok.start);
        if (optional && this.isPunct('[')) {
          expr = this.parseComputedMember(expr, true, tok.start);
          continue;
        }
        // Any name, keywords included, is a valid property name after a dot (`source.class`).
        if (this.tok.type !== 'name') this.unexpected();
        const nameTok = this.next();
        this.checkPropertyName(nameTok.value, nameTok.start);
        expr = {
          ...this.node('MemberExpression', expr.start, nameTok.end),
          object: expr,
          computed: false,
          name: nameTok.value,
          optional,
          accessAt: this.at(tok.start),
        };
      } else if (tok.value === '[') {
        expr = this.parseComputedMember(expr, false, tok.start);
      } else if (tok.value === '(') {
        expr = this.parseCall(expr);
      } else if (tok.value === '`') {
        this.fail('Tagged templates are not allowed', tok.start);
      } else {
        break;
      }
    }
    return chained ? { ...this.node('ChainExpression', expr.start, expr.end), expression: expr } : expr;
  }

  private parseComputedMember(object: Expression, optional: boolean, accessStart: number): MemberExpression {
    const open = this.expect('[');
    this.enter(open.start);
    const property = this.parseExpression();
    this.leave();
    const close = this.expect(']');
    if (property.type === 'Literal' && typeof property.value === 'string') this.checkPropertyName(property.value, property.start);
    return { ...this.node('MemberExpression', object.start, close.end), object, computed: true, property, optional, accessAt: this.at(accessStart) };
  }

  private checkPropertyName(name: string, pos: number): void {
    if (FORBIDDEN_PROPERTIES.has(name)) this.fail(`Access to '${name}' is not allowed`, pos);
  }

  private parseCall(callee: Expression): Expression {
    const open = this.tok;
    let kind: 'helper' | 'method';
    let name: string;
    if (callee.type === 'Identifier') {
      kind = 'helper';
      name = callee.name;
      if (!HELPER_NAMES.has(name)) this.fail(`Unknown function '${name}'`, callee.start);
    } else if (callee.type === 'MemberExpression' && (!callee.computed || (callee.property?.type === 'Literal' && typeof callee.property.value === 'string'))) {
      kind = 'method';
      name = callee.computed ? String((callee.property as { value: string }).value) : (callee.name as string);
      if (!METHOD_NAMES.has(name)) this.fail(`Unknown method '${name}'`, callee.computed ? (callee.property as Expression).start : callee.end - name.length);
    } else {
      this.fail('Only helper functions and methods can be called', open.start);
    }
    this.next();
    this.enter(open.start);
    const args: Expression[] = [];
    while (!this.isPunct(')')) {
      args.push(this.parseExpression());
      if (!this.isPunct(',')) break;
      this.next();
    }
    this.leave();
    const close = this.expect(')');
    const [min, max] = (kind === 'helper' ? HELPER_ARITY : METHOD_ARITY).get(name) ?? [0, Infinity];
    if (args.length < min || args.length > max) {
      const expected = min === max ? `${min}` : max === Infinity ? `at least ${min}` : `${min} to ${max}`;
      this.fail(`${name}() takes ${expected} argument${min === 1 && (max === 1 || max === Infinity) ? '' : 's'}, not ${args.length}`, callee.start);
    }
    if (kind === 'helper') return { ...this.node('HelperCall', callee.start, close.end), name, arguments: args };
    const member = callee as MemberExpression;
    return {
      ...this.node('MethodCall', callee.start, close.end),
      object: member.object,
      method: name,
      arguments: args,
      optional: member.optional,
      accessAt: member.accessAt,
    };
  }

  private parsePrimary(): Expression {
    const tok = this.tok;
    switch (tok.type) {
      case 'num':
        this.next();
        return { ...this.node('Literal', tok.start, tok.end), value: tok.num };
      case 'str':
        this.next();
        return { ...this.node('Literal', tok.start, tok.end), value: tok.value };
      case 'name': {
        if (LITERAL_NAMES.has(tok.value)) {
          this.next();
          return { ...this.node('Literal', tok.start, tok.end), value: LITERAL_NAMES.get(tok.value) };
        }
        if (UNSUPPORTED_KEYWORDS.has(tok.value)) this.unexpected();
        if (RESERVED_IDENTIFIERS.has(tok.value)) this.fail(`'${tok.value}' is not available`, tok.start);
        this.next();
        return { ...this.node('Identifier', tok.start, tok.end), name: tok.value };
      }
      case 'punct':
        if (tok.value === '(') {
          this.next();
          this.enter(tok.start);
          const inner = this.parseExpression();
          this.leave();
          this.expect(')');
          this.parenthesized.add(inner);
          return inner;
        }
        if (tok.value === '[') return this.parseArray();
        if (tok.value === '`') return this.parseTemplate();
        return this.unexpected();
      default:
        return this.unexpected();
    }
  }

  private parseArray(): Expression {
    const open = this.next();
    this.enter(open.start);
    const elements: Expression[] = [];
    while (!this.isPunct(']')) {
      if (this.isPunct(',')) this.fail('Array holes are not allowed', this.tok.start);
      elements.push(this.parseExpression());
      if (!this.isPunct(',')) break;
      this.next();
    }
    this.leave();
    const close = this.expect(']');
    return { ...this.node('ArrayExpression', open.start, close.end), elements };
  }

  /**
   * The opening backtick is the current token and `pos` is just after it. Raw text is read here; each `${`
   * hands over to the token parser, whose current token is then the closing `}` with `pos` just after it.
   */
  private parseTemplate(): Expression {
    const start = this.tok.start;
    const src = this.src;
    const quasis: string[] = [];
    const expressions: Expression[] = [];
    let i = this.pos;
    let out = '';
    let chunk = i;
    for (;;) {
      if (i >= src.length) this.fail('Unterminated template', start);
      const c = src.charCodeAt(i);
      if (c === 96) {
        out += src.slice(chunk, i);
        quasis.push(out);
        this.pos = i + 1;
        break;
      }
      if (c === 92) {
        out += src.slice(chunk, i);
        const [text, next] = this.readEscape(i);
        out += text;
        i = next;
        chunk = i;
      } else if (c === 36 && src.charCodeAt(i + 1) === 123) {
        out += src.slice(chunk, i);
        quasis.push(out);
        out = '';
        this.pos = i + 2;
        this.tok = this.scan();
        this.enter(i);
        expressions.push(this.parseExpression());
        this.leave();
        if (!this.isPunct('}')) this.unexpected();
        i = this.pos;
        chunk = i;
      } else {
        i++;
      }
    }
    const end = this.pos;
    this.tok = this.scan();
    return { ...this.node('TemplateLiteral', start, end), quasis, expressions };
  }
}

/** The direct children of a node, in source order. */
export function children(node: Expression): Expression[] {
  switch (node.type) {
    case 'Literal':
    case 'Identifier':
      return [];
    case 'TemplateLiteral':
      return node.expressions;
    case 'ArrayExpression':
      return node.elements;
    case 'MemberExpression':
      return node.property ? [node.object, node.property] : [node.object];
    case 'HelperCall':
      return node.arguments;
    case 'MethodCall':
      return [node.object, ...node.arguments];
    case 'UnaryExpression':
      return [node.argument];
    case 'BinaryExpression':
    case 'LogicalExpression':
      return [node.left, node.right];
    case 'ConditionalExpression':
      return [node.test, node.consequent, node.alternate];
    case 'ChainExpression':
      return [node.expression];
  }
}

/**
 * Parses a transformScript into a tree. Throws ExpressionSyntaxError, naming the position, for anything that
 * is not in the language: assignments, function literals, `new`, unknown helpers or methods, access to
 * `__proto__`/`constructor`/`prototype`, host globals, scripts over MAX_SOURCE_LENGTH or nested too deeply.
 */
export function parseExpression(source: string): Expression {
  if (typeof source !== 'string') throw new ExpressionSyntaxError('Expression must be a string', 0, 1, 1);
  if (source.length > MAX_SOURCE_LENGTH) {
    const head = source.slice(0, MAX_SOURCE_LENGTH);
    const line = head.split('\n').length;
    const column = MAX_SOURCE_LENGTH - head.lastIndexOf('\n');
    throw new ExpressionSyntaxError(`Expression is longer than ${MAX_SOURCE_LENGTH} characters`, MAX_SOURCE_LENGTH, line, column);
  }
  return new Parser(source).parse();
}
