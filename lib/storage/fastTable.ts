import { createHmac, randomUUID } from 'node:crypto';
import http from 'node:http';
import https from 'node:https';
import { RestError } from '@azure/core-rest-pipeline';
import { decodeContinuation, decodeEntity, encodeContinuation, encodeEntity, requestError } from './entityCodec';

/**
 * A lean client for the Table service's entity requests on the hot paths (point reads, queries page by page,
 * inserts, merges, replaces, deletes, entity-group transactions), sent with `node:http(s)` on kept-alive
 * sockets instead of through @azure/data-tables' request pipeline.
 *
 * Why: that pipeline spends about 0.7 ms of CPU per request (a dozen policies, header objects, a tracing span,
 * the generated client's serializer and response mappers) against a few tens of microseconds here; the engine
 * sends hundreds of thousands of requests per full sync.
 *
 * The requests are the ones the library sends (REST version 2019-02-02, `DataServiceVersion: 3.0`, JSON with
 * minimal metadata, `PATCH` for merges, `If-Match` as the library sets it, `Prefer: return-no-content` on
 * inserts, continuation by `NextPartitionKey`/`NextRowKey`), signed the same way (SharedKeyLite with the
 * account key, or the connection string's SAS appended), retried the same way (408 and 5xx but 501/505, and
 * the network errors ETIMEDOUT, ESOCKETTIMEDOUT, ECONNREFUSED, ECONNRESET, ENOENT, ENOTFOUND: up to 3
 * retries, exponential backoff from 1 s with jitter; 429/503 with a Retry-After header after that delay; a
 * socket broken while writing, EPIPE, up to 3 times 50/100/150 ms apart), and a failure is the same
 * `RestError` (status, message, details; see lib/storage/entityCodec.ts requestError). Entities convert as lib/storage/entityCodec.ts says.
 *
 * Made only for an account-key or SAS connection string over HTTPS, or plain HTTP to a loopback emulator, and
 * only when no HTTP(S) proxy is configured in the environment; otherwise lib/storage/tables.ts keeps the
 * library's client (see {@link leanTableFor}).
 */
export interface LeanTable {
  readonly tableName: string;
  getEntity<T extends object>(partitionKey: string, rowKey: string, select?: readonly string[]): Promise<T>;
  /** One page of a query; `continuationToken` is the library's token format. */
  queryPage<T extends object>(query: EntityQuery, continuationToken?: string): Promise<T[] & { continuationToken?: string }>;
  /** Insert (POST), which fails with 409 when the row exists. */
  insert(entity: Record<string, unknown>): Promise<WriteResult>;
  /** Merge (PATCH) or replace (PUT); with `ifMatch` the row must exist (and match, unless `*`). */
  write(entity: Record<string, unknown>, mode: 'Merge' | 'Replace', ifMatch?: string): Promise<WriteResult>;
  delete(partitionKey: string, rowKey: string, ifMatch: string): Promise<WriteResult>;
  /** POST `$batch` with a prepared multipart body; the raw answer (status and text). */
  batch(body: Buffer, contentType: string): Promise<{ status: number; text: string }>;
}

export interface EntityQuery {
  filter?: string;
  select?: readonly string[];
  top?: number;
}

export interface WriteResult {
  etag?: string;
  date?: Date;
}

export interface LeanTableSettings {
  /** The table endpoint (`https://<account>.table.core.windows.net`, `http://127.0.0.1:10002/devstoreaccount1`). */
  endpoint: string;
  tableName: string;
  /** Account name and base64 key (SharedKeyLite), or a SAS query string (without `?`). */
  accountName?: string;
  accountKey?: string;
  sas?: string;
}

const VERSION = '2019-02-02';
const USER_AGENT = `identity-mesh-sync-table (Node ${process.version})`;
const MAX_RETRIES = 3;
const RETRY_BASE_MS = 1000;
const RETRY_MAX_MS = 64_000;
const SYSTEM_ERRORS = new Set(['ETIMEDOUT', 'ESOCKETTIMEDOUT', 'ECONNREFUSED', 'ECONNRESET', 'ENOENT', 'ENOTFOUND']);
const EXCLUDED_SELECT = new Set(['etag', 'odata.etag']);
const SELECT_NAMES: Record<string, string> = { partitionKey: 'PartitionKey', rowKey: 'RowKey', timestamp: 'Timestamp' };

const agents = { http: new http.Agent({ keepAlive: true }), https: new https.Agent({ keepAlive: true }) };

interface Answer {
  status: number;
  headers: http.IncomingHttpHeaders;
  text: string;
}

