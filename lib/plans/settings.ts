import { SettingsReader } from '../core/config';

/**
 * The settings of plans and approvals, read when used (and once at start by the `planSettings` service step, so
 * that a malformed value stops the start naming it):
 * - `Plans:ExpireHours` (default 24): how long a dry run's plan can be applied;
 * - `Approvals:ExpireHours` (default 24): how long a run waits for approval before it is rejected;
 * - `Approvals:RequireSecondPerson` (default true): the four-eyes rule (the approver is not who triggered);
 * - `Approvals:AllowApplications` (default false): whether an application (an app-only token, no person) may
 *   approve a run at all (never one it triggered itself).
 */
export interface PlanSettings {
  planExpireHours: number;
  approvalExpireHours: number;
  requireSecondPerson: boolean;
  allowApplications: boolean;
}

export const DEFAULT_EXPIRE_HOURS = 24;

export function readPlanSettings(settings = new SettingsReader()): PlanSettings {
  return {
    planExpireHours: settings.int('Plans:ExpireHours', DEFAULT_EXPIRE_HOURS, { min: 1, max: 8760 }),
    approvalExpireHours: settings.int('Approvals:ExpireHours', DEFAULT_EXPIRE_HOURS, { min: 1, max: 8760 }),
    requireSecondPerson: settings.bool('Approvals:RequireSecondPerson', true),
    allowApplications: settings.bool('Approvals:AllowApplications', false),
  };
}

/** `hours` after `from`, as the API writes timestamps. */
export const hoursAfter = (from: Date, hours: number): string => new Date(from.getTime() + hours * 3_600_000).toISOString();
