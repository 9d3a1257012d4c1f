import { app } from '@azure/functions';
import { authorize } from '../lib/auth/authorize';

/**
 * Asked by the local runtime (host.json `localRuntime.adminAuthorizationFunction`) before it serves one of
 * its own admin surfaces, such as the Durable Functions HTTP API: 204 lets the caller through, anything else
 * is sent back as is. So those surfaces are Admin-only, through the same authentication as the Admin API.
 */
async function authorizeRuntimeAdmin() {
  return { status: 204 };
}

app.http('authorizeRuntimeAdmin', {
  route: 'system/authorize-admin',
  methods: ['GET'],
  handler: authorize('runtime.admin', authorizeRuntimeAdmin),
});
