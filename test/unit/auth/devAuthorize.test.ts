import { createHash } from 'node:crypto';
import { AuthorizationCodes, formActionSources, OAuthError, parseAuthorizeRequest, parseUsername } from '../../../lib/auth/devAuthorize';

const verifier = 'abcdefghijklmnopqrstuvwxyz0123456789-._~ABCDEFG';
const challenge = createHash('sha256').update(verifier).digest('base64url');
const params = (over: Record<string, string> = {}) =>
  new URLSearchParams({
    client_id: 'meshsync-console',
    redirect_uri: 'http://localhost:7071/console/callback',
    response_type: 'code',
    code_challenge: challenge,
    code_challenge_method: 'S256',
    state: 's',
    ...over,
  });
const errorOf = (fn: () => unknown) => {
  try {
    fn();
  } catch (e) {
    return (e as OAuthError).error;
  }
  return 'none';
};

describe('development issuer authorization requests', () => {
  it('accepts loopback redirect URIs only', () => {
    for (const uri of ['http://127.0.0.1:7071/console/callback', 'http://[::1]:7071/console/callback', 'https://localhost/console/callback']) {
      expect(parseAuthorizeRequest(params({ redirect_uri: uri })).redirectUri).toBe(uri);
    }
    for (const uri of [
      'http://10.0.0.1/cb',
      'https://evil.example/cb',
      'javascript:alert(1)',
      'http://127.0.0.1/cb#x',
      'http://u:p@127.0.0.1/cb',
      'not a url',
    ]) {
      expect({ uri, error: errorOf(() => parseAuthorizeRequest(params({ redirect_uri: uri }))) }).toEqual({ uri, error: 'invalid_request' });
    }
  });

  it('refuses user names with markup or control characters', () => {
    expect(parseUsername('  ')).toBe('developer@localhost');
    expect(errorOf(() => parseUsername('<b>x</b>'))).toBe('invalid_request');
    expect(errorOf(() => parseUsername('a\nb'))).toBe('invalid_request');
  });

  it('redeems a code once, within its minute, with the verifier of its challenge', () => {
    const codes = new AuthorizationCodes();
    const req = parseAuthorizeRequest(params());
    const redeem = (code: string, over: Record<string, string> = {}, now?: number) =>
      codes.redeem(new URLSearchParams({ code, client_id: 'meshsync-console', redirect_uri: req.redirectUri, code_verifier: verifier, ...over }), now);
    const t0 = 1_000_000;
    const code = codes.issue(req, 'Admin', 'ada@example.test', t0);
    expect(redeem(code, {}, t0 + 1000)).toEqual({ role: 'Admin', username: 'ada@example.test' });
    expect(errorOf(() => redeem(code, {}, t0 + 2000))).toBe('invalid_grant');
    const late = codes.issue(req, 'Viewer', 'v@example.test', t0);
    expect(errorOf(() => redeem(late, {}, t0 + 60_001))).toBe('invalid_grant');
    const plainVerifier = codes.issue(req, 'Viewer', 'v@example.test', t0);
    // `plain` would send the challenge itself as the verifier: S256 refuses it.
    expect(errorOf(() => redeem(plainVerifier, { code_verifier: challenge }, t0 + 1))).toBe('invalid_grant');
  });

  it("names only valid form-action sources: the redirect URI's origin, its scheme for an IPv6 literal", () => {
    const of = (uri: string) => formActionSources(parseAuthorizeRequest(params({ redirect_uri: uri })));
    expect(of('http://127.0.0.1:7071/console/callback')).toBe("'self' http://127.0.0.1:7071");
    expect(of('https://localhost/console/callback')).toBe("'self' https://localhost");
    expect(of('http://[::1]:7071/console/callback')).toBe("'self' http:");
    expect(formActionSources(undefined)).toBe("'self'");
    for (const uri of ['http://127.0.0.1:7071/x', 'http://[::1]:7071/x', 'http://localhost:1/x']) expect(of(uri)).not.toContain('[');
  });
});
