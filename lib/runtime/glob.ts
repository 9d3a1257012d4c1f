import { readdirSync, type Dirent } from 'node:fs';
import path from 'node:path';
import picomatch from 'picomatch';

/**
 * The globs package.json `main` uses in Functions apps (Node 20 has no fs.glob), matched by picomatch:
 * `*` (any run of characters inside one path segment), `?` (one character), `**` (any number of whole
 * segments, including none), `{a,b}` alternatives and the rest of picomatch's syntax. Paths are matched
 * with `/` separators.
 */
const normalize = (pattern: string) => pattern.replace(/\\/g, '/').replace(/^\.\//, '');

/** Compile one glob to a predicate over `/`-separated relative paths. */
export function globToPredicate(pattern: string): (relPath: string) => boolean {
  const matches = picomatch(normalize(pattern));
  return (relPath: string) => matches(relPath.replace(/\\/g, '/'));
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
  // The literal directory the pattern starts with, so the walk does not scan the whole app folder.
  walk(picomatch.scan(normalize(pattern)).base);
  return [...found].sort();
}
