import { badRequest, ScimError } from './errors';
import { COMMON_ATTRIBUTES, findAttr, splitSchemaPrefix, type AttrDef, type ResourceTypeDef } from './schema';

/**
 * SCIM filters (RFC 7644 section 3.4.2.2) and attribute paths: `eq ne co sw ew gt ge lt le pr`, `and`, `or`,
 * `not`, grouping with parentheses, value filters on multi-valued attributes (`emails[type eq "work"]`), paths
 * with a schema URN prefix. As clients actually send them: attribute names and operators in any case, values
 * quoted or not (`userName sw O`, `meta.created gt 2015-10-10T14:38:21-07:00`).
 */
export type CompareOp = 'eq' | 'ne' | 'co' | 'sw' | 'ew' | 'gt' | 'ge' | 'lt' | 'le';
const MAX_FILTER_DEPTH = 32;
const COMPARE_OPS = new Set(['eq', 'ne', 'co', 'sw', 'ew', 'gt', 'ge', 'lt', 'le']);

/** A resolved attribute path: `schema` is the URN key the attribute lives under (null: core or common). */
export interface AttrPath {
  /** The extension URN the attribute is under, or null for the core schema and the common attributes. */
  extension: string | null;
  attr: string;
  sub?: string;
  def: AttrDef;
  subDef?: AttrDef;
}

export type Filter =
  | { op: 'and' | 'or'; left: Filter; right: Filter }
  | { op: 'not'; expr: Filter }
  | { op: 'pr'; path: AttrPath }
  | { op: CompareOp; path: AttrPath; value: string | number | boolean | null }
  | { op: '[]'; path: AttrPath; filter: Filter };

/** A PATCH path: an attribute, optionally a value filter on it, optionally a sub-attribute. */
export interface PatchPath {
  path: AttrPath;
  filter?: Filter;
}

type Token = { kind: 'word'; text: string } | { kind: 'string'; text: string } | { kind: 'punct'; text: '(' | ')' | '[' | ']' };

