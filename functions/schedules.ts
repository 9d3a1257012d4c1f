import { app, type HttpRequest, type HttpResponseInit, type InvocationContext } from '@azure/functions';
import * as df from 'durable-functions';
import { SCHEDULE_RUNS_QUERY, SCHEDULES_QUERY } from '../lib/api/queries';
import * as schedules from '../lib/api/schedules';
import { authorize } from '../lib/auth/authorize';
import type { Caller } from '../lib/auth/permissions';
import { accepted, apiPath, created, noContent, ok, parseQuery, readJson, routeId } from '../lib/http';
import { CreateScheduleRequest, UpdateScheduleRequest } from '../lib/schemas/schedules';
import { startScheduleRunOrchestration } from '../orchestrations/scheduleRun';

async function listSchedules(request: HttpRequest): Promise<HttpResponseInit> {
  const q = parseQuery(request, SCHEDULES_QUERY);
  return ok(await schedules.querySchedules(q));
}

async function getSchedule(request: HttpRequest): Promise<HttpResponseInit> {
  return ok(await schedules.getScheduleView(routeId(request, 'id', 'Schedule')));
}

async function createSchedule(request: HttpRequest, _context: InvocationContext, caller: Caller): Promise<HttpResponseInit> {
  const schedule = await schedules.createSchedule(await readJson(request, CreateScheduleRequest), caller);
  return created(apiPath(`schedules/${schedule.scheduleId}`), schedule);
}

async function updateSchedule(request: HttpRequest, _context: InvocationContext, caller: Caller): Promise<HttpResponseInit> {
  const id = routeId(request, 'id', 'Schedule');
  return ok(await schedules.updateSchedule(id, await readJson(request, UpdateScheduleRequest), caller));
}

async function deleteSchedule(request: HttpRequest, _context: InvocationContext, caller: Caller): Promise<HttpResponseInit> {
  await schedules.deleteSchedule(routeId(request, 'id', 'Schedule'), caller);
  return noContent();
}

/** POST /schedules/{id}/run: 202 with the schedule run; its orchestration starts on this instance's task hub. */
async function runScheduleNow(request: HttpRequest, context: InvocationContext, caller: Caller): Promise<HttpResponseInit> {
  const id = routeId(request, 'id', 'Schedule');
  const client = df.getClient(context);
  const run = await schedules.runScheduleNow(id, caller, client.taskHubName, (ref) => startScheduleRunOrchestration(client, ref));
  return accepted(apiPath(`schedules/${id}/runs/${run.scheduleRunId}`), run);
}

async function listScheduleRuns(request: HttpRequest): Promise<HttpResponseInit> {
  const id = routeId(request, 'id', 'Schedule');
  return ok(await schedules.listScheduleRunViews(id, parseQuery(request, SCHEDULE_RUNS_QUERY)));
}

async function getScheduleRun(request: HttpRequest): Promise<HttpResponseInit> {
  return ok(await schedules.getScheduleRunView(routeId(request, 'id', 'Schedule'), routeId(request, 'scheduleRunId', 'Schedule run')));
}

/** POST /schedules/{id}/runs/{scheduleRunId}/cancel: 202, the schedule run (Cancelled); one already over: 409. */
async function cancelScheduleRun(request: HttpRequest, _context: InvocationContext, caller: Caller): Promise<HttpResponseInit> {
  const id = routeId(request, 'id', 'Schedule');
  const run = await schedules.cancelScheduleRunView(id, routeId(request, 'scheduleRunId', 'Schedule run'), caller);
  return accepted(apiPath(`schedules/${id}/runs/${run.scheduleRunId}`), run);
}

app.http('listSchedules', { route: 'schedules', methods: ['GET'], handler: authorize('schedules.read', listSchedules) });
app.http('getSchedule', { route: 'schedules/{id}', methods: ['GET'], handler: authorize('schedules.read', getSchedule) });
app.http('createSchedule', { route: 'schedules', methods: ['POST'], handler: authorize('schedules.write', createSchedule) });
app.http('updateSchedule', { route: 'schedules/{id}', methods: ['PUT'], handler: authorize('schedules.write', updateSchedule) });
app.http('deleteSchedule', { route: 'schedules/{id}', methods: ['DELETE'], handler: authorize('schedules.write', deleteSchedule) });
app.http('runScheduleNow', {
  route: 'schedules/{id}/run',
  methods: ['POST'],
  extraInputs: [df.input.durableClient()],
  handler: authorize('runs.trigger', runScheduleNow),
});
app.http('listScheduleRuns', { route: 'schedules/{id}/runs', methods: ['GET'], handler: authorize('schedules.read', listScheduleRuns) });
app.http('getScheduleRun', { route: 'schedules/{id}/runs/{scheduleRunId}', methods: ['GET'], handler: authorize('schedules.read', getScheduleRun) });
app.http('cancelScheduleRun', {
  route: 'schedules/{id}/runs/{scheduleRunId}/cancel',
  methods: ['POST'],
  handler: authorize('runs.trigger', cancelScheduleRun),
});
