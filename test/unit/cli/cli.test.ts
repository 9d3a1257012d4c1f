import { exitCodeOfRun, exitCodeOfStatus } from '../../../lib/cli/exitCodes';
import { parseWhere } from '../../../lib/cli/commands/mesh';
import { col, renderTable } from '../../../lib/cli/output';

describe('meshsync --where', () => {
  it('reads attribute, operator and the rest as the value', () => {
    expect(parseWhere('displayName contains van der')).toEqual({ attributeName: 'displayName', operator: 'contains', value: 'van der' });
    expect(parseWhere('Dept EQUALS Sales')).toEqual({ attributeName: 'Dept', operator: 'equals', value: 'Sales' });
    expect(parseWhere('mail ispresent')).toEqual({ attributeName: 'mail', operator: 'ispresent' });
    expect(parseWhere('active istrue')).toEqual({ attributeName: 'active', operator: 'istrue' });
  });
  it('refuses unknown operators, a missing value and a value where none is taken', () => {
    expect(() => parseWhere('sn frobs x')).toThrow(/unknown operator 'frobs'/);
    expect(() => parseWhere('sn equals')).toThrow(/equals needs a value/);
    expect(() => parseWhere('sn ispresent yes')).toThrow(/ispresent takes no value/);
    expect(() => parseWhere('sn')).toThrow(/attribute operator/);
  });
});

describe('meshsync tables', () => {
  const rows = [
    { id: '0f8fad5b-d9cb-469f-a165-70867728950e', name: 'A rather long connector name that goes on', type: 'sql' },
    { id: '7c9e6679-7425-40de-944b-e07fc1f90ae7', name: 'HR', type: 'ldap' },
  ];
  const columns = [col('ID', 'id'), col('NAME', 'name'), col('TYPE', 'type')];
  it('sizes columns to their widest cell when they fit', () => {
    const lines = renderTable(rows, columns, 200).split('\n');
    expect(lines[0]).toBe(`ID${' '.repeat(36)}NAME${' '.repeat(39)}TYPE`);
    expect(lines[2]).toBe(`7c9e6679-7425-40de-944b-e07fc1f90ae7  HR${' '.repeat(41)}ldap`);
  });
  it('narrows the widest columns with an ellipsis to fit the width', () => {
    const lines = renderTable(rows, columns, 60).split('\n');
    for (const line of lines) expect(line.length).toBeLessThanOrEqual(60);
    expect(lines[1]).toContain('…');
    expect(lines[1].endsWith('sql')).toBe(true);
  });
  it('never narrows an id column, even when the table is then wider than the terminal', () => {
    const lines = renderTable(rows, columns, 30).split('\n');
    expect(lines[1].startsWith('0f8fad5b-d9cb-469f-a165-70867728950e  ')).toBe(true);
    expect(lines[2].startsWith('7c9e6679-7425-40de-944b-e07fc1f90ae7  ')).toBe(true);
    expect(lines[1]).toContain('…');
  });
  it('reads dotted paths and functions, and shows objects as compact JSON', () => {
    const out = renderTable(
      [{ stats: { errors: 2 }, tags: ['a', 'b'] }],
      [col('ERR', 'stats.errors'), col('TAGS', 'tags'), col('FN', (i) => (i.stats as { errors: number }).errors * 2)],
      80,
    );
    expect(out.split('\n')[1]).toBe('2    ["a","b"]  4');
  });
});

describe('meshsync exit codes', () => {
  it('maps run statuses and HTTP statuses to the documented codes', () => {
    expect(['Completed', 'CompletedWithErrors', 'Failed', 'Rejected', 'Cancelled', 'AwaitingApproval'].map(exitCodeOfRun)).toEqual([0, 1, 2, 2, 2, 8]);
    expect([400, 401, 403, 404, 409, 429, 500, 503].map(exitCodeOfStatus)).toEqual([3, 4, 4, 5, 6, 7, 7, 7]);
  });
});
