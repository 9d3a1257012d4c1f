import { addServiceStep } from '../service';
import { startAuth, stopAuth } from './authService';

// Imported once by functions/startup.ts: authentication starts with the app and refuses a bad configuration.
addServiceStep({
  name: 'authentication',
  start: async () => {
    await startAuth();
  },
  stop: stopAuth,
});
