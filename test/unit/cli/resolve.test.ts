import type { Api } from '../../../lib/cli/api';
import { changeColumns } from '../../../lib/cli/commands/runs';
import { renderTable } from '../../../lib/cli/output';
import { CliError, EXIT } from '../../../lib/cli/exitCodes';
import { namesById, resolveId, resolveOptional } from '../../../lib/cli/resolve';

/** An in-memory stand-in for the API's list routes: counts the calls, pages the rules by skip/take. */
function fakeApi(baseUrl: string, data: { connectors?: { id: string; name: string }[]; rules?: { ruleId: string; ruleName?: string }[] }, fail = false) {
  const calls: string[] = [];
  const api = {
    baseUrl,
    async get(route: string, query?: Record<string, number>) {
      calls.push(route);
      if (fail) throw new CliError('GET /connectors: 403 Forbidden', EXIT.auth);
      if (route === 'connectors') return { connectors: data.connectors ?? [], total: (data.connectors ?? []).length };
      const all = data.rules ?? [];
      const skip = query?.skip ?? 0;
      return { items: all.slice(skip, skip + (query?.take ?? 50)), totalCount: all.length };
    },
  };
  return { api: api as unknown as Api, calls };
}

const HR = { id: '0f8fad5b-d9cb-469f-a165-70867728950e', name: 'HR' };
const AD = { id: '7c9e6679-7425-40de-944b-e07fc1f90ae7', name: 'AD users' };

async function refusal(p: Promise<unknown>): Promise<CliError> {
  try {
    await p;
  } catch (err) {
    return err as CliError;
  }
  throw new Error('no refusal');
}

describe('meshsync names: resolveId', () => {
  it('takes the name without case, a unique id prefix or the id; a whole id needs no call', async () => {
    const { api, calls } = fakeApi('http://a/api', { connectors: [HR, AD] });
    expect(await resolveId(api, 'connector', AD.id)).toBe(AD.id);
    expect(calls).toEqual([]);
    expect(await resolveId(api, 'connector', 'hr')).toBe(HR.id);
    expect(await resolveId(api, 'connector', 'Ad Users')).toBe(AD.id);
    expect(await resolveId(api, 'connector', '7C9E66')).toBe(AD.id);
    expect(await resolveId(api, 'connector', '0f8fad5b-d9cb')).toBe(HR.id);
    // One list read for the whole process.
    expect(calls).toEqual(['connectors']);
  });

  it('refuses a text that matches two (exit 3, both listed with their ids) and one that matches none (exit 5)', async () => {
    const twin = { id: 'beefbeef-0000-4000-8000-000000000001', name: '0f8fad' };
    const { api } = fakeApi('http://b/api', { connectors: [HR, twin] });
    const ambiguous = await refusal(resolveId(api, 'connector', '0f8fad'));
    expect(ambiguous.exitCode).toBe(EXIT.usage);
    expect(ambiguous.message).toBe(`'0f8fad' matches 2 connectors: 0f8fad (${twin.id}), HR (${HR.id}); give the id.`);
    const none = await refusal(resolveId(api, 'connector', 'Payroll'));
    expect(none.exitCode).toBe(EXIT.notFound);
    expect(none.message).toBe(
      "Connector 'Payroll' does not exist. Give its id, a unique id prefix (4 characters or more) or its exact name (case does not matter): meshsync connectors ls lists them.",
    );
    // Three characters are no prefix: only a name could match.
    expect((await refusal(resolveId(api, 'connector', '0f8'))).exitCode).toBe(EXIT.notFound);
  });

  it('reads every page of the rules; rule names may repeat', async () => {
    const rules = Array.from({ length: 450 }, (_, i) => ({ ruleId: `${String(i).padStart(8, '0')}-0000-4000-8000-000000000000`, ruleName: `rule ${i}` }));
    rules.push({ ruleId: 'aaaaaaaa-0000-4000-8000-000000000000', ruleName: 'RULE 7' });
    const { api, calls } = fakeApi('http://c/api', { rules });
    expect(await resolveId(api, 'rule', 'rule 449')).toBe(rules[449].ruleId);
    expect(calls).toEqual(['rules', 'rules', 'rules']);
    const dup = await refusal(resolveId(api, 'rule', 'Rule 7'));
    expect(dup.exitCode).toBe(EXIT.usage);
    expect(dup.message).toMatch(/^'Rule 7' matches 2 rules: /);
    expect(await resolveOptional(api, 'rule', undefined)).toBeUndefined();
  });

  it('names for tables: the ids alone when the list cannot be read', async () => {
    const { api } = fakeApi('http://d/api', {}, true);
    expect(await namesById(api, 'connector')).toEqual(new Map());
    const ok = fakeApi('http://e/api', { connectors: [HR] });
    expect((await namesById(ok.api, 'connector')).get(HR.id)).toBe('HR');
  });
});

describe('meshsync names in tables', () => {
  it("a run's change to a connector names the connector; -o wide adds its id", () => {
    const rows = [
      { target: 'connector', connectorId: AD.id, operation: 'Add', outcome: 'applied', anchor: 'E1', attributes: { mail: 'a' } },
      { target: 'mesh', operation: 'Update', outcome: 'applied', anchor: 'E2', attributes: {} },
      { target: 'connector', connectorId: HR.id, operation: 'Delete', outcome: 'failed', anchor: 'E3' },
    ];
    const columns = changeColumns(new Map([[AD.id, 'AD users']]));
    const table = renderTable(
      rows,
      columns.filter((c) => !c.wide),
      200,
    ).split('\n');
    expect(table[0]).toMatch(/^TARGET\s+OPERATION\s+OUTCOME\s+ANCHOR/);
    expect(table[1]).toMatch(/^connector AD users\s+Add\s+applied\s+E1\s+mail/);
    expect(table[2]).toMatch(/^mesh\s+Update/);
    // A connector gone since: its id.
    expect(table[3]).toMatch(new RegExp(`^connector ${HR.id}\\s+Delete`));
    const wide = renderTable(rows, columns, 300).split('\n');
    expect(wide[0]).toMatch(/^TARGET\s+CONNECTOR ID\s+OPERATION/);
    expect(wide[1]).toMatch(new RegExp(`^connector AD users\\s+${AD.id}\\s+Add`));
  });
});
