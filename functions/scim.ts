import { app } from '@azure/functions';
import { scimEndpoint } from '../lib/scim/endpoint';
import { noSettle } from '../lib/scim/push';

/**
 * The SCIM 2.0 endpoint (docs/scim.md) at `/api/scim/v2/...`: one registration per method over one catch-all
 * route, routed inside by lib/scim. Not part of the Admin API route catalog: it speaks SCIM (RFC 7644), with
 * its own role value and error bodies.
 */
const handler = scimEndpoint(noSettle);

app.http('scimGet', { route: 'scim/v2/{*path}', methods: ['GET'], authLevel: 'anonymous', handler });
app.http('scimPost', { route: 'scim/v2/{*path}', methods: ['POST'], authLevel: 'anonymous', handler });
app.http('scimPut', { route: 'scim/v2/{*path}', methods: ['PUT'], authLevel: 'anonymous', handler });
app.http('scimPatch', { route: 'scim/v2/{*path}', methods: ['PATCH'], authLevel: 'anonymous', handler });
app.http('scimDelete', { route: 'scim/v2/{*path}', methods: ['DELETE'], authLevel: 'anonymous', handler });
