import type { RuntimeExtension } from '../extension';

/**
 * The durable task hub extension (orchestrationTrigger, activityTrigger, entityTrigger, durableClient).
 * Placeholder until the task hub lands: it claims no trigger types.
 */
export function createDurableExtension(): RuntimeExtension {
  return {
    name: 'DurableTask',
    triggerTypes: [],
    async start() {},
    async stop() {},
  };
}
