import { Client } from 'ldapts';
import { closeParkedSearches, LdapConnector } from '../../../lib/connectors/ldap';
import type { ImportPage } from '../../../lib/connectors/sdk';
import { startDs389, type Ds389 } from '../../support/ds389';
import { describeWithServer } from '../../support/servers';

/**
 * A full import whose engine takes more than 10 s between two pages, on a real 389 Directory Server: 389 DS
 * closes the connection of a paged search left waiting longer than its `nsslapd-ioblocktimeout` (10 s by
 * default). The parked search is then found closed and the next page resumes from the cursor (the search read
 * again, the part already imported skipped), as after a crash: every entry once, no `connection_failed`.
 * Before, the next page failed with "the connection to the directory was lost" (seen with 20,000 entries and
 * four full imports at once on a loaded machine: bench/leavers).
 */
jest.setTimeout(300_000);

const N = 2500;

describeWithServer('ds389')('directory connector: a paged full import paused past 389 DS ioblocktimeout', () => {
  let ds: Ds389;
  let base = '';
  beforeAll(async () => {
    ds = await startDs389();
    base = `ou=staff,${ds.suffix}`;
    const c = new Client({ url: ds.url });
    await c.bind(ds.rootDN, ds.rootPassword);
    await c.add(base, { objectClass: ['top', 'organizationalUnit'], ou: 'staff' });
    await Promise.all(
      Array.from({ length: 8 }, async (_, w) => {
        for (let i = w; i < N; i += 8) await c.add(`uid=u${i},${base}`, { objectClass: 'inetOrgPerson', uid: `u${i}`, cn: `C ${i}`, sn: `S${i}` });
      }),
    );
    await c.unbind();
  });
  const connector = () =>
    new LdapConnector('ldap', {
      host: 'localhost',
      port: ds.ldapsPort,
      security: 'ldaps',
      caCertificate: ds.caCertificate,
      baseDN: base,
      bindDN: ds.rootDN,
      bindPassword: ds.rootPassword,
      deltaStrategy: 'changelog',
      anchorAttribute: 'nsUniqueId',
    });
  afterAll(async () => {
    await closeParkedSearches();
    await ds?.stop();
  });

  test('a page requested 12 s after the previous one: the import goes on from the cursor and returns every entry once', async () => {
    const anchors: string[] = [];
    const errors: unknown[] = [];
    // One page per call, a new connector each time, as the engine's activities do.
    const page = async (cursor?: string): Promise<ImportPage> => {
      const it = connector()
        .fullImport({ pageSize: 1000, ...(cursor ? { cursor } : {}) })
        [Symbol.asyncIterator]();
      const next = await it.next();
      await it.return?.(undefined);
      expect(next.done).toBe(false);
      const value = next.value as ImportPage;
      anchors.push(...value.objects.map((o) => o.anchor));
      errors.push(...value.errors);
      return value;
    };
    let p = await page();
    expect(p.cursor).toBeTruthy();
    // Longer than 389 DS's nsslapd-ioblocktimeout (10 s): the server closes the parked search's connection.
    await new Promise((r) => setTimeout(r, 12_000));
    while (p.cursor) p = await page(p.cursor);
    expect(errors).toEqual([]);
    expect(anchors.every((a) => /^[0-9a-f]{8}-[0-9a-f]{8}-[0-9a-f]{8}-[0-9a-f]{8}$/.test(a))).toBe(true);
    expect(anchors).toHaveLength(N);
    expect(new Set(anchors).size).toBe(N);
  });

  test('the engine holding the import between two pages for 12 s (not returned, not parked): it goes on, every entry once', async () => {
    const anchors: string[] = [];
    const errors: unknown[] = [];
    let pages = 0;
    for await (const page of connector().fullImport({ pageSize: 1000 })) {
      anchors.push(...page.objects.map((o) => o.anchor));
      errors.push(...page.errors);
      // The consumer plans and writes the first page for longer than 389 DS's ioblocktimeout.
      if (++pages === 1) await new Promise((r) => setTimeout(r, 12_000));
    }
    expect(errors).toEqual([]);
    expect(anchors).toHaveLength(N);
    expect(new Set(anchors).size).toBe(N);
  });
});
