import { app, type InvocationContext } from '@azure/functions';
import * as df from 'durable-functions';
import type { Caller } from '../lib/auth/permissions';
import { scimEndpoint } from '../lib/scim/endpoint';
import { connectorPush } from '../lib/scim/push';
import { runOrchestrations } from '../orchestrations/runReconcile';
import { startRunOrchestration } from '../orchestrations/syncDispatcher';

/**
 * The SCIM 2.0 endpoint (docs/scim.md) at `/api/scim/v2/...`: one registration per method over one catch-all
 * route, routed inside by lib/scim. Not part of the Admin API route catalog: it speaks SCIM (RFC 7644), with
 * its own role value and error bodies. A push is imported by the `scim_inbound` connector's run before the
 * answer, through the durable client of the request.
 */
function pushHooks(caller: Caller, context: InvocationContext) {
  const client = df.getClient(context);
  return connectorPush({ start: (runId) => startRunOrchestration(client, runId), orchestrations: runOrchestrations(client) }, caller);
}

const handler = scimEndpoint(pushHooks);
const durable = [df.input.durableClient()];

app.http('scimGet', { route: 'scim/v2/{*path}', methods: ['GET'], authLevel: 'anonymous', extraInputs: durable, handler });
app.http('scimPost', { route: 'scim/v2/{*path}', methods: ['POST'], authLevel: 'anonymous', extraInputs: durable, handler });
app.http('scimPut', { route: 'scim/v2/{*path}', methods: ['PUT'], authLevel: 'anonymous', extraInputs: durable, handler });
app.http('scimPatch', { route: 'scim/v2/{*path}', methods: ['PATCH'], authLevel: 'anonymous', extraInputs: durable, handler });
app.http('scimDelete', { route: 'scim/v2/{*path}', methods: ['DELETE'], authLevel: 'anonymous', extraInputs: durable, handler });