/** `'...'` with quotes doubled and URL-encoded: a key in an entity address, as the library writes it. */
const keyInPath = (key: string) => encodeURIComponent(key.replace(/'/g, "''"));

export function leanTable(settings: LeanTableSettings): LeanTable {
  const url = new URL(settings.endpoint);
  const secure = url.protocol === 'https:';
  const transport = secure ? https : http;
  const agent = secure ? agents.https : agents.http;
  const hostname = url.hostname.startsWith('[') ? url.hostname.slice(1, -1) : url.hostname;
  const port = url.port ? Number(url.port) : secure ? 443 : 80;
  const host = url.host;
  const basePath = url.pathname.replace(/\/$/, '');
  const key = settings.accountKey ? Buffer.from(settings.accountKey, 'base64') : undefined;
  const account = settings.accountName ?? '';
  const sas = settings.sas ? settings.sas.replace(/^\?/, '') : undefined;
  const tableName = settings.tableName;
  const tablePath = `${basePath}/${tableName}`;

  /** The query string of a request: its own parameters, then the SAS. */
  const withSas = (query: string) => (sas ? (query ? `${query}&${sas}` : sas) : query);

  function once(method: string, path: string, query: string, headers: http.OutgoingHttpHeaders, body?: Buffer): Promise<Answer> {
    const date = new Date().toUTCString();
    headers['x-ms-date'] = date;
    headers['x-ms-version'] = VERSION;
    headers['x-ms-client-request-id'] = randomUUID();
    headers['User-Agent'] = USER_AGENT;
    headers.Host = host;
    if (key) {
      // SharedKeyLite for the Table service: the date and the canonical resource (/account/path; `comp` unused here).
      const signature = createHmac('sha256', key).update(`${date}\n/${account}${path}`, 'utf8').digest('base64');
      headers.Authorization = `SharedKeyLite ${account}:${signature}`;
    }
    if (body) headers['Content-Length'] = body.length;
    const q = withSas(query);
    return new Promise<Answer>((resolve, reject) => {
      const req = transport.request({ method, hostname, port, path: q ? `${path}?${q}` : path, headers, agent }, (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('error', reject);
        res.on('end', () =>
          resolve({
            status: res.statusCode ?? 0,
            headers: res.headers,
            text: chunks.length === 1 ? chunks[0].toString('utf8') : Buffer.concat(chunks).toString('utf8'),
          }),
        );
      });
      req.on('error', reject);
      req.end(body);
    });
  }

  async function send(method: string, path: string, query: string, headers: () => http.OutgoingHttpHeaders, body?: Buffer): Promise<Answer> {
    let brokenSockets = 0;
    for (let retry = 0; ;) {
      let answer: Answer | undefined;
      let error: unknown;
      try {
        answer = await once(method, path, query, headers(), body);
      } catch (err) {
        if ((err as { code?: unknown })?.code === 'EPIPE' && brokenSockets < 3) {
          await sleep(50 * ++brokenSockets);
          continue;
        }
        error = asRestError(err);
      }
      const wait = retry < MAX_RETRIES ? retryDelay(retry, answer, error) : undefined;
      if (wait === undefined) {
        if (error) throw error;
        return answer as Answer;
      }
      retry++;
      await sleep(wait);
    }
  }

  function failed(a: Answer): RestError {
    return requestError(a.text, a.status, header(a.headers['x-ms-error-code']));
  }

  function writeResult(a: Answer): WriteResult {
    const etag = a.headers.etag;
    const date = a.headers.date;
    return { ...(etag ? { etag } : {}), ...(date ? { date: new Date(date) } : {}) };
  }

  const entityPath = (pk: string, rk: string) => `${tablePath}(PartitionKey='${keyInPath(pk)}',RowKey='${keyInPath(rk)}')`;

  return {
    tableName,

    async getEntity<T extends object>(partitionKey: string, rowKey: string, select?: readonly string[]): Promise<T> {
      const query = select ? `$select=${encodeURIComponent(selectList(select))}` : '';
      const a = await send('GET', entityPath(partitionKey, rowKey), query, () => ({
        Accept: 'application/json;odata=minimalmetadata',
        DataServiceVersion: '3.0',
      }));
      if (a.status !== 200) throw failed(a);
      return decodeEntity<T>(JSON.parse(a.text) as Record<string, unknown>);
    },

    async queryPage<T extends object>(q: EntityQuery, continuationToken?: string) {
      const params: string[] = [];
      if (q.top !== undefined) params.push(`$top=${q.top}`);
      if (q.select) params.push(`$select=${encodeURIComponent(selectList(q.select))}`);
      if (q.filter !== undefined) params.push(`$filter=${encodeURIComponent(q.filter)}`);
      if (continuationToken) {
        const c = decodeContinuation(continuationToken);
        if (c.nextPartitionKey) params.push(`NextPartitionKey=${encodeURIComponent(c.nextPartitionKey)}`);
        if (c.nextRowKey) params.push(`NextRowKey=${encodeURIComponent(c.nextRowKey)}`);
      }
      const a = await send('GET', `${tablePath}()`, params.join('&'), () => ({
        Accept: 'application/json;odata=minimalmetadata',
        DataServiceVersion: '3.0',
      }));
      if (a.status !== 200) throw failed(a);
      const wire = (JSON.parse(a.text) as { value?: Record<string, unknown>[] }).value ?? [];
      const page = wire.map((e) => decodeEntity<T>(e)) as T[] & { continuationToken?: string };
      page.continuationToken = encodeContinuation(header(a.headers['x-ms-continuation-nextpartitionkey']), header(a.headers['x-ms-continuation-nextrowkey']));
      return page;
    },

    async insert(entity) {
      const body = Buffer.from(encodeEntity(entity), 'utf8');
      const a = await send(
        'POST',
        tablePath,
        '',
        () => ({
          Accept: 'application/json;odata=minimalmetadata',
          DataServiceVersion: '3.0',
          'Content-Type': 'application/json;odata=nometadata',
          Prefer: 'return-no-content',
        }),
        body,
      );
      if (a.status !== 204 && a.status !== 201) throw failed(a);
      return writeResult(a);
    },

    async write(entity, mode, ifMatch) {
      const body = Buffer.from(encodeEntity(entity), 'utf8');
      const a = await send(
        mode === 'Merge' ? 'PATCH' : 'PUT',
        entityPath(String(entity.partitionKey), String(entity.rowKey)),
        '',
        () => ({
          DataServiceVersion: '3.0',
          Accept: 'application/json',
          'Content-Type': 'application/json',
          ...(ifMatch !== undefined ? { 'If-Match': ifMatch } : {}),
        }),
        body,
      );
      if (a.status !== 204) throw failed(a);
      return writeResult(a);
    },

    async delete(partitionKey, rowKey, ifMatch) {
      const a = await send('DELETE', entityPath(partitionKey, rowKey), '', () => ({
        Accept: 'application/json;odata=minimalmetadata',
        DataServiceVersion: '3.0',
        'If-Match': ifMatch,
      }));
      if (a.status !== 204) throw failed(a);
      return writeResult(a);
    },

    async batch(body, contentType) {
      const a = await send(
        'POST',
        `${basePath}/$batch`,
        '',
        () => ({
          Accept: 'application/json',
          DataServiceVersion: '3.0;',
          MaxDataServiceVersion: '3.0;NetFx',
          'Content-Type': contentType,
          'Accept-Charset': 'UTF-8',
        }),
        body,
      );
      return { status: a.status, text: a.text };
    },
  };
}

/** `$select` as the library writes it: etag left out (always returned), key names in the service's case. */
function selectList(select: readonly string[]): string {
  return select
    .filter((p) => !EXCLUDED_SELECT.has(p))
    .map((p) => SELECT_NAMES[p] ?? p)
    .join(',');
}

const header = (v: string | string[] | undefined) => (Array.isArray(v) ? v[0] : v);

const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

/** A network error as the library's HTTP client gives it: a `RestError` with the system error's code. */
function asRestError(err: unknown): unknown {
  if (err instanceof RestError) return err;
  const e = err as { message?: string; code?: string };
  return new RestError(e?.message ?? String(err), { code: e?.code ?? RestError.REQUEST_SEND_ERROR });
}

/**
 * The wait before retry `retry` (0 for the first), or undefined for none: the library's throttling strategy
 * (429/503 with Retry-After) then its exponential one (408, 5xx but 501/505, system errors).
 */
export function retryDelay(retry: number, answer: { status: number; headers: http.IncomingHttpHeaders } | undefined, error: unknown): number | undefined {
  if (answer) {
    const after = retryAfterMs(answer);
    if (after !== undefined) return after;
    const s = answer.status;
    if (!((s >= 500 || s === 408) && s !== 501 && s !== 505)) return undefined;
  } else if (!SYSTEM_ERRORS.has(String((error as { code?: unknown })?.code))) return undefined;
  const exponential = Math.min(RETRY_MAX_MS, RETRY_BASE_MS * 2 ** retry);
  return exponential / 2 + Math.floor(Math.random() * (exponential / 2 + 1));
}

function retryAfterMs(answer: { status: number; headers: http.IncomingHttpHeaders }): number | undefined {
  if (answer.status !== 429 && answer.status !== 503) return undefined;
  for (const [name, factor] of [
    ['retry-after-ms', 1],
    ['x-ms-retry-after-ms', 1],
    ['retry-after', 1000],
  ] as const) {
    const raw = header(answer.headers[name]);
    if (raw === undefined) continue;
    const n = Number(raw);
    if (raw !== '' && Number.isFinite(n)) return n * factor;
  }
  const raw = header(answer.headers['retry-after']);
  if (!raw) return undefined;
  const diff = Date.parse(raw) - Date.now();
  return Number.isFinite(diff) ? Math.max(0, diff) : undefined;
}
