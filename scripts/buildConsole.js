#!/usr/bin/env node
// Bundle the web console (lib/console/web/src, Preact + plain CSS) into dist/console with esbuild: app.js, app.css
// and index.html, which names them with `?v=<content hash>` so the service can let browsers cache them for good.
'use strict';
const { createHash } = require('node:crypto');
const { mkdirSync, readFileSync, writeFileSync } = require('node:fs');
const path = require('node:path');
const esbuild = require('esbuild');

const root = path.resolve(__dirname, '..');
const src = path.join(root, 'lib/console/web');
const out = path.join(root, 'dist/console');

async function main() {
  mkdirSync(out, { recursive: true });
  await esbuild.build({
    entryPoints: { app: path.join(src, 'src/main.tsx') },
    bundle: true,
    minify: true,
    sourcemap: 'linked',
    format: 'esm',
    target: ['chrome111', 'firefox115', 'safari16.4', 'edge111'],
    jsx: 'automatic',
    jsxImportSource: 'preact',
    outdir: out,
    logLevel: 'warning',
    legalComments: 'none',
  });
  const hash = (file) =>
    createHash('sha256')
      .update(readFileSync(path.join(out, file)))
      .digest('hex')
      .slice(0, 12);
  const html = readFileSync(path.join(src, 'index.html'), 'utf8')
    .replace('app.js"', `app.js?v=${hash('app.js')}"`)
    .replace('app.css"', `app.css?v=${hash('app.css')}"`);
  writeFileSync(path.join(out, 'index.html'), html);
}

main().catch((err) => {
  process.stderr.write(`Console build failed: ${err.message}\n`);
  process.exit(1);
});
