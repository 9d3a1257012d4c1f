/**
 * Functions (ASP.NET Core) route templates: literal segments (case-insensitive), `{name}`, constrained
 * `{name:int}` (chained `{n:int:min(1)}`), optional `{name?}`, defaults `{name=value}`, catch-all `{*rest}`,
 * and complex segments such as `{file}.{ext}`. Precedence follows ASP.NET's inbound route precedence:
 * segment by segment, a literal beats a complex segment, which beats a constrained parameter, which beats a
 * plain parameter, which beats a catch-all.
 */

type Part = { kind: 'literal'; text: string; lower: string } | { kind: 'param'; param: RouteParameter };

export interface RouteParameter {
  name: string;
  optional: boolean;
  catchAll: boolean;
  defaultValue?: string;
  constraints: Constraint[];
}

interface Constraint {
  text: string;
  test(value: string): boolean;
}

interface Segment {
  parts: Part[];
  /** Whole-segment regex for complex segments. */
  regex?: RegExp;
}

export class RouteTemplateError extends Error {
  constructor(
    readonly template: string,
    message: string,
  ) {
    super(`Invalid route template '${template}': ${message}`);
    this.name = 'RouteTemplateError';
  }
}

const INT32 = { min: -2147483648, max: 2147483647 };
const GUID_FORMS = [
  /^[0-9a-f]{32}$/i,
  /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i,
  /^\{[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\}$/i,
  /^\([0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\)$/i,
];
const isNumber = (v: string) => /^[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?$/.test(v.trim());

function makeConstraint(template: string, text: string): Constraint {
  const m = /^([A-Za-z]+)(?:\((.*)\))?$/s.exec(text);
  if (!m) throw new RouteTemplateError(template, `unknown constraint '${text}'.`);
  const name = m[1].toLowerCase();
  const arg = m[2];
  const nums = () => (arg ?? '').split(',').map((x) => Number(x.trim()));
  const need = (ok: boolean) => {
    if (!ok) throw new RouteTemplateError(template, `constraint '${text}' needs valid arguments.`);
  };
  let test: (v: string) => boolean;
  switch (name) {
    case 'int':
      test = (v) => /^[+-]?\d+$/.test(v) && Number(v) >= INT32.min && Number(v) <= INT32.max;
      break;
    case 'long':
      test = (v) => /^[+-]?\d+$/.test(v) && BigInt(v) >= -(2n ** 63n) && BigInt(v) < 2n ** 63n;
      break;
    case 'bool':
      test = (v) => /^(true|false)$/i.test(v);
      break;
    case 'guid':
      test = (v) => GUID_FORMS.some((re) => re.test(v));
      break;
    case 'alpha':
      test = (v) => /^[a-z]*$/i.test(v);
      break;
    case 'decimal':
    case 'double':
    case 'float':
      test = isNumber;
      break;
    case 'datetime':
      test = (v) => !Number.isNaN(Date.parse(v));
      break;
    case 'minlength': {
      const [n] = nums();
      need(Number.isInteger(n));
      test = (v) => v.length >= n;
      break;
    }
    case 'maxlength': {
      const [n] = nums();
      need(Number.isInteger(n));
      test = (v) => v.length <= n;
      break;
    }
    case 'length': {
      const [a, b] = nums();
      need(Number.isInteger(a) && (b === undefined || Number.isInteger(b)));
      test = b === undefined ? (v) => v.length === a : (v) => v.length >= a && v.length <= b;
      break;
    }
    case 'min': {
      const [n] = nums();
      need(Number.isFinite(n));
      test = (v) => /^[+-]?\d+$/.test(v) && Number(v) >= n;
      break;
    }
    case 'max': {
      const [n] = nums();
      need(Number.isFinite(n));
      test = (v) => /^[+-]?\d+$/.test(v) && Number(v) <= n;
      break;
    }
    case 'range': {
      const [a, b] = nums();
      need(Number.isFinite(a) && Number.isFinite(b));
      test = (v) => /^[+-]?\d+$/.test(v) && Number(v) >= a && Number(v) <= b;
      break;
    }
    case 'regex': {
      need(arg !== undefined);
      let re: RegExp;
      try {
        // ASP.NET's regex constraint is case-insensitive and not implicitly anchored.
        re = new RegExp(arg!, 'i');
      } catch (err) {
        throw new RouteTemplateError(template, `bad regex in '${text}': ${(err as Error).message}`);
      }
      test = (v) => re.test(v);
      break;
    }
    case 'required':
      test = (v) => v !== '';
      break;
    default:
      throw new RouteTemplateError(template, `unknown constraint '${m[1]}'.`);
  }
  return { text, test };
}

/** Split `name:c1:c2(a:b)` at top-level colons (colons inside parentheses belong to the argument). */
function splitConstraints(text: string): string[] {
  const out: string[] = [];
  let depth = 0;
  let cur = '';
  for (const c of text) {
    if (c === '(') depth++;
    if (c === ')') depth--;
    if (c === ':' && depth === 0) {
      out.push(cur);
      cur = '';
    } else cur += c;
  }
  out.push(cur);
  return out;
}

function parseParameter(template: string, inner: string): RouteParameter {
  let body = inner;
  let catchAll = false;
  if (body.startsWith('**')) {
    catchAll = true;
    body = body.slice(2);
  } else if (body.startsWith('*')) {
    catchAll = true;
    body = body.slice(1);
  }
  const [head, ...constraintTexts] = splitConstraints(body);
  let name = head;
  let defaultValue: string | undefined;
  let optional = false;
  // A default or `?` may follow the last constraint instead of the name.
  const tailSource = constraintTexts.length ? constraintTexts[constraintTexts.length - 1] : name;
  const tail = /^(.*?)(\?|=(.*))?$/s.exec(tailSource)!;
  if (tail[2] === '?') optional = true;
  else if (tail[2]) defaultValue = tail[3];
  if (constraintTexts.length) constraintTexts[constraintTexts.length - 1] = tail[1];
  else name = tail[1];
  if (!/^[A-Za-z_][A-Za-z0-9_]*$/.test(name)) throw new RouteTemplateError(template, `bad parameter name '${name}'.`);
  return {
    name,
    optional: optional || catchAll,
    catchAll,
    defaultValue,
    constraints: constraintTexts.map((t) => makeConstraint(template, t.replace(/\{\{/g, '{').replace(/\}\}/g, '}'))),
  };
}

function parseSegment(template: string, text: string): Segment {
  const parts: Part[] = [];
  let i = 0;
  let lit = '';
  while (i < text.length) {
    const c = text[i];
    if (c === '{' && text[i + 1] === '{') {
      lit += '{';
      i += 2;
    } else if (c === '}' && text[i + 1] === '}') {
      lit += '}';
      i += 2;
    } else if (c === '{') {
      // Find the closing brace, skipping `}}` escapes inside (regex quantifiers).
      let j = i + 1;
      let depth = 0;
      while (j < text.length) {
        if (text[j] === '}' && text[j + 1] === '}') j += 2;
        else if (text[j] === '(') {
          depth++;
          j++;
        } else if (text[j] === ')') {
          depth--;
          j++;
        } else if (text[j] === '}' && depth <= 0) break;
        else j++;
      }
      if (j >= text.length) throw new RouteTemplateError(template, `unclosed '{' in '${text}'.`);
      if (lit) parts.push({ kind: 'literal', text: lit, lower: lit.toLowerCase() });
      lit = '';
      parts.push({ kind: 'param', param: parseParameter(template, text.slice(i + 1, j)) });
      i = j + 1;
    } else if (c === '}') {
      throw new RouteTemplateError(template, `unmatched '}' in '${text}'.`);
    } else {
      lit += c;
      i++;
    }
  }
  if (lit) parts.push({ kind: 'literal', text: lit, lower: lit.toLowerCase() });
  if (parts.length === 0) throw new RouteTemplateError(template, 'empty segment.');
  const seg: Segment = { parts };
  if (parts.length > 1) {
    for (let k = 1; k < parts.length; k++) {
      if (parts[k].kind === 'param' && parts[k - 1].kind === 'param') {
        throw new RouteTemplateError(template, `two parameters in '${text}' need a literal between them.`);
      }
    }
    if (parts.some((p) => p.kind === 'param' && p.param.catchAll)) {
      throw new RouteTemplateError(template, `a catch-all parameter must be a whole segment.`);
    }
    const esc = (s: string) => s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
    // ASP.NET matches complex segments right to left, each parameter taking as much as it can: greedy-lazy
    // mixture; the lazy form below gives the same split for the common `{a}.{b}` shapes.
    seg.regex = new RegExp('^' + parts.map((p) => (p.kind === 'literal' ? esc(p.text) : p.param.optional ? '(.*?)' : '(.+?)')).join('') + '$', 'i');
  }
  return seg;
}

export interface RouteMatch {
  params: Record<string, string>;
}

export class RouteTemplate {
  readonly segments: Segment[];
  /** ASP.NET inbound precedence, one digit per segment: lower sorts first. */
  readonly precedence: number[];

  constructor(readonly template: string) {
    const trimmed = template.replace(/^[~/]+/, '').replace(/\/+$/, '');
    this.segments = trimmed === '' ? [] : trimmed.split('/').map((s) => parseSegment(template, s));
    const names = new Set<string>();
    this.segments.forEach((seg, i) => {
      for (const p of seg.parts) {
        if (p.kind !== 'param') continue;
        const lower = p.param.name.toLowerCase();
        if (names.has(lower)) throw new RouteTemplateError(template, `parameter '${p.param.name}' appears twice.`);
        names.add(lower);
        if (p.param.catchAll && i !== this.segments.length - 1) throw new RouteTemplateError(template, 'a catch-all parameter must be the last segment.');
      }
    });
    this.precedence = this.segments.map((seg) => {
      if (seg.parts.length > 1) return 2;
      const p = seg.parts[0];
      if (p.kind === 'literal') return 1;
      if (p.param.catchAll) return 5;
      return p.param.constraints.length ? 3 : 4;
    });
  }

  /** Match a path (relative to the route prefix, not decoded) and return the decoded parameters. */
  match(pathSegments: string[]): RouteMatch | undefined {
    return this.matchDecoded(pathSegments.map(safeDecode));
  }

  /** `decoded`: the path segments, each percent-decoded (once per request, not once per template). */
  matchDecoded(decoded: string[]): RouteMatch | undefined {
    const pathSegments = decoded;
    const params: Record<string, string> = {};
    const segs = this.segments;
    for (let i = 0; i < segs.length; i++) {
      const seg = segs[i];
      const first = seg.parts[0];
      if (seg.parts.length === 1 && first.kind === 'param' && first.param.catchAll) {
        const rest = pathSegments.slice(i).join('/');
        if (rest === '' && first.param.defaultValue === undefined && !first.param.optional) return undefined;
        const value = rest === '' ? first.param.defaultValue : rest;
        if (value !== undefined) {
          if (!first.param.constraints.every((c) => c.test(value))) return undefined;
          params[first.param.name] = value;
        }
        return { params };
      }
      if (i >= pathSegments.length) {
        // Only trailing optional/default parameters may be absent.
        if (seg.parts.length === 1 && first.kind === 'param' && (first.param.optional || first.param.defaultValue !== undefined)) {
          if (first.param.defaultValue !== undefined) params[first.param.name] = first.param.defaultValue;
          continue;
        }
        return undefined;
      }
      const raw = pathSegments[i];
      if (seg.parts.length === 1) {
        if (first.kind === 'literal') {
          if (raw !== first.text && raw.toLowerCase() !== first.lower) return undefined;
          continue;
        }
        const value = raw;
        if (value === '') return undefined;
        if (!first.param.constraints.every((c) => c.test(value))) return undefined;
        params[first.param.name] = value;
        continue;
      }
      const m = seg.regex!.exec(raw);
      if (!m) return undefined;
      let g = 1;
      for (const p of seg.parts) {
        if (p.kind !== 'param') continue;
        const value = m[g++];
        if (value === '' && !p.param.optional) return undefined;
        if (value !== '' && !p.param.constraints.every((c) => c.test(value))) return undefined;
        if (value !== '') params[p.param.name] = value;
      }
    }
    if (pathSegments.length > segs.length) return undefined;
    return { params };
  }
}

function safeDecode(s: string): string {
  try {
    return decodeURIComponent(s);
  } catch {
    return s;
  }
}

/** Compare two templates by precedence: negative when `a` should be tried before `b`. */
export function comparePrecedence(a: RouteTemplate, b: RouteTemplate): number {
  const n = Math.max(a.precedence.length, b.precedence.length);
  for (let i = 0; i < n; i++) {
    // A template that ends earlier is less specific than one that continues with a literal.
    const x = a.precedence[i] ?? 6;
    const y = b.precedence[i] ?? 6;
    if (x !== y) return x - y;
  }
  return a.template.localeCompare(b.template);
}

export interface RouteEntry<T> {
  template: RouteTemplate;
  /** Upper-case methods; empty means every method. */
  methods: string[];
  target: T;
}

export type RouteResult<T> =
  { kind: 'match'; entry: RouteEntry<T>; params: Record<string, string> } | { kind: 'method-not-allowed'; allow: string[] } | { kind: 'not-found' };

/** The route table of the HTTP host: sorted by precedence once, matched per request. */
export class RouteTable<T> {
  private entries: RouteEntry<T>[] = [];

  add(template: string, methods: string[], target: T): RouteEntry<T> {
    const entry: RouteEntry<T> = { template: new RouteTemplate(template), methods: methods.map((m) => m.toUpperCase()), target };
    this.entries.push(entry);
    this.entries.sort((a, b) => comparePrecedence(a.template, b.template));
    return entry;
  }

  get all(): readonly RouteEntry<T>[] {
    return this.entries;
  }

  /** `path` is relative to the route prefix, without query string. */
  match(method: string, path: string): RouteResult<T> {
    const segments = path.split('/').filter((s, i, all) => s !== '' || (i > 0 && i < all.length - 1));
    const decoded = segments.map(safeDecode);
    const upper = method.toUpperCase();
    const allow = new Set<string>();
    let pathMatched = false;
    for (const entry of this.entries) {
      const m = entry.template.matchDecoded(decoded);
      if (!m) continue;
      if (entry.methods.length === 0 || entry.methods.includes(upper)) return { kind: 'match', entry, params: m.params };
      pathMatched = true;
      entry.methods.forEach((x) => allow.add(x));
    }
    return pathMatched ? { kind: 'method-not-allowed', allow: [...allow] } : { kind: 'not-found' };
  }
}
