import { compileFilePattern, filePatternProblem, MAX_PATTERN_STARS } from '../../../lib/connectors/file/files';

describe('filePattern: * and ? matched without a regular expression', () => {
  test.each([
    ['*.csv', 'people.csv', true],
    ['*.csv', 'people.csv.bak', false],
    ['*.csv', '.csv', true],
    ['people-??.csv', 'people-01.csv', true],
    ['people-??.csv', 'people-1.csv', false],
    ['a*b*c', 'aXXbYYc', true],
    ['a*b*c', 'aXXbYY', false],
    ['*', '', true],
    ['**x', 'abcx', true],
    ['export.csv', 'export.csv', true],
    ['export.csv', 'Export.csv', false],
    ['a.c', 'abc', false],
    ['(x)+[y]', '(x)+[y]', true],
    ['ü?.json', 'üß.json', true],
  ])('%s against %s: %s', (pattern, name, expected) => {
    expect(compileFilePattern(pattern).test(name)).toBe(expected);
  });

  test('the pattern that stalled the event loop answers at once, on names far longer than the stall needed', () => {
    const matcher = compileFilePattern('*?*?*?*?*?*?*?*?#');
    // Each check costs at most name length x pattern length steps: 255 x 17 here.
    expect(matcher.test('a'.repeat(255))).toBe(false);
    expect(matcher.test(`${'a'.repeat(254)}#`)).toBe(true);
    expect(matcher.test('a'.repeat(7) + '#')).toBe(false);
  });

  test(`more than ${MAX_PATTERN_STARS} '*' is refused at save, naming the count`, () => {
    expect(filePatternProblem('*?*?*?*?*?*?*?*?#')).toBeUndefined();
    expect(filePatternProblem('*a*a*a*a*a*a*a*a*a*a#')).toBe(`has 10 '*' wildcards; at most ${MAX_PATTERN_STARS} are allowed.`);
  });
});
