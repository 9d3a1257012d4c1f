import { startService, stopService } from '../../../lib/core/service';
import { SERVICE_STEPS } from '../../../lib/api/serviceSteps';

/** Start-up steps (lib/core/service.ts): they start in the order listed and stop in reverse. */

test('steps start in the order given and stop in reverse', async () => {
  const log: string[] = [];
  const step = (name: string) => ({ name, start: async () => void log.push(`start ${name}`), stop: async () => void log.push(`stop ${name}`) });
  await startService([step('a'), step('b'), step('c')]);
  await stopService();
  expect(log).toEqual(['start a', 'start b', 'start c', 'stop c', 'stop b', 'stop a']);
});

test('a step that throws stops the start; the steps already started are stopped', async () => {
  const log: string[] = [];
  const failing = {
    name: 'bad',
    start: async () => {
      throw new Error('Setting X is wrong');
    },
  };
  await expect(
    startService([{ name: 'ok', start: async () => void log.push('start ok'), stop: async () => void log.push('stop ok') }, failing]),
  ).rejects.toThrow('Setting X is wrong');
  await stopService();
  expect(log).toEqual(['start ok', 'stop ok']);
});

test("the service's list: telemetry first (it stops last, sending the spans of the others' stops), settings checks next, the join index preload before the mesh read model, then the feed's trim (it stops first, writing its hold from the read model)", () => {
  const names = SERVICE_STEPS.map((s) => s.name);
  expect(names).toEqual([
    'telemetry',
    'secrets',
    'license',
    'fileRoots',
    'schedules',
    'exportSettings',
    'engineClock',
    'planSettings',
    'secretAttributes',
    'meshHistoryPurge',
    'meshTombstonePurge',
    'authentication',
    'engine-instance',
    'pendingOperations',
    'joinIndexPreload',
    'meshReadModel',
    'meshFeedTrim',
  ]);
  expect(new Set(names).size).toBe(names.length);
});
