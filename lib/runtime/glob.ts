import { readdirSync, type Dirent } from 'node:fs';
import path from 'node:path';

/**
 * The small glob dialect package.json `main` uses in Functions apps (Node 20 has no fs.glob):
 * `*` (any run of characters inside one path segment), `?` (one character), `**` (any number of whole
 * segments, including none) and `{a,b}` alternatives (nestable). Paths are matched with `/` separators.
 */
export function expandBraces(pattern: string): string[] {
  let depth = 0;
  let start = -1;
  for (let i = 0; i < pattern.length; i++) {
    const c = pattern[i];
    if (c === '{') {
      if (depth === 0) start = i;
      depth++;
    } else if (c === '}' && depth > 0) {
      depth--;
      if (depth === 0) {
        const inner = pattern.slice(start + 1, i);
        const before = pattern.slice(0, start);
        const after = pattern.slice(i + 1);
        const alternatives = splitTopLevel(inner);
        return alternatives.flatMap((alt) => expandBraces(before + alt + after));
      }
    }
  }
  return [pattern];
}

function splitTopLevel(text: string): string[] {
  const parts: string[] = [];
  let depth = 0;
  let current = '';
  for (const c of text) {
    if (c === '{') depth++;
    if (c === '}') depth--;
    if (c === ',' && depth === 0) {
      parts.push(current);
      current = '';
    } else {
      current += c;
    }
  }
  parts.push(current);
  return parts;
}

function segmentRegex(segment: string): RegExp {
  let re = '';
  for (const c of segment) {
    if (c === '*') re += '[^/]*';
    else if (c === '?') re += '[^/]';
    else re += c.replace(/[.+^${}()|[\]\\]/g, '\\$&');
  }
  return new RegExp(`^${re}$`);
}

/** Compile one glob (braces allowed) to a predicate over `/`-separated relative paths. */
export function globToPredicate(pattern: string): (relPath: string) => boolean {
  const compiled = expandBraces(pattern.replace(/\\/g, '/').replace(/^\.\//, '')).map((p) =>
    p.split('/').filter((s) => s !== '').map((s) => (s === '**' ? ('**' as const) : segmentRegex(s))),
  );
  const matchFrom = (pats: ('**' | RegExp)[], segs: string[], pi: number, si: number): boolean => {
    if (pi === pats.length) return si === segs.length;
    const p = pats[pi];
    if (p === '**') {
      for (let k = si; k <= segs.length; k++) if (matchFrom(pats, segs, pi + 1, k)) return true;
      return false;
    }
    return si < segs.length && p.test(segs[si]) && matchFrom(pats, segs, pi + 1, si + 1);
  };
  return (relPath: string) => {
    const segs = relPath.replace(/\\/g, '/').split('/').filter((s) => s !== '');
    return compiled.some((pats) => matchFrom(pats, segs, 0, 0));
  };
}

/** The literal directory every alternative starts with, so the walk does not scan the whole app folder. */
function literalRoots(pattern: string): string[] {
  return [
    ...new Set(
      expandBraces(pattern.replace(/\\/g, '/').replace(/^\.\//, '')).map((p) => {
        const segs = p.split('/');
        const lit: string[] = [];
        for (const s of segs.slice(0, -1)) {
          if (/[*?]/.test(s)) break;
          lit.push(s);
        }
        return lit.join('/');
      }),
    ),
  ];
}

/**
 * Files under `baseDir` matching the pattern, as absolute paths, sorted for a stable load order.
 * `node_modules` and dot folders are not walked unless the pattern names them literally.
 */
export function globFiles(baseDir: string, pattern: string): string[] {
  const matches = globToPredicate(pattern);
  const found = new Set<string>();
  const walk = (rel: string) => {
    let entries: Dirent[];
    try {
      entries = readdirSync(path.join(baseDir, rel), { withFileTypes: true });
    } catch {
      return;
    }
    for (const e of entries) {
      const childRel = rel ? `${rel}/${e.name}` : e.name;
      if (e.isDirectory()) {
        if (e.name === 'node_modules' || e.name.startsWith('.')) continue;
        walk(childRel);
      } else if (matches(childRel)) {
        found.add(path.join(baseDir, childRel));
      }
    }
  };
  for (const root of literalRoots(pattern)) {
    walk(root);
  }
  return [...found].sort();
}
