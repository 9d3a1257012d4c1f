import { BerWriter } from 'ldapts';
import { endsRefresh, readMessages, resultOf } from '../../../../lib/connectors/ldap/streamReader';

/** An LDAPMessage: id, then the operation `op` whose content `write` writes. */
function message(id: number, op: number, write: (w: BerWriter) => void): Buffer {
  const w = new BerWriter();
  w.startSequence();
  w.writeInt(id);
  w.startSequence(op);
  write(w);
  w.endSequence();
  w.endSequence();
  return w.buffer;
}
const result = (code: number, diagnostic: string) => (w: BerWriter) => {
  w.writeEnumeration(code);
  w.writeString('');
  w.writeString(diagnostic);
};
const entry = (dn: string) => (w: BerWriter) => {
  w.writeString(dn);
  w.startSequence();
  w.endSequence();
};
/** A syncInfoValue: refreshDelete [1] / refreshPresent [2] with an optional cookie and refreshDone; newcookie [0]. */
function syncInfo(tag: 0xa1 | 0xa2, cookie: string | null, refreshDone?: boolean): Buffer {
  const w = new BerWriter();
  w.startSequence(tag);
  if (cookie !== null) w.writeString(cookie);
  if (refreshDone !== undefined) w.writeBoolean(refreshDone);
  w.endSequence();
  return w.buffer;
}

describe('the change stream reader (lib/connectors/ldap/streamReader.ts)', () => {
  test('messages are read as they complete, whatever the chunks: a message cut in two waits for its end', () => {
    const bytes = Buffer.concat([message(3, 0x64, entry('uid=a,dc=x')), message(3, 0x64, entry('uid=b,dc=x')), message(3, 0x65, result(0, ''))]);
    const cut = message(3, 0x64, entry('uid=a,dc=x')).length + 5;
    const first = readMessages(bytes.subarray(0, cut));
    expect(first.messages.map((m) => [m.id, m.op])).toEqual([[3, 0x64]]);
    expect(first.rest.length).toBe(5);
    const second = readMessages(Buffer.concat([first.rest, bytes.subarray(cut)]));
    expect(second.messages.map((m) => [m.id, m.op])).toEqual([
      [3, 0x64],
      [3, 0x65],
    ]);
    expect(second.rest.length).toBe(0);
    expect(resultOf(second.messages[1])).toEqual({ code: 0, message: '' });
  });

  test('a result code and its diagnostic, and an unsolicited notification names itself', () => {
    const [bind] = readMessages(message(2, 0x61, result(49, 'invalid credentials'))).messages;
    expect(resultOf(bind)).toEqual({ code: 49, message: 'invalid credentials' });
    const [notice] = readMessages(
      message(0, 0x78, (w) => {
        result(52, 'shutting down')(w);
        w.writeString('1.3.6.1.4.1.1466.20036', 0x8a);
      }),
    ).messages;
    expect(resultOf(notice)).toEqual({ code: 52, message: 'shutting down', name: '1.3.6.1.4.1.1466.20036' });
  });

  test('the Sync Info message that ends the refresh phase: refreshDelete or refreshPresent with refreshDone TRUE (its default)', () => {
    expect(endsRefresh(syncInfo(0xa1, 'rid=000,csn=1'))).toBe(true);
    expect(endsRefresh(syncInfo(0xa2, null))).toBe(true);
    expect(endsRefresh(syncInfo(0xa2, 'c', true))).toBe(true);
    expect(endsRefresh(syncInfo(0xa1, 'c', false))).toBe(false);
    const newCookie = new BerWriter();
    newCookie.writeString('rid=000,csn=2', 0x80);
    expect(endsRefresh(newCookie.buffer)).toBe(false);
  });

  test('bytes that are not an LDAP message throw (the stream then ends)', () => {
    expect(() => readMessages(Buffer.from([0x04, 0x01, 0x00]))).toThrow();
  });
});
