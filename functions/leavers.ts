import { app, type HttpRequest, type HttpResponseInit } from '@azure/functions';
import { LEAVERS_QUERY, listLeavers } from '../lib/api/leavers';
import { authorize } from '../lib/auth/authorize';
import { ok, parseQuery } from '../lib/http';

async function listLeaverClock(request: HttpRequest): Promise<HttpResponseInit> {
  return ok(await listLeavers(parseQuery(request, LEAVERS_QUERY)));
}

app.http('listLeaverClock', { route: 'leavers', methods: ['GET'], handler: authorize('runs.read', listLeaverClock) });
