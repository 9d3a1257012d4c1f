import type { ServiceStep } from '../core/service';
import { startAuth, stopAuth } from './authService';

/** Authentication starts with the app and refuses a bad configuration (listed in SERVICE_STEPS, lib/api/serviceSteps.ts). */
export const authenticationStep: ServiceStep = {
  name: 'authentication',
  start: async () => {
    await startAuth();
  },
  stop: stopAuth,
};
