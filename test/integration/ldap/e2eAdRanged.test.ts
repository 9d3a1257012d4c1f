import { Attribute, Change } from 'ldapts';
import { closeParkedSearches } from '../../../lib/connectors/ldap';
import { LdapConnector } from '../../../lib/connectors/ldap/ldapConnector';
import * as sessionModule from '../../../lib/connectors/ldap/session';
import type { DirectorySession, LdapEntry, SearchRequest } from '../../../lib/connectors/ldap/session';
import type { ConnectorObject, DeltaChange } from '../../../lib/connectors/sdk';
import { describeWithServer } from '../../support/servers';
import { SAMBA_START_TIMEOUT_MS, startSambaAd, type SambaAd } from '../../support/samba';
import { startService, type ServiceUnderTest } from '../../support/service';
import { rule, runImport, valueOf } from '../sync/syncSupport';
import { idsOf, meshOf, targets } from './e2eSupport';

/**
 * Active Directory ranged retrieval (`member;range=`) against a real DC (Samba AD). Samba never truncates an
 * attribute by itself (it has no MaxValRange), but answers a search that names a slice, `member;range=0-999`,
 * with that slice, and with `member;range=N-*` once the slice reaches the last value: the connector asks for
 * slices of `memberRangeSize` values itself, as it does on Windows. Groups of 2,500 members (three reads),
 * exactly 2,000 (two reads, the second answering `1000-*`) and exactly 1,000 (one read answering `0-*`), read by
 * the connector alone (every request and the ranges the DC answered recorded), then over HTTP through the
 * service: a full import with paged results, a USN delta and a DirSync delta of changed groups, the mesh's
 * `member` relationships compared with the DC's values.
 */
jest.setTimeout(600_000);

const SIZE = 1000;
const USERS = 2600;

