/**
 * Start and stop of the service's own background parts (configuration check, OIDC metadata, the embedded
 * development issuer, engine instance registration and heartbeat...). Run from the app's `appStart` and
 * `appTerminate` hooks (functions/startup.ts), so they work the same under the local runtime and the real
 * Functions host. Each area adds one step; steps start in order and stop in reverse order.
 */
export interface ServiceStep {
  name: string;
  start(): Promise<void>;
  stop?(): Promise<void>;
}

const steps: ServiceStep[] = [];
const started: ServiceStep[] = [];

export function addServiceStep(step: ServiceStep): void {
  steps.push(step);
}

export async function startService(): Promise<void> {
  for (const step of steps) {
    await step.start();
    started.push(step);
  }
}

export async function stopService(): Promise<void> {
  while (started.length) {
    const step = started.pop()!;
    await step.stop?.();
  }
}
