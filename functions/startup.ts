import { app } from '@azure/functions';
import { SERVICE_STEPS } from '../lib/api/serviceSteps';
import { startService, stopService } from '../lib/core/service';

// A failure here stops the start: the runtime prints the message (which names the setting at fault) and exits.
app.hook.appStart(async () => {
  await startService(SERVICE_STEPS);
});

app.hook.appTerminate(async () => {
  await stopService();
});
