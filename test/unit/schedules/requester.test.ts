import { randomUUID } from 'node:crypto';
import type { Caller } from '../../../lib/auth/permissions';
import { versioned } from '../../../lib/config/record';
import { listVersionHeads } from '../../../lib/config/versions';
import { bearerPrincipal } from '../../../lib/core/principal';
import { tickRequester } from '../../../lib/schedules/requester';
import { recordScheduleApproval } from '../../../lib/storage/schedules';
import { useTestStorage } from '../instances/storageEnv';

/**
 * The requester of a schedule's tick (storage-backed): whoever changed the schedule, its connectors or their
 * rules (or a rule of no connector) since a run of it was last approved; nobody when no person changed anything.
 */
const person = (upn: string, oid: string): Caller => ({
  scheme: 'Bearer',
  name: upn,
  upn,
  sid: oid,
  roles: ['Admin'],
  principal: bearerPrincipal({ upn, oid }),
});
const alice = person('alice@x.test', 'oid-a');
const bob = person('bob@x.test', 'oid-b');
const carol = person('carol@x.test', 'oid-c');

async function change(caller: Caller | string, targetType: 'connector' | 'rule' | 'schedule', targetId: string, after: Record<string, unknown>): Promise<void> {
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  await versioned({ caller, targetType, targetId, action: 'update', before: null, after: after as any }, async () => undefined);
}

/** A run of the schedule approved as of the newest version written (the changes up to it were reviewed). */
async function approvedNow(scheduleId: string): Promise<void> {
  const [newest] = await listVersionHeads();
  await recordScheduleApproval(scheduleId, new Date(newest.timestamp));
}

describe('tickRequester', () => {
  beforeAll(() => useTestStorage());

  test('no change since the last approval: nobody; a change of the schedule, its connector or their rules: those people', async () => {
    const scheduleId = randomUUID();
    const hr = randomUUID();
    const other = randomUUID();
    const schedule = { scheduleId, steps: [{ runType: 'FullImport' as const, connectorIds: [hr] }] };
    await change(alice, 'connector', hr, { id: hr });
    await approvedNow(scheduleId);
    expect(await tickRequester(schedule)).toBeNull();

    // Changes of what it does not run, and the engine's own, make nobody its requester.
    await change(carol, 'connector', other, { id: other });
    await change(carol, 'rule', randomUUID(), { connectorId: other, ruleType: 'FlowRule' });
    await change('schedule:nightly', 'schedule', scheduleId, { scheduleId });
    expect(await tickRequester(schedule)).toBeNull();

    await change(bob, 'rule', randomUUID(), { connectorId: hr, ruleType: 'FlowRule' });
    expect(await tickRequester(schedule)).toMatchObject({ kind: 'person', display: 'bob@x.test', aliases: ['upn:bob@x.test', 'oid:oid-b'] });

    // A rule of no connector applies to every run; the newest change's author is named first, each one held.
    await change(alice, 'rule', randomUUID(), { connectorId: null, ruleType: 'CompositionRule' });
    const both = await tickRequester(schedule);
    expect(both).toMatchObject({ display: 'alice@x.test (and bob@x.test)' });
    expect(both!.aliases).toEqual(expect.arrayContaining(['upn:alice@x.test', 'upn:bob@x.test']));

    // Approved since: reviewed, nobody again.
    await approvedNow(scheduleId);
    expect(await tickRequester(schedule)).toBeNull();
    await change(carol, 'schedule', scheduleId, { scheduleId });
    expect(await tickRequester(schedule)).toMatchObject({ display: 'carol@x.test' });
  });
});
