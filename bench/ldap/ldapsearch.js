'use strict';
const { spawn } = require('node:child_process');

/**
 * Run `ldapsearch` with these arguments, its output to a pipe that only counts the entries (the directory's
 * read floor the directory benches print beside the engine's import): `{ entries, seconds }`.
 */
function countingLdapsearch(args, env = {}) {
  return new Promise((resolve, reject) => {
    const t0 = performance.now();
    const child = spawn('ldapsearch', args, { env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
    let entries = 0;
    let tail = '\n';
    let err = '';
    child.stdout.on('data', (d) => {
      const text = tail + d.toString('latin1');
      entries += (text.match(/\ndn: /g) ?? []).length;
      tail = text.slice(-4);
    });
    child.stderr.on('data', (d) => (err += d));
    child.once('error', reject);
    child.once('exit', (code) => {
      if (code !== 0) return reject(new Error(`ldapsearch exited with ${code}: ${err}`));
      resolve({ entries, seconds: +((performance.now() - t0) / 1000).toFixed(3) });
    });
  });
}

module.exports = { countingLdapsearch };
