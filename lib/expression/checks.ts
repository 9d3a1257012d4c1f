import type { Expression, HelperCall } from './ast';
import { ZONE_ARGUMENTS } from './names';
import { children } from './parser';
import { isKnownZone } from './zones';

/** What a script's date helpers get wrong that can be seen without evaluating it, with the node to point at. */
export interface StaticProblem {
  node: Expression;
  message: string;
}

function helperCalls(ast: Expression): HelperCall[] {
  const out: HelperCall[] = [];
  const stack: Expression[] = [ast];
  while (stack.length) {
    const node = stack.pop() as Expression;
    if (node.type === 'HelperCall') out.push(node);
    stack.push(...children(node));
  }
  return out.sort((a, b) => a.start - b.start);
}

/** Whether the script calls `now()`: its result then depends on the engine's clock. */
export function usesNow(ast: Expression): boolean {
  return helperCalls(ast).some((c) => c.name === 'now');
}

const TIME = /^(\d{1,2}):(\d{2})(?::(\d{2}))?$/;

/**
 * Literal arguments of the date helpers that can never work: a time zone the platform does not know
 * (`"Europe/Pari"`), a time of day `atTime` cannot read (`"6h"`). A zone read from an attribute is checked when
 * the script runs.
 */
export function dateProblems(ast: Expression): StaticProblem[] {
  const out: StaticProblem[] = [];
  for (const call of helperCalls(ast)) {
    const zoneAt = ZONE_ARGUMENTS.get(call.name);
    const zone = zoneAt === undefined ? undefined : call.arguments[zoneAt];
    if (zone?.type === 'Literal' && typeof zone.value === 'string' && !isKnownZone(zone.value))
      out.push({
        node: zone,
        message: `${call.name}() names the time zone '${zone.value.slice(0, 64)}', which is not known (use an IANA name such as Europe/Paris)`,
      });
    const time = call.name === 'atTime' ? call.arguments[1] : undefined;
    if (time?.type === 'Literal') {
      const m = typeof time.value === 'string' ? TIME.exec(time.value) : null;
      if (!m || Number(m[1]) > 23 || Number(m[2]) > 59 || Number(m[3] ?? 0) > 59)
        out.push({ node: time, message: 'atTime() expects a time of day such as "06:00" or "17:30:00"' });
    }
  }
  return out;
}
