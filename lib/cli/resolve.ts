import type { Api } from './api';
import { CliError, EXIT } from './exitCodes';

/** The resources an argument may name instead of giving the id. */
export type Kind = 'connector' | 'rule' | 'schedule';

/** One resource as the resolver sees it: its id and its name. */
export interface Named {
  id: string;
  name: string;
}

const LABEL: Record<Kind, [string, string]> = {
  connector: ['Connector', 'connectors'],
  rule: ['Rule', 'rules'],
  schedule: ['Schedule', 'schedules'],
};

const FULL_ID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
/** A prefix of an id: at least 4 characters, hex digits and dashes. */
const ID_PREFIX = /^[0-9a-f][0-9a-f-]{3,}$/i;
const PAGE = 200;

/** The lists read in this process, one GET (or one run of pages) per service and kind. */
const cache = new Map<string, Promise<Named[]>>();

async function fetchAll(api: Api, kind: Kind): Promise<Named[]> {
  if (kind === 'connector') {
    const res = await api.get<{ connectors: { id: string; name: string }[] }>('connectors');
    return res.connectors.map((c) => ({ id: c.id, name: c.name ?? '' }));
  }
  const out: Named[] = [];
  for (let skip = 0; ; skip += PAGE) {
    const page = await api.get<{ items: Record<string, unknown>[]; totalCount: number }>(LABEL[kind][1], { skip, take: PAGE });
    for (const item of page.items)
      out.push(
        kind === 'rule' ? { id: String(item.ruleId), name: String(item.ruleName ?? '') } : { id: String(item.scheduleId), name: String(item.name ?? '') },
      );
    if (!page.items.length || skip + page.items.length >= page.totalCount) return out;
  }
}

/** Every connector, rule or schedule (id and name), read once per process. */
export function listNamed(api: Api, kind: Kind): Promise<Named[]> {
  const key = `${api.baseUrl} ${kind}`;
  let list = cache.get(key);
  if (!list) {
    list = fetchAll(api, kind);
    cache.set(key, list);
    list.catch(() => cache.delete(key));
  }
  return list;
}

/**
 * The id of the connector, rule or schedule that `ref` names: its id (a whole id is used as is, without a
 * call), a unique prefix of its id (at least 4 characters), or its exact name, compared without case. More
 * than one match is a usage error (exit 3) that lists them with their ids; none is "does not exist" (exit 5).
 */
export async function resolveId(api: Api, kind: Kind, ref: string): Promise<string> {
  const text = ref.trim();
  if (FULL_ID.test(text)) return text;
  const [Label, plural] = LABEL[kind];
  if (!text) throw new CliError(`${Label} '' does not exist: give its id, a unique id prefix (4 characters or more) or its name.`, EXIT.usage);
  const all = await listNamed(api, kind);
  const lower = text.toLowerCase();
  const byId = all.find((x) => x.id.toLowerCase() === lower);
  if (byId) return byId.id;
  const matches = new Map<string, Named>();
  for (const x of all) if (x.name && x.name.toLowerCase() === lower) matches.set(x.id, x);
  if (ID_PREFIX.test(text)) for (const x of all) if (x.id.toLowerCase().startsWith(lower)) matches.set(x.id, x);
  const found = [...matches.values()];
  if (found.length === 1) return found[0].id;
  if (found.length > 1) {
    const list = found.map((x) => `${x.name || '(no name)'} (${x.id})`).join(', ');
    throw new CliError(`'${text}' matches ${found.length} ${plural}: ${list}; give the id.`, EXIT.usage);
  }
  throw new CliError(
    `${Label} '${text}' does not exist. Give its id, a unique id prefix (4 characters or more) or its exact name (case does not matter): meshsync ${plural} ls lists them.`,
    EXIT.notFound,
  );
}

/** `resolveId` for an optional option value: undefined stays undefined. */
export async function resolveOptional(api: Api, kind: Kind, ref: string | undefined): Promise<string | undefined> {
  return ref === undefined || ref === '' ? ref : resolveId(api, kind, ref);
}

/**
 * The names of every connector, rule or schedule by id, for tables that show a name beside an id. Reading
 * the list may fail (a role that cannot read it): the tables then show the ids alone.
 */
export async function namesById(api: Api, kind: Kind): Promise<Map<string, string>> {
  try {
    return new Map((await listNamed(api, kind)).map((x) => [x.id, x.name]));
  } catch {
    return new Map();
  }
}
