import {
  ENTERPRISE_USER,
  flattenResource,
  needsReplace,
  patchOperations,
  UnwritableAttributeError,
  writeAttributes,
} from '../../../../lib/connectors/scim/attributes';
import { MAX_WAIT_MS, MIN_WAIT_MS, parseRetryAfter, retryDelayMs } from '../../../../lib/connectors/scim/backoff';
import { scimChecks } from '../../../../lib/connectors/scim/schema';
import { serverFeatures } from '../../../../lib/connectors/scim/serverConfig';
import { deltaFilter, deltaSince, isFresh, MAX_SEEN, parseWatermark, watermarkAfter } from '../../../../lib/connectors/scim/watermark';
import { deprovisioningChecks, deprovisioningSettings } from '../../../../lib/sync/deprovisioning';
import { connectorTypeConfig } from '../../../../lib/connectors/registry';
import { secretPaths } from '../../../../lib/secrets/fields';

/** The SCIM client connector's pure parts: the attribute mapping, the backoff, the delta watermark and filter. */

describe('attribute mapping', () => {
  const user = {
    id: 'u1',
    userName: 'ada@contoso.example',
    externalId: 'E1',
    displayName: 'Ada Lovelace',
    active: true,
    name: { givenName: 'Ada', familyName: 'Lovelace' },
    emails: [
      { value: 'ada@home.example', type: 'home' },
      { value: 'ada@contoso.example', type: 'work' },
    ],
    phoneNumbers: [
      { value: '+1 555 0100', type: 'work' },
      { value: '+1 555 0199', type: 'mobile' },
    ],
    [ENTERPRISE_USER]: { employeeNumber: '42', department: 'Research', manager: { value: 'm1' } },
  };

  it('reads a user as flat attributes, the work email as email and the manager as a reference', () => {
    const { attributes, references } = flattenResource('User', 'u1', user);
    expect(attributes).toMatchObject({
      id: 'u1',
      userName: 'ada@contoso.example',
      externalId: 'E1',
      displayName: 'Ada Lovelace',
      active: true,
      givenName: 'Ada',
      familyName: 'Lovelace',
      email: 'ada@contoso.example',
      emails: ['ada@home.example', 'ada@contoso.example'],
      phoneNumber: '+1 555 0100',
      mobile: '+1 555 0199',
      employeeNumber: '42',
      department: 'Research',
      manager: 'm1',
    });
    expect(references).toEqual({ manager: ['m1'] });
  });

  it('reads a group with its members as references', () => {
    const { attributes, references } = flattenResource('Group', 'g1', { displayName: 'Staff', members: [{ value: 'u1' }, { value: 'u2', display: 'Bob' }] });
    expect(attributes).toEqual({ id: 'g1', externalId: null, displayName: 'Staff', members: ['u1', 'u2'] });
    expect(references).toEqual({ members: ['u1', 'u2'] });
  });

  it('writes an add: nested names, the work email, the enterprise extension and its schema, booleans from strings', () => {
    const r = writeAttributes(
      'User',
      {},
      { userName: 'bob', givenName: 'Bob', email: 'bob@contoso.example', department: 'Sales', manager: 'u1', active: 'True' },
    );
    expect(r).toEqual({
      schemas: ['urn:ietf:params:scim:schemas:core:2.0:User', ENTERPRISE_USER],
      userName: 'bob',
      name: { givenName: 'Bob' },
      emails: [{ value: 'bob@contoso.example', type: 'work', primary: true }],
      active: true,
      [ENTERPRISE_USER]: { department: 'Sales', manager: { value: 'u1' } },
    });
  });

  it('writes a replace of a read resource: other emails kept, a cleared value removed, meta dropped', () => {
    const r = writeAttributes('User', { ...user, meta: { version: 'W/"1"' } }, { email: 'new@contoso.example', department: null });
    expect(r.meta).toBeUndefined();
    expect(r.emails).toEqual([
      { value: 'ada@home.example', type: 'home' },
      { value: 'new@contoso.example', type: 'work' },
    ]);
    expect(r[ENTERPRISE_USER]).toEqual({ employeeNumber: '42', manager: { value: 'm1' } });
    expect(user[ENTERPRISE_USER].department).toBe('Research');
  });

  it('writes group members: a whole list, or single adds and removes', () => {
    expect(writeAttributes('Group', {}, { displayName: 'G', members: ['a', 'b'] }).members).toEqual([{ value: 'a' }, { value: 'b' }]);
    expect(writeAttributes('Group', { members: [{ value: 'a' }, { value: 'b' }] }, {}, { members: ['c', 'a'] }, { members: ['b'] }).members).toEqual([
      { value: 'a' },
      { value: 'c' },
    ]);
  });

  it('writes emails besides the work one (type other), whole or one by one; the work email stays', () => {
    const r = writeAttributes('User', user, { emails: ['x@contoso.example', 'ada@contoso.example'] });
    expect(r.emails).toEqual([
      { value: 'ada@contoso.example', type: 'work' },
      { value: 'x@contoso.example', type: 'other' },
    ]);
    expect(writeAttributes('User', r, {}, { emails: ['y@contoso.example'] }, { emails: ['x@contoso.example'] }).emails).toEqual([
      { value: 'ada@contoso.example', type: 'work' },
      { value: 'y@contoso.example', type: 'other' },
    ]);
    expect(needsReplace('User', { emails: ['x'] })).toBe(true);
    expect(needsReplace('User', { email: 'x' })).toBe(false);
    expect(patchOperations('User', {}, { emails: ['y@x'] }, { emails: ['z@x'] })).toEqual([
      { op: 'add', path: 'emails', value: [{ value: 'y@x', type: 'other' }] },
      { op: 'remove', path: 'emails[value eq "z@x"]' },
    ]);
  });

  it('PATCH operations: replace with paths, remove for cleared values, the manager as an object, members one by one', () => {
    expect(patchOperations('User', { givenName: 'Ada', email: 'a@x', department: 'R', manager: 'm2', title: null, active: false })).toEqual([
      { op: 'replace', path: 'name.givenName', value: 'Ada' },
      { op: 'replace', path: 'emails[type eq "work"].value', value: 'a@x' },
      { op: 'replace', path: `${ENTERPRISE_USER}:department`, value: 'R' },
      { op: 'replace', path: `${ENTERPRISE_USER}:manager`, value: { value: 'm2' } },
      { op: 'remove', path: 'title' },
      { op: 'replace', path: 'active', value: false },
    ]);
    expect(patchOperations('Group', { displayName: 'G2' }, { members: ['u3'] }, { members: ['u"1'] })).toEqual([
      { op: 'replace', path: 'displayName', value: 'G2' },
      { op: 'add', path: 'members', value: [{ value: 'u3' }] },
      { op: 'remove', path: 'members[value eq "u\\"1"]' },
    ]);
  });

  it('an attribute the mapping does not write, or a read-only one, is refused by name', () => {
    expect(() => patchOperations('User', { shoeSize: 44 })).toThrow(UnwritableAttributeError);
    expect(() => patchOperations('User', { shoeSize: 44 })).toThrow(/'shoeSize'/);
    expect(() => patchOperations('User', { id: 'x' })).toThrow(/'id' of a SCIM User is read only/);
    expect(() => patchOperations('User', { active: 'maybe' })).toThrow(/boolean/);
  });
});

