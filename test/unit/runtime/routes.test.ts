import { comparePrecedence, RouteTable, RouteTemplate, RouteTemplateError } from '../../../lib/runtime/routes';

const segs = (p: string) => p.split('/').filter(Boolean);

describe('route templates', () => {
  it('matches literals case-insensitively and captures parameters decoded', () => {
    const t = new RouteTemplate('connectors/{id}/runs');
    expect(t.match(segs('Connectors/a%20b/RUNS'))).toEqual({ params: { id: 'a b' } });
    expect(t.match(segs('connectors/x'))).toBeUndefined();
    expect(t.match(segs('connectors/x/runs/extra'))).toBeUndefined();
  });

  it('applies constraints: int, guid, alpha, bool, regex, chained', () => {
    expect(new RouteTemplate('n/{n:int}').match(segs('n/-42'))?.params).toEqual({ n: '-42' });
    expect(new RouteTemplate('n/{n:int}').match(segs('n/4.2'))).toBeUndefined();
    expect(new RouteTemplate('n/{n:int}').match(segs('n/9999999999'))).toBeUndefined();
    const g = new RouteTemplate('g/{id:guid}');
    expect(g.match(segs('g/3F2504E0-4F89-11D3-9A0C-0305E82C3301'))).toBeDefined();
    expect(g.match(segs('g/3f2504e04f8911d39a0c0305e82c3301'))).toBeDefined();
    expect(g.match(segs('g/not-a-guid'))).toBeUndefined();
    expect(new RouteTemplate('a/{x:alpha}').match(segs('a/abcXYZ'))).toBeDefined();
    expect(new RouteTemplate('a/{x:alpha}').match(segs('a/abc1'))).toBeUndefined();
    expect(new RouteTemplate('b/{x:bool}').match(segs('b/TRUE'))).toBeDefined();
    expect(new RouteTemplate('b/{x:bool}').match(segs('b/yes'))).toBeUndefined();
    const r = new RouteTemplate('r/{code:regex(^[A-Z]{{2}}-\\d+$)}');
    expect(r.match(segs('r/ab-12'))?.params).toEqual({ code: 'ab-12' });
    expect(r.match(segs('r/abc-12'))).toBeUndefined();
    const chained = new RouteTemplate('c/{n:int:min(10)}');
    expect(chained.match(segs('c/10'))).toBeDefined();
    expect(chained.match(segs('c/9'))).toBeUndefined();
    expect(new RouteTemplate('l/{s:length(2,3)}').match(segs('l/abcd'))).toBeUndefined();
  });

  it('handles optional parameters, defaults and catch-all', () => {
    const opt = new RouteTemplate('hello/{name?}');
    expect(opt.match(segs('hello'))?.params).toEqual({});
    expect(opt.match(segs('hello/bob'))?.params).toEqual({ name: 'bob' });
    const def = new RouteTemplate('page/{n:int=1}');
    expect(def.match(segs('page'))?.params).toEqual({ n: '1' });
    const all = new RouteTemplate('files/{*path}');
    expect(all.match(segs('files/a/b%2Fc/d.txt'))?.params).toEqual({ path: 'a/b/c/d.txt' });
    expect(all.match(segs('files'))?.params).toEqual({});
  });

  it('matches complex segments such as {file}.{ext}', () => {
    const t = new RouteTemplate('dl/{file}.{ext}');
    expect(t.match(segs('dl/report.pdf'))?.params).toEqual({ file: 'report', ext: 'pdf' });
    expect(t.match(segs('dl/report'))).toBeUndefined();
  });

  it('rejects bad templates with a clear error', () => {
    expect(() => new RouteTemplate('a/{*rest}/b')).toThrow(RouteTemplateError);
    expect(() => new RouteTemplate('a/{id}/{id}')).toThrow(/appears twice/);
    expect(() => new RouteTemplate('a/{id:nope}')).toThrow(/unknown constraint/);
    expect(() => new RouteTemplate('a/{id')).toThrow(/unclosed/);
  });

  it('orders by precedence: literal, constrained, plain parameter, catch-all', () => {
    const order = ['items/{*rest}', 'items/{id}', 'items/{id:int}', 'items/new'].map((t) => new RouteTemplate(t));
    order.sort(comparePrecedence);
    expect(order.map((t) => t.template)).toEqual(['items/new', 'items/{id:int}', 'items/{id}', 'items/{*rest}']);
  });
});

describe('route table', () => {
  const table = new RouteTable<string>();
  table.add('items/{*rest}', [], 'catchAll');
  table.add('items/{id}', ['GET'], 'byId');
  table.add('items/{id:int}', ['GET'], 'byInt');
  table.add('items/{id:int}', ['DELETE'], 'deleteInt');
  table.add('items/new', ['GET'], 'literal');
  table.add('/status', ['GET', 'HEAD'], 'status');

  it('picks the most specific route whatever the registration order', () => {
    expect(table.match('GET', '/items/new')).toMatchObject({ kind: 'match', entry: { target: 'literal' } });
    expect(table.match('GET', '/items/7')).toMatchObject({ kind: 'match', entry: { target: 'byInt' }, params: { id: '7' } });
    expect(table.match('DELETE', '/items/7')).toMatchObject({ kind: 'match', entry: { target: 'deleteInt' } });
    expect(table.match('GET', '/items/x')).toMatchObject({ kind: 'match', entry: { target: 'byId' } });
    expect(table.match('POST', '/items/x/y')).toMatchObject({ kind: 'match', entry: { target: 'catchAll' }, params: { rest: 'x/y' } });
  });

  it('reports 405 with the allowed methods when only the method differs', () => {
    const t = new RouteTable<string>();
    t.add('things/{id:int}', ['GET'], 'get');
    t.add('things/{id:int}', ['DELETE'], 'del');
    expect(t.match('PUT', '/things/3')).toEqual({ kind: 'method-not-allowed', allow: ['GET', 'DELETE'] });
    expect(t.match('PUT', '/things/abc')).toEqual({ kind: 'not-found' });
    expect(table.match('GET', '/status/')).toMatchObject({ kind: 'match', entry: { target: 'status' } });
  });
});
