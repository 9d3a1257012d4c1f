import net from 'node:net';
import tls from 'node:tls';
import { BerReader, BindRequest, ExtendedRequest, FilterParser, SearchRequest, UnbindRequest, type Control } from 'ldapts';
import { ConnectorError, type ChangeStream } from '../sdk';
import { tlsOptions, toConnectorError, type SessionConfig } from './session';

/**
 * A never-ending search read as it arrives, on a connection of its own: the directory connector's change stream
 * (changeStream.ts picks the control). ldapts cannot carry it: its client keeps a search's entries until the
 * SearchResultDone that never comes, times every request out, and cannot parse the IntermediateResponse syncrepl
 * sends. So this reader speaks the little it needs on a raw TCP or TLS socket, with ldapts's message classes for
 * the requests: bind, StartTLS, one search; of the answers it reads the envelope only. An entry is a notification
 * (its content is not read: the engine reads the delta); the search's end, a Notice of Disconnection or a socket
 * error ends the stream.
 */

/** What the stream searches, and when its entries start to mean changes. */
export interface StreamSearch {
  kind: string;
  base: string;
  scope: 'base' | 'one' | 'sub';
  filter: string;
  controls: Control[];
  /**
   * syncrepl: the entries before the Sync Info message that ends the refresh phase are the content as it is (or
   * what changed since the cookie), not changes; the stream is open once that message came.
   */
  refreshFirst?: boolean;
}

const OP = { bindResponse: 0x61, searchEntry: 0x64, searchDone: 0x65, searchReference: 0x73, extendedResponse: 0x78, intermediate: 0x79 };
const SYNC_INFO_OID = '1.3.6.1.4.1.4203.1.9.1.4';
const START_TLS_OID = '1.3.6.1.4.1.1466.20037';
const NOTICE_OF_DISCONNECTION_OID = '1.3.6.1.4.1.1466.20036';

/** One LDAPMessage as the stream reads it: id, protocol operation tag, and the operation's content. */
export interface WireMessage {
  id: number;
  op: number;
  body: Buffer;
}

/** The complete messages at the start of `buffer`, and the bytes left over (a message not fully received yet). */
export function readMessages(buffer: Buffer): { messages: WireMessage[]; rest: Buffer } {
  const messages: WireMessage[] = [];
  let at = 0;
  for (;;) {
    const slice = buffer.subarray(at);
    const r = new BerReader(slice);
    if (r.readSequence(0x30) === null || r.remain < r.length) break;
    const end = r.offset + r.length;
    const id = r.readInt() ?? 0;
    const op = r.peek() ?? 0;
    r.readSequence();
    messages.push({ id, op, body: Buffer.from(slice.subarray(r.offset, r.offset + r.length)) });
    at += end;
  }
  return { messages, rest: buffer.subarray(at) };
}

/** An LDAPResult's code and diagnostic (bind, search done, extended responses). */
export function resultOf(m: WireMessage): { code: number; message: string; name?: string } {
  const r = new BerReader(m.body);
  const code = r.readEnumeration() ?? 0;
  r.readString();
  const message = r.readString() ?? '';
  let name: string | undefined;
  // An ExtendedResponse's responseName [10] follows the referral [3], which a server rarely sends.
  if (r.peek() === 0xa3) {
    r.readSequence();
    r.offset = r.offset + r.length;
  }
  if (r.peek() === 0x8a) name = r.readString(0x8a) ?? undefined;
  return { code, message, ...(name ? { name } : {}) };
}

/** An IntermediateResponse's name and value. */
function intermediateOf(m: WireMessage): { name: string; value: Buffer | null } {
  const r = new BerReader(m.body);
  const name = r.peek() === 0x80 ? (r.readString(0x80) ?? '') : '';
  const value = r.peek() === 0x81 ? r.readString(0x81, true) : null;
  return { name, value: value as Buffer | null };
}

/**
 * Whether a syncrepl Sync Info message (RFC 4533 syncInfoValue) ends the refresh phase: a refreshDelete [1] or
 * refreshPresent [2] whose refreshDone (default TRUE) is TRUE. newcookie [0] and syncIdSet [3] do not.
 */
