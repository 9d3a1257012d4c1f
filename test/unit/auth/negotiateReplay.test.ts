import { kerberosAuthenticator, ReplayCache, replayKey } from '../../../lib/auth/negotiateReplay';

/** DER encoding, enough to build GSS-API tokens by hand. */
function der(tag: number, ...content: Buffer[]): Buffer {
  const body = Buffer.concat(content);
  const n = body.length;
  const len = n < 0x80 ? Buffer.from([n]) : n < 0x100 ? Buffer.from([0x81, n]) : Buffer.from([0x82, n >> 8, n & 0xff]);
  return Buffer.concat([Buffer.from([tag]), len, body]);
}
const oid = (hex: string) => der(0x06, Buffer.from(hex, 'hex'));
const KRB5 = '2a864886f712010202';
const SPNEGO = '2b0601050502';
const int = (n: number) => der(0x02, Buffer.from([n]));

function apReq(cipher: Buffer, ticketFiller = 'ticket'): Buffer {
  const encrypted = der(0x30, der(0xa0, int(18)), der(0xa1, int(2)), der(0xa2, der(0x04, cipher)));
  return der(
    0x6e,
    der(
      0x30,
      der(0xa0, int(5)),
      der(0xa1, int(14)),
      der(0xa2, der(0x03, Buffer.from([0, 0, 0, 0, 0]))),
      der(0xa3, der(0x61, Buffer.from(ticketFiller))),
      der(0xa4, encrypted),
    ),
  );
}
const krb5Token = (cipher: Buffer) => der(0x60, oid(KRB5), Buffer.from([0x01, 0x00]), apReq(cipher));
const spnegoInit = (mechToken: Buffer) => der(0x60, oid(SPNEGO), der(0xa0, der(0x30, der(0xa0, der(0x30, oid(KRB5))), der(0xa2, der(0x04, mechToken)))));

describe('kerberosAuthenticator', () => {
  const cipher = Buffer.alloc(300, 7);

  it('finds the AP-REQ authenticator in a bare Kerberos token and inside SPNEGO, the same for both', () => {
    expect(kerberosAuthenticator(krb5Token(cipher))).toEqual(cipher);
    expect(kerberosAuthenticator(spnegoInit(krb5Token(cipher)))).toEqual(cipher);
    expect(replayKey(krb5Token(cipher)).key).toBe(replayKey(spnegoInit(krb5Token(cipher))).key);
    expect(replayKey(krb5Token(cipher)).kerberos).toBe(true);
  });

  it('gives different keys for different authenticators', () => {
    expect(replayKey(krb5Token(Buffer.alloc(40, 1))).key).not.toBe(replayKey(krb5Token(Buffer.alloc(40, 2))).key);
  });

  it('finds nothing in garbage, truncated tokens, NTLM or a Kerberos token that is not an AP-REQ', () => {
    const token = spnegoInit(krb5Token(cipher));
    expect(kerberosAuthenticator(Buffer.from('definitely not a GSSAPI token'))).toBeUndefined();
    expect(kerberosAuthenticator(token.subarray(0, token.length - 10))).toBeUndefined();
    expect(kerberosAuthenticator(Buffer.concat([Buffer.from('NTLMSSP\0'), Buffer.alloc(32)]))).toBeUndefined();
    const notApReq = der(0x60, oid(KRB5), Buffer.from([0x02, 0x00]), apReq(cipher));
    expect(kerberosAuthenticator(notApReq)).toBeUndefined();
    expect(kerberosAuthenticator(Buffer.alloc(0))).toBeUndefined();
    const noKey = replayKey(Buffer.from('garbage'));
    expect(noKey.kerberos).toBe(false);
  });
});

describe('ReplayCache', () => {
  it('says replay for a key it holds, forgets it after the retention, and refuses when full', () => {
    let now = 0;
    const cache = new ReplayCache(1000, 2, () => now);
    expect(cache.reserve('a')).toBe('fresh');
    expect(cache.reserve('a')).toBe('replay');
    now = 500;
    expect(cache.reserve('b')).toBe('fresh');
    expect(cache.reserve('c')).toBe('full');
    now = 1000;
    expect(cache.reserve('a')).toBe('fresh');
    expect(cache.size).toBe(2);
    now = 1499;
    expect(cache.reserve('b')).toBe('replay');
    now = 1500;
    expect(cache.reserve('b')).toBe('fresh');
  });

  it('forgets a released key at once', () => {
    const cache = new ReplayCache(1000, 10, () => 0);
    expect(cache.reserve('a')).toBe('fresh');
    cache.release('a');
    expect(cache.reserve('a')).toBe('fresh');
  });
});
