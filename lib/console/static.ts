import { createHash } from 'node:crypto';
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import path from 'node:path';

/**
 * The web console's files, as `npm run build` leaves them in dist/console (index.html, app.js, app.css):
 * read once, on the first request, and kept in memory (a few hundred KB). Nothing else on disk can be reached:
 * a request names a file of that listing or gets the SPA's index.html (deep links) or a 404.
 */
export interface ConsoleFile {
  body: Buffer;
  contentType: string;
  etag: string;
}

const TYPES: Record<string, string> = {
  '.html': 'text/html; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.map': 'application/json; charset=utf-8',
  '.json': 'application/json; charset=utf-8',
  '.svg': 'image/svg+xml',
  '.png': 'image/png',
  '.ico': 'image/x-icon',
  '.txt': 'text/plain; charset=utf-8',
};

/** dist/lib/console/static.js -> dist/console (and from the TypeScript sources under ts-jest: lib/console -> dist/console). */
export function defaultConsoleDir(): string {
  const fromDist = path.resolve(__dirname, '../../console');
  if (existsSync(path.join(fromDist, 'index.html'))) return fromDist;
  return path.resolve(__dirname, '../../dist/console');
}

export class ConsoleFiles {
  private files: Map<string, ConsoleFile> | undefined;

  constructor(private readonly dir: string = defaultConsoleDir()) {}

  /** False when the console was not built (no index.html). */
  get built(): boolean {
    return this.load().has('index.html');
  }

  /** The file at `rel` (a path under the console, already decoded), or undefined. */
  get(rel: string): ConsoleFile | undefined {
    return this.load().get(rel);
  }

  private load(): Map<string, ConsoleFile> {
    if (this.files) return this.files;
    const files = new Map<string, ConsoleFile>();
    const walk = (dir: string, prefix: string) => {
      if (!existsSync(dir)) return;
      for (const entry of readdirSync(dir, { withFileTypes: true })) {
        const full = path.join(dir, entry.name);
        const rel = prefix + entry.name;
        if (entry.isDirectory()) walk(full, rel + '/');
        else if (entry.isFile() && statSync(full).size < 16 * 1024 * 1024) {
          const contentType = TYPES[path.extname(entry.name).toLowerCase()];
          if (!contentType) continue;
          const body = readFileSync(full);
          files.set(rel, { body, contentType, etag: `"${createHash('sha256').update(body).digest('base64url').slice(0, 22)}"` });
        }
      }
    };
    walk(this.dir, '');
    // Cache only a complete build: an empty listing is read again (the build may still be running).
    if (files.has('index.html')) this.files = files;
    return files;
  }
}
