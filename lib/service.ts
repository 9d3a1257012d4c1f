/**
 * Start and stop of the service's own background parts (configuration check, OIDC metadata, the embedded
 * development issuer, engine instance registration and heartbeat...). Run from the app's `appStart` and
 * `appTerminate` hooks (functions/startup.ts), so they work the same under the local runtime and the real
 * Functions host. Each area adds one step; steps start in order of `order`, then of registration (which
 * follows module load order, so a step that must come after others says so), and stop in reverse order.
 */
export interface ServiceStep {
  name: string;
  /** Lower starts first (default 0). */
  order?: number;
  start(): Promise<void>;
  stop?(): Promise<void>;
}

const steps: ServiceStep[] = [];
const started: ServiceStep[] = [];

export function addServiceStep(step: ServiceStep): void {
  steps.push(step);
}

/** The steps in the order they start. */
export function plannedSteps(): ServiceStep[] {
  return steps
    .map((step, i) => ({ step, i }))
    .sort((a, b) => (a.step.order ?? 0) - (b.step.order ?? 0) || a.i - b.i)
    .map(({ step }) => step);
}

export async function startService(): Promise<void> {
  for (const step of plannedSteps()) {
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
