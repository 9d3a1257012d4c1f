import { randomUUID } from 'node:crypto';
import type { Caller } from '../auth/permissions';
import { recordAudit } from '../audit';
import { badRequest, conflict, notFound, type FieldError } from '../core/errors';
import { principalRecord } from '../core/principal';
import { isGuid } from '../http/request';
import type { ScheduleRequest } from '../schemas/schedules';
import { readSchedulesConfig } from '../schedules/config';
import { cronSchedule, parseCron } from '../schedules/cron';
import { beginScheduleRun, cancelScheduleRun, scheduleRunView } from '../schedules/runner';
import { schedulesChanged } from '../schedules/scheduler';
import { connectorExists } from '../storage/connectors';
import { plainSnapshot } from '../config/snapshots';
import { storageWriter } from '../config/writer';
import {
  activeScheduleRun,
  deleteScheduleRuns,
  getSchedule as readSchedule,
  getScheduleRun as readScheduleRun,
  latestScheduleRun,
  listScheduleRuns,
  listSchedules,
  type Schedule,
  type ScheduleRun,
  type StoredSchedule,
} from '../storage/schedules';

/**
 * Schedules as the Admin API sees them: the request checked field by field (every error names its field, and a
 * rejected request writes nothing), names unique (409), writes audited (`schedule`), and the resource shown with
 * its next tick and its newest schedule run. Run-now, the schedule runs and their cancel are here too.
 */

export type ScheduleView = Schedule & {
  nextRunOn: string | null;
  lastRun: { scheduleRunId: string; status: ScheduleRun['status']; startedOn: string } | null;
};

/** Starts a schedule run's orchestration on this process's task hub (a durable client's startNew). */
export type StartScheduleRun = (ref: { scheduleId: string; scheduleRunId: string }) => Promise<void>;

async function checkRequest(body: ScheduleRequest): Promise<Omit<Schedule, 'scheduleId' | 'createdOn' | 'updatedOn'>> {
  const { errors, fields } = await scheduleErrors(body, connectorExists);
  if (errors.length) throw badRequest('The schedule is not valid. See errors for each field.', errors);
  return fields;
}

/**
 * Every error of a schedule request (sorted by path), with the schedule's fields as they would be stored;
 * `exists` tells which connectors the steps may name.
 */
export async function scheduleErrors(
  body: ScheduleRequest,
  exists: (id: string) => Promise<boolean>,
): Promise<{ errors: FieldError[]; fields: Omit<Schedule, 'scheduleId' | 'createdOn' | 'updatedOn'> }> {
  const errors: FieldError[] = [];
  const timeZone = body.timeZone ?? 'UTC';
  const parsed = parseCron(body.cron, timeZone, readSchedulesConfig().minIntervalSeconds);
  if ('errors' in parsed) errors.push(...parsed.errors);
  const ids = body.steps.map((s) => s.connectorIds.map((id) => id.toLowerCase()));
  await Promise.all(
    ids.flatMap((step, i) =>
      step.map(async (id, j) => {
        const path = `/steps/${i}/connectorIds/${j}`;
        if (!isGuid(id)) errors.push({ path, message: 'must be a connector id (a GUID)' });
        else if (!(await exists(id))) errors.push({ path, message: 'is not an existing connector' });
      }),
    ),
  );
  errors.sort((a, b) => a.path.localeCompare(b.path));
  const fields = {
    name: body.name,
    cron: body.cron.trim().replace(/\s+/g, ' '),
    timeZone,
    isEnabled: body.isEnabled ?? true,
    steps: body.steps.map((s, i) => ({ runType: s.runType, connectorIds: ids[i] })),
    stopOnFailure: body.stopOnFailure ?? true,
  };
  return { errors, fields };
}

/** The schedule with its next tick (null while disabled) and its newest schedule run. */
export async function scheduleView(s: StoredSchedule, now: Date = new Date()): Promise<ScheduleView> {
  const last = await latestScheduleRun(s.scheduleId);
  let nextRunOn: string | null = null;
  if (s.isEnabled) {
    try {
      nextRunOn = cronSchedule(s.cron, s.timeZone).next(now)?.toISOString() ?? null;
    } catch {
      nextRunOn = null;
    }
  }
  const { etag: _etag, ...schedule } = s;
  return { ...schedule, nextRunOn, lastRun: last ? { scheduleRunId: last.scheduleRunId, status: last.status, startedOn: last.startedOn } : null };
}

