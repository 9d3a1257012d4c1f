import { createDurableExtension } from '../../../lib/runtime/durable';
import { FunctionRegistry } from '../../../lib/runtime/registry';
import { enforceSupportedBindings, unsupportedBindings } from '../../../lib/runtime/support';
import { createStorageExtension } from '../../../lib/runtime/storage';
import { createTimerExtension } from '../../../lib/runtime/timers';

function registry(): FunctionRegistry {
  const r = new FunctionRegistry();
  const fn = () => undefined;
  r.registerFunction(
    {
      name: 'api',
      bindings: {
        req: { type: 'httpTrigger', direction: 'in' },
        $return: { type: 'http', direction: 'out' },
        client: { type: 'durableClient', direction: 'in' },
      },
    },
    fn,
  );
  r.registerFunction({ name: 'tick', bindings: { t: { type: 'timerTrigger', direction: 'in' } } }, fn);
  r.registerFunction({ name: 'run', bindings: { c: { type: 'orchestrationTrigger', direction: 'in' } } }, fn);
  r.registerFunction({ name: 'step', bindings: { a: { type: 'activityTrigger', direction: 'in' }, out: { type: 'blob', direction: 'out' } } }, fn);
  r.registerFunction({ name: 'counter', bindings: { e: { type: 'entityTrigger', direction: 'in' } } }, fn);
  r.registerFunction({ name: 'events', bindings: { h: { type: 'eventHubTrigger', direction: 'in' }, doc: { type: 'cosmosDB', direction: 'in' } } }, fn);
  r.registerFunction({ name: 'notify', bindings: { q: { type: 'queueTrigger', direction: 'in' }, $return: { type: 'serviceBus', direction: 'out' } } }, fn);
  return r;
}

const extensions = () => [createDurableExtension(), createTimerExtension(), createStorageExtension({})];

describe('bindings the runtime runs, and the refusal of the others', () => {
  it('finds every binding no extension runs: durable entities, Event Hubs, Cosmos DB, Service Bus', () => {
    expect(unsupportedBindings(registry(), extensions())).toEqual([
      { functionName: 'counter', bindingName: 'e', type: 'entityTrigger', role: 'trigger' },
      { functionName: 'events', bindingName: 'h', type: 'eventHubTrigger', role: 'trigger' },
      { functionName: 'events', bindingName: 'doc', type: 'cosmosDB', role: 'input' },
      { functionName: 'notify', bindingName: '$return', type: 'serviceBus', role: 'output' },
    ]);
  });

  it('refuses to start, naming each function and binding and the setting that skips them', () => {
    expect(() => enforceSupportedBindings(registry(), extensions(), {}, () => undefined)).toThrow(
      [
        'The app declares bindings this runtime cannot run:',
        "  - function 'counter' uses the entityTrigger trigger binding 'e', which this runtime does not support.",
        "  - function 'events' uses the eventHubTrigger trigger binding 'h', which this runtime does not support.",
        "  - function 'events' uses the cosmosDB input binding 'doc', which this runtime does not support.",
        "  - function 'notify' uses the serviceBus return binding '$return', which this runtime does not support.",
        'Run the app on the Functions host, remove those functions, or set Runtime__SkipUnsupportedFunctions=true to start without them.',
      ].join('\n'),
    );
  });

  it('with Runtime__SkipUnsupportedFunctions=true removes those functions, one warning each', () => {
    const r = registry();
    const warnings: string[] = [];
    enforceSupportedBindings(r, extensions(), { Runtime__SkipUnsupportedFunctions: 'true' }, (m) => warnings.push(m));
    expect([...r.functions.keys()].sort()).toEqual(['api', 'run', 'step', 'tick']);
    expect(warnings).toEqual([
      "Skipped function 'counter' (Runtime__SkipUnsupportedFunctions=true): this runtime does not support its binding entityTrigger 'e'. It will not run.",
      "Skipped function 'events' (Runtime__SkipUnsupportedFunctions=true): this runtime does not support its bindings eventHubTrigger 'h', cosmosDB 'doc'. It will not run.",
      "Skipped function 'notify' (Runtime__SkipUnsupportedFunctions=true): this runtime does not support its binding serviceBus '$return'. It will not run.",
    ]);
  });
});
