/**
 * Named parameters in configured SQL (`:watermark`, `:email`) and their translation to each driver's
 * placeholders. Values are always bound by the driver; this module only rewrites the parameter markers, so a
 * value can never become SQL text.
 *
 * The scanner skips what may contain a colon without being a parameter: string literals ('...', E'...',
 * N'...', MySQL's "..." and backslash escapes), quoted identifiers ("...", `...`, [...]), comments (`--`,
 * `/* *\/` nested in PostgreSQL, MySQL's `#`), PostgreSQL dollar quoting ($tag$...$tag$) and `::` casts.
 */

export type SqlDialect = 'postgres' | 'mysql' | 'mssql';

/** One statement of configured SQL, with its parameters as the driver wants them. */
export interface CompiledStatement {
  /** The SQL text with driver placeholders (`$1`, `?`, `@p_name`). */
  text: string;
  /**
   * The parameter name behind each placeholder: `$n` is `params[n-1]` (each name once); MySQL's `?` are in
   * order of appearance (a name may repeat); SQL Server's `@p_<name>` are named (each name once).
   */
  params: string[];
}

export interface ScanResult {
  /** Top-level statements (split on `;` outside literals and comments), trimmed, empty ones dropped. */
  statements: CompiledStatement[];
  /** Every named parameter used, in order of first appearance. */
  names: string[];
  /** Driver-native placeholders written by hand (`?`, `$1`): refused, they would bypass the named binding. */
  rawPlaceholders: string[];
}

const IDENT_START = /[A-Za-z_]/;
const IDENT_PART = /[A-Za-z0-9_]/;

/** The placeholder text for a parameter. */
function placeholder(dialect: SqlDialect, name: string, index: number): string {
  if (dialect === 'postgres') return `$${index}`;
  if (dialect === 'mysql') return '?';
  return `@p_${name}`;
}

/** Scan and translate configured SQL for `dialect`. Pure: no I/O, never throws on odd input. */
export function compileSql(sql: string, dialect: SqlDialect): ScanResult {
  const statements: CompiledStatement[] = [];
  const allNames: string[] = [];
  const rawPlaceholders: string[] = [];
  let out = '';
  let params: string[] = [];
  const flush = () => {
    const text = out.trim();
    if (text) statements.push({ text, params });
    out = '';
    params = [];
  };
  const n = sql.length;
  let i = 0;
  while (i < n) {
    const c = sql[i];
    const next = sql[i + 1];
    // Line comments.
    if ((c === '-' && next === '-') || (c === '#' && dialect === 'mysql')) {
      const end = sql.indexOf('\n', i);
      const stop = end < 0 ? n : end;
      out += sql.slice(i, stop);
      i = stop;
      continue;
    }
    // Block comments (nested in PostgreSQL and SQL Server).
    if (c === '/' && next === '*') {
      let depth = 1;
      let j = i + 2;
      while (j < n && depth > 0) {
        if (sql[j] === '*' && sql[j + 1] === '/') {
          depth--;
          j += 2;
        } else if (dialect !== 'mysql' && sql[j] === '/' && sql[j + 1] === '*') {
          depth++;
          j += 2;
        } else j++;
      }
      out += sql.slice(i, j);
      i = j;
      continue;
    }
    // String literals and quoted identifiers.
    if (c === "'" || c === '"' || (c === '`' && dialect === 'mysql') || (c === '[' && dialect === 'mssql')) {
      const close = c === '[' ? ']' : c;
      const prev = sql[i - 1] ?? '';
      const backslashes = dialect === 'mysql' ? c !== '`' : dialect === 'postgres' && c === "'" && /[eE]/.test(prev) && !IDENT_PART.test(sql[i - 2] ?? '');
      let j = i + 1;
      while (j < n) {
        if (backslashes && sql[j] === '\\') {
          j += 2;
          continue;
        }
        if (sql[j] === close) {
          if (sql[j + 1] === close) {
            j += 2;
            continue;
          }
          j++;
          break;
        }
        j++;
      }
      out += sql.slice(i, j);
      i = j;
      continue;
    }
    // PostgreSQL dollar quoting: $tag$ ... $tag$ ($ after an identifier character is part of the identifier).
    if (c === '$' && dialect === 'postgres' && !IDENT_PART.test(sql[i - 1] ?? '')) {
      const m = /^\$([A-Za-z_][A-Za-z0-9_]*)?\$/.exec(sql.slice(i, i + 66));
      if (m) {
        const tag = m[0];
        const end = sql.indexOf(tag, i + tag.length);
        const stop = end < 0 ? n : end + tag.length;
        out += sql.slice(i, stop);
        i = stop;
        continue;
      }
      const d = /^\$\d+/.exec(sql.slice(i, i + 12));
      if (d) {
        rawPlaceholders.push(d[0]);
        out += d[0];
        i += d[0].length;
        continue;
      }
    }
    if (c === '?' && dialect === 'mysql') {
      rawPlaceholders.push('?');
      out += c;
      i++;
      continue;
    }
    // `::` is a cast (PostgreSQL) or a static member (SQL Server), never a parameter.
    if (c === ':' && next === ':') {
      let j = i;
      while (sql[j] === ':') j++;
      out += sql.slice(i, j);
      i = j;
      continue;
    }
    if (c === ':' && next !== undefined && IDENT_START.test(next) && !IDENT_PART.test(sql[i - 1] ?? '')) {
      let j = i + 1;
      while (j < n && IDENT_PART.test(sql[j])) j++;
      const name = sql.slice(i + 1, j);
      if (!allNames.includes(name)) allNames.push(name);
      if (dialect === 'mysql') {
        params.push(name);
        out += '?';
      } else {
        let k = params.indexOf(name);
        if (k < 0) {
          params.push(name);
          k = params.length - 1;
        }
        out += placeholder(dialect, name, k + 1);
      }
      i = j;
      continue;
    }
    if (c === ';') {
      flush();
      i++;
      continue;
    }
    out += c;
    i++;
  }
  flush();
  return { statements, names: allNames, rawPlaceholders };
}

/** The named parameters `sql` uses (outside literals, identifiers and comments). */
export function parameterNames(sql: string, dialect: SqlDialect): string[] {
  return compileSql(sql, dialect).names;
}

/**
 * The driver's parameter values for a compiled statement: `$n`/`?` positional arrays, or `{ p_name: value }`
 * for SQL Server. A name with no value binds null.
 */
export function bindValues(stmt: CompiledStatement, values: Record<string, unknown>, dialect: SqlDialect): unknown[] | Record<string, unknown> {
  if (dialect === 'mssql') {
    const out: Record<string, unknown> = {};
    for (const name of stmt.params) out[`p_${name}`] = values[name] ?? null;
    return out;
  }
  return stmt.params.map((name) => values[name] ?? null);
}

/** Quote an identifier (a configured column name) for the dialect. */
export function quoteIdent(name: string, dialect: SqlDialect): string {
  if (dialect === 'mysql') return '`' + name.replace(/`/g, '``') + '`';
  if (dialect === 'mssql') return '[' + name.replace(/]/g, ']]') + ']';
  return '"' + name.replace(/"/g, '""') + '"';
}
