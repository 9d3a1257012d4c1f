import type { DirectorySession, LdapEntry } from './session';

/**
 * Paged searches kept open between pages of a full import. The engine reads one page per activity with a new
 * connector instance and persists the page's cursor; a paged-results cookie only lives on the connection
 * that made it, so the connection and its search are parked here under the cursor just handed out. The next
 * page's call with that cursor (in the same process) takes them back and goes on: no re-read.
 *
 * After a crash or in another process nothing is parked, and the connector resumes from the cursor itself
 * (see `ldapConnector.ts`): slower, but correct. Parked searches close after {@link PARK_IDLE_MS}.
 */
export interface ParkedSearch {
  session: DirectorySession;
  pages: AsyncGenerator<LdapEntry[]>;
  /** Entries of the last LDAP page not yet returned. */
  buffer: LdapEntry[];
  /** Identifies the connector configuration, so a cursor is never continued with another one. */
  fingerprint: string;
  timer?: NodeJS.Timeout;
}

export const PARK_IDLE_MS = 120_000;
const parked = new Map<string, ParkedSearch>();

export function park(cursor: string, p: ParkedSearch): void {
  const old = parked.get(cursor);
  if (old) void discard(cursor, old);
  p.timer = setTimeout(() => void discard(cursor, p), PARK_IDLE_MS);
  p.timer.unref();
  parked.set(cursor, p);
}

/**
 * Take the search parked under `cursor`: undefined when none, when it belongs to another configuration, or when
 * its connection was closed meanwhile (389 Directory Server closes a connection whose paged search waits longer
 * than its `nsslapd-ioblocktimeout`, 10 s by default, for the next page request; a busy engine can take that
 * long between two pages). The caller then resumes from the cursor itself, as after a crash.
 */
export function unpark(cursor: string, fingerprint: string): ParkedSearch | undefined {
  const p = parked.get(cursor);
  if (!p) return undefined;
  parked.delete(cursor);
  if (p.timer) clearTimeout(p.timer);
  if (p.fingerprint !== fingerprint || p.session.isOpen?.() === false) {
    void discard(cursor, p);
    return undefined;
  }
  return p;
}

async function discard(cursor: string, p: ParkedSearch): Promise<void> {
  if (parked.get(cursor) === p) parked.delete(cursor);
  if (p.timer) clearTimeout(p.timer);
  await p.pages.return(undefined).catch(() => undefined);
  await p.session.close().catch(() => undefined);
}

/** Close every parked search (tests; shutdown). */
export async function closeParkedSearches(): Promise<void> {
  await Promise.all([...parked.entries()].map(([c, p]) => discard(c, p)));
}
