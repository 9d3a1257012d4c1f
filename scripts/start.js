#!/usr/bin/env node
// `npm start`: build with tsc when dist/ is missing or older than a TypeScript source, then host this app
// with the local Functions runtime (lib/runtime) in this process. Flags pass through: `npm start -- --port 8080`.
'use strict';
const { spawnSync } = require('node:child_process');
const { existsSync, readdirSync, statSync } = require('node:fs');
const path = require('node:path');

const root = path.resolve(__dirname, '..');
const SOURCE_DIRS = ['functions', 'orchestrations', 'lib'];
/** What tsconfig.json excludes: the web console is bundled by scripts/buildConsole.js (consoleStale below). */
const NOT_TSC = new Set([path.join(root, 'lib/console/web')]);

/** Every .ts source (not .d.ts) under the folders tsc compiles. */
function sources(dir, out = []) {
  let entries;
  try {
    entries = readdirSync(dir, { withFileTypes: true });
  } catch {
    return out;
  }
  for (const e of entries) {
    const full = path.join(dir, e.name);
    if (e.isDirectory()) {
      if (!NOT_TSC.has(full)) sources(full, out);
    } else if (e.name.endsWith('.ts') && !e.name.endsWith('.d.ts')) out.push(full);
  }
  return out;
}

/** The first source whose compiled .js is missing or older, or undefined when dist/ is current. */
function staleSource() {
  if (!existsSync(path.join(root, 'dist/lib/runtime/cli.js'))) return 'dist/lib/runtime/cli.js (missing)';
  for (const dir of SOURCE_DIRS) {
    for (const src of sources(path.join(root, dir))) {
      const rel = path.relative(root, src);
      const out = path.join(root, 'dist', rel.replace(/\.ts$/, '.js'));
      if (!existsSync(out) || statSync(out).mtimeMs < statSync(src).mtimeMs) return rel;
    }
  }
  return undefined;
}

const stale = staleSource();
if (stale) {
  process.stdout.write(`Building (${stale} is newer than its build output)...\n`);
  const tsc = require.resolve('typescript/bin/tsc', { paths: [root] });
  const result = spawnSync(process.execPath, [tsc, '-p', path.join(root, 'tsconfig.json')], { cwd: root, stdio: 'inherit' });
  if (!existsSync(path.join(root, 'dist/lib/runtime/cli.js'))) {
    process.stderr.write('The build produced no dist/lib/runtime/cli.js: cannot start.\n');
    process.exit(1);
  }
  // tsc emits even with type errors; say so, and start with what it emitted.
  if (result.status !== 0) process.stderr.write('tsc reported errors (see above); starting with the emitted output.\n');
}

/** The web console (lib/console/web) is bundled into dist/console when missing or older than a source of it. */
function consoleStale() {
  const index = path.join(root, 'dist/console/index.html');
  if (!existsSync(index)) return true;
  const built = statSync(index).mtimeMs;
  const walk = (dir) =>
    readdirSync(dir, { withFileTypes: true }).some((e) => (e.isDirectory() ? walk(path.join(dir, e.name)) : statSync(path.join(dir, e.name)).mtimeMs > built));
  return walk(path.join(root, 'lib/console/web'));
}

if (consoleStale()) {
  process.stdout.write('Building the web console (dist/console)...\n');
  const result = spawnSync(process.execPath, [path.join(root, 'scripts/buildConsole.js')], { cwd: root, stdio: 'inherit' });
  if (result.status !== 0) process.stderr.write('The console build failed (see above); the API starts without it.\n');
}

// The embedded default run is Development, asked for here: the service itself never takes Development from
// local.settings.sample.json, so the binary started directly (or by a service manager) with neither the variable
// nor a local.settings.json runs as Production and starts no development issuer (docs/authentication.md).
const hasEnvironment = Object.keys(process.env).some((k) => k.toUpperCase() === 'AZURE_FUNCTIONS_ENVIRONMENT');
if (!hasEnvironment && !existsSync(path.join(root, 'local.settings.json'))) {
  process.env.AZURE_FUNCTIONS_ENVIRONMENT = 'Development';
  process.stdout.write('npm start: no local.settings.json and no AZURE_FUNCTIONS_ENVIRONMENT: starting in Development.\n');
}

require(path.join(root, 'dist/lib/runtime/cli.js'))
  .main(['start', '--app', root, ...process.argv.slice(2)])
  .catch((err) => {
    process.stderr.write(`${err && err.stack ? err.stack : err}\n`);
    process.exit(1);
  });
