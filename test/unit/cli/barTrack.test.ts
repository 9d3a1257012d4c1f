import { barTrack } from '../../../lib/cli/wait';

const FULL = '\u2588';
const EMPTY = '\u2591';
const count = (s: string, ch: string) => [...s].filter((c) => c === ch).length;

describe('the --wait bar track', () => {
  it('fills in proportion to a known total', () => {
    expect(barTrack(0, 100, 0)).toBe(EMPTY.repeat(40));
    expect(count(barTrack(50, 100, 0), FULL)).toBe(20);
    expect(barTrack(100, 100, 0)).toBe(FULL.repeat(40));
    expect(barTrack(150, 100, 0)).toBe(FULL.repeat(40));
  });

  it('with an unknown total moves a block of 8 along the track and is never full', () => {
    const frames = Array.from({ length: 80 }, (_, tick) => barTrack(12_345, null, tick));
    for (const f of frames) {
      expect([...f]).toHaveLength(40);
      expect(count(f, FULL)).toBe(8);
      expect(f).toMatch(new RegExp(`^${EMPTY}*${FULL}{8}${EMPTY}*$`));
    }
    // It moves: from the left end to the right end and back.
    expect(frames[0].startsWith(FULL)).toBe(true);
    expect(frames[32].endsWith(FULL)).toBe(true);
    expect(new Set(frames).size).toBe(33);
  });
});
