import { cellText, renderTable, terminalSafe } from '../../../lib/cli/output';

describe('meshsync prints no terminal control sequences', () => {
  test.each([
    ['clear screen', 'a\x1b[2J\x1b[Hb', 'ab'],
    ['colour', '\x1b[31mred\x1b[0m', 'red'],
    ['window title (OSC, BEL)', 't\x1b]0;pwned\x07x', 'tx'],
    ['hyperlink (OSC, ST)', '\x1b]8;;http://evil\x1b\\click\x1b]8;;\x1b\\', 'click'],
    ['C1 CSI with its parameters', 'c\u009b2Jd', 'cd'],
    ['other C1', 'x\u0085\u0090y', 'xy'],
    ['carriage return, bell, backspace, DEL', 'ok\r\x07\x08\x7fEVIL', 'okEVIL'],
    ['bidi override', 'abc\u202etxt.exe', 'abctxt.exe'],
    ['a lone ESC at the end', 'e\x1b', 'e'],
    ['tab and newline stay', 'a\tb\nc', 'a\tb\nc'],
    ['letters of any script stay', 'Zoë Łukasz 山田', 'Zoë Łukasz 山田'],
  ])('%s', (_what, input, expected) => {
    expect(terminalSafe(input)).toBe(expected);
  });

  test('table cells are one clean line; long hostile input is handled in linear time', () => {
    expect(cellText('a\x1b[2J\nb')).toBe('a b');
    const table = renderTable([{ name: `x\x1b]0;${'A'.repeat(10)}\x07y` }], [{ header: 'NAME', get: 'name' }], 80);
    expect(table).toBe('NAME\nxy');
    const hostile = '\x1b[' + '0;'.repeat(200_000);
    expect(terminalSafe(hostile)).toBe('');
  });
});
