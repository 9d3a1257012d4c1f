import {
  CsvParser,
  decoderFor,
  encodeText,
  fingerprint,
  fingerprintText,
  formatCsvField,
  formatCsvRow,
  parseCsv,
  rowFields,
  type CsvReadOptions,
  type CsvRecord,
  type CsvRow,
} from '../../../lib/connectors/file/csv';

const fieldsOf = (records: CsvRecord[]) => records.map((r) => r.fields);

/** Feed `bytes` in pieces of `size` and collect the records. */
function inPieces(bytes: Buffer, size: number, options = {}): CsvRecord[] {
  const p = new CsvParser(options);
  const out: CsvRecord[] = [];
  for (let i = 0; i < bytes.length; i += size) out.push(...p.push(bytes.subarray(i, i + size)));
  return [...out, ...p.finish()];
}

describe('CSV reader', () => {
  test('plain rows, LF and CRLF line ends, last line without a line break', () => {
    expect(fieldsOf(parseCsv('a,b,c\n1,2,3\r\n4,5,6'))).toEqual([
      ['a', 'b', 'c'],
      ['1', '2', '3'],
      ['4', '5', '6'],
    ]);
  });

  test('quoted fields: delimiters, doubled quotes, line breaks inside, empty quoted field', () => {
    const recs = parseCsv('id,note,x\n1,"a, b",""\n2,"say ""hi""","line1\nline2\r\nline3"\n3,plain,z\n');
    expect(fieldsOf(recs)).toEqual([
      ['id', 'note', 'x'],
      ['1', 'a, b', ''],
      ['2', 'say "hi"', 'line1\nline2\r\nline3'],
      ['3', 'plain', 'z'],
    ]);
    expect(recs.map((r) => r.line)).toEqual([1, 2, 3, 6]);
  });

  test('empty fields and trailing delimiters are empty strings; blank lines are skipped', () => {
    expect(fieldsOf(parseCsv('a,b,c\n,,\n\n1,,\n'))).toEqual([
      ['a', 'b', 'c'],
      ['', '', ''],
      ['1', '', ''],
    ]);
  });

  test('a UTF-8 byte order mark is dropped and unicode survives', () => {
    const recs = parseCsv(Buffer.concat([Buffer.from([0xef, 0xbb, 0xbf]), Buffer.from('név,城市\nÁrpád,東京 😀\n')]));
    expect(fieldsOf(recs)).toEqual([
      ['név', '城市'],
      ['Árpád', '東京 😀'],
    ]);
  });

  test('any chunking gives the same records, even splitting a multi-byte character or a "" escape', () => {
    const text = Buffer.from('\ufeffid;name;note\n1;"Zoë ""Z""";"x;\ny"\r\n2;李小龙;😀\n3;"";"end"', 'utf8');
    const whole = fieldsOf(parseCsv(text, { delimiter: ';' }));
    expect(whole).toHaveLength(4);
    for (const size of [1, 2, 3, 5, 7, 64]) expect(fieldsOf(inPieces(text, size, { delimiter: ';' }))).toEqual(whole);
  });

  test('byte offsets: each record spans exactly its bytes, and reading from an offset resumes there', () => {
    const text = Buffer.from('id,v\n1,"a\nb"\n2,ü\n3,c\n', 'utf8');
    const recs = parseCsv(text);
    for (const r of recs.slice(1)) {
      const again = parseCsv(text.subarray(r.start, r.end), { startOffset: r.start });
      expect(again[0].fields).toEqual(r.fields);
    }
    const resumed = parseCsv(text.subarray(recs[2].start), { startOffset: recs[2].start, startLine: recs[2].line });
    expect(fieldsOf(resumed)).toEqual([
      ['2', 'ü'],
      ['3', 'c'],
    ]);
    expect(resumed[0].line).toBe(4);
    expect(recs[1].nextLine).toBe(4);
  });

  test('text after a closing quote: that record is malformed, the next rows are still read', () => {
    const recs = parseCsv('a,b\n1,"x"y\n2,ok\n');
    expect(recs[1].error).toMatch(/after a closing quote/);
    expect(recs[2]).toMatchObject({ fields: ['2', 'ok'], line: 3 });
    expect(recs[2].error).toBeUndefined();
  });

  test('an unterminated quote is one malformed record; reading goes on at the next line', () => {
    const recs = parseCsv('a,b\n1,"never closed\n2,ok\n3,fine\n');
    expect(recs[1].error).toMatch(/not closed/);
    expect(fieldsOf(recs.slice(2))).toEqual([
      ['2', 'ok'],
      ['3', 'fine'],
    ]);
  });

  test('a quote closed by a stray quote lines below: the error names every line not read as a row', () => {
    const rows = Array.from({ length: 5 }, (_, i) => `${i + 3},ok${i}`).join('\n');
    const recs = parseCsv(`a,b\n1,fine\n2,"never closed\n${rows}\n8,"oops" here\n9,after\n`);
    expect(recs[2].line).toBe(3);
    expect(recs[2].error).toBe(
      'Unexpected text after a closing quote (line 9): the quoted field opened on line 3 runs over 7 lines, so lines 3-9 were not read as rows (a quote not closed on line 3?).',
    );
    expect(recs[3]).toMatchObject({ fields: ['9', 'after'], line: 10 });
  });

  test('a record longer than maxRecordBytes is reported, not buffered forever', () => {
    const long = 'a,b\n1,"' + 'x'.repeat(5000) + '\n2,ok\n';
    const recs = inPieces(Buffer.from(long + 'y'.repeat(5000)), 512, { maxRecordBytes: 1024 });
    expect(recs[1].error).toMatch(/longer than 1024 bytes/);
    expect(recs[2].fields).toEqual(['2', 'ok']);
  });

  test('tab delimiter, Latin-1 and Windows-1252 text', () => {
    expect(fieldsOf(parseCsv('a\tb\n1\t2\n', { delimiter: '\t' }))).toEqual([
      ['a', 'b'],
      ['1', '2'],
    ]);
    expect(parseCsv(Buffer.from([0x6e, 0x0a, 0xe9, 0x0a]), { encoding: 'latin1' })[1].fields).toEqual(['é']);
    expect(parseCsv(Buffer.from([0x6e, 0x0a, 0x80, 0x0a]), { encoding: 'windows-1252' })[1].fields).toEqual(['€']);
    expect(encodeText('€ é „x”', 'windows-1252')).toEqual(Buffer.from([0x80, 0x20, 0xe9, 0x20, 0x84, 0x78, 0x94]));
    expect(parseCsv('n\n€ é „x”\n', { encoding: 'windows-1252' })[1].fields).toEqual(['€ é „x”']);
  });

  test('an invalid delimiter is refused', () => {
    expect(() => new CsvParser({ delimiter: '"' })).toThrow(/delimiter/);
    expect(() => new CsvParser({ delimiter: ';;' })).toThrow(/delimiter/);
  });

  test('formatting quotes only what needs it and round-trips', () => {
    expect(formatCsvField('plain')).toBe('plain');
    expect(formatCsvField('a,b')).toBe('"a,b"');
    expect(formatCsvField('say "hi"')).toBe('"say ""hi"""');
    expect(formatCsvField(' padded')).toBe('" padded"');
    const row = ['1', 'a,b', 'q"uote', 'multi\nline', '', 'ü 😀'];
    expect(parseCsv(formatCsvRow(row))[0].fields).toEqual(row);
    expect(parseCsv(formatCsvRow(row, ';'), { delimiter: ';' })[0].fields).toEqual(row);
  });
  describe('key mode (a delta reads rows by anchor and fingerprint, fields left as bytes)', () => {
    /** Feed `bytes` in pieces of `size` to a key-mode parser. */
    function rowsInPieces(bytes: Buffer, size: number, options: CsvReadOptions): CsvRow[] {
      const p = new CsvParser(options);
      const out: CsvRow[] = [];
      for (let i = 0; i < bytes.length; i += size) out.push(...p.pushRows(bytes.subarray(i, i + size)));
      return [...out, ...p.finishRows()];
    }
    /** The key field of a row as text, whether the reader decoded it or left its bytes. */
    const keyText = (r: CsvRow, options: CsvReadOptions) => (r.keyFrom >= 0 ? decoderFor(options.encoding ?? 'utf8')(r.bytes, r.keyFrom, r.keyTo) : r.key);

    const samples: [string, Buffer, CsvReadOptions][] = [
      [
        'quotes, line breaks, CRLF, blank lines, a last line without a break',
        Buffer.from('1,"a, b",x\r\n\n2,"say ""hi""","l1\nl2"\n"3",plain,z\n4,,\n5', 'utf8'),
        {},
      ],
      ['malformed rows and short rows', Buffer.from('1,"x"y,z\n2\n3,"never closed\n4,ok,k\n,empty,key\n', 'utf8'), {}],
      ['the key in the middle, a semicolon delimiter, unicode', Buffer.from('a;Zoë 😀;x\nb;"q;""q""";y\nc;;z\nd\n', 'utf8'), { delimiter: ';' }],
      ['Windows-1252 bytes', Buffer.from([0x31, 0x2c, 0x80, 0xe9, 0x0a, 0x32, 0x2c, 0x22, 0x84, 0x22, 0x0a]), { encoding: 'windows-1252' }],
    ];

    test.each(samples)('%s: the same records, fingerprints, keys and fields as a full read, in any chunking', (_, bytes, options) => {
      const full = parseCsv(bytes, { ...options, fingerprintSeed: 7 });
      for (const keyField of [0, 1, 2]) {
        for (const size of [1, 3, 7, 4096]) {
          const rows = rowsInPieces(bytes, size, { ...options, fingerprintSeed: 7, keyField });
          expect(rows.map((r) => [r.line, r.nextLine, r.start, r.end, r.h1, r.h2, r.error])).toEqual(
            full.map((r) => [r.line, r.nextLine, r.start, r.end, r.h1, r.h2, r.error]),
          );
          expect(rows.map((r) => rowFields(r, options))).toEqual(full.map((r) => r.fields));
          expect(rows.map((r) => keyText(r, options))).toEqual(full.map((r) => r.fields[keyField]));
        }
      }
    });

    test('a row without quotes keeps even its key as bytes; a quoted one decodes only its key', () => {
      const [plain, quoted] = rowsInPieces(Buffer.from('k1,a,b\n"k ""2""","x,y",z\n'), 4096, { keyField: 0 });
      expect(plain).toMatchObject({ key: undefined, fields: undefined });
      expect(plain.bytes.toString('utf8', plain.keyFrom, plain.keyTo)).toBe('k1');
      expect(quoted).toMatchObject({ key: 'k "2"', keyFrom: -1, fields: undefined });
      expect(rowFields(quoted, {})).toEqual(['k "2"', 'x,y', 'z']);
      expect(() => new CsvParser({ keyField: 0 }).push(Buffer.from('a\n'))).toThrow(/pushRows/);
      expect(() => new CsvParser().pushRows(Buffer.from('a\n'))).toThrow(/keyField/);
    });

    test('a fingerprint is its lanes and its length as text', () => {
      const bytes = Buffer.from('a,b,c\n');
      const [r] = parseCsv(bytes, { fingerprintSeed: 0 });
      expect(fingerprintText(r.h1!, r.h2!, r.end - r.start)).toBe(fingerprint(0, bytes));
      expect(fingerprint(0, bytes)).not.toBe(fingerprint(0, Buffer.from('a,b,d\n')));
    });
  });
});
