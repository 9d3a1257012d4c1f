import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { globFiles, globToPredicate } from '../../../lib/runtime/glob';

describe('glob', () => {
  it('matches brace alternatives, nested too', () => {
    const both = globToPredicate('dist/{functions,orchestrations}/*.js');
    expect(['dist/functions/a.js', 'dist/orchestrations/o.js', 'dist/lib/x.js'].map(both)).toEqual([true, true, false]);
    const nested = globToPredicate('{a,b{1,2}}.js');
    expect(['a.js', 'b1.js', 'b2.js', 'b3.js', 'b.js'].map(nested)).toEqual([true, true, true, false, false]);
    expect(globToPredicate('plain.js')('plain.js')).toBe(true);
  });

  it('* stays inside a segment, ** spans segments (including none)', () => {
    const star = globToPredicate('dist/*.js');
    expect(star('dist/a.js')).toBe(true);
    expect(star('dist/sub/a.js')).toBe(false);
    const deep = globToPredicate('dist/**/*.js');
    expect(deep('dist/a.js')).toBe(true);
    expect(deep('dist/x/y/a.js')).toBe(true);
    expect(deep('dist/x/y/a.ts')).toBe(false);
    expect(globToPredicate('./src/?.js')('src/a.js')).toBe(true);
    expect(globToPredicate('a.b')('aXb')).toBe(false);
  });

  it('finds files on disk in a stable order, skipping node_modules', () => {
    const dir = mkdtempSync(path.join(os.tmpdir(), 'glob-'));
    try {
      for (const f of [
        'dist/functions/b.js',
        'dist/functions/a.js',
        'dist/functions/a.js.map',
        'dist/orchestrations/o.js',
        'dist/lib/x.js',
        'dist/node_modules/m.js',
      ]) {
        mkdirSync(path.dirname(path.join(dir, f)), { recursive: true });
        writeFileSync(path.join(dir, f), '');
      }
      const rel = (files: string[]) => files.map((f) => path.relative(dir, f).split(path.sep).join('/'));
      expect(rel(globFiles(dir, 'dist/{functions,orchestrations}/*.js'))).toEqual(['dist/functions/a.js', 'dist/functions/b.js', 'dist/orchestrations/o.js']);
      expect(rel(globFiles(dir, 'dist/**/*.js'))).toEqual(['dist/functions/a.js', 'dist/functions/b.js', 'dist/lib/x.js', 'dist/orchestrations/o.js']);
      expect(globFiles(dir, 'missing/*.js')).toEqual([]);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
