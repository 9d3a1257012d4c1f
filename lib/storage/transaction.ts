import { randomUUID } from 'node:crypto';
import { createDefaultHttpClient, createHttpHeaders, createPipelineRequest, type HttpClient } from '@azure/core-rest-pipeline';
import type { TableClient, TransactionAction } from '@azure/data-tables';
import { serviceError as serviceErrorOf } from './entityCodec';
import type { LeanTable } from './fastTable';

/**
 * Entity-group transactions with the request body built here, sent through the table client's own pipeline
 * (its credential, retry and user-agent policies), instead of `TableClient.submitTransaction`.
 *
 * Why: the library builds each sub-request by running it through a full request pipeline of its own (a new
 * intercepting client per transaction, serializer, tracing span, header policies, then string assembly). At
 * 200,000 entities per bulk import that was a third of the service's CPU. Here a sub-request is a few string
 * concatenations. The wire format is the one the library sends (OData JSON, `multipart/mixed` batch with one
 * changeset, `Prefer: return-no-content` on inserts), and a failure throws the same `RestError` (status and
 * service error code of the failing sub-request), so callers' `isStatus(err, 409)` checks are unchanged.
 *
 * Entities whose property values are not plain strings, booleans, finite numbers or Dates (binary, Int64
 * objects, explicit EDM types) go through `submitTransaction` as before: {@link canBuild} says which.
 */
const CRLF = '\r\n';
let httpClient: HttpClient | undefined;

/** True when every action's entity can be serialized here (else the caller uses the library). */
export function canBuild(actions: readonly TransactionAction[]): boolean {
  for (const a of actions) {
    for (const v of Object.values(a[1])) {
      if (typeof v === 'string' || typeof v === 'boolean' || v === null || v === undefined) continue;
      if (typeof v === 'number' && Number.isFinite(v)) continue;
      if (v instanceof Date && !Number.isNaN(v.getTime())) continue;
      return false;
    }
  }
  return true;
}

/**
 * The entity as the service's JSON: PartitionKey/RowKey first, Dates typed as Edm.DateTime. Written out
 * property by property (the text `JSON.stringify` gives of the same object, without building that object: an
 * import sends a few hundred thousand entities).
 */
export function entityJson(e: Record<string, unknown>): string {
  if (e.partitionKey === undefined || e.rowKey === undefined || 'PartitionKey' in e || 'RowKey' in e) return entityJsonOf(e);
  let json = '{"PartitionKey":' + JSON.stringify(e.partitionKey) + ',"RowKey":' + JSON.stringify(e.rowKey);
  for (const k of Object.keys(e)) {
    const v = e[k];
    if (k === 'partitionKey' || k === 'rowKey' || k === 'etag' || v === undefined) continue;
    // Dates (typed with a property of their own) and such names: the general form.
    if (typeof v === 'object' && v !== null) return entityJsonOf(e);
    if (k.includes('@')) return entityJsonOf(e);
    json += ',' + JSON.stringify(k) + ':' + JSON.stringify(v);
  }
  return json + '}';
}

/** The general form (an entity that also names `PartitionKey` or `RowKey` itself: the later value wins). */
function entityJsonOf(e: Record<string, unknown>): string {
  const out: Record<string, unknown> = { PartitionKey: e.partitionKey, RowKey: e.rowKey };
  for (const [k, v] of Object.entries(e)) {
    if (k === 'partitionKey' || k === 'rowKey' || k === 'etag' || v === undefined) continue;
    if (v instanceof Date) {
      out[k] = v.toISOString();
      out[`${k}@odata.type`] = 'Edm.DateTime';
    } else out[k] = v;
  }
  return JSON.stringify(out);
}

