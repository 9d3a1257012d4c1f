import { closeSteps, plannedSteps, sequenceStatus, stepStatus, stopsSequence } from '../../../lib/schedules/status';
import type { ScheduleRunStep } from '../../../lib/storage/schedules';

const entry = (status: string, runId: string | null = 'r') => ({ connectorId: 'c', runId, status });
const step = (...statuses: string[]): ScheduleRunStep => {
  const runs = statuses.map((s) => entry(s, s === 'NotStarted' || s === 'NotRun' ? null : 'r'));
  return { runType: 'FullImport', runs, status: stepStatus(runs) };
};

describe('schedule runs: statuses fold into steps and the sequence', () => {
  it('a step waits while any run is not over; Queued when all its waiting runs are Queued', () => {
    expect(stepStatus([entry('Completed'), entry('Running')])).toBe('Running');
    expect(stepStatus([entry('Completed'), entry('Queued')])).toBe('Queued');
    expect(stepStatus([entry('Queued'), entry('Running')])).toBe('Running');
    expect(stepStatus([entry('Completed'), entry('AwaitingApproval')])).toBe('Running'); // approval holds the step
    expect(stepStatus([entry('NotStarted', null), entry('NotStarted', null)])).toBe('NotStarted');
  });

  it('a finished step: Failed over Cancelled over CompletedWithErrors over Completed', () => {
    expect(stepStatus([entry('Completed'), entry('Completed')])).toBe('Completed');
    expect(stepStatus([entry('Completed'), entry('CompletedWithErrors')])).toBe('CompletedWithErrors');
    expect(stepStatus([entry('Rejected'), entry('Completed')])).toBe('CompletedWithErrors');
    // A run waiting for approval holds its step.
    expect(stepStatus([entry('AwaitingApproval'), entry('Completed')])).toBe('Running');
    expect(stepStatus([entry('Cancelled'), entry('CompletedWithErrors')])).toBe('Cancelled');
    expect(stepStatus([entry('Failed', null), entry('Cancelled')])).toBe('Failed'); // could not start: Failed
  });

  it('stopOnFailure: a Failed run stops the sequence, which ends Failed; later steps are NotRun', () => {
    const s1 = step('Completed', 'Failed');
    expect(stopsSequence(s1, true)).toBe(true);
    expect(stopsSequence(s1, false)).toBe(false);
    const steps = closeSteps([s1, step('NotStarted')]);
    expect(steps.map((s) => s.status)).toEqual(['Failed', 'NotRun']);
    expect(steps[1].runs).toEqual([{ connectorId: 'c', runId: null, status: 'NotRun' }]);
    expect(sequenceStatus(steps, true)).toBe('Failed');
  });

  it('without stopOnFailure a Failed run makes the sequence CompletedWithErrors', () => {
    expect(sequenceStatus([step('Failed'), step('Completed')], false)).toBe('CompletedWithErrors');
    expect(sequenceStatus([step('Completed'), step('CompletedWithErrors')], true)).toBe('CompletedWithErrors');
    expect(sequenceStatus([step('Completed', 'Completed'), step('Completed')], true)).toBe('Completed');
    expect(sequenceStatus([step('Completed'), step('NotRun')], true, true)).toBe('Cancelled');
  });

  it('a new schedule run lists every step and connector, nothing started', () => {
    expect(
      plannedSteps({
        steps: [
          { runType: 'FullImport', connectorIds: ['a', 'b'] },
          { runType: 'Export', connectorIds: ['c'] },
        ],
      }),
    ).toEqual([
      {
        runType: 'FullImport',
        status: 'NotStarted',
        runs: [
          { connectorId: 'a', runId: null, status: 'NotStarted' },
          { connectorId: 'b', runId: null, status: 'NotStarted' },
        ],
      },
      { runType: 'Export', status: 'NotStarted', runs: [{ connectorId: 'c', runId: null, status: 'NotStarted' }] },
    ]);
  });
});
