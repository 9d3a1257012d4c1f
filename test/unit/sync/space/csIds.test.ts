import { anchoredCsObjectId, csObjectIdOf, stagedCsObjectId, uuidV5 } from '../../../../lib/sync/space/csIds';

/** Connector-space object ids (lib/sync/space/csIds.ts): computed, never stored for imported rows. */

const C1 = '00000000-0000-4000-8000-0000000000c1';
const C2 = '00000000-0000-4000-8000-0000000000c2';
const GUID = /^[0-9a-f]{8}-[0-9a-f]{4}-5[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;

describe('csObjectId', () => {
  test('is a name-based UUID version 5 (the RFC 9562 example: www.example.com in the DNS namespace)', () => {
    expect(uuidV5('6ba7b810-9dad-11d1-80b4-00c04fd430c8', 'www.example.com')).toBe('2ed6657d-e927-568b-95e1-2665a8aea6a2');
  });

  test('of an anchor: stable, lower-case GUID, different per connector and per anchor', () => {
    const id = anchoredCsObjectId(C1, 'uid=a');
    expect(id).toMatch(GUID);
    expect(anchoredCsObjectId(C1, 'uid=a')).toBe(id);
    expect(anchoredCsObjectId(C1.toUpperCase(), 'uid=a')).toBe(id);
    expect(anchoredCsObjectId(C2, 'uid=a')).not.toBe(id);
    expect(anchoredCsObjectId(C1, 'uid=A')).not.toBe(id);
  });

  test('of a staged add: from the mesh id, never the id of an anchor with the same text', () => {
    const meshId = '11111111-2222-4333-8444-555555555555';
    expect(stagedCsObjectId(C1, meshId)).toMatch(GUID);
    expect(stagedCsObjectId(C1, meshId)).not.toBe(anchoredCsObjectId(C1, meshId));
  });

  test('of a row: the id it keeps (from its staged add) wins over the name-based one', () => {
    expect(csObjectIdOf(C1, { anchor: 'x' })).toBe(anchoredCsObjectId(C1, 'x'));
    expect(csObjectIdOf(C1, { anchor: 'x', csObjectId: 'kept' })).toBe('kept');
  });
});