describeWithServer('samba')('Active Directory ranged retrieval of member (Samba AD DC, memberRangeSize 1000)', () => {
  let dc: SambaAd;
  let rt: ServiceUnderTest;
  let top: string;
  let people: string;
  let groups: string;
  const sam = (i: number) => `r${String(i).padStart(5, '0')}`;
  const userDn = (i: number) => `CN=${sam(i)},${people}`;
  const range = (from: number, to: number) => Array.from({ length: to - from }, (_, i) => from + i);
  const groupDn = (cn: string) => `CN=${cn},${groups}`;
  /** The members each group has in the DC (user numbers), kept in step with the changes the tests make. */
  const members = new Map<string, Set<number>>();

  const connectorConfig = () => ({
    ...dc.connection,
    containers: { include: [top] },
    memberRangeSize: SIZE,
    // Directory pages of 700 entries: the groups' reads happen between the pages of the paged search.
    pageSize: 700,
  });
  const change = (operation: 'add' | 'delete', users: number[]) =>
    new Change({ operation, modification: new Attribute({ type: 'member', values: users.map(userDn) }) });
  async function changeMembers(cn: string, add: number[], remove: number[]): Promise<void> {
    const changes = [...(remove.length ? [change('delete', remove)] : []), ...(add.length ? [change('add', add)] : [])];
    await dc.ldap((c) => c.modify(groupDn(cn), changes));
    const set = members.get(cn)!;
    for (const i of remove) set.delete(i);
    for (const i of add) set.add(i);
  }
  /** The DC's own member values of a group, read whole (Samba answers a plain `member` whole). */
  const dcMembers = (cn: string) =>
    dc.ldap(async (c) => {
      const { searchEntries } = await c.search(groupDn(cn), { scope: 'base', attributes: ['member'] });
      const v = searchEntries[0]?.member ?? [];
      return (Array.isArray(v) ? v : [v]).map(String);
    });

  beforeAll(async () => {
    dc = await startSambaAd();
    top = await dc.addOU(`OU=Ranged,${dc.baseDN}`);
    people = await dc.addOU(`OU=People,${top}`);
    groups = await dc.addOU(`OU=Groups,${top}`);
    members.set('big', new Set(range(0, 2500)));
    members.set('even', new Set(range(0, 2000)));
    members.set('one', new Set(range(0, 1000)));
    members.set('small', new Set([2597, 2598, 2599]));
    await dc.samLoad({
      users: range(0, USERS).map((i) => ({ dn: userDn(i), sAMAccountName: sam(i) })),
      groups: [...members].map(([cn, set]) => ({ dn: groupDn(cn), sAMAccountName: cn, members: [...set].map(userDn) })),
    });
    for (const [cn, set] of members) expect((await dcMembers(cn)).length).toBe(set.size);
  }, SAMBA_START_TIMEOUT_MS);
  afterAll(async () => {
    await rt?.dispose();
    await closeParkedSearches();
    await dc?.release();
  });

  /**
   * The connector's sessions, recorded: each search a session sends to the DC and the names of the ranged
   * attributes the DC answered with (the DC itself answers; nothing is replayed).
   */
  function recordSessions(): { log: Array<{ req: SearchRequest; answered: Array<{ dn: string; keys: string[] }> }>; restore: () => void } {
    const log: Array<{ req: SearchRequest; answered: Array<{ dn: string; keys: string[] }> }> = [];
    // ldapts also lists each attribute asked for and not answered, with no values: only the slices the DC sent.
    const ranged = (entries: LdapEntry[]) =>
      entries
        .map((e) => ({ dn: e.dn, keys: Object.keys(e).filter((k) => /;range=/i.test(k) && !(Array.isArray(e[k]) && e[k].length === 0)) }))
        .filter((x) => x.keys.length);
    const real = sessionModule.openSession;
    const spy = jest.spyOn(sessionModule, 'openSession').mockImplementation(async (...args: Parameters<typeof real>): Promise<DirectorySession> => {
      const s = await real(...args);
      return Object.assign(Object.create(s) as DirectorySession, {
        search: async (req: SearchRequest) => {
          const entries = await s.search(req);
          log.push({ req, answered: ranged(entries) });
          return entries;
        },
        searchPages: async function* (req: SearchRequest, pageSize: number) {
          for await (const page of s.searchPages(req, pageSize)) {
            log.push({ req, answered: ranged(page) });
            yield page;
          }
        },
        close: () => s.close(),
      });
    });
    return { log, restore: () => spy.mockRestore() };
  }
  /** For one group: the ranges the DC answered, in order (the paged search's, then each follow-up's). */
  const answeredFor = (log: ReturnType<typeof recordSessions>['log'], cn: string) =>
    log.flatMap((x) => x.answered.filter((a) => a.dn.toLowerCase() === groupDn(cn).toLowerCase()).flatMap((a) => a.keys));
  const followUpsFor = (log: ReturnType<typeof recordSessions>['log'], cn: string) =>
    log.filter((x) => x.req.scope === 'base' && x.req.base.toLowerCase() === groupDn(cn).toLowerCase()).map((x) => x.req.attributes);
  const memberValues = (o: ConnectorObject | undefined) => ((o?.attributes.member as string[] | undefined) ?? []).map((dn) => dn.toLowerCase()).sort();
  const expectedValues = (cn: string) => [...members.get(cn)!].map((i) => userDn(i).toLowerCase()).sort();

  test('the connector alone, full import: slices of 1,000 the DC answers, follow-ups until a range ends in *, every value', async () => {
    const rec = recordSessions();
    const objects = new Map<string, ConnectorObject>();
    try {
      const c = new LdapConnector('active_directory', connectorConfig());
      for await (const page of c.fullImport({ pageSize: 500 })) {
        expect(page.errors).toEqual([]);
        for (const o of page.objects) objects.set(String(o.attributes.sAMAccountName), o);
      }
      await c.close();
    } finally {
      rec.restore();
    }
    expect(objects.size).toBe(USERS + 4);
    // The paged search asked for the first slice; the DC answered it, and the rest was read slice by slice.
    const paged = rec.log.filter((x) => x.req.scope === 'sub' && x.req.base === top);
    expect(paged.length).toBeGreaterThan(3);
    expect(paged[0].req.attributes).toContain('member;range=0-999');
    expect(answeredFor(rec.log, 'big')).toEqual(['member;range=0-999', 'member;range=1000-1999', 'member;range=2000-*']);
    expect(followUpsFor(rec.log, 'big')).toEqual([['member;range=1000-1999'], ['member;range=2000-2999']]);
    // Exactly two slices: the second read answers `1000-*` (the slice reaches the last value).
    expect(answeredFor(rec.log, 'even')).toEqual(['member;range=0-999', 'member;range=1000-*']);
    expect(followUpsFor(rec.log, 'even')).toEqual([['member;range=1000-1999']]);
    // Exactly one slice: one read, answered `0-*`.
    expect(answeredFor(rec.log, 'one')).toEqual(['member;range=0-*']);
    expect(followUpsFor(rec.log, 'one')).toEqual([]);
    expect(answeredFor(rec.log, 'small')).toEqual(['member;range=0-*']);
    for (const cn of members.keys()) {
      expect(memberValues(objects.get(cn))).toEqual(expectedValues(cn));
      expect(objects.get(cn)!.references!.member).toHaveLength(members.get(cn)!.size);
      expect(Object.keys(objects.get(cn)!.attributes).filter((k) => /^member/i.test(k))).toEqual(['member']);
    }
    // What the DC holds, read whole, is what the slices gave.
    expect(memberValues(objects.get('big'))).toEqual((await dcMembers('big')).map((dn) => dn.toLowerCase()).sort());
    // A user is asked for the slice too, and the DC answers no member for it.
    expect(objects.get(sam(0))!.attributes.member).toBeUndefined();
  });

  test('the connector alone, USN and DirSync deltas: a changed group is read again slice by slice', async () => {
    for (const strategy of ['usn', 'dirsync'] as const) {
      const c = new LdapConnector('active_directory', { ...connectorConfig(), deltaStrategy: strategy });
      let w: string | null | undefined;
      for await (const p of c.fullImport({ pageSize: 5000 })) if (p.watermark !== undefined) w = p.watermark;
      expect(w).toContain(`"s":"${strategy}"`);
      await changeMembers('big', [2500, 2501], [2499]);
      const rec = recordSessions();
      const changes: DeltaChange[] = [];
      try {
        for await (const p of c.deltaImport(w!, { pageSize: 1000 })) {
          expect(p.fullImportRequired).toBeUndefined();
          expect(p.errors).toEqual([]);
          changes.push(...p.changes);
        }
      } finally {
        rec.restore();
        await c.close();
      }
      const big = changes.find((x) => x.object?.attributes.sAMAccountName === 'big');
      expect(big).toMatchObject({ kind: 'update' });
      expect(memberValues(big!.object)).toEqual(expectedValues('big'));
      expect(answeredFor(rec.log, 'big')).toEqual(['member;range=0-999', 'member;range=1000-1999', 'member;range=2000-*']);
      // Put back for the next round and the tests below.
      await changeMembers('big', [2499], [2500, 2501]);
    }
  });

  test('over HTTP through the service: a full import with paged results, then USN and DirSync deltas of changed groups; the mesh member relationships are the DC values', async () => {
    rt = await startService();
    const res = await rt.call('POST', 'connectors', {
      body: {
        name: 'AD ranged',
        type: 'active_directory',
        config: { ...connectorConfig(), deltaStrategy: 'usn', deletionThreshold: { objects: 10, percent: 100 } },
      },
    });
    expect(res.status).toBe(201);
    const id = res.body.id as string;
    await rule(rt, {
      ruleType: 'ProjectionRule',
      connectorId: id,
      sourceAttribute: 'sAMAccountName',
      objectType: 'User',
      priority: 10,
      transformScript: '!object.objectClass.includes("group")',
    });
    await rule(rt, {
      ruleType: 'ProjectionRule',
      connectorId: id,
      sourceAttribute: 'sAMAccountName',
      objectType: 'Group',
      priority: 20,
      transformScript: 'object.objectClass.includes("group")',
    });
    for (const a of ['dn', 'sAMAccountName']) await rule(rt, { ruleType: 'FlowRule', connectorId: id, sourceAttribute: a, targetAttribute: a, confidence: 50 });

    /** Every group's member relationships in the mesh against the members the DC has. */
    const check = async () => {
      const mesh = await meshOf(id);
      expect(mesh.size).toBe(USERS + 4);
      for (const [cn, set] of members) {
        expect(mesh.get(cn)!.objectType).toBe('Group');
        expect(targets(mesh.get(cn), 'member')).toEqual(idsOf(mesh, [...set].map(sam)));
        expect((await dcMembers(cn)).length).toBe(set.size);
      }
      return mesh;
    };

    const full = await runImport(rt, id);
    expect(full.errors ?? []).toEqual([]);
    expect(full).toMatchObject({ status: 'Completed', runType: 'FullImport', stats: { objectsCreated: USERS + 4, errors: 0 } });
    const mesh = await check();
    expect(valueOf(mesh.get('big'), 'dn')).toBe(groupDn('big'));

    // USN delta: 'big' loses ten members and gains the hundred users no group had; 'one' grows past its slice
    // (1,001: two reads); 'even' loses its last slice's first member (1,999).
    await changeMembers('big', range(2500, 2600), range(0, 10));
    await changeMembers('one', [1000], []);
    await changeMembers('even', [], [1000]);
    const usn = await runImport(rt, id, { runType: 'DeltaImport' });
    expect(usn.errors ?? []).toEqual([]);
    expect(usn).toMatchObject({ status: 'Completed', runType: 'DeltaImport', stats: { objectsUpdated: 3, objectsCreated: 0, objectsDeleted: 0, errors: 0 } });
    await check();

    // The same connector read with DirSync: a full import sets its cookie, then a DirSync delta.
    const current = (await rt.call('GET', `connectors/${id}`)).body;
    const put = await rt.call('PUT', `connectors/${id}`, { body: { name: current.name, config: { ...current.config, deltaStrategy: 'dirsync' } } });
    expect(put.status).toBe(200);
    expect(await runImport(rt, id)).toMatchObject({ status: 'Completed', stats: { objectsCreated: 0, objectsDeleted: 0, errors: 0 } });
    await changeMembers('big', range(0, 10), range(2590, 2600));
    await changeMembers('even', [1000, 2000], []);
    const dirsync = await runImport(rt, id, { runType: 'DeltaImport' });
    expect(dirsync.errors ?? []).toEqual([]);
    expect(dirsync).toMatchObject({
      status: 'Completed',
      runType: 'DeltaImport',
      stats: { objectsUpdated: 2, objectsCreated: 0, objectsDeleted: 0, errors: 0 },
    });
    expect(members.get('big')!.size).toBe(2590);
    expect(members.get('even')!.size).toBe(2001);
    await check();
  });
});
