/**
 * Start and stop of the service's own background parts (configuration check, OIDC metadata, the embedded
 * development issuer, engine instance registration and heartbeat...). Run from the app's `appStart` and
 * `appTerminate` hooks (functions/startup.ts), so they work the same under the local runtime and the real
 * Functions host. Each area exports its step; SERVICE_STEPS (lib/api/serviceSteps.ts) lists them all, in the order they start,
 * and they stop in reverse order. Nothing registers a step by being imported.
 */
export interface ServiceStep {
  name: string;
  start(): Promise<void>;
  stop?(): Promise<void>;
}

const started: ServiceStep[] = [];

/** Start `steps` one after the other, in the order given; a step that throws stops the start. */
export async function startService(steps: readonly ServiceStep[]): Promise<void> {
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
