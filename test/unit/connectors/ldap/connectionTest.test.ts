import { testDirectorySession } from '../../../../lib/connectors/ldap/test';
import { ConnectorError } from '../../../../lib/connectors/sdk';
import type { DirectorySession, SearchRequest } from '../../../../lib/connectors/ldap/session';

/**
 * The directory connection test's reading part, on a recorded session (the bind, TLS and network failures are
 * tested against slapd in test/integration/ldap/save.test.ts): which entries it reads and how it reports them.
 */
function session(entries: Record<string, 'present' | 'hidden' | 'missing'>, searches: SearchRequest[] = []): DirectorySession {
  return {
    async search(req) {
      searches.push(req);
      const state = entries[req.base] ?? 'missing';
      // What session.ts makes of LDAP result 32.
      if (state === 'missing') throw new ConnectorError('configuration_invalid', `Searching ${req.base}: no such object (check baseDN and containers).`);
      return state === 'present' ? [{ dn: req.base }] : [];
    },
  } as DirectorySession;
}

const config = { host: 'dc1', port: 636, security: 'ldaps' as const, bindDN: 'cn=sync', baseDN: 'dc=corp' };

describe('testDirectorySession', () => {
  it('reads baseDN and every included container at base scope, asking for no attribute', async () => {
    const searches: SearchRequest[] = [];
    const r = await testDirectorySession(session({ 'dc=corp': 'present', 'ou=a,dc=corp': 'present' }, searches), {
      ...config,
      containers: { include: ['ou=a,dc=corp'] },
    });
    expect(r.message).toBe('Bound to dc1:636 (ldaps) as cn=sync; dc=corp and 1 included container(s) are readable.');
    expect(searches.map((s) => [s.base, s.scope, s.attributes])).toEqual([
      ['dc=corp', 'base', ['1.1']],
      ['ou=a,dc=corp', 'base', ['1.1']],
      // The root DSE: is this Active Directory (where a usn delta needs the right to list deleted objects)?
      ['', 'base', ['supportedCapabilities', 'namingContexts', 'defaultNamingContext']],
    ]);
  });

  it('a missing baseDN or container is configuration_invalid naming the setting and the DN', async () => {
    await expect(testDirectorySession(session({}), config)).rejects.toMatchObject({
      code: 'configuration_invalid',
      message: expect.stringMatching(/^baseDN 'dc=corp' was not found/),
    });
    await expect(testDirectorySession(session({ 'dc=corp': 'present' }), { ...config, containers: { include: ['ou=b,dc=corp'] } })).rejects.toMatchObject({
      code: 'configuration_invalid',
      message: expect.stringMatching(/^containers\.include 'ou=b,dc=corp' was not found/),
    });
  });

  it('an entry the account cannot see is reported as not readable; other failures pass through unchanged', async () => {
    await expect(testDirectorySession(session({ 'dc=corp': 'hidden' }), config)).rejects.toMatchObject({
      message: expect.stringMatching(/is not readable by the bind account/),
    });
    const lost = new ConnectorError('connection_failed', 'lost');
    const failing = { search: async () => Promise.reject(lost) } as unknown as DirectorySession;
    await expect(testDirectorySession(failing, config)).rejects.toBe(lost);
  });
});
