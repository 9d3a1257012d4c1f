/** Start-up steps (lib/service.ts): their order, whatever order the modules that add them load in. */

test('steps start by `order`, then in registration order, and stop in reverse', async () => {
  await jest.isolateModulesAsync(async () => {
    const { addServiceStep, startService, stopService } = await import('../../lib/service');
    const log: string[] = [];
    const step = (name: string, order?: number) =>
      addServiceStep({ name, order, start: async () => void log.push(`start ${name}`), stop: async () => void log.push(`stop ${name}`) });
    step('late', 100);
    step('a');
    step('early', -1);
    step('b');
    await startService();
    await stopService();
    expect(log).toEqual(['start early', 'start a', 'start b', 'start late', 'stop late', 'stop b', 'stop a', 'stop early']);
  });
});

test("the mesh read model's step starts after the join index preload, even when its module loads first", async () => {
  await jest.isolateModulesAsync(async () => {
    await import('../../lib/mesh/readModel');
    await import('../../lib/sync/preload');
    const { plannedSteps } = await import('../../lib/service');
    const names = plannedSteps().map((s) => s.name);
    expect(names.indexOf('joinIndexPreload')).toBeGreaterThanOrEqual(0);
    expect(names.indexOf('joinIndexPreload')).toBeLessThan(names.indexOf('meshReadModel'));
  });
});
