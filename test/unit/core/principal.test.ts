import { bearerPrincipal, legacyPrincipal, negotiatePrincipal, parseUpnRealms, samePrincipal } from '../../../lib/core/principal';

describe('principals: one person whatever the scheme', () => {
  test('a Bearer person: every UPN-like claim and the oid are aliases; the UPN is the key', () => {
    const p = bearerPrincipal({
      upn: 'Alice@Contoso.com',
      preferred_username: 'alice.smith@contoso.com',
      oid: 'A0000000-0000-4000-8000-000000000001',
      sub: 'x',
    });
    expect(p).toEqual({
      key: 'upn:alice@contoso.com',
      kind: 'person',
      scheme: 'Bearer',
      aliases: ['upn:alice@contoso.com', 'upn:alice.smith@contoso.com', 'oid:a0000000-0000-4000-8000-000000000001'],
      display: 'Alice@Contoso.com',
    });
  });

  test("a name claim that is not user@domain (a directory's preferred_username) still names a person", () => {
    expect(bearerPrincipal({ preferred_username: 'Alice', sub: 's', azp: 'console' })).toMatchObject({
      kind: 'person',
      key: 'upn:alice',
      aliases: ['upn:alice'],
    });
  });

  test('app-only tokens are applications: by appid/azp, by idtyp app, else by issuer and sub', () => {
    expect(bearerPrincipal({ sub: 's1', appid: 'App-1', oid: 'o1' })).toMatchObject({ kind: 'application', key: 'app:app-1', display: 'App-1' });
    expect(bearerPrincipal({ sub: 's1', azp: 'cli', idtyp: 'app', preferred_username: 'svc@contoso.com' })).toMatchObject({
      kind: 'application',
      key: 'app:cli',
    });
    expect(bearerPrincipal({ sub: 's1', iss: 'https://idp' })).toMatchObject({ kind: 'application', key: 'app:https://idp#s1', display: 's1' });
  });

  test('a Negotiate person: the directory UPN and SID, the Kerberos principal; the realm is a UPN suffix only when mapped', () => {
    const ad = negotiatePrincipal('alice@CONTOSO.COM', { sid: 's-1-5-21-1-2-3-1105', upn: 'alice@contoso.com' });
    expect(ad).toMatchObject({ key: 'upn:alice@contoso.com', kind: 'person', scheme: 'Negotiate', display: 'alice@contoso.com' });
    expect(ad.aliases).toEqual(['upn:alice@contoso.com', 'sid:S-1-5-21-1-2-3-1105', 'krb:alice@CONTOSO.COM']);
    const unmapped = negotiatePrincipal('Alice@EXAMPLE.TEST', { sid: null, upn: null });
    expect(unmapped).toMatchObject({ key: 'krb:alice@EXAMPLE.TEST', aliases: ['krb:alice@EXAMPLE.TEST'], display: 'Alice@EXAMPLE.TEST' });
    const mapped = negotiatePrincipal('alice@EXAMPLE.TEST', { sid: null, upn: null }, parseUpnRealms(['example.test=Contoso.com']));
    expect(mapped.aliases).toEqual(['upn:alice@contoso.com', 'krb:alice@EXAMPLE.TEST']);
    expect(parseUpnRealms(['EXAMPLE.TEST'])).toEqual(new Map([['EXAMPLE.TEST', 'example.test']]));
  });

  test('any shared alias is the same person, across schemes', () => {
    const bearer = bearerPrincipal({ upn: 'alice@contoso.com', oid: 'o-1' });
    const windows = negotiatePrincipal('alice@CONTOSO.COM', { sid: 'S-1-5-21-9', upn: 'ALICE@contoso.com' });
    expect(samePrincipal(bearer, windows)).toBe(true);
    expect(samePrincipal(bearer, bearerPrincipal({ upn: 'alice@contoso.com', oid: 'o-2' }))).toBe(true);
    expect(samePrincipal(bearer, bearerPrincipal({ upn: 'bob@contoso.com', oid: 'o-1' }))).toBe(true);
    expect(samePrincipal(bearer, bearerPrincipal({ upn: 'bob@contoso.com', oid: 'o-2' }))).toBe(false);
    expect(samePrincipal(windows, negotiatePrincipal('bob@CONTOSO.COM', { sid: 'S-1-5-21-10', upn: 'bob@contoso.com' }))).toBe(false);
  });

  test('records written before principals were: rebuilt from the UPN and the oid or SID; engine actors are nobody', () => {
    expect(legacyPrincipal('alice@x.test', 'A0000000-0000-4000-8000-000000000001')?.aliases).toEqual([
      'upn:alice@x.test',
      'krb:alice@X.TEST',
      'oid:a0000000-0000-4000-8000-000000000001',
    ]);
    expect(legacyPrincipal(null, 'S-1-5-21-1')?.aliases).toEqual(['sid:S-1-5-21-1']);
    expect(legacyPrincipal('schedule:nightly', null)).toBeNull();
    expect(legacyPrincipal(null, null)).toBeNull();
  });
});