/** `'...'` with quotes doubled, URL-encoded: a key in an entity address. */
const keyLiteral = (key: unknown) => encodeURIComponent(String(key).replace(/'/g, "''"));

function subRequest(action: TransactionAction, tableUrl: string, changeset: string): string {
  const [kind, entity] = action;
  const address = `${tableUrl}(PartitionKey='${keyLiteral(entity.partitionKey)}',RowKey='${keyLiteral(entity.rowKey)}')`;
  const head = `--${changeset}${CRLF}content-type: application/http${CRLF}content-transfer-encoding: binary${CRLF}${CRLF}`;
  switch (kind) {
    case 'create':
      return `${head}POST ${tableUrl} HTTP/1.1${CRLF}Content-Type: application/json;odata=nometadata${CRLF}Accept: application/json;odata=minimalmetadata${CRLF}DataServiceVersion: 3.0${CRLF}Prefer: return-no-content${CRLF}${CRLF}${entityJson(entity)}`;
    case 'delete':
      return `${head}DELETE ${address} HTTP/1.1${CRLF}Accept: application/json;odata=minimalmetadata${CRLF}DataServiceVersion: 3.0${CRLF}If-Match: ${etagOf(action) ?? '*'}${CRLF}`;
    case 'update':
    case 'upsert': {
      const mode = action[2] ?? 'Merge';
      const method = mode === 'Replace' ? 'PUT' : 'MERGE';
      // update: the row must exist (If-Match: its ETag, or * for any); upsert: no If-Match (insert or update).
      const ifMatch = kind === 'update' ? `If-Match: ${etagOf(action) ?? '*'}${CRLF}` : '';
      return `${head}${method} ${address} HTTP/1.1${CRLF}Content-Type: application/json${CRLF}DataServiceVersion: 3.0${CRLF}Accept: application/json${CRLF}${ifMatch}${CRLF}${entityJson(entity)}`;
    }
    default:
      throw new Error(`Unknown transaction action '${String(kind)}'.`);
  }
}

/** The ETag an update is conditional on (delete actions carry none: they match any). */
const etagOf = (action: TransactionAction): string | undefined => (action[0] === 'update' ? action[3]?.etag : undefined);

/**
 * Submit `actions` (one partition, at most 100) as one entity-group transaction on `client`'s table. Throws a
 * `RestError` with the failing sub-request's status and error code, as `submitTransaction` does. Sent by the
 * table's lean client when it has one (lib/storage/fastTable.ts), else through `client`'s pipeline. Answers each
 * action's new ETag, in the actions' order (a conditional writer goes on from it without reading the row again).
 */
export async function submitTransactionFast(
  client: TableClient,
  actions: readonly TransactionAction[],
  allowInsecureConnection: boolean,
  lean?: LeanTable,
): Promise<(string | undefined)[]> {
  const [base, sas] = client.url.split('?');
  const account = base.endsWith('/') ? base.slice(0, -1) : base;
  const tableUrl = `${account}/${client.tableName}`;
  const id = randomUUID();
  const batch = `batch_${id}`;
  const changeset = `changeset_${id}`;
  const parts = actions.map((a) => subRequest(a, tableUrl, changeset));
  // The body goes as bytes, encoded once: given as a string, the HTTP client encodes it once to learn its
  // length and Node once more to write it (a few MB per page of an import).
  const body = Buffer.from(
    `--${batch}${CRLF}content-type: multipart/mixed; boundary=${changeset}${CRLF}${CRLF}${CRLF}${parts.join(CRLF)}${CRLF}--${changeset}--${CRLF}--${batch}--${CRLF}`,
    'utf8',
  );
  const contentType = `multipart/mixed; boundary=${batch}`;
  const { status, text } = lean
    ? await lean.batch(body, contentType)
    : await viaPipeline(client, `${account}/$batch${sas ? `?${sas}` : ''}`, body, contentType, allowInsecureConnection);
  if (status < 200 || status >= 300) throw serviceError(text, status);
  // A failed changeset answers with the one failing sub-response; a good one with a 2xx per action.
  const etags: (string | undefined)[] = [];
  for (const part of text.split('--changesetresponse_').slice(1)) {
    const m = /HTTP\/1\.1 (\d{3})/.exec(part);
    if (!m) continue;
    const status = Number(m[1]);
    if (status >= 300) {
      const json = /\{[\s\S]*\}/.exec(part);
      throw serviceError(json ? json[0] : '', status);
    }
    etags.push(/^etag:[ \t]*(.+?)[ \t]*\r?$/im.exec(part)?.[1]);
  }
  return etags;
}

async function viaPipeline(
  client: TableClient,
  url: string,
  body: Buffer,
  contentType: string,
  allowInsecureConnection: boolean,
): Promise<{ status: number; text: string }> {
  const request = createPipelineRequest({
    url,
    method: 'POST',
    body,
    headers: createHttpHeaders({
      accept: 'application/json',
      'x-ms-version': '2019-02-02',
      DataServiceVersion: '3.0;',
      MaxDataServiceVersion: '3.0;NetFx',
      'Content-Type': contentType,
      'Accept-Charset': 'UTF-8',
    }),
    allowInsecureConnection,
  });
  httpClient ??= createDefaultHttpClient();
  const response = await client.pipeline.sendRequest(httpClient, request);
  return { status: response.status, text: response.bodyAsText ?? '' };
}

const serviceError = (bodyText: string, statusCode: number) => serviceErrorOf(bodyText, statusCode, 'Transaction Failed');
