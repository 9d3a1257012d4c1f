import { Type } from '@sinclair/typebox';
import { changedPaths, endpointPaths } from '../../../lib/secrets';

/** The pure parts of "a stored secret never goes to a new destination": which fields are endpoints, and which changed. */
describe('endpointPaths', () => {
  it('lists the properties marked x-endpoint, nested ones included, with the prefix', () => {
    const schema = Type.Object({
      url: Type.String({ 'x-endpoint': true }),
      label: Type.String(),
      proxy: Type.Object({ host: Type.String({ 'x-endpoint': true }), note: Type.String() }),
    });
    expect(endpointPaths(schema, ['settings'])).toEqual([
      ['settings', 'url'],
      ['settings', 'proxy', 'host'],
    ]);
    expect(endpointPaths(Type.Object({ a: Type.String() }))).toEqual([]);
  });
});

describe('changedPaths', () => {
  const before = { host: 'a', port: 389, ssl: { ca: 'X', rejectUnauthorized: true }, name: 'n' };

  it('names the paths whose value differs; objects compare by content, whatever the key order', () => {
    expect(changedPaths(before, { ...before, ssl: { rejectUnauthorized: true, ca: 'X' } }, [['host'], ['port'], ['ssl']])).toEqual([]);
    expect(changedPaths(before, { ...before, port: 636, ssl: { ca: 'Y', rejectUnauthorized: true } }, [['host'], ['port'], ['ssl']])).toEqual([
      ['port'],
      ['ssl'],
    ]);
    expect(changedPaths(before, { ...before, name: 'other' }, [['host'], ['port']])).toEqual([]);
  });

  it('a field that appears or disappears is a change; absent and undefined are the same; each path once', () => {
    expect(changedPaths(before, { ...before, caCertificate: 'PEM' }, [['caCertificate']])).toEqual([['caCertificate']]);
    expect(changedPaths({ ...before, caCertificate: undefined }, before, [['caCertificate']])).toEqual([]);
    expect(
      changedPaths({ s: { u: 1 } }, { s: { u: 2 } }, [
        ['s', 'u'],
        ['s', 'u'],
      ]),
    ).toEqual([['s', 'u']]);
  });
});
