import { memberNames, parseExpression } from '../../../lib/expression';

const names = (script: string) => {
  const found = memberNames(parseExpression(script), 'object');
  return found === null ? null : [...found].sort();
};

describe('memberNames: the properties a script reads of a scope name', () => {
  test('written names, with . ?. and a string literal key', () => {
    expect(names('object.title')).toEqual(['title']);
    expect(names("lower(object?.mail ?? '') + object['employeeID'] + source")).toEqual(['employeeID', 'mail']);
    expect(names('`${object.givenName} ${object.sn}`.trim()')).toEqual(['givenName', 'sn']);
    expect(names('object.proxyAddresses.length > 0 ? object.proxyAddresses[0] : null')).toEqual(['proxyAddresses']);
    expect(names('typeof object.department === "string"')).toEqual(['department']);
  });
  test('a script that never names it reads nothing of it', () => {
    expect(names('source.toLowerCase()')).toEqual([]);
    expect(names('typeof object')).toEqual([]);
  });
  test('any other use: every property may be read (null)', () => {
    expect(names('object[source]')).toBeNull();
    expect(names('object')).toBeNull();
    expect(names("coalesce(object, 'x')")).toBeNull();
    expect(names('object.title + object[lower("SN")]')).toBeNull();
  });
});
