import { HttpRequest } from '@azure/functions';
import { Type } from '@sinclair/typebox';
import { AppError } from '../../../lib/core/errors';
import { MAX_JSON_BODY_BYTES, PAGING, parseQuery, readJson, routeId } from '../../../lib/http';
import { defineSchema } from '../../../lib/schemas';

const Body = defineSchema(
  Type.Object({ name: Type.String({ minLength: 1 }), n: Type.Optional(Type.Integer({ default: 7 })) }, { $id: 'UnitHttpBody', additionalProperties: false }),
);

const post = (body: string | undefined, contentType: string | null = 'application/json') =>
  new HttpRequest({
    method: 'POST',
    url: 'http://localhost/api/x',
    headers: contentType ? { 'content-type': contentType } : {},
    body: body === undefined ? undefined : { string: body },
  });

async function failure(p: Promise<unknown> | (() => unknown)): Promise<AppError> {
  try {
    await (typeof p === 'function' ? p() : p);
  } catch (err) {
    expect(err).toBeInstanceOf(AppError);
    return err as AppError;
  }
  throw new Error('expected an AppError');
}

describe('readJson', () => {
  it('parses, validates and applies defaults', async () => {
    await expect(readJson(post('{"name":"a"}'), Body)).resolves.toEqual({ name: 'a', n: 7 });
    await expect(readJson(post('{"name":"a"}', 'application/merge-patch+json; charset=utf-8'), Body)).resolves.toEqual({ name: 'a', n: 7 });
  });

  it('415 for a body that is not declared JSON, including no content type', async () => {
    expect((await failure(readJson(post('{"name":"a"}', 'text/plain'), Body))).code).toBe('unsupported_media_type');
    expect((await failure(readJson(post('{"name":"a"}', null), Body))).code).toBe('unsupported_media_type');
    expect((await failure(readJson(post('{"name":"a"}', 'application/jsonp'), Body))).code).toBe('unsupported_media_type');
  });

  it('400 malformed_json for bad JSON and invalid UTF-8', async () => {
    expect((await failure(readJson(post('{"name":'), Body))).code).toBe('malformed_json');
    const bad = new HttpRequest({
      method: 'POST',
      url: 'http://localhost/x',
      headers: { 'content-type': 'application/json' },
      body: { bytes: new Uint8Array([0x7b, 0xff, 0x7d]) },
    });
    expect((await failure(readJson(bad, Body))).code).toBe('malformed_json');
  });

  it('400 with field errors for schema violations', async () => {
    const err = await failure(readJson(post('{"name":"","x":1,"n":"2"}'), Body));
    expect(err.code).toBe('validation_failed');
    expect(err.extra.errors).toEqual(
      expect.arrayContaining([
        { path: '/x', message: 'is not a known property' },
        { path: '/name', message: expect.any(String) },
        { path: '/n', message: expect.any(String) },
      ]),
    );
  });

  it('a body that fails the schema also lists the inner errors (innerErrors), each once; a valid body does not ask for them', async () => {
    const inner = jest.fn(async (body: unknown) => [
      { path: '/config/port', message: `must be <= 65535 (${typeof body})` },
      { path: '/x', message: 'is not a known property' },
    ]);
    const err = await failure(readJson(post('{"name":"","x":1}'), Body, { innerErrors: inner }));
    expect(inner).toHaveBeenCalledWith(expect.objectContaining({ name: '', x: 1 }));
    expect(err.extra.errors).toEqual([
      { path: '/x', message: 'is not a known property' },
      { path: '/name', message: expect.any(String) },
      { path: '/config/port', message: 'must be <= 65535 (object)' },
    ]);
    inner.mockClear();
    await expect(readJson(post('{"name":"a"}'), Body, { innerErrors: inner })).resolves.toEqual({ name: 'a', n: 7 });
    expect(inner).not.toHaveBeenCalled();
  });

  it('an absent body: 400 unless optional', async () => {
    expect((await failure(readJson(post(undefined, null), Body))).code).toBe('validation_failed');
    const Opt = defineSchema(Type.Object({ a: Type.Optional(Type.String()) }, { $id: 'UnitHttpOptional', additionalProperties: false }));
    await expect(readJson(post(undefined, null), Opt, { optional: true })).resolves.toEqual({});
  });

  it('413 over the size limit', async () => {
    const big = JSON.stringify({ name: 'x'.repeat(MAX_JSON_BODY_BYTES) });
    expect((await failure(readJson(post(big), Body))).code).toBe('payload_too_large');
  });
});

describe('parseQuery', () => {
  const get = (qs: string) => new HttpRequest({ method: 'GET', url: `http://localhost/api/rules?${qs}` });
  const spec = { connectorId: { kind: 'guid' }, kind: { kind: 'enum', values: ['JoinRule', 'FlowRule'] }, ...PAGING } as const;

  it('defaults skip 0 and take 50; ignores unknown parameters; normalizes GUIDs and enum case', () => {
    expect(parseQuery(get('x=1'), spec)).toEqual({ connectorId: undefined, kind: undefined, skip: 0, take: 50 });
    expect(parseQuery(get('connectorId=AAAAAAAA-0000-4000-8000-000000000000&kind=flowrule&skip=3&take=200'), spec)).toEqual({
      connectorId: 'aaaaaaaa-0000-4000-8000-000000000000',
      kind: 'FlowRule',
      skip: 3,
      take: 200,
    });
  });

  it.each([
    'take=201',
    'take=-1',
    'skip=-1',
    'take=1.5',
    'take=1e2',
    'take=',
    'skip=abc',
    'take=1&take=2',
    'connectorId=x',
    'kind=Other',
    'skip=99999999999999999999',
  ])('%s is a 400 naming the parameter', async (qs) => {
    const err = await failure(() => parseQuery(get(qs), spec));
    expect(err.code).toBe('validation_failed');
    expect(err.extra.errors![0].path).toBe(qs.split('=')[0]);
  });
});

describe('routeId', () => {
  it('lower-cases a GUID and answers 404 for anything else', async () => {
    const req = (id: string) => new HttpRequest({ method: 'GET', url: 'http://localhost/x', params: { id } });
    expect(routeId(req('ABCDEF01-2345-4678-89AB-CDEF01234567'), 'id', 'Thing')).toBe('abcdef01-2345-4678-89ab-cdef01234567');
    for (const id of ['', 'abc', '../etc', 'abcdef01-2345-4678-89ab-cdef0123456z']) {
      const err = await failure(() => routeId(req(id), 'id', 'Thing'));
      expect(err.code).toBe('not_found');
      expect(err.status).toBe(404);
    }
  });
});
