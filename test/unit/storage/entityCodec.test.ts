import { RestError } from '@azure/core-rest-pipeline';
import { decodeContinuation, decodeEntity, encodeContinuation, encodeEntity, requestError, serviceError } from '../../../lib/storage/entityCodec';
import { retryDelay } from '../../../lib/storage/fastTable';

/**
 * The lean table client's conversions (lib/storage/entityCodec.ts) give what @azure/data-tables gives: the
 * wire names and Edm annotations it writes, the JS values it reads back, its continuation token format and the
 * `RestError` of a failed request; and its retry decisions (lib/storage/fastTable.ts) are the library's.
 */
describe('encodeEntity', () => {
  test('keys, plain values and typed values as the library writes them', () => {
    const json = encodeEntity({
      partitionKey: "p'1",
      rowKey: 'r/1',
      etag: 'W/"x"',
      s: 'text "q" é',
      n: 5,
      d: 1.5,
      b: false,
      z: null,
      gone: undefined,
      big: 9007199254740993n,
      when: new Date('2026-01-02T03:04:05.678Z'),
      bytes: new Uint8Array([1, 2, 255]),
      buf: Buffer.from('hi'),
      g: { value: '4f2a9b4e-0000-4000-8000-000000000001', type: 'Guid' },
      i64: { value: '12', type: 'Int64' },
      dbl: { value: '2', type: 'Double' },
    });
    expect(JSON.parse(json)).toEqual({
      PartitionKey: "p'1",
      RowKey: 'r/1',
      'odata.etag': 'W/"x"',
      s: 'text "q" é',
      n: 5,
      d: 1.5,
      b: false,
      z: null,
      big: '9007199254740993',
      'big@odata.type': 'Edm.Int64',
      when: '2026-01-02T03:04:05.678Z',
      'when@odata.type': 'Edm.DateTime',
      bytes: 'AQL/',
      'bytes@odata.type': 'Edm.Binary',
      buf: 'aGk=',
      'buf@odata.type': 'Edm.Binary',
      g: '4f2a9b4e-0000-4000-8000-000000000001',
      'g@odata.type': 'Edm.Guid',
      i64: '12',
      'i64@odata.type': 'Edm.Int64',
      dbl: '2',
      'dbl@odata.type': 'Edm.Double',
    });
  });

  test('a value the service cannot hold is refused before anything is sent', () => {
    expect(() => encodeEntity({ partitionKey: 'p', rowKey: 'r', o: { nested: 1 } })).toThrow('Unknown EDM type');
    expect(() => encodeEntity({ partitionKey: 'p', rowKey: 'r', t: { value: 1, type: 'Decimal' } })).toThrow('Unknown EDM type');
  });
});

describe('decodeEntity', () => {
  test('names back, annotated values typed, unannotated ones as they are', () => {
    const e = decodeEntity<Record<string, unknown>>({
      'odata.etag': 'W/"datetime\'2026-01-01T00%3A00%3A00Z\'"',
      PartitionKey: 'p',
      RowKey: 'r',
      Timestamp: '2026-01-01T00:00:00.0000000Z',
      s: 'x',
      n: 3,
      b: true,
      'when@odata.type': 'Edm.DateTime',
      when: '2026-01-02T03:04:05.678Z',
      'big@odata.type': 'Edm.Int64',
      big: '9007199254740993',
      'bin@odata.type': 'Edm.Binary',
      bin: 'AQL/',
      'g@odata.type': 'Edm.Guid',
      g: '4f2a9b4e-0000-4000-8000-000000000001',
      'd@odata.type': 'Edm.Double',
      d: 2,
    });
    expect(e).toEqual({
      etag: 'W/"datetime\'2026-01-01T00%3A00%3A00Z\'"',
      partitionKey: 'p',
      rowKey: 'r',
      timestamp: '2026-01-01T00:00:00.0000000Z',
      s: 'x',
      n: 3,
      b: true,
      when: new Date('2026-01-02T03:04:05.678Z'),
      big: 9007199254740993n,
      bin: Buffer.from([1, 2, 255]),
      g: { value: '4f2a9b4e-0000-4000-8000-000000000001', type: 'Guid' },
      d: 2,
    });
  });

  test('an unknown Edm type is an error, as in the library', () => {
    expect(() => decodeEntity({ x: 1, 'x@odata.type': 'Edm.Decimal' })).toThrow('Unknown EDM type Edm.Decimal');
  });
});

