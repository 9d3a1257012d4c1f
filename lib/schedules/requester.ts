import { legacyPrincipal, type PrincipalRecord } from '../core/principal';
import type { Snapshot } from '../config/snapshots';
import { listVersionHeads, readVersion, type VersionHead } from '../config/versions';
import { lastScheduleApproval, type Schedule } from '../storage/schedules';

/**
 * The requester of a schedule's tick, for the four-eyes rule: the people who changed the schedule, the
 * connectors it runs, or the rules of those connectors (and rules of no connector, which apply to all) since a
 * run this schedule started was last approved, as one principal holding every alias of each of them (so that
 * none of them approves the mass change that follows). Null when no person changed any of it since: the change
 * comes from the source data alone, and any Admin may approve.
 *
 * Engine actors (`system`, `schedule:<name>`) are not people and are left out.
 */
export async function tickRequester(schedule: Pick<Schedule, 'scheduleId' | 'steps'>): Promise<PrincipalRecord | null> {
  const since = (await lastScheduleApproval(schedule.scheduleId))?.getTime() ?? 0;
  const connectors = new Set(schedule.steps.flatMap((s) => s.connectorIds));
  const people: PrincipalRecord[] = [];
  for (const head of await listVersionHeads()) {
    if (Date.parse(head.timestamp) <= since) continue;
    if (!(await concerns(head, schedule.scheduleId, connectors))) continue;
    const person = head.actor ?? (isEngine(head.actorUpn) ? null : legacyPrincipal(head.actorUpn, head.actorSid));
    if (person) people.push(person);
  }
  return people.length ? merge(people) : null;
}

const isEngine = (actor: string | null) => !actor || actor === 'system' || /^[a-z]+:/.test(actor);

async function concerns(head: VersionHead, scheduleId: string, connectors: ReadonlySet<string>): Promise<boolean> {
  if (head.targetType === 'schedule') return head.targetId === scheduleId;
  if (head.targetType === 'connector') return connectors.has(head.targetId);
  const version = await readVersion(head.versionId);
  const connectorOf = (s: Snapshot | null) => (s && 'connectorId' in s ? (s.connectorId as string | null) : undefined);
  return [connectorOf(version?.before ?? null), connectorOf(version?.after ?? null)].some((c) => c === null || (c !== undefined && connectors.has(c)));
}

/** The people as one requester: every alias of each; the display names the newest change's author first. */
function merge(people: PrincipalRecord[]): PrincipalRecord {
  const displays = [...new Set(people.map((p) => p.display))];
  return {
    key: people[0].key,
    kind: people.some((p) => p.kind === 'person') ? 'person' : 'application',
    aliases: [...new Set(people.flatMap((p) => p.aliases))],
    display: displays.length === 1 ? displays[0] : `${displays[0]} (and ${displays.slice(1).join(', ')})`,
  };
}
