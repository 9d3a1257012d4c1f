import { app, type HttpRequest, type HttpResponseInit, type InvocationContext } from '@azure/functions';
import * as df from 'durable-functions';
import { RUN_CHANGES_QUERY, RUNS_QUERY } from '../lib/api/queries';
import { applyPlanView, approveRunView, cancelRunView, getRunView, listRunChangesView, listRunViews, rejectRunView } from '../lib/api/runs';
import { APPROVAL_EVENT, type RaiseApproval } from '../lib/runs/approval';
import type { Caller } from '../lib/auth/permissions';
import { authorize } from '../lib/auth/authorize';
import { accepted, apiPath, ok, parseQuery, routeId } from '../lib/http';
import { runOrchestrations } from '../orchestrations/runReconcile';
import { startRunOrchestration } from '../orchestrations/syncDispatcher';

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

/** GET /runs/{id}/changes: one item per object the run changed or would change, filtered and paged. */
async function listRunChanges(request: HttpRequest): Promise<HttpResponseInit> {
  const id = routeId(request, 'id', 'Run');
  return ok(await listRunChangesView(id, parseQuery(request, RUN_CHANGES_QUERY)));
}

/** POST /runs/{id}/apply: 202 with the new run that applies the dry run's plan. */
async function applyPlan(request: HttpRequest, context: InvocationContext, caller: Caller): Promise<HttpResponseInit> {
  const id = routeId(request, 'id', 'Run');
  const client = df.getClient(context);
  const run = await applyPlanView(id, caller, (runId) => startRunOrchestration(client, runId), runOrchestrations(client));
  return accepted(apiPath(`runs/${run.runId}`), run);
}

/** The waiting run's orchestration (instance id: the run id) told of the decision. */
const raiser = (context: InvocationContext): RaiseApproval => {
  const client = df.getClient(context);
  return (runId, decision) => client.raiseEvent(runId, APPROVAL_EVENT, decision);
};

/** POST /runs/{id}/approve: 202 with the run, Running again: it applies its plan. */
async function approveRun(request: HttpRequest, context: InvocationContext, caller: Caller): Promise<HttpResponseInit> {
  const id = routeId(request, 'id', 'Run');
  const run = await approveRunView(id, caller, raiser(context));
  return accepted(apiPath(`runs/${run.runId}`), run);
}

/** POST /runs/{id}/reject: 200 with the run, Rejected. */
async function rejectRun(request: HttpRequest, context: InvocationContext, caller: Caller): Promise<HttpResponseInit> {
  const id = routeId(request, 'id', 'Run');
  return ok(await rejectRunView(id, caller, raiser(context)));
}

app.http('getRun', { route: 'runs/{id}', methods: ['GET'], extraInputs: [df.input.durableClient()], handler: authorize('runs.read', getRun) });
app.http('listRuns', { route: 'runs', methods: ['GET'], extraInputs: [df.input.durableClient()], handler: authorize('runs.read', listRuns) });
app.http('cancelRun', { route: 'runs/{id}/cancel', methods: ['POST'], extraInputs: [df.input.durableClient()], handler: authorize('runs.trigger', cancelRun) });
app.http('listRunChanges', { route: 'runs/{id}/changes', methods: ['GET'], handler: authorize('runs.read', listRunChanges) });
app.http('applyPlan', { route: 'runs/{id}/apply', methods: ['POST'], extraInputs: [df.input.durableClient()], handler: authorize('runs.trigger', applyPlan) });
app.http('approveRun', {
  route: 'runs/{id}/approve',
  methods: ['POST'],
  extraInputs: [df.input.durableClient()],
  handler: authorize('runs.approve', approveRun),
});
app.http('rejectRun', { route: 'runs/{id}/reject', methods: ['POST'], extraInputs: [df.input.durableClient()], handler: authorize('runs.approve', rejectRun) });
