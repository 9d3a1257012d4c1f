import { park, unpark } from '../../../../lib/connectors/ldap/parked';
import type { DirectorySession, LdapEntry } from '../../../../lib/connectors/ldap/session';

/** A parked paged search is handed back only while its connection is open. */
function parkedSession(open: boolean | undefined): { session: DirectorySession; closed: () => boolean; returned: () => boolean } {
  let closed = false;
  let returned = false;
  const session = {
    close: async () => {
      closed = true;
    },
    ...(open === undefined ? {} : { isOpen: () => open }),
  } as unknown as DirectorySession;
  const pages = {
    return: async () => {
      returned = true;
      return { done: true, value: undefined };
    },
  } as unknown as AsyncGenerator<LdapEntry[]>;
  park(`c-${String(open)}`, { session, pages, buffer: [], fingerprint: 'f' });
  return { session, closed: () => closed, returned: () => returned };
}

describe('parked paged searches', () => {
  test('an open session is handed back as it was parked', async () => {
    const s = parkedSession(true);
    const p = unpark('c-true', 'f');
    expect(p?.session).toBe(s.session);
    expect(s.closed()).toBe(false);
    await p!.session.close();
  });

  test('a session that does not say whether it is open counts as open', () => {
    const s = parkedSession(undefined);
    expect(unpark('c-undefined', 'f')?.session).toBe(s.session);
  });

  test('a session whose connection was closed meanwhile is not handed back: discarded, the caller resumes from the cursor', async () => {
    const s = parkedSession(false);
    expect(unpark('c-false', 'f')).toBeUndefined();
    await new Promise((r) => setImmediate(r));
    expect(s.returned()).toBe(true);
    expect(s.closed()).toBe(true);
    // Taken out: a second call finds nothing.
    expect(unpark('c-false', 'f')).toBeUndefined();
  });
});
