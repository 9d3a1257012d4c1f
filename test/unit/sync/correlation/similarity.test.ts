import { blockKeys, jaroWinkler, nameSimilarity, normalizeKey } from '../../../../lib/sync/correlation/similarity';

describe('normalizeKey', () => {
  test('case, accents, blanks and punctuation', () => {
    expect(normalizeKey('  José   GARCÍA-López ')).toBe('jose garcia lopez');
    expect(normalizeKey("O'Brien, Seán")).toBe('o brien sean');
    expect(normalizeKey('Straße')).toBe('strasse');
    expect(normalizeKey('Åsa Øberg Ærø Łódź')).toBe('asa oberg aero lodz');
    expect(normalizeKey('---')).toBe('');
  });
});

describe('jaroWinkler', () => {
  test('known values', () => {
    expect(jaroWinkler('martha', 'marhta')).toBeCloseTo(0.961, 3);
    expect(jaroWinkler('dwayne', 'duane')).toBeCloseTo(0.84, 2);
    expect(jaroWinkler('dixon', 'dicksonx')).toBeCloseTo(0.813, 3);
  });
  test('bounds and symmetry', () => {
    expect(jaroWinkler('abc', 'abc')).toBe(1);
    expect(jaroWinkler('', 'abc')).toBe(0);
    expect(jaroWinkler('abc', 'xyz')).toBe(0);
    expect(jaroWinkler('jonathan smith', 'jonathon smith')).toBeCloseTo(jaroWinkler('jonathon smith', 'jonathan smith'), 10);
  });
});

describe('nameSimilarity', () => {
  test('word order and accents do not matter; a typo stays close; another name is far', () => {
    expect(nameSimilarity('García José', 'jose garcia')).toBe(1);
    expect(nameSimilarity('Jonathan Smith', 'Jonathon Smith')).toBeGreaterThan(0.95);
    expect(nameSimilarity('Jonathan Smith', 'Maria Keller')).toBeLessThan(0.6);
  });
});

describe('blockKeys', () => {
  test('the first two letters of each word', () => {
    expect(blockKeys('jose garcia lopez')).toEqual(['jo', 'ga', 'lo']);
    expect(blockKeys('a')).toEqual(['a']);
  });
});
