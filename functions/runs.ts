import { app, type HttpRequest, type HttpResponseInit } from '@azure/functions';
import { authorize } from '../lib/auth/authorize';
import { isInstanceId } from '../lib/engine/config';
import { badRequest, notFound } from '../lib/errors';
import { RUNS_QUERY } from '../lib/api/queries';
import { ok, parseQuery, routeId } from '../lib/http';
import { getRun as readRun, listRuns as queryRuns, type RunStatus, type StoredRun } from '../lib/storage/runs';

const view = ({ etag: _etag, ...run }: StoredRun) => run;

async function getRun(request: HttpRequest): Promise<HttpResponseInit> {
  const id = routeId(request, 'id', 'Run');
  const run = await readRun(id);
  if (!run) throw notFound(`Run '${id}' does not exist.`);
  return ok(view(run));
}

/** History, newest first: `{ items, totalCount }`. Filters combine with AND. */
async function listRuns(request: HttpRequest): Promise<HttpResponseInit> {
  const q = parseQuery(request, RUNS_QUERY);
  if (q.instanceId !== undefined && !isInstanceId(q.instanceId)) throw badRequest('The query string is not valid. See errors for each parameter.', [{ path: 'instanceId', message: 'must be an engine instance id' }]);
  const { items, totalCount } = await queryRuns({
    connectorId: q.connectorId,
    instanceId: q.instanceId?.toLowerCase(),
    status: q.status as RunStatus | undefined,
    skip: q.skip,
    take: q.take,
  });
  return ok({ items: items.map(view), totalCount });
}

app.http('getRun', { route: 'runs/{id}', methods: ['GET'], handler: authorize('runs.read', getRun) });
app.http('listRuns', { route: 'runs', methods: ['GET'], handler: authorize('runs.read', listRuns) });