describe('backoff', () => {
  const now = Date.parse('2026-11-29T12:00:00Z');

  it('Retry-After in seconds or as an HTTP date', () => {
    expect(parseRetryAfter('3', now)).toBe(3000);
    expect(parseRetryAfter('Sun, 29 Nov 2026 12:00:05 GMT', now)).toBe(5000);
    expect(parseRetryAfter('soon', now)).toBeUndefined();
    expect(parseRetryAfter(null, now)).toBeUndefined();
  });

  it('honours Retry-After, bounded', () => {
    expect(retryDelayMs(1, '2', now, 0.5)).toBe(2000);
    expect(retryDelayMs(1, '0', now, 0.5)).toBe(MIN_WAIT_MS);
    expect(retryDelayMs(1, '86400', now, 0.5)).toBe(MAX_WAIT_MS);
  });

  it('without Retry-After: full jitter under a ceiling that doubles per retry, capped', () => {
    expect(retryDelayMs(1, null, now, 0.999)).toBe(499);
    expect(retryDelayMs(2, null, now, 0.999)).toBe(999);
    expect(retryDelayMs(3, null, now, 0.5)).toBe(1000);
    expect(retryDelayMs(20, null, now, 0.999)).toBe(Math.floor(0.999 * MAX_WAIT_MS));
    expect(retryDelayMs(3, null, now, 0)).toBe(MIN_WAIT_MS);
  });
});

