import { app, type HttpRequest, type HttpResponseInit, type InvocationContext } from '@azure/functions';
import * as df from 'durable-functions';
import { authorize } from '../lib/auth/authorize';
import { isInstanceId } from '../lib/instances/config';
import { badRequest, notFound } from '../lib/errors';
import { RUNS_QUERY } from '../lib/api/queries';
import { ok, parseQuery, routeId } from '../lib/http';
import { getRun as readRun, listRuns as queryRuns, runView, type RunStatus } from '../lib/storage/runs';
import { reconcileForRead, reconcileListed } from '../lib/runs/runs';
import { runOrchestrations } from '../orchestrations/runReconcile';

/**
 * Runs are read reconciled with their orchestration (lib/sync/runs.ts): a Running or Queued run whose
 * orchestration ended outside the engine is shown, and stored, as it ended. Finished runs cost nothing more.
 */
async function getRun(request: HttpRequest, context: InvocationContext): Promise<HttpResponseInit> {
  const id = routeId(request, 'id', 'Run');
  const run = await readRun(id);
  if (!run) throw notFound(`Run '${id}' does not exist.`);
  return ok(runView(await reconcileForRead(run, runOrchestrations(df.getClient(context)), (m) => context.warn(m))));
}

/** History, newest first: `{ items, totalCount }`. Filters combine with AND. */
async function listRuns(request: HttpRequest, context: InvocationContext): Promise<HttpResponseInit> {
  const q = parseQuery(request, RUNS_QUERY);
  if (q.instanceId !== undefined && !isInstanceId(q.instanceId)) throw badRequest('The query string is not valid. See errors for each parameter.', [{ path: 'instanceId', message: 'must be an engine instance id' }]);
  const { items, totalCount } = await queryRuns({
    connectorId: q.connectorId,
    instanceId: q.instanceId?.toLowerCase(),
    status: q.status as RunStatus | undefined,
    skip: q.skip,
    take: q.take,
  });
  const runs = await reconcileListed(items, runOrchestrations(df.getClient(context)), (m) => context.warn(m));
  return ok({ items: runs.map(runView), totalCount });
}

app.http('getRun', { route: 'runs/{id}', methods: ['GET'], extraInputs: [df.input.durableClient()], handler: authorize('runs.read', getRun) });
app.http('listRuns', { route: 'runs', methods: ['GET'], extraInputs: [df.input.durableClient()], handler: authorize('runs.read', listRuns) });
