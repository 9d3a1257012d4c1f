import { SCOPE_NAMES, closestName, parseExpression, unknownIdentifiers } from '../../../lib/expression';

const unknown = (script: string, names: readonly string[] = SCOPE_NAMES.rule) =>
  unknownIdentifiers(parseExpression(script), names).map((id) => ({ name: id.name, line: id.line, column: id.column }));

describe('unknownIdentifiers', () => {
  it('finds a misspelt name with its line and column', () => {
    expect(unknown('sourc.toUpperCase()')).toEqual([{ name: 'sourc', line: 1, column: 1 }]);
    expect(unknown('source.givenName +\n  " " + sn')).toEqual([{ name: 'sn', line: 2, column: 9 }]);
  });

  it('looks everywhere a name can be read: arguments, templates, computed keys, arrays, branches, chains', () => {
    expect(unknown('lower(a)')).toEqual([expect.objectContaining({ name: 'a' })]);
    expect(unknown('`${source.x}-${b}`')).toEqual([expect.objectContaining({ name: 'b' })]);
    expect(unknown('source[c]')).toEqual([expect.objectContaining({ name: 'c' })]);
    expect(unknown('[source, d]')).toEqual([expect.objectContaining({ name: 'd' })]);
    expect(unknown('source ? e : object')).toEqual([expect.objectContaining({ name: 'e' })]);
    expect(unknown('source?.x?.concat(f)')).toEqual([expect.objectContaining({ name: 'f' })]);
    expect(unknown('!g && -h || (i ?? 1)')).toEqual(['g', 'h', 'i'].map((name) => expect.objectContaining({ name })));
  });

  it('reports each name once, at its first use, in source order', () => {
    expect(unknown('y + x + y + x')).toEqual([
      { name: 'y', line: 1, column: 1 },
      { name: 'x', line: 1, column: 5 },
    ]);
  });

  it('does not count property names, helpers, methods or literals as names', () => {
    expect(unknown('source.sourc + object.anything + lower(source) + source.trim() + source["mail"]')).toEqual([]);
    expect(unknown('undefined === null || true || false')).toEqual([]);
  });

  it('lets `typeof name` probe for a name that is not there', () => {
    expect(unknown('typeof baseDN === "undefined" ? source : object')).toEqual([]);
    expect(unknown('typeof missing.x')).toEqual([expect.objectContaining({ name: 'missing' })]);
  });

  it('accepts every name of each scope, and only those', () => {
    expect(unknown('source.toLowerCase() + object.mail')).toEqual([]);
    expect(unknown('source.department == "Engineering" && object.employeeId', SCOPE_NAMES.provisioningCondition)).toEqual([]);
    expect(unknown('"cn=" + dnEscape(source.cn) + "," + (container ?? baseDN) + objectType', SCOPE_NAMES.exportDnTemplate)).toEqual([]);
    expect(unknown('"cn=" + dnEscape(object.cn) + "," + baseDN', SCOPE_NAMES.exportDnTemplate)).toEqual([expect.objectContaining({ name: 'object' })]);
    expect(unknown('source + baseDN')).toEqual([expect.objectContaining({ name: 'baseDN' })]);
    expect(unknown('related.manager.mail ?? source + object.x', SCOPE_NAMES.outboundFlow)).toEqual([]);
    expect(unknown('related.manager.mail')).toEqual([expect.objectContaining({ name: 'related' })]);
  });
});

describe('closestName', () => {
  it('suggests a name at most two edits away', () => {
    expect(closestName('sourc', SCOPE_NAMES.rule)).toBe('source');
    expect(closestName('Source', SCOPE_NAMES.rule)).toBe('source');
    expect(closestName('objet', SCOPE_NAMES.rule)).toBe('object');
    expect(closestName('basedn', SCOPE_NAMES.exportDnTemplate)).toBe('baseDN');
    expect(closestName('mail', SCOPE_NAMES.rule)).toBeUndefined();
  });
});