export function endsRefresh(value: Buffer): boolean {
  const r = new BerReader(value);
  const tag = r.peek();
  if (tag !== 0xa1 && tag !== 0xa2) return false;
  r.readSequence();
  const end = r.offset + r.length;
  if (r.offset < end && r.peek() === 0x04) r.readString(0x04, true);
  if (r.offset < end && r.peek() === 0x01) return r.readBoolean() !== false;
  return true;
}

/** An error with an LDAP result code, which toConnectorError turns into the right ConnectorError. */
const ldapError = (code: number, message: string) => Object.assign(new Error(message || `LDAP result ${code}`), { code });

/** Connect (ldaps, or plain then StartTLS when asked), with the connector's TLS settings. */
async function connect(c: SessionConfig, timeoutMs: number): Promise<net.Socket> {
  const plain = (): Promise<net.Socket> =>
    new Promise((resolve, reject) => {
      const s = net.connect({ host: c.host, port: c.port });
      s.setTimeout(timeoutMs, () => s.destroy(new Error('connect timed out')));
      s.once('connect', () => {
        s.setTimeout(0);
        resolve(s);
      });
      s.once('error', reject);
    });
  const secure = (socket?: net.Socket): Promise<tls.TLSSocket> =>
    new Promise((resolve, reject) => {
      const s = tls.connect({ ...tlsOptions(c), ...(socket ? { socket } : { host: c.host, port: c.port }) });
      s.setTimeout(timeoutMs, () => s.destroy(new Error('TLS handshake timed out')));
      s.once('secureConnect', () => {
        s.setTimeout(0);
        resolve(s);
      });
      s.once('error', reject);
    });
  if (c.security === 'ldaps') return secure();
  const socket = await plain();
  if (c.security !== 'starttls') return socket;
  const wire = new Wire(socket);
  const answer = await wire.request(new ExtendedRequest({ messageId: 1, oid: START_TLS_OID }).write(), 1, timeoutMs);
  const { code, message } = resultOf(answer);
  if (code !== 0) throw ldapError(code, `StartTLS refused: ${message}`);
  wire.detach();
  return secure(socket);
}

/** The message exchange on one socket: answers by message id, everything else to `onMessage`. */
class Wire {
  private pending = Buffer.alloc(0);
  private readonly waiting = new Map<number, { resolve: (m: WireMessage) => void; reject: (e: Error) => void }>();
  onMessage: (m: WireMessage) => void = () => undefined;
  private readonly onData = (data: Buffer) => {
    // A malformed answer ends the stream (a throw here would reach the process as an uncaught exception).
    try {
      const { messages, rest } = readMessages(this.pending.length ? Buffer.concat([this.pending, data]) : data);
      this.pending = Buffer.from(rest);
      for (const m of messages) {
        const w = this.waiting.get(m.id);
        if (w && m.op !== OP.searchEntry && m.op !== OP.intermediate && m.op !== OP.searchReference) {
          this.waiting.delete(m.id);
          w.resolve(m);
        } else this.onMessage(m);
      }
    } catch (err) {
      this.socket.destroy(new Error(`the directory sent what is not LDAP (${(err as Error).message})`));
    }
  };
  private readonly onGone = (err?: Error) => {
    for (const w of this.waiting.values()) w.reject(err ?? new Error('the connection was closed'));
    this.waiting.clear();
  };

  constructor(readonly socket: net.Socket) {
    socket.on('data', this.onData);
    socket.on('error', this.onGone);
    socket.on('close', () => this.onGone());
  }

  request(bytes: Buffer, id: number, timeoutMs: number): Promise<WireMessage> {
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => {
        this.waiting.delete(id);
        reject(new Error('the directory did not answer in time (timeout)'));
      }, timeoutMs);
      this.waiting.set(id, {
        resolve: (m) => (clearTimeout(timer), resolve(m)),
        reject: (e) => (clearTimeout(timer), reject(e)),
      });
      this.socket.write(bytes);
    });
  }

  /** Stop reading (StartTLS hands the socket to TLS). */
  detach(): void {
    this.socket.off('data', this.onData);
    this.socket.removeAllListeners('error');
    this.socket.removeAllListeners('close');
  }
}

