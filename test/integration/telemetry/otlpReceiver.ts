import http from 'node:http';
import type { AddressInfo } from 'node:net';

/** One span as the OTLP/HTTP JSON payload carries it, ids as lower-case hex. */
export interface ReceivedSpan {
  traceId: string;
  spanId: string;
  parentSpanId: string;
  name: string;
  kind: number;
  attributes: Record<string, string | number | boolean>;
  status: { code?: number };
  service: string;
}

/** An id as OTLP/JSON sends it: hex per the OTLP spec, base64 from some encoders. */
const hexId = (id: unknown) => (typeof id !== 'string' || !id ? '' : /^[0-9a-f]+$/i.test(id) ? id.toLowerCase() : Buffer.from(id, 'base64').toString('hex'));

type AnyValue = { stringValue?: string; intValue?: string | number; doubleValue?: number; boolValue?: boolean };
const valueOf = (v: AnyValue) => v.stringValue ?? (v.intValue !== undefined ? Number(v.intValue) : (v.doubleValue ?? v.boolValue ?? ''));
const attributesOf = (list: { key: string; value: AnyValue }[] = []) => Object.fromEntries(list.map((a) => [a.key, valueOf(a.value)]));

/**
 * A real OTLP/HTTP trace receiver: POST /v1/traces with the exporter's JSON payload
 * (ExportTraceServiceRequest), answered 200 `{}`, spans kept in order of arrival.
 */
export class OtlpReceiver {
  readonly spans: ReceivedSpan[] = [];
  readonly contentTypes = new Set<string>();
  private server: http.Server | undefined;

  async start(): Promise<string> {
    this.server = http.createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => {
        if (req.method !== 'POST' || req.url !== '/v1/traces') {
          res.writeHead(404).end();
          return;
        }
        this.contentTypes.add(String(req.headers['content-type']));
        const body = JSON.parse(Buffer.concat(chunks).toString('utf8'));
        for (const rs of body.resourceSpans ?? []) {
          const service = String(attributesOf(rs.resource?.attributes)['service.name'] ?? '');
          for (const ss of rs.scopeSpans ?? []) {
            for (const s of ss.spans ?? []) {
              this.spans.push({
                traceId: hexId(s.traceId),
                spanId: hexId(s.spanId),
                parentSpanId: hexId(s.parentSpanId),
                name: s.name,
                kind: s.kind,
                attributes: attributesOf(s.attributes),
                status: s.status ?? {},
                service,
              });
            }
          }
        }
        res.writeHead(200, { 'content-type': 'application/json' }).end('{}');
      });
    });
    await new Promise<void>((r) => this.server!.listen(0, '127.0.0.1', r));
    return `http://127.0.0.1:${(this.server.address() as AddressInfo).port}`;
  }

  /** Wait until `pick` finds spans (it returns a non-empty list), or fail after `timeoutMs`. */
  async waitFor(pick: (spans: ReceivedSpan[]) => ReceivedSpan[], what: string, timeoutMs = 30_000): Promise<ReceivedSpan[]> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const found = pick(this.spans);
      if (found.length) return found;
      if (Date.now() > deadline)
        throw new Error(`no span ${what}; received:\n${this.spans.map((s) => `${s.name} ${s.traceId}/${s.spanId}<-${s.parentSpanId}`).join('\n')}`);
      await new Promise((r) => setTimeout(r, 100));
    }
  }

  async stop(): Promise<void> {
    await new Promise((r) => this.server?.close(r));
  }
}
