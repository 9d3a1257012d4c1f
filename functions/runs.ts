import { app, type HttpRequest, type HttpResponseInit, type InvocationContext } from '@azure/functions';
import * as df from 'durable-functions';
import { RUNS_QUERY } from '../lib/api/queries';
import { cancelRunView, getRunView, listRunViews } from '../lib/api/runs';
import type { Caller } from '../lib/auth/permissions';
import { authorize } from '../lib/auth/authorize';
import { accepted, apiPath, ok, parseQuery, routeId } from '../lib/http';
import { runOrchestrations } from '../orchestrations/runReconcile';

/** A run, reconciled with its orchestration (lib/api/runs.ts). */
async function getRun(request: HttpRequest, context: InvocationContext): Promise<HttpResponseInit> {
  const id = routeId(request, 'id', 'Run');
  return ok(await getRunView(id, runOrchestrations(df.getClient(context)), (m) => context.warn(m)));
}

/** History, newest first: `{ items, totalCount }`. Filters combine with AND. */
async function listRuns(request: HttpRequest, context: InvocationContext): Promise<HttpResponseInit> {
  const q = parseQuery(request, RUNS_QUERY);
  return ok(await listRunViews(q, runOrchestrations(df.getClient(context)), (m) => context.warn(m)));
}

/** POST /runs/{id}/cancel: 202 with the run; it ends Cancelled at its next page boundary. Finished: 409. */
async function cancelRun(request: HttpRequest, context: InvocationContext, caller: Caller): Promise<HttpResponseInit> {
  const id = routeId(request, 'id', 'Run');
  const run = await cancelRunView(id, caller, runOrchestrations(df.getClient(context)), (m) => context.warn(m));
  return accepted(apiPath(`runs/${run.runId}`), run);
}

app.http('getRun', { route: 'runs/{id}', methods: ['GET'], extraInputs: [df.input.durableClient()], handler: authorize('runs.read', getRun) });
app.http('listRuns', { route: 'runs', methods: ['GET'], extraInputs: [df.input.durableClient()], handler: authorize('runs.read', listRuns) });
app.http('cancelRun', { route: 'runs/{id}/cancel', methods: ['POST'], extraInputs: [df.input.durableClient()], handler: authorize('runs.trigger', cancelRun) });