/**
 * Open the stream: connect, bind, send the search. Resolves when the server accepted it (syncrepl: its refresh
 * phase ended; otherwise once the bind succeeded and the search went out: a server that refuses the search ends
 * the stream at once). Throws a {@link ConnectorError} when the server cannot be reached or refuses the bind.
 */
export async function openStream(c: SessionConfig, search: StreamSearch, onChange: () => void): Promise<ChangeStream> {
  if (c.security === 'none' && c.allowInsecure !== true) {
    throw new ConnectorError('configuration_invalid', "security 'none' needs allowInsecure: true (the bind password would travel in clear text).");
  }
  const secrets = [c.bindPassword];
  const timeoutMs = c.timeoutSeconds * 1000;
  const what = `Opening the change stream (${search.kind}) on ${c.host}:${c.port}`;
  let socket: net.Socket | undefined;
  try {
    socket = await connect(c, timeoutMs);
    socket.setKeepAlive(true, 30_000);
    const wire = new Wire(socket);
    const bound = resultOf(await wire.request(new BindRequest({ messageId: 2, dn: c.bindDN, password: c.bindPassword }).write(), 2, timeoutMs));
    if (bound.code !== 0) throw ldapError(bound.code, bound.message);
    return await searchStream(wire, search, onChange, timeoutMs, (err) => toConnectorError(err, `The change stream (${search.kind})`, secrets));
  } catch (err) {
    socket?.destroy();
    throw toConnectorError(err, what, secrets);
  }
}

function searchStream(wire: Wire, search: StreamSearch, onChange: () => void, timeoutMs: number, asError: (err: unknown) => Error): Promise<ChangeStream> {
  const SEARCH_ID = 3;
  let closed = false;
  let refreshing = search.refreshFirst === true;
  let settle: (e: Error) => void = () => undefined;
  const ended = new Promise<Error>((resolve) => (settle = resolve));
  const stream: ChangeStream = {
    kind: search.kind,
    ended,
    close() {
      if (closed) return;
      closed = true;
      wire.socket.end(new UnbindRequest({ messageId: 4 }).write());
      wire.socket.destroySoon();
    },
  };
  return new Promise<ChangeStream>((resolve, reject) => {
    let opened = false;
    const timer = refreshing ? setTimeout(() => end(new Error('the refresh phase did not end in time (timeout)')), Math.max(timeoutMs, 60_000)) : null;
    const open = () => {
      if (opened) return;
      opened = true;
      if (timer) clearTimeout(timer);
      resolve(stream);
    };
    const end = (err: Error) => {
      if (timer) clearTimeout(timer);
      const e = asError(err);
      if (!opened) {
        opened = true;
        wire.socket.destroy();
        reject(e);
        return;
      }
      wire.socket.destroy();
      if (!closed) settle(e);
    };
    wire.onMessage = (m) => {
      if (m.op === OP.searchEntry && m.id === SEARCH_ID) {
        if (!refreshing) onChange();
      } else if (m.op === OP.intermediate && m.id === SEARCH_ID) {
        const { name, value } = intermediateOf(m);
        if (refreshing && name === SYNC_INFO_OID && value && endsRefresh(value)) {
          refreshing = false;
          open();
        }
      } else if (m.op === OP.searchDone && m.id === SEARCH_ID) {
        const { code, message } = resultOf(m);
        end(ldapError(code === 0 ? 51 : code, `the directory ended the stream${message ? `: ${message}` : ''} (LDAP result ${code})`));
      } else if (m.op === OP.extendedResponse && m.id === 0) {
        const { code, message, name } = resultOf(m);
        end(ldapError(code || 52, `${name === NOTICE_OF_DISCONNECTION_OID ? 'notice of disconnection' : 'unsolicited notification'}: ${message}`));
      }
    };
    wire.socket.on('error', (err) => end(err));
    wire.socket.on('close', () => end(new Error('the connection was closed by the directory (socket closed)')));
    wire.socket.write(
      new SearchRequest({
        messageId: SEARCH_ID,
        baseDN: search.base,
        scope: search.scope,
        filter: FilterParser.parseString(search.filter),
        attributes: ['1.1'],
        sizeLimit: 0,
        timeLimit: 0,
        controls: search.controls,
      }).write(),
    );
    if (!refreshing) open();
  });
}
