import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { RestError } from '@azure/core-rest-pipeline';
import { leanTable } from '../../../lib/storage/fastTable';

/**
 * The lean table client's retries, against a loopback HTTP server that answers as told: throttled and
 * failing answers are sent again as the library's retry policy does (at most 3 retries), other failures are
 * not, and a connection reset is retried like the library's system errors. The requests carry the headers the
 * service needs (version, date, SharedKeyLite signature).
 */
let server: http.Server;
let answers: ((res: http.ServerResponse, req: http.IncomingMessage) => void)[] = [];
let seen: http.IncomingMessage[] = [];

beforeAll(async () => {
  server = http.createServer((req, res) => {
    seen.push(req);
    req.resume();
    const answer = answers.shift() ?? ((r) => r.writeHead(500).end());
    answer(res, req);
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
});
afterAll(() => new Promise<void>((r) => server.close(() => r())));
beforeEach(() => {
  answers = [];
  seen = [];
});

const client = () =>
  leanTable({
    endpoint: `http://127.0.0.1:${(server.address() as AddressInfo).port}/devstoreaccount1`,
    tableName: 'T',
    accountName: 'devstoreaccount1',
    accountKey: Buffer.from('key').toString('base64'),
  });
const throttled = (res: http.ServerResponse) => res.writeHead(503, { 'x-ms-retry-after-ms': '0' }).end();
const row = (res: http.ServerResponse) =>
  res.writeHead(200, { 'content-type': 'application/json' }).end('{"PartitionKey":"p","RowKey":"r","odata.etag":"W/\\"1\\"","v":1}');

test('a throttled answer is sent again; the signed request names the entity', async () => {
  answers = [throttled, throttled, row];
  await expect(client().getEntity('p', "r'1")).resolves.toEqual({ partitionKey: 'p', rowKey: 'r', etag: 'W/"1"', v: 1 });
  expect(seen).toHaveLength(3);
  const req = seen[0];
  expect(req.url).toBe("/devstoreaccount1/T(PartitionKey='p',RowKey='r''1')");
  expect(req.headers['x-ms-version']).toBe('2019-02-02');
  expect(req.headers.authorization).toMatch(/^SharedKeyLite devstoreaccount1:[A-Za-z0-9+/]+=*$/);
  expect(new Date(String(req.headers['x-ms-date'])).getTime()).not.toBeNaN();
  expect(req.headers.connection).toBe('keep-alive');
});

test('at most 3 retries, then the last failure', async () => {
  answers = [throttled, throttled, throttled, throttled, row];
  await expect(client().getEntity('p', 'r')).rejects.toMatchObject({ statusCode: 503 });
  expect(seen).toHaveLength(4);
});

test('a failure that is not transient is not sent again', async () => {
  answers = [
    (res) =>
      res.writeHead(409, { 'x-ms-error-code': 'EntityAlreadyExists' }).end('{"odata.error":{"code":"EntityAlreadyExists","message":{"value":"exists"}}}'),
  ];
  const err = await client()
    .insert({ partitionKey: 'p', rowKey: 'r' })
    .catch((e: unknown) => e);
  expect(err).toBeInstanceOf(RestError);
  expect(err).toMatchObject({ statusCode: 409, details: { errorCode: 'EntityAlreadyExists' } });
  expect(seen).toHaveLength(1);
});

test('a connection reset by the server is retried after a backoff', async () => {
  answers = [(res) => res.socket?.destroy(), row];
  await expect(client().getEntity('p', 'r')).resolves.toMatchObject({ v: 1 });
  expect(seen).toHaveLength(2);
});