export async function getSchedule(scheduleId: string): Promise<StoredSchedule> {
  const s = await readSchedule(scheduleId);
  if (!s) throw notFound(`Schedule '${scheduleId}' does not exist.`);
  return s;
}

export async function getScheduleView(scheduleId: string): Promise<ScheduleView> {
  return scheduleView(await getSchedule(scheduleId));
}

export async function querySchedules(q: { skip: number; take: number }): Promise<{ items: ScheduleView[]; totalCount: number }> {
  const all = await listSchedules();
  return { items: await Promise.all(all.slice(q.skip, q.skip + q.take).map((s) => scheduleView(s))), totalCount: all.length };
}

export async function createSchedule(body: ScheduleRequest, caller: Caller): Promise<ScheduleView> {
  const fields = await checkRequest(body);
  const now = new Date().toISOString();
  const schedule: Schedule = { scheduleId: randomUUID(), ...fields, createdOn: now, updatedOn: now };
  await storageWriter.apply({ targetType: 'schedule', targetId: schedule.scheduleId, action: 'create', before: null, after: schedule }, caller);
  await recordAudit(caller, 'create', 'schedule', schedule.scheduleId);
  schedulesChanged();
  return scheduleView(await getSchedule(schedule.scheduleId));
}

export async function updateSchedule(scheduleId: string, body: ScheduleRequest, caller: Caller): Promise<ScheduleView> {
  const current = await getSchedule(scheduleId);
  const fields = await checkRequest(body);
  const schedule: Schedule = { scheduleId, ...fields, createdOn: current.createdOn, updatedOn: new Date().toISOString() };
  await storageWriter.apply({ targetType: 'schedule', targetId: scheduleId, action: 'update', before: plainSnapshot(current), after: schedule }, caller);
  await recordAudit(caller, 'update', 'schedule', scheduleId);
  schedulesChanged();
  return scheduleView(await getSchedule(scheduleId));
}

/** Delete a schedule with its history. While a schedule run of it is Running: 409 (cancel it first). */
export async function deleteSchedule(scheduleId: string, caller: Caller): Promise<void> {
  const current = await getSchedule(scheduleId);
  if (await activeScheduleRun(scheduleId)) throw conflict('A run of this schedule is Running: cancel it or wait for it to end, then delete the schedule.');
  await storageWriter.apply({ targetType: 'schedule', targetId: scheduleId, action: 'delete', before: plainSnapshot(current), after: null }, caller);
  await deleteScheduleRuns(scheduleId);
  await recordAudit(caller, 'delete', 'schedule', scheduleId);
  schedulesChanged();
}

/** POST /schedules/{id}/run: a schedule run now (also of a disabled schedule). 409 while one is Running. */
export async function runScheduleNow(scheduleId: string, caller: Caller, taskHub: string, start: StartScheduleRun): Promise<ScheduleRun> {
  const schedule = await getSchedule(scheduleId);
  // Who pressed run-now is the requester of every run it starts: the four-eyes rule holds them to it.
  const { run } = await beginScheduleRun(schedule, 'manual', null, taskHub, new Date(), principalRecord(caller.principal));
  await recordAudit(caller, 'trigger', 'schedule', scheduleId);
  await start({ scheduleId, scheduleRunId: run.scheduleRunId });
  return scheduleRunView(run);
}

export async function listScheduleRunViews(scheduleId: string, q: { skip: number; take: number }): Promise<{ items: ScheduleRun[]; totalCount: number }> {
  await getSchedule(scheduleId);
  const { items, totalCount } = await listScheduleRuns(scheduleId, q.skip, q.take);
  return { items: await Promise.all(items.map(scheduleRunView)), totalCount };
}

export async function getScheduleRunView(scheduleId: string, scheduleRunId: string): Promise<ScheduleRun> {
  await getSchedule(scheduleId);
  const run = await readScheduleRun(scheduleId, scheduleRunId);
  if (!run) throw notFound(`Schedule run '${scheduleRunId}' does not exist.`);
  return scheduleRunView(run);
}

export async function cancelScheduleRunView(scheduleId: string, scheduleRunId: string, caller: Caller): Promise<ScheduleRun> {
  await getSchedule(scheduleId);
  return scheduleRunView(await cancelScheduleRun({ scheduleId, scheduleRunId }, caller));
}