function tokenize(input: string): Token[] {
  const tokens: Token[] = [];
  let i = 0;
  while (i < input.length) {
    const c = input[i];
    if (/\s/.test(c)) {
      i++;
    } else if (c === '(' || c === ')' || c === '[' || c === ']') {
      tokens.push({ kind: 'punct', text: c });
      i++;
    } else if (c === '"') {
      let j = i + 1;
      let raw = '';
      for (; j < input.length && input[j] !== '"'; j++) {
        if (input[j] === '\\' && j + 1 < input.length) {
          raw += input[j] + input[j + 1];
          j++;
        } else raw += input[j];
      }
      if (j >= input.length) throw badRequest('The filter has an unterminated string.', 'invalidFilter');
      let text: string;
      try {
        text = JSON.parse(`"${raw}"`) as string;
      } catch {
        text = raw;
      }
      tokens.push({ kind: 'string', text });
      i = j + 1;
    } else {
      let j = i;
      while (j < input.length && !/[\s()[\]"]/.test(input[j])) j++;
      tokens.push({ kind: 'word', text: input.slice(i, j) });
      i = j;
    }
  }
  return tokens;
}

/** Resolve `name.sub` or `urn:...:name.sub` against the resource type (any case). */
export function resolvePath(rt: ResourceTypeDef, raw: string, kind: 'filter' | 'path' = 'filter'): AttrPath {
  const fail = (): ScimError =>
    kind === 'filter'
      ? badRequest(`Unknown attribute '${raw}' in the filter.`, 'invalidFilter')
      : badRequest(`Unknown attribute path '${raw}'.`, 'invalidPath');
  const { schema, rest } = splitSchemaPrefix(rt, raw);
  const extension = schema.id === rt.schema.id ? null : schema.id;
  if (!rest) throw fail();
  const [attrName, subName, ...more] = rest.split('.');
  if (more.length) throw fail();
  const def = findAttr(schema.attributes, attrName) ?? (extension ? undefined : findAttr(COMMON_ATTRIBUTES, attrName));
  if (!def) throw fail();
  if (subName === undefined) return { extension, attr: def.name, def };
  const subDef = findAttr(def.subAttributes, subName);
  if (!subDef) throw fail();
  return { extension, attr: def.name, sub: subDef.name, def, subDef };
}

class Parser {
  private pos = 0;
  constructor(
    private readonly tokens: Token[],
    private readonly rt: ResourceTypeDef,
  ) {}

  private peek(): Token | undefined {
    return this.tokens[this.pos];
  }

  private isWord(t: Token | undefined, w: string): boolean {
    return !!t && t.kind === 'word' && t.text.toLowerCase() === w;
  }

  private expect(p: '(' | ')' | '[' | ']'): void {
    const t = this.tokens[this.pos++];
    if (!t || t.kind !== 'punct' || t.text !== p) throw badRequest(`The filter expected '${p}'.`, 'invalidFilter');
  }

  parse(): Filter {
    const f = this.or();
    if (this.pos < this.tokens.length) throw badRequest('The filter has unexpected text after its end.', 'invalidFilter');
    return f;
  }

  or(): Filter {
    let left = this.and();
    while (this.isWord(this.peek(), 'or')) {
      this.pos++;
      left = { op: 'or', left, right: this.and() };
    }
    return left;
  }

  and(): Filter {
    let left = this.unary();
    while (this.isWord(this.peek(), 'and')) {
      this.pos++;
      left = { op: 'and', left, right: this.unary() };
    }
    return left;
  }

  private depth = 0;

  unary(): Filter {
    // Parentheses and `not` nest; a client never needs 32 levels, and the parser recurses on each.
    if (++this.depth > MAX_FILTER_DEPTH) throw badRequest(`The filter nests more than ${MAX_FILTER_DEPTH} levels deep.`, 'invalidFilter');
    try {
      return this.unaryInner();
    } finally {
      this.depth--;
    }
  }

  private unaryInner(): Filter {
    const t = this.peek();
    if (this.isWord(t, 'not')) {
      this.pos++;
      this.expect('(');
      const expr = this.or();
      this.expect(')');
      return { op: 'not', expr };
    }
    if (t?.kind === 'punct' && t.text === '(') {
      this.pos++;
      const f = this.or();
      this.expect(')');
      return f;
    }
    return this.comparison();
  }

  comparison(): Filter {
    const t = this.tokens[this.pos++];
    if (!t || t.kind !== 'word') throw badRequest('The filter expected an attribute name.', 'invalidFilter');
    const next = this.peek();
    if (next?.kind === 'punct' && next.text === '[') {
      this.pos++;
      const path = resolvePath(this.rt, t.text);
      const inner = new Parser(this.tokens, subType(this.rt, path));
      inner.pos = this.pos;
      inner.depth = this.depth;
      const filter = inner.or();
      this.pos = inner.pos;
      this.expect(']');
      return { op: '[]', path, filter };
    }
    const path = resolvePath(this.rt, t.text);
    const opTok = this.tokens[this.pos++];
    if (!opTok || opTok.kind !== 'word') throw badRequest(`The filter expected an operator after '${t.text}'.`, 'invalidFilter');
    const op = opTok.text.toLowerCase();
    if (op === 'pr') return { op: 'pr', path };
    if (!COMPARE_OPS.has(op)) throw badRequest(`Unknown filter operator '${opTok.text}'.`, 'invalidFilter');
    const v = this.tokens[this.pos++];
    if (!v || v.kind === 'punct') throw badRequest(`The filter expected a value after '${opTok.text}'.`, 'invalidFilter');
    return { op: op as CompareOp, path, value: literal(v) };
  }
}

function literal(t: Token): string | number | boolean | null {
  if (t.kind === 'string') return t.text;
  const lower = t.text.toLowerCase();
  if (lower === 'true') return true;
  if (lower === 'false') return false;
  if (lower === 'null') return null;
  if (/^-?\d+(\.\d+)?([eE][-+]?\d+)?$/.test(t.text)) return Number(t.text);
  return t.text;
}

/**
 * The pseudo resource type a value filter's inner expression is resolved against: the attribute's
 * sub-attributes as the attributes of a core schema.
 */
function subType(rt: ResourceTypeDef, path: AttrPath): ResourceTypeDef {
  const subs = path.def.subAttributes ?? [{ name: 'value', type: path.def.type }];
  return { ...rt, schema: { id: `${rt.schema.id}#${path.attr}`, name: path.attr, description: '', attributes: subs }, extensions: [] };
}

export function parseFilter(rt: ResourceTypeDef, text: string): Filter {
  const tokens = tokenize(text);
  if (!tokens.length) throw badRequest('The filter is empty.', 'invalidFilter');
  return new Parser(tokens, rt).parse();
}

/**
 * A PATCH path: `attr`, `attr.sub`, `urn:...:attr`, `attr[filter]`, `attr[filter].sub`.
 */
export function parsePatchPath(rt: ResourceTypeDef, text: string): PatchPath {
  const open = text.indexOf('[');
  if (open < 0) return { path: resolvePath(rt, text.trim(), 'path') };
  const close = text.lastIndexOf(']');
  if (close < open) throw badRequest(`The path '${text}' has an unclosed '['.`, 'invalidPath');
  const base = resolvePath(rt, text.slice(0, open).trim(), 'path');
  if (base.sub) throw badRequest(`The path '${text}' filters a sub-attribute.`, 'invalidPath');
  const filter = new Parser(tokenize(text.slice(open + 1, close)), subType(rt, base)).parse();
  const after = text.slice(close + 1).trim();
  if (!after) return { path: base, filter };
  if (!after.startsWith('.')) throw badRequest(`The path '${text}' has unexpected text after ']'.`, 'invalidPath');
  const subDef = findAttr(base.def.subAttributes, after.slice(1));
  if (!subDef) throw badRequest(`Unknown sub-attribute in the path '${text}'.`, 'invalidPath');
  return { path: { ...base, sub: subDef.name, subDef }, filter };
}

// ---------------------------------------------------------------------------------------------------------
// Evaluation

type Json = Record<string, unknown>;

function container(resource: Json, path: AttrPath): unknown {
  const holder = path.extension ? (resource[path.extension] as Json | undefined) : resource;
  return holder && typeof holder === 'object' ? holder[path.attr] : undefined;
}

/** Every value a path names in a resource (a multi-valued attribute's elements, their sub-attribute). */
function valuesAt(resource: Json, path: AttrPath): unknown[] {
  const v = container(resource, path);
  const items = Array.isArray(v) ? v : v === undefined || v === null ? [] : [v];
  const out: unknown[] = [];
  for (const item of items) {
    if (path.sub) {
      if (item && typeof item === 'object') {
        const x = (item as Json)[path.sub];
        if (Array.isArray(x)) out.push(...x);
        else if (x !== undefined && x !== null) out.push(x);
      }
    } else if (item && typeof item === 'object' && path.def.type === 'complex') {
      // A complex attribute compared as a whole compares its `value` (RFC 7644 3.4.2.2).
      const x = (item as Json).value;
      if (x !== undefined && x !== null) out.push(x);
    } else out.push(item);
  }
  return out;
}

function timeOf(v: unknown): number {
  if (typeof v !== 'string') return NaN;
  // .NET clients send seven fractional digits; Date.parse takes up to three.
  return Date.parse(v.replace(/(\.\d{3})\d+/, '$1'));
}

function compare(op: CompareOp, actual: unknown, expected: string | number | boolean | null, def: AttrDef): boolean {
  if (expected === null) return op === 'ne' ? actual !== null && actual !== undefined : false;
  if (def.type === 'dateTime') {
    const a = timeOf(actual);
    const e = timeOf(String(expected));
    if (Number.isNaN(a) || Number.isNaN(e)) return false;
    return numeric(op, a, e);
  }
  if (def.type === 'boolean' || typeof actual === 'boolean') {
    const e = typeof expected === 'boolean' ? expected : String(expected).toLowerCase() === 'true';
    if (op === 'eq') return actual === e;
    if (op === 'ne') return actual !== e;
    throw badRequest(`The operator '${op}' does not apply to boolean attributes.`, 'invalidFilter');
  }
  if (typeof actual === 'number') {
    const e = Number(expected);
    return Number.isNaN(e) ? false : numeric(op, actual, e);
  }
  if (typeof actual !== 'string') return false;
  const exact = !!def.caseExact;
  const a = exact ? actual : actual.toLowerCase();
  const e = exact ? String(expected) : String(expected).toLowerCase();
  switch (op) {
    case 'eq':
      return a === e;
    case 'ne':
      return a !== e;
    case 'co':
      return a.includes(e);
    case 'sw':
      return a.startsWith(e);
    case 'ew':
      return a.endsWith(e);
    default:
      return numeric(op, a < e ? -1 : a > e ? 1 : 0, 0);
  }
}

function numeric(op: CompareOp, a: number, e: number): boolean {
  switch (op) {
    case 'eq':
      return a === e;
    case 'ne':
      return a !== e;
    case 'gt':
      return a > e;
    case 'ge':
      return a >= e;
    case 'lt':
      return a < e;
    case 'le':
      return a <= e;
    default:
      return false;
  }
}

/** Whether `resource` (its SCIM representation, with `id`, `externalId` and `meta`) matches `filter`. */
export function matches(filter: Filter, resource: Json): boolean {
  switch (filter.op) {
    case 'and':
      return matches(filter.left, resource) && matches(filter.right, resource);
    case 'or':
      return matches(filter.left, resource) || matches(filter.right, resource);
    case 'not':
      return !matches(filter.expr, resource);
    case 'pr':
      return valuesAt(resource, filter.path).some((v) => v !== '' && !(Array.isArray(v) && !v.length));
    case '[]': {
      const v = container(resource, filter.path);
      const items = Array.isArray(v) ? v : v ? [v] : [];
      return items.some((item) => item && typeof item === 'object' && matches(filter.filter, item as Json));
    }
    default: {
      const def = filter.path.subDef ?? filter.path.def;
      const values = valuesAt(resource, filter.path);
      if (filter.op === 'ne') return !values.some((v) => compare('eq', v, filter.value, def));
      return values.some((v) => compare(filter.op as CompareOp, v, filter.value, def));
    }
  }
}

/**
 * The value a resource sorts by (RFC 7644 3.4.2.3): a multi-valued attribute's primary value, else its first;
 * dates as instants, strings in lower case unless the attribute is case-exact. Undefined: no value (sorted last
 * whatever the order).
 */
export function sortValue(resource: Json, path: AttrPath): string | number | boolean | undefined {
  const v = container(resource, path);
  const items = Array.isArray(v) ? v : v === undefined || v === null ? [] : [v];
  const chosen = items.find((i) => i && typeof i === 'object' && (i as Json).primary === true) ?? items[0];
  const one = valuesAt(path.extension ? { [path.extension]: { [path.attr]: chosen } } : { [path.attr]: chosen }, path)[0];
  if (one === undefined || one === null || one === '') return undefined;
  const def = path.subDef ?? path.def;
  if (def.type === 'dateTime') {
    const t = timeOf(one);
    return Number.isNaN(t) ? undefined : t;
  }
  if (typeof one === 'string') return def.caseExact ? one : one.toLowerCase();
  return typeof one === 'number' || typeof one === 'boolean' ? one : undefined;
}

/** `userName eq "x"` (the one filter a uniqueness lookup can answer from an index): the value, else undefined. */
export function simpleEquality(filter: Filter, attr: string): string | undefined {
  if (filter.op === 'eq' && !filter.path.extension && filter.path.attr === attr && !filter.path.sub && typeof filter.value === 'string') return filter.value;
  return undefined;
}
