import { RestError } from '@azure/core-rest-pipeline';

/**
 * Entities to and from the Table service's JSON, as @azure/data-tables converts them (its `serialize` and
 * `deserialize` without `disableTypeConversion`), for the lean client of lib/storage/fastTable.ts: callers get
 * the same objects whichever client made the request.
 *
 * Written: `partitionKey`/`rowKey`/`etag`/`timestamp` as `PartitionKey`/`RowKey`/`odata.etag`/`Timestamp`;
 * a string, number, boolean or null as itself; a bigint as an `Edm.Int64` string; a Date as `Edm.DateTime`; a
 * Uint8Array as base64 `Edm.Binary`; an `{ value, type }` object (type Boolean, DateTime, Double, Guid, Int32,
 * Int64, String or Binary) as its value typed `Edm.<type>`. Read: the names back, and a value annotated
 * `<name>@odata.type` as Edm.DateTime -> Date, Edm.Int64 -> bigint, Edm.Binary -> Buffer, Edm.Guid ->
 * `{ value, type: 'Guid' }` (Boolean, Double, Int32, String: the value itself); unannotated values as they are.
 */
const TO_WIRE: Record<string, string> = { partitionKey: 'PartitionKey', rowKey: 'RowKey', etag: 'odata.etag', timestamp: 'Timestamp' };
const FROM_WIRE: Record<string, string> = { PartitionKey: 'partitionKey', RowKey: 'rowKey', 'odata.etag': 'etag', Timestamp: 'timestamp' };
const EDM_TYPES = new Set(['Boolean', 'DateTime', 'Double', 'Guid', 'Int32', 'Int64', 'String', 'Binary']);

/** The JSON body of `entity` (an insert, merge or replace). Throws on a value the service cannot hold. */
export function encodeEntity(entity: Record<string, unknown>): string {
  const out: Record<string, unknown> = {};
  for (const key of Object.keys(entity)) {
    const name = TO_WIRE[key] ?? key;
    const v = entity[key];
    if (v === undefined || v === null || typeof v === 'string' || typeof v === 'number' || typeof v === 'boolean') {
      out[name] = v;
    } else if (typeof v === 'bigint') {
      out[name] = v.toString();
      out[`${name}@odata.type`] = 'Edm.Int64';
    } else if (v instanceof Date) {
      out[name] = v;
      out[`${name}@odata.type`] = 'Edm.DateTime';
    } else if (v instanceof Uint8Array) {
      out[name] = (v instanceof Buffer ? v : Buffer.from(v.buffer)).toString('base64');
      out[`${name}@odata.type`] = 'Edm.Binary';
    } else if (typeof v === 'object' && (v as { value?: unknown }).value !== undefined && (v as { type?: unknown }).type !== undefined) {
      const { value, type } = v as { value: unknown; type: unknown };
      if (typeof type !== 'string' || !EDM_TYPES.has(type)) throw new Error(`Unknown EDM type ${typeof value}`);
      out[name] = value;
      out[`${name}@odata.type`] = `Edm.${type}`;
    } else throw new Error(`Unknown EDM type ${typeof v}`);
  }
  return JSON.stringify(out);
}

/** One entity of a response body, as the library gives it. */
export function decodeEntity<T extends object = Record<string, unknown>>(wire: Record<string, unknown>): T {
  const out: Record<string, unknown> = {};
  for (const key of Object.keys(wire)) {
    if (key.includes('@odata.type')) continue;
    const type = wire[`${key}@odata.type`];
    out[FROM_WIRE[key] ?? key] = type === undefined ? wire[key] : typed(wire[key], type);
  }
  return out as T;
}

function typed(value: unknown, type: unknown): unknown {
  switch (type) {
    case 'Edm.Boolean':
    case 'Edm.Double':
    case 'Edm.Int32':
    case 'Edm.String':
      return value;
    case 'Edm.DateTime':
      return new Date(value as string);
    case 'Edm.Int64':
      return BigInt(value as string);
    case 'Edm.Guid':
      return { value, type: 'Guid' };
    case 'Edm.Binary':
      return Buffer.from(value as string, 'base64');
    default:
      throw new Error(`Unknown EDM type ${String(type)}`);
  }
}

/**
 * The continuation token of a page (base64 of `{"nextPartitionKey","nextRowKey"}`, the library's format, so a
 * token handed out by either client continues in the other); undefined on the last page.
 */
export function encodeContinuation(nextPartitionKey: string | undefined, nextRowKey: string | undefined): string | undefined {
  if (!nextPartitionKey) return undefined;
  return Buffer.from(JSON.stringify({ nextPartitionKey, ...(nextRowKey ? { nextRowKey } : {}) })).toString('base64');
}

export function decodeContinuation(token: string): { nextPartitionKey?: string; nextRowKey?: string } {
  return JSON.parse(Buffer.from(token, 'base64').toString('latin1')) as { nextPartitionKey?: string; nextRowKey?: string };
}

/**
 * The error of a failed entity-group transaction: a `RestError` with the failing sub-request's status and the
 * service's error code and message (`{"odata.error":{"code","message":{"value"}}}`), as the library's
 * `submitTransaction` throws it.
 */
export function serviceError(bodyText: string, statusCode: number, fallbackMessage = `Unexpected status code: ${statusCode}`): RestError {
  let message = fallbackMessage;
  let code: string | undefined;
  const e = odataError(bodyText);
  if (e) {
    message = e.message?.value ?? message;
    code = e.code;
  }
  return new RestError(message, { code, statusCode });
}

/**
 * The error of a failed single request, as the library's generated client throws it: a `RestError` with the
 * status, the response text as its message, no `code`, and `details` holding the service's error code (from
 * the `x-ms-error-code` header) and the parsed `odata.error` (`odataError`).
 */
export function requestError(bodyText: string, statusCode: number, errorCodeHeader: string | undefined): RestError {
  const err = new RestError(bodyText || `Unexpected status code: ${statusCode}`, { statusCode });
  const e = odataError(bodyText);
  err.details = { ...(errorCodeHeader ? { errorCode: errorCodeHeader } : {}), ...(e ? { odataError: e } : {}) };
  return err;
}

function odataError(bodyText: string): { code?: string; message?: { lang?: string; value?: string } } | undefined {
  try {
    return (JSON.parse(bodyText) as { 'odata.error'?: { code?: string; message?: { lang?: string; value?: string } } })['odata.error'];
  } catch {
    return undefined; // not JSON (an emulator's or a proxy's page): the status says enough
  }
}
