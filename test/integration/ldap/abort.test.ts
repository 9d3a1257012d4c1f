import { ConnectorError, type ImportPage } from '../../../lib/connectors/sdk';
import { closeParkedSearches } from '../../../lib/connectors/ldap';
import { PEOPLE } from '../../support/connectorContract';
import { describeWithServer } from '../../support/servers';
import { startSlapd, type Slapd } from '../../support/slapd';
import { SlapdFixture } from './ldapFixture';

/**
 * The directory connector's answer to an abort with a search in flight, on a real slapd that stops answering
 * (the process stopped with SIGSTOP in the middle of a paged search): the import fails with `aborted` at once
 * instead of waiting for the directory (or for timeoutSeconds, here far beyond the test).
 */
jest.setTimeout(120_000);

describeWithServer('slapd')('directory connector abort (slapd)', () => {
  let slapd: Slapd;
  let f: SlapdFixture;
  beforeAll(async () => {
    slapd = await startSlapd();
    f = await new SlapdFixture(slapd).init();
    await f.seed(PEOPLE);
  });
  afterAll(async () => {
    await closeParkedSearches();
    await f?.cleanup();
    await slapd?.stop();
  });

  test('an abort while the full import waits for the next page of a directory that does not answer fails the import with aborted at once', async () => {
    // One entry per directory page: every engine page asks the directory for the next one.
    const c = f.connector({ pageSize: 1, timeoutSeconds: 600 });
    const controller = new AbortController();
    const it = c.fullImport({ pageSize: 1, signal: controller.signal })[Symbol.asyncIterator]();
    const first = await it.next();
    expect(first.done).toBe(false);
    expect((first.value as ImportPage).objects).toHaveLength(1);
    process.kill(slapd.pid, 'SIGSTOP');
    try {
      const next = it.next();
      const settled = next.then(
        () => 'resolved',
        () => 'rejected',
      );
      // The directory is stopped: the read waits (a turn of the event loop later it has not settled).
      expect(await Promise.race([settled, new Promise((r) => setImmediate(() => r('waiting')))])).toBe('waiting');
      const asked = Date.now();
      controller.abort();
      // Bounded, so that a read the abort does not end fails here and the directory is let go below.
      let bound: NodeJS.Timeout | undefined;
      const err = await Promise.race([
        next.then(
          () => 'resolved',
          (e: unknown) => e,
        ),
        new Promise((r) => (bound = setTimeout(() => r('still waiting after 5 s'), 5_000))),
      ]);
      clearTimeout(bound);
      expect(Date.now() - asked).toBeLessThan(2_000);
      expect(err).toBeInstanceOf(ConnectorError);
      expect((err as ConnectorError).code).toBe('aborted');
    } finally {
      process.kill(slapd.pid, 'SIGCONT');
    }
    await c.close();
    // The directory answers again and a new import reads everything.
    const all: string[] = [];
    for await (const page of f.connector().fullImport({ pageSize: 100 })) all.push(...page.objects.map((o) => o.anchor));
    expect(all).toHaveLength(PEOPLE.length);
  });
});
