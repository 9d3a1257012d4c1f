import type { ServiceUnderTest } from '../../support/service';

/** Helpers of the schedule tests: create a schedule, wait for a schedule run, a cron that fires once soon. */

// eslint-disable-next-line @typescript-eslint/no-explicit-any
type Json = any;

export async function createSchedule(rt: ServiceUnderTest, body: Record<string, unknown>): Promise<Json> {
  const res = await rt.call('POST', 'schedules', { body });
  if (res.status !== 201) throw new Error(`create schedule: ${res.status} ${res.text}`);
  return res.body;
}

export async function waitScheduleRun(
  rt: ServiceUnderTest,
  scheduleId: string,
  scheduleRunId: string,
  until: (run: Json) => boolean = (r) => r.status !== 'Running',
  timeoutMs = 120_000,
): Promise<Json> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const res = await rt.call('GET', `schedules/${scheduleId}/runs/${scheduleRunId}`);
    if (res.status === 200 && until(res.body)) return res.body;
    if (Date.now() > deadline) throw new Error(`schedule run ${scheduleRunId}: ${res.text}\n${rt.logs().slice(-3000)}`);
    await new Promise((r) => setTimeout(r, 250));
  }
}

/** The schedule's runs, newest first, once `until` holds for the list. */
export async function waitScheduleRuns(rt: ServiceUnderTest, scheduleId: string, until: (items: Json[]) => boolean, timeoutMs = 120_000): Promise<Json[]> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const res = await rt.call('GET', `schedules/${scheduleId}/runs?take=200`);
    if (res.status === 200 && until(res.body.items)) return res.body.items;
    if (Date.now() > deadline) throw new Error(`schedule ${scheduleId} runs: ${res.text}\n${rt.logs().slice(-3000)}`);
    await new Promise((r) => setTimeout(r, 250));
  }
}

/** A six-field cron (UTC) that fires once a day at `at` (whole seconds). */
export function cronAt(at: Date): string {
  return `${at.getUTCSeconds()} ${at.getUTCMinutes()} ${at.getUTCHours()} * * *`;
}

/** `seconds` from now, on a whole second. */
export function secondsFromNow(seconds: number): Date {
  return new Date(Math.ceil((Date.now() + seconds * 1000) / 1000) * 1000);
}

export const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