describe('delta watermark and filter', () => {
  const t = Date.parse('2026-11-29T12:00:30.700Z');

  it('the filter reads from the watermark less the overlap, cut to whole seconds', () => {
    const wm = { t, seen: {} };
    expect(deltaFilter(wm, 60)).toBe('meta.lastModified gt "2026-11-29T11:59:30Z"');
    expect(deltaFilter(wm, 0)).toBe('meta.lastModified gt "2026-11-29T12:00:30Z"');
    expect(deltaSince(wm, 60)).toBe(Date.parse('2026-11-29T11:59:30Z'));
  });

  it('keeps the versions inside the overlap, and leaves out a resource seen at the same version', () => {
    const text = watermarkAfter(t, 60, [
      { key: 'User/old', lastModified: Date.parse('2026-11-29T11:00:00Z'), version: 'W/"1"' },
      { key: 'User/new', lastModified: Date.parse('2026-11-29T12:00:10Z'), version: 'W/"3"' },
    ]);
    const wm = parseWatermark(text)!;
    expect(wm).toEqual({ t, seen: { 'User/new': 'W/"3"' } });
    expect(isFresh(wm, { key: 'User/new', lastModified: undefined, version: 'W/"3"' })).toBe(false);
    expect(isFresh(wm, { key: 'User/new', lastModified: undefined, version: 'W/"4"' })).toBe(true);
    expect(isFresh(wm, { key: 'User/other', lastModified: undefined, version: 'W/"1"' })).toBe(true);
  });

  it('a burst past MAX_SEEN keeps no versions (they are reported again); an unreadable watermark is none', () => {
    const many = Array.from({ length: MAX_SEEN + 1 }, (_, i) => ({ key: `User/${i}`, lastModified: t, version: '1' }));
    expect(parseWatermark(watermarkAfter(t, 60, many))!.seen).toEqual({});
    expect(parseWatermark('not json')).toBeNull();
    expect(parseWatermark('{"t":1,"seen":{}}')).toBeNull();
    expect(parseWatermark(null)).toBeNull();
  });
});

describe('settings', () => {
  it('the token and the client secret are secrets; the address and the identity are endpoints', () => {
    const schema = connectorTypeConfig('scim').configSchema;
    const config = {
      baseUrl: 'https://x.example/scim',
      auth: { type: 'oauthClientCredentials', tokenUrl: 'https://x/t', clientId: 'c', clientSecret: 's', token: 't' },
    };
    expect(secretPaths(schema, config)).toEqual([
      ['auth', 'clientSecret'],
      ['auth', 'token'],
    ]);
    expect(connectorTypeConfig('scim').endpoints(config)).toEqual([
      ['baseUrl'],
      ['allowHttp'],
      ['auth', 'type'],
      ['auth', 'tokenUrl'],
      ['auth', 'clientId'],
      ['auth', 'scope'],
    ]);
    expect(connectorTypeConfig('scim').testOnSave).toBe(true);
  });

  it('each auth type needs its fields, and http:// needs allowHttp', () => {
    expect(scimChecks({ baseUrl: 'https://x.example/scim', auth: { type: 'bearer' } })).toEqual([
      { path: '/auth/token', message: "is required with auth type 'bearer'" },
    ]);
    expect(
      scimChecks({ baseUrl: 'http://x.example/scim', auth: { type: 'oauthClientCredentials', token: 't', tokenUrl: 'http://x/t' } }).map((e) => e.path),
    ).toEqual(['/auth/clientId', '/auth/clientSecret', '/auth/token', '/baseUrl', '/auth/tokenUrl']);
    expect(scimChecks({ baseUrl: 'http://127.0.0.1/scim', allowHttp: true, auth: { type: 'bearer', token: 't' } })).toEqual([]);
  });

  it('ServiceProviderConfig: what is supported, booleans as strings too', () => {
    expect(serverFeatures({ patch: { supported: true }, bulk: { supported: 'True', maxOperations: 50 }, filter: { supported: false }, etag: {} })).toEqual({
      patch: true,
      bulk: { supported: true, maxOperations: 50 },
      filter: false,
      etag: false,
    });
    expect(serverFeatures(undefined).bulk).toEqual({ supported: false, maxOperations: 0 });
  });

  it('deprovisioning disable on a scim target writes active=false unless told otherwise', () => {
    expect(deprovisioningSettings({ deprovisioning: { action: 'disable' } }, 'scim').disableAttributes).toEqual({ active: false });
    expect(deprovisioningSettings({ deprovisioning: { action: 'disable', disableAttributes: { Active: 'false' } } }, 'scim').disableAttributes).toEqual({
      Active: 'false',
    });
    expect(deprovisioningChecks('scim', { deprovisioning: { action: 'disable' } })).toEqual([]);
  });
});
