import { createHash } from 'node:crypto';

/**
 * Replay protection for Negotiate of our own, beside GSSAPI's replay cache. MIT Kerberos keeps one (a file
 * under KRB5RCACHEDIR) unless the environment turns it off (KRB5RCACHETYPE=none, which then lets a captured
 * token in again), and a native module gives no way to tell whether it is on. So the service remembers every
 * Kerberos authenticator it accepted for as long as Kerberos would accept it again, whatever the environment.
 */

/** OIDs of the GSS-API tokens a Negotiate header carries (DER content bytes). */
const SPNEGO_OID = Buffer.from('2b0601050502', 'hex'); // 1.3.6.1.5.5.2

interface Tlv {
  tag: number;
  /** Offsets of the value inside the buffer. */
  start: number;
  end: number;
}

/** One DER tag-length-value at `offset` (single-byte tags, definite lengths), or undefined when malformed. */
function readTlv(buf: Buffer, offset: number, limit = buf.length): Tlv | undefined {
  if (offset + 2 > limit) return undefined;
  const tag = buf[offset];
  let length = buf[offset + 1];
  let start = offset + 2;
  if (length & 0x80) {
    const n = length & 0x7f;
    if (n === 0 || n > 4 || start + n > limit) return undefined;
    length = 0;
    for (let i = 0; i < n; i++) length = length * 256 + buf[start + i];
    start += n;
  }
  const end = start + length;
  return end <= limit ? { tag, start, end } : undefined;
}

/** The children of a constructed value. */
function children(buf: Buffer, parent: Tlv): Tlv[] | undefined {
  const out: Tlv[] = [];
  for (let at = parent.start; at < parent.end;) {
    const child = readTlv(buf, at, parent.end);
    if (!child) return undefined;
    out.push(child);
    at = child.end;
  }
  return out;
}

/** The child with context tag [n] (constructed), or undefined. */
function field(buf: Buffer, parent: Tlv, n: number): Tlv | undefined {
  return children(buf, parent)?.find((c) => c.tag === (0xa0 | n));
}

/** The single value wrapped by an explicit context tag. */
function unwrap(buf: Buffer, tagged: Tlv | undefined): Tlv | undefined {
  return tagged ? readTlv(buf, tagged.start, tagged.end) : undefined;
}

/** AP-REQ ::= [APPLICATION 14] SEQUENCE { ..., authenticator [4] EncryptedData { etype [0], kvno [1] OPTIONAL, cipher [2] } } */
function apReqAuthenticator(buf: Buffer, at: number, limit: number): Buffer | undefined {
  const apReq = readTlv(buf, at, limit);
  if (apReq?.tag !== 0x6e) return undefined;
  const seq = unwrap(buf, apReq);
  if (seq?.tag !== 0x30) return undefined;
  const encrypted = unwrap(buf, field(buf, seq, 4));
  if (encrypted?.tag !== 0x30) return undefined;
  const cipher = unwrap(buf, field(buf, encrypted, 2));
  if (cipher?.tag !== 0x04 || cipher.end === cipher.start) return undefined;
  return buf.subarray(cipher.start, cipher.end);
}

/**
 * The encrypted authenticator of the Kerberos AP-REQ a Negotiate token carries: inside SPNEGO's negTokenInit
 * (mechToken) or negTokenResp (responseToken), or a bare Kerberos GSS-API token (RFC 4121 4.1: OID, TOK_ID
 * 01 00, AP-REQ). Undefined when the token holds no AP-REQ (NTLM, garbage). The authenticator is what makes an
 * AP-REQ unique; keying on it, not on the token's bytes, also catches the same AP-REQ wrapped another way.
 */
export function kerberosAuthenticator(token: Buffer, depth = 0): Buffer | undefined {
  const outer = readTlv(token, 0);
  if (outer?.tag !== 0x60 || depth > 2) return undefined;
  const oid = readTlv(token, outer.start, outer.end);
  if (oid?.tag !== 0x06) return undefined;
  if (token.subarray(oid.start, oid.end).equals(SPNEGO_OID)) {
    // NegotiationToken ::= CHOICE { negTokenInit [0] { mechToken [2] }, negTokenResp [1] { responseToken [2] } }
    const choice = readTlv(token, oid.end, outer.end);
    if (choice?.tag !== 0xa0 && choice?.tag !== 0xa1) return undefined;
    const seq = unwrap(token, choice);
    if (seq?.tag !== 0x30) return undefined;
    const inner = unwrap(token, field(token, seq, 2));
    if (inner?.tag !== 0x04) return undefined;
    return kerberosAuthenticator(token.subarray(inner.start, inner.end), depth + 1);
  }
  // Any other mechanism OID (Kerberos, or Microsoft's legacy Kerberos OID): TOK_ID 01 00 marks an AP-REQ.
  if (oid.end + 2 > outer.end || token[oid.end] !== 0x01 || token[oid.end + 1] !== 0x00) return undefined;
  return apReqAuthenticator(token, oid.end + 2, outer.end);
}

export type ReplayVerdict = 'fresh' | 'replay' | 'full';

/**
 * Keys seen within the last `retentionMs`, at most `maxEntries` of them. Every key lives equally long, so the
 * map's insertion order is also its expiry order and forgetting is a walk from the front. Full means refuse:
 * dropping a live key early would let its token in again.
 */
export class ReplayCache {
  private readonly seen = new Map<string, number>();

  constructor(
    readonly retentionMs: number,
    readonly maxEntries: number,
    private readonly now: () => number = Date.now,
  ) {}

  /** Remember `key` unless it is already known (a replay) or the cache is full. Synchronous: no race between check and insert. */
  reserve(key: string): ReplayVerdict {
    const now = this.now();
    for (const [k, expires] of this.seen) {
      if (expires > now) break;
      this.seen.delete(k);
    }
    if (this.seen.has(key)) return 'replay';
    if (this.seen.size >= this.maxEntries) return 'full';
    this.seen.set(key, now + this.retentionMs);
    return 'fresh';
  }

  /** Forget a key reserved for a token GSSAPI then refused (it may come back legitimately, or never was one). */
  release(key: string): void {
    this.seen.delete(key);
  }

  get size(): number {
    return this.seen.size;
  }
}

/** The cache key of a Negotiate token: a digest of its Kerberos authenticator, or of the whole token when it has none. */
export function replayKey(token: Buffer): { key: string; kerberos: boolean } {
  const authenticator = kerberosAuthenticator(token);
  const digest = createHash('sha256')
    .update(authenticator ?? token)
    .digest('base64url');
  return { key: `${authenticator ? 'a' : 't'}:${digest}`, kerberos: authenticator !== undefined };
}
