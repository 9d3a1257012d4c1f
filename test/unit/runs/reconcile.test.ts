import {
  COMPLETED_GRACE_MS,
  UNDISPATCHED_GRACE_MS,
  readsRunHub,
  reconcileDecision,
  type OrchestrationState,
  type ReconcileFacts,
} from '../../../lib/runs/runs';

/**
 * The rules that decide whether an active run is over, from its orchestration's state (pure logic; the
 * storage and HTTP paths are tested in test/integration/sync/runReconcile.test.ts).
 */
const now = new Date('2026-11-21T10:15:30.123Z');
const ago = (ms: number) => new Date(now.getTime() - ms).toISOString();
const dispatched = { dispatchedAt: ago(5_000), taskHub: 'hubA' };

function facts(over: Partial<ReconcileFacts> & { state?: OrchestrationState | null } = {}): ReconcileFacts {
  const { state, ...rest } = over;
  return {
    run: { status: 'Running', startedAt: ago(10_000), dispatch: dispatched },
    orchestration: state === undefined ? { runtimeStatus: 'Running' } : state,
    waitingForDispatch: false,
    now,
    ...rest,
  };
}

describe('reconcileDecision', () => {
  test.each(['Pending', 'Running', 'ContinuedAsNew', 'Suspended', 'SomethingNew'])('an orchestration %s is not over', (runtimeStatus) => {
    expect(reconcileDecision(facts({ state: { runtimeStatus } }))).toBeNull();
  });

  test('terminated: Cancelled, with the reason on one bounded line', () => {
    expect(reconcileDecision(facts({ state: { runtimeStatus: 'Terminated', output: 'stuck\non the share' } }))).toEqual({
      status: 'Cancelled',
      action: 'cancel',
      error: 'The run was cancelled: its orchestration was terminated outside the engine (reason: stuck on the share).',
    });
    expect(reconcileDecision(facts({ state: { runtimeStatus: 'Canceled', output: null } }))?.error).toBe(
      'The run was cancelled: its orchestration was terminated outside the engine.',
    );
    const long = reconcileDecision(facts({ state: { runtimeStatus: 'Terminated', output: 'x'.repeat(5000) } }))!;
    expect(long.error.length).toBeLessThan(300);
  });

  test('failed: Failed, without quoting the orchestration output', () => {
    const d = reconcileDecision(facts({ state: { runtimeStatus: 'Failed', output: "Orchestrator function 'syncRun' failed: /etc/secret at line 3" } }))!;
    expect(d).toMatchObject({ status: 'Failed', action: 'fail' });
    expect(d.error).not.toMatch(/syncRun|etc/);
  });

  test('completed while the run is active: a finishing run within the grace, Failed after it', () => {
    expect(reconcileDecision(facts({ state: { runtimeStatus: 'Completed', lastUpdatedTime: new Date(now.getTime() - 200) } }))).toBeNull();
    expect(reconcileDecision(facts({ state: { runtimeStatus: 'Completed' } }))).toBeNull();
    expect(reconcileDecision(facts({ state: { runtimeStatus: 'Completed', lastUpdatedTime: ago(COMPLETED_GRACE_MS) } }))).toMatchObject({ status: 'Failed' });
  });

  test('gone after it was dispatched (purged): Failed at once', () => {
    expect(reconcileDecision(facts({ state: null }))).toMatchObject({ status: 'Failed', action: 'fail', error: expect.stringMatching(/purged/) });
  });

  test('no orchestration yet: not gone while a dispatch row waits (paused instance, another instance), however old', () => {
    expect(reconcileDecision(facts({ state: null, waitingForDispatch: true, run: { status: 'Queued', startedAt: ago(86_400_000) } }))).toBeNull();
    expect(
      reconcileDecision(facts({ state: null, waitingForDispatch: true, run: { status: 'Running', startedAt: ago(86_400_000), dispatch: dispatched } })),
    ).toBeNull();
  });

  test('never dispatched and no dispatch row: a trigger in flight within the grace, gone after it', () => {
    expect(reconcileDecision(facts({ state: null, run: { status: 'Running', startedAt: ago(UNDISPATCHED_GRACE_MS - 1) } }))).toBeNull();
    expect(reconcileDecision(facts({ state: null, run: { status: 'Queued', startedAt: ago(UNDISPATCHED_GRACE_MS) } }))).toMatchObject({
      status: 'Failed',
      error: expect.stringMatching(/never started/),
    });
  });

  test.each(['Completed', 'CompletedWithErrors', 'Failed', 'Rejected', 'Cancelled', 'AwaitingApproval'] as const)('a %s run is never changed', (status) => {
    for (const state of [null, { runtimeStatus: 'Terminated' }, { runtimeStatus: 'Failed' }]) {
      expect(reconcileDecision(facts({ state, run: { status, startedAt: ago(86_400_000) } }))).toBeNull();
    }
  });
});

describe('readsRunHub', () => {
  test('the task hub recorded at dispatch decides (any case)', () => {
    expect(readsRunHub({ instanceId: 'other', dispatch: { dispatchedAt: ago(1), taskHub: 'HubA' } }, { taskHub: 'huba' }, 'here')).toBe(true);
    expect(readsRunHub({ instanceId: 'here', dispatch: { dispatchedAt: ago(1), taskHub: 'hubB' } }, { taskHub: 'hubA' }, 'here')).toBe(false);
  });

  test("without one, only the runs of this process's engine instance", () => {
    expect(readsRunHub({ instanceId: 'here' }, { taskHub: 'hubA' }, 'here')).toBe(true);
    expect(readsRunHub({ instanceId: 'here', dispatch: { dispatchedAt: ago(1), taskHub: null } }, { taskHub: 'hubA' }, 'here')).toBe(true);
    expect(readsRunHub({ instanceId: 'other' }, { taskHub: 'hubA' }, 'here')).toBe(false);
    expect(readsRunHub({ instanceId: null }, { taskHub: 'hubA' }, 'here')).toBe(false);
  });
});