test('continuation tokens are the library format: base64 of the next keys', () => {
  const token = encodeContinuation('1!8!cA--', '1!8!cg--');
  expect(JSON.parse(Buffer.from(token!, 'base64').toString())).toEqual({ nextPartitionKey: '1!8!cA--', nextRowKey: '1!8!cg--' });
  expect(decodeContinuation(token!)).toEqual({ nextPartitionKey: '1!8!cA--', nextRowKey: '1!8!cg--' });
  expect(decodeContinuation(encodeContinuation('pk', undefined)!)).toEqual({ nextPartitionKey: 'pk' });
  expect(encodeContinuation(undefined, undefined)).toBeUndefined();
});

describe('errors', () => {
  test("a failed transaction: a RestError with the status, the service's code and message", () => {
    const err = serviceError('{"odata.error":{"code":"EntityAlreadyExists","message":{"lang":"en-US","value":"The specified entity already exists."}}}', 409);
    expect(err).toBeInstanceOf(RestError);
    expect(err).toMatchObject({ statusCode: 409, code: 'EntityAlreadyExists', message: 'The specified entity already exists.' });
  });

  test('a body that is not the service error JSON keeps the status and a generic message', () => {
    expect(serviceError('<html>bad gateway</html>', 502)).toMatchObject({ statusCode: 502, code: undefined, message: 'Unexpected status code: 502' });
    expect(serviceError('', 412, 'Transaction Failed')).toMatchObject({ statusCode: 412, message: 'Transaction Failed' });
  });

  test('a failed single request: the library shape (the text as message, the codes in details)', () => {
    const body =
      '{"odata.error":{"code":"UpdateConditionNotSatisfied","message":{"lang":"en-US","value":"The update condition specified in the request was not satisfied."}}}';
    const err = requestError(body, 412, 'UpdateConditionNotSatisfied');
    expect(err).toBeInstanceOf(RestError);
    expect(err).toMatchObject({ statusCode: 412, code: undefined, message: body });
    expect(err.details).toEqual({
      errorCode: 'UpdateConditionNotSatisfied',
      odataError: {
        code: 'UpdateConditionNotSatisfied',
        message: { lang: 'en-US', value: 'The update condition specified in the request was not satisfied.' },
      },
    });
    expect(requestError('', 503, undefined)).toMatchObject({ statusCode: 503, message: 'Unexpected status code: 503', details: {} });
  });
});

describe('retryDelay: the library retry strategies', () => {
  const answer = (status: number, headers: Record<string, string> = {}) => ({ status, headers });

  test('408 and 5xx (not 501, 505) back off exponentially from 1 s with jitter, up to 3 retries by the caller', () => {
    for (const s of [408, 500, 502, 503, 504]) {
      const first = retryDelay(0, answer(s), undefined)!;
      expect(first).toBeGreaterThanOrEqual(500);
      expect(first).toBeLessThanOrEqual(1000);
    }
    const third = retryDelay(2, answer(500), undefined)!;
    expect(third).toBeGreaterThanOrEqual(2000);
    expect(third).toBeLessThanOrEqual(4000);
    for (const s of [200, 204, 400, 403, 404, 409, 412, 429, 501, 505]) expect(retryDelay(0, answer(s), undefined)).toBeUndefined();
  });

  test('429 and 503 with Retry-After wait what the service asks', () => {
    expect(retryDelay(0, answer(429, { 'retry-after': '2' }), undefined)).toBe(2000);
    expect(retryDelay(0, answer(503, { 'x-ms-retry-after-ms': '150' }), undefined)).toBe(150);
    expect(retryDelay(0, answer(429, { 'retry-after-ms': '0' }), undefined)).toBe(0);
  });

  test('network errors: the system errors only', () => {
    for (const code of ['ECONNRESET', 'ECONNREFUSED', 'ETIMEDOUT', 'ENOTFOUND']) expect(retryDelay(0, undefined, { code })).toBeGreaterThanOrEqual(500);
    expect(retryDelay(0, undefined, { code: 'CERT_HAS_EXPIRED' })).toBeUndefined();
    expect(retryDelay(0, undefined, new Error('boom'))).toBeUndefined();
  });
});
