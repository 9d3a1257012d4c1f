import { AppError } from '../../../lib/core/errors';
import { ajv, registeredSchemas, validate } from '../../../lib/schemas';
import { CreateScheduleRequest } from '../../../lib/schemas/schedules';

const ID = '6f1c2a4e-0000-4000-8000-000000000001';
const valid = () => ({ name: 'Nightly', cron: '0 30 2 * * *', steps: [{ runType: 'FullImport', connectorIds: [ID] }] });

function pathsOf(body: unknown): string[] {
  try {
    validate(CreateScheduleRequest, body);
  } catch (err) {
    expect(err).toBeInstanceOf(AppError);
    return ((err as AppError).extra.errors ?? []).map((e) => e.path);
  }
  return [];
}

describe('schedule request schema', () => {
  it('is registered with the schedule and schedule-run responses', () => {
    for (const id of ['CreateScheduleRequest', 'UpdateScheduleRequest', 'Schedule', 'ScheduleList', 'ScheduleRun', 'ScheduleRunList']) {
      expect(registeredSchemas().has(id)).toBe(true);
      expect(ajv.getSchema(id)).toBeDefined();
    }
  });

  it('accepts the minimal body and fills the defaults', () => {
    const body = valid();
    expect(pathsOf(body)).toEqual([]);
    expect(body).toMatchObject({ timeZone: 'UTC', isEnabled: true, stopOnFailure: true });
  });

  it('names every invalid field, unknown properties included', () => {
    expect(pathsOf({ ...valid(), extra: 1 })).toEqual(['/extra']);
    expect(pathsOf({ ...valid(), cron: '' })).toEqual(['/cron']);
    expect(pathsOf({ ...valid(), timeZone: 5 })).toEqual(['/timeZone']);
    expect(pathsOf({ ...valid(), isEnabled: 'yes', stopOnFailure: null })).toEqual(['/isEnabled', '/stopOnFailure']);
    expect(pathsOf({ ...valid(), steps: [] })).toEqual(['/steps']);
    expect(pathsOf({ ...valid(), steps: [{ runType: 'Nap', connectorIds: [ID, ID] }] })).toEqual(['/steps/0/runType', '/steps/0/connectorIds']);
    expect(pathsOf({ ...valid(), steps: [{ runType: 'Export', connectorIds: [ID], when: 'now' }] })).toEqual(['/steps/0/when']);
    const { name: _name, ...noName } = valid();
    expect(pathsOf(noName)).toEqual(['/name']);
  });
});
