import { JsonRecordParser, parseJsonRecords, type JsonRecord } from '../../../lib/connectors/file/jsonRecords';

function inPieces(bytes: Buffer, size: number): JsonRecord[] {
  const p = new JsonRecordParser();
  const out: JsonRecord[] = [];
  for (let i = 0; i < bytes.length; i += size) out.push(...p.push(bytes.subarray(i, i + size)));
  return [...out, ...p.finish()];
}

describe('JSON record reader', () => {
  test('an array of objects, with brackets and quotes inside strings and nested arrays', () => {
    const text = '[\n {"id": "1", "note": "a } ] \\" {"},\n {"id": 2, "tags": ["x", "y"]}\n]\n';
    const recs = parseJsonRecords(text);
    expect(recs.map((r) => r.value)).toEqual([
      { id: '1', note: 'a } ] " {' },
      { id: 2, tags: ['x', 'y'] },
    ]);
    expect(recs.map((r) => r.line)).toEqual([2, 3]);
  });

  test('JSON Lines', () => {
    const recs = parseJsonRecords('{"id":"1"}\n{"id":"2","n":"ü 😀"}\n\n{"id":"3"}');
    expect(recs.map((r) => r.value)).toEqual([{ id: '1' }, { id: '2', n: 'ü 😀' }, { id: '3' }]);
  });

  test('any chunking gives the same records', () => {
    const text = Buffer.from('\ufeff[{"id":"1","s":"x\\\\"},{"id":"李","a":[1,{"b":"}"}]}]', 'utf8');
    const whole = parseJsonRecords(text).map((r) => r.value);
    expect(whole).toHaveLength(2);
    for (const size of [1, 2, 3, 7]) expect(inPieces(text, size).map((r) => r.value)).toEqual(whole);
  });

  test('a record that does not parse is an error; the others are read', () => {
    const recs = parseJsonRecords('[{"id":"1"},\n{"id":"2", "x": },\n{"id":"3"}]');
    expect(recs[0].value).toEqual({ id: '1' });
    expect(recs[1].error).toMatch(/Invalid JSON/);
    expect(recs[2].value).toEqual({ id: '3' });
  });

  test('offsets resume mid-array', () => {
    const text = Buffer.from('[{"id":"1"},\n{"id":"2"},\n{"id":"3"}]');
    const recs = parseJsonRecords(text);
    const rest = parseJsonRecords(text.subarray(recs[0].end), { layout: 'array', startOffset: recs[0].end, startLine: recs[0].nextLine });
    expect(rest.map((r) => r.value)).toEqual([{ id: '2' }, { id: '3' }]);
    expect(rest[0].line).toBe(2);
  });

  test('an array that is not closed, and a scalar where a record belongs, are reported', () => {
    expect(parseJsonRecords('[{"id":"1"}').some((r) => r.error?.includes('not closed'))).toBe(true);
    const recs = parseJsonRecords('[{"id":"1"}, 42, {"id":"2"}]');
    expect(recs.map((r) => r.error ?? r.value)).toEqual([{ id: '1' }, 'A record must be a JSON object.', { id: '2' }]);
  });
});
