import { app } from '@azure/functions';
import { startService, stopService } from '../lib/service';
import '../lib/auth/serviceStep';
import '../lib/api/serviceSteps';
import '../lib/instances/instances';
// The join index taps the read model's first scan of the mesh (the read model's step starts last).
import '../lib/sync/preload';
import '../lib/mesh/readModel';

// A failure here stops the start: the runtime prints the message (which names the setting at fault) and exits.
app.hook.appStart(async () => {
  await startService();
});

app.hook.appTerminate(async () => {
  await stopService();
});
