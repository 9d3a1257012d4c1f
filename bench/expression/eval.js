#!/usr/bin/env node
'use strict';
/**
 * The transformScript language's speed: each expression compiled once, then evaluated for N different objects
 * (attribute dictionaries as an import gives them), `--rounds` times; prints JSON with evaluations per second
 * (the best and the worst round) for each. One process, no I/O: what the engine's per-object rule evaluation
 * costs, apart from everything else.
 *
 * Usage: npm run bench:expression [-- --objects 100000 --rounds 5]
 */
const os = require('node:os');
const path = require('node:path');
const { arg } = require('../support');

const { compileExpression } = require(path.join(__dirname, '../../dist/lib/expression'));

const N = arg('objects', 100000);
const ROUNDS = arg('rounds', 5);

const EXPRESSIONS = [
  { name: 'concatenation', source: 'source.givenName + " " + source.sn', scope: (o) => ({ source: o, object: o }) },
  { name: 'method call', source: 'source.toLowerCase()', scope: (o) => ({ source: o.mail, object: o }) },
  {
    name: 'DN template with dnEscape',
    source: '"cn=" + dnEscape(source.cn) + ",ou=people," + baseDN',
    scope: (o) => ({ source: o, baseDN: 'dc=example,dc=test', objectType: 'User', container: null }),
  },
];

function objects() {
  const out = new Array(N);
  for (let i = 0; i < N; i++) {
    out[i] = { givenName: `Given${i}`, sn: `Surname${i}`, cn: i % 10 === 0 ? `Lee, Ann ${i}` : `Ann Lee ${i}`, mail: `Given${i}.Surname${i}@Example.TEST` };
  }
  return out;
}

function main() {
  const objs = objects();
  const results = [];
  for (const e of EXPRESSIONS) {
    const compiled = compileExpression(e.source);
    const scopes = objs.map(e.scope);
    let sink = 0;
    const rates = [];
    for (let r = 0; r < ROUNDS; r++) {
      const t0 = process.hrtime.bigint();
      for (let i = 0; i < N; i++) sink += String(compiled.evaluate(scopes[i])).length;
      const seconds = Number(process.hrtime.bigint() - t0) / 1e9;
      rates.push(N / seconds);
    }
    if (sink === 0) throw new Error('nothing evaluated');
    results.push({ expression: e.source, name: e.name, evaluationsPerSecond: { best: Math.round(Math.max(...rates)), worst: Math.round(Math.min(...rates)) } });
  }
  console.log(JSON.stringify({ objects: N, rounds: ROUNDS, results, node: process.version, loadAverage: os.loadavg().map((x) => +x.toFixed(2)) }, null, 2));
}

main();
