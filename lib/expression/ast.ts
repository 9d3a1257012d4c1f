/**
 * The tree `parseExpression` produces. Node shapes follow ESTree names where they exist; calls are split into
 * helper calls and method calls because the language only ever calls a named helper or a whitelisted method
 * (there are no function values), and the parser resolves which one at parse time.
 */

/** A place in the script: 0-based offset, 1-based line and column. */
export interface SourcePosition {
  start: number;
  line: number;
  column: number;
}

interface NodeBase extends SourcePosition {
  /** 0-based offset just after the node's last character. */
  end: number;
}

export type LiteralValue = string | number | boolean | null | undefined;

export interface Literal extends NodeBase {
  type: 'Literal';
  value: LiteralValue;
}

/** `` `a${x}b` ``: `quasis` has one more element than `expressions`. */
export interface TemplateLiteral extends NodeBase {
  type: 'TemplateLiteral';
  quasis: string[];
  expressions: Expression[];
}

/** A name resolved from the scope object's own properties (`source`, `baseDN`...). */
export interface Identifier extends NodeBase {
  type: 'Identifier';
  name: string;
}

export interface ArrayExpression extends NodeBase {
  type: 'ArrayExpression';
  elements: Expression[];
}

/** `a.b` (`name` set) or `a[expr]` (`property` set); `optional` for `?.`. */
export interface MemberExpression extends NodeBase {
  type: 'MemberExpression';
  object: Expression;
  computed: boolean;
  name?: string;
  property?: Expression;
  optional: boolean;
  /** Where the access is written (the `.`, `?.` or `[`), for errors about this access rather than its object. */
  accessAt: SourcePosition;
}

/** `lower(x)`: a call of a built-in helper, validated by name at parse time. */
export interface HelperCall extends NodeBase {
  type: 'HelperCall';
  name: string;
  arguments: Expression[];
}

/** `x.toLowerCase()`: a call of a whitelisted method on the value of `object`; `optional` for `x?.trim()`. */
export interface MethodCall extends NodeBase {
  type: 'MethodCall';
  object: Expression;
  method: string;
  arguments: Expression[];
  optional: boolean;
  /** Where the access is written (the `.` or `?.` before the method name). */
  accessAt: SourcePosition;
}

export type UnaryOperator = '!' | '-' | '+' | 'typeof';

export interface UnaryExpression extends NodeBase {
  type: 'UnaryExpression';
  operator: UnaryOperator;
  argument: Expression;
}

export type BinaryOperator = '+' | '-' | '*' | '/' | '%' | '==' | '!=' | '===' | '!==' | '<' | '<=' | '>' | '>=';

export interface BinaryExpression extends NodeBase {
  type: 'BinaryExpression';
  operator: BinaryOperator;
  left: Expression;
  right: Expression;
}

export type LogicalOperator = '&&' | '||' | '??';

export interface LogicalExpression extends NodeBase {
  type: 'LogicalExpression';
  operator: LogicalOperator;
  left: Expression;
  right: Expression;
}

export interface ConditionalExpression extends NodeBase {
  type: 'ConditionalExpression';
  test: Expression;
  consequent: Expression;
  alternate: Expression;
}

/** Wraps a member/call chain that contains `?.`: a nullish link makes the whole chain `undefined`. */
export interface ChainExpression extends NodeBase {
  type: 'ChainExpression';
  expression: Expression;
}

export type Expression =
  | Literal
  | TemplateLiteral
  | Identifier
  | ArrayExpression
  | MemberExpression
  | HelperCall
  | MethodCall
  | UnaryExpression
  | BinaryExpression
  | LogicalExpression
  | ConditionalExpression
  | ChainExpression;
